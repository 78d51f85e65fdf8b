package recordbatch

import (
	"fmt"
	"strconv"
)

// Reason classifies why a batch was rejected. Every Reason is itself an
// error, and every [*Error] unwraps to its Reason, so callers branch with
// errors.Is:
//
//	if errors.Is(err, recordbatch.ReasonTruncated) { /* torn tail */ }
type Reason uint8

// The reasons a batch can be rejected. The numbering is not part of any
// format and may change; compare with the constants.
const (
	// ReasonTruncated: the input ends before the batch does (fewer than 12
	// bytes, or fewer than 12+BatchLength). On the tail of a log segment
	// this is a torn write.
	ReasonTruncated Reason = iota + 1
	// ReasonLengthOutOfBounds: BatchLength is smaller than the 49 bytes
	// that follow it in every v2 batch header (this includes negative
	// lengths).
	ReasonLengthOutOfBounds
	// ReasonBadMagic: the magic byte is not 2. Krabka reads only record
	// batch v2, the only format of the metadata log.
	ReasonBadMagic
	// ReasonCRCMismatch: the stored CRC-32C differs from the one computed
	// over Attributes through the end of the batch.
	ReasonCRCMismatch
	// ReasonRecordCountMismatch: the records section holds fewer or more
	// records than RecordsCount says, or RecordsCount is negative or larger
	// than the bytes present could possibly hold.
	ReasonRecordCountMismatch
	// ReasonBadRecord: a record's framing is inconsistent (length field
	// disagrees with its content, a length runs past the record, a negative
	// length other than -1, a null header key, a negative header count).
	ReasonBadRecord
	// ReasonBadVarint: a varint is unterminated, overflows its type, or
	// uses more bytes than its minimal encoding.
	ReasonBadVarint
	// ReasonBadCompression: the compression codec is unknown or the
	// compressed records cannot be decompressed.
	ReasonBadCompression
	// ReasonTooLarge: the decompressed records exceed the decoder's limit
	// (a decompression bomb, or a limit set too low).
	ReasonTooLarge
)

var reasonText = [...]string{
	ReasonTruncated:           "truncated",
	ReasonLengthOutOfBounds:   "length out of bounds",
	ReasonBadMagic:            "bad magic",
	ReasonCRCMismatch:         "crc mismatch",
	ReasonRecordCountMismatch: "record count mismatch",
	ReasonBadRecord:           "bad record",
	ReasonBadVarint:           "bad varint",
	ReasonBadCompression:      "bad compression",
	ReasonTooLarge:            "decompressed size over limit",
}

// String returns the reason in words, e.g. "crc mismatch".
func (r Reason) String() string {
	if int(r) < len(reasonText) && reasonText[r] != "" {
		return reasonText[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Error makes a Reason usable as a sentinel with errors.Is.
func (r Reason) Error() string { return "recordbatch: " + r.String() }

// Error is the error returned for every malformed batch. It says what is
// wrong (Reason), where (Pos, a byte position in the input the caller
// handed over; for an [Iterator] that is the whole concatenated input), and
// in which batch (BaseOffset, -1 when fewer than 8 bytes were present).
type Error struct {
	// Pos is the byte position in the input at which the problem was
	// detected: the start of the batch for header problems, the start of
	// the offending record for record problems in an uncompressed batch,
	// and the start of the records section for compressed batches.
	Pos int64
	// BatchPos is the byte position of the start of the batch.
	BatchPos int64
	// BaseOffset is the batch's BaseOffset field, or -1 when unknown.
	BaseOffset int64
	// Reason classifies the problem.
	Reason Reason
	// Detail adds specifics (stored and computed CRC, record index, ...).
	Detail string
	// Err is the underlying cause, e.g. a decompressor's error, or nil.
	Err error
}

// Error formats the problem with its position.
func (e *Error) Error() string {
	s := fmt.Sprintf("recordbatch: %s at byte %d (batch at byte %d, base offset %d)", e.Reason.String(), e.Pos, e.BatchPos, e.BaseOffset)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the Reason (so errors.Is(err, ReasonCRCMismatch) works)
// and the underlying cause when there is one.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Reason, e.Err}
	}
	return []error{e.Reason}
}
