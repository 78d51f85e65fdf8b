package recordbatch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Byte layout of the record batch v2 header (DefaultRecordBatch.java).
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offRecordsCount         = 57

	// HeaderSize is the size of the fixed batch header; records start here.
	HeaderSize = 61
	// LogOverhead is the size of BaseOffset plus BatchLength, the part of a
	// batch that BatchLength does not count.
	LogOverhead = 12
	// MinBatchLength is the smallest valid BatchLength: the header bytes
	// after the BatchLength field, with no records.
	MinBatchLength = HeaderSize - LogOverhead
	// Magic is the only magic value this package reads and writes.
	Magic = 2
	// minRecordSize is the smallest encoded record: a one-byte length, then
	// attributes, timestamp delta, offset delta, key length, value length
	// and header count of one byte each.
	minRecordSize = 7
)

// castagnoli is the CRC-32C table. It is read-only after package
// initialisation.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Compression is the codec in bits 0-2 of the batch attributes.
type Compression uint8

// The compression codecs Kafka defines (CompressionType.java).
const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

// String returns Kafka's name for the codec ("none", "gzip", ...).
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// valid reports whether Kafka defines the codec.
func (c Compression) valid() bool { return c <= CompressionZstd }

// TimestampType is bit 3 of the batch attributes.
type TimestampType uint8

// Timestamp types. KRaft always writes CreateTime.
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// String returns "CreateTime" or "LogAppendTime".
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Attributes is the int16 attributes field of a batch.
type Attributes int16

// Attribute bits (DefaultRecordBatch.java).
const (
	// AttrCompressionMask selects the codec bits.
	AttrCompressionMask Attributes = 0x07
	// AttrLogAppendTime marks timestamps as set by the broker.
	AttrLogAppendTime Attributes = 1 << 3
	// AttrTransactional marks a batch written inside a transaction.
	AttrTransactional Attributes = 1 << 4
	// AttrControl marks a control batch: it holds only control records
	// (LeaderChange, SnapshotHeader, ... in KRaft).
	AttrControl Attributes = 1 << 5
	// AttrDeleteHorizon says BaseTimestamp holds the delete horizon of a
	// compacted batch.
	AttrDeleteHorizon Attributes = 1 << 6
)

// Compression returns the codec in bits 0-2.
func (a Attributes) Compression() Compression { return Compression(a & AttrCompressionMask) }

// WithCompression returns a with its codec bits replaced by c.
func (a Attributes) WithCompression(c Compression) Attributes {
	return a&^AttrCompressionMask | Attributes(c)&AttrCompressionMask
}

// TimestampType returns CreateTime or LogAppendTime.
func (a Attributes) TimestampType() TimestampType {
	if a&AttrLogAppendTime != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// Transactional reports bit 4.
func (a Attributes) Transactional() bool { return a&AttrTransactional != 0 }

// Control reports bit 5, the control-batch bit.
func (a Attributes) Control() bool { return a&AttrControl != 0 }

// DeleteHorizon reports bit 6.
func (a Attributes) DeleteHorizon() bool { return a&AttrDeleteHorizon != 0 }

// Header is the fixed 61-byte header of a record batch v2. Field order and
// widths are those on disk.
type Header struct {
	// BaseOffset is the offset of the first record. It is outside the CRC.
	BaseOffset int64
	// BatchLength counts the bytes after this field: total size - 12.
	BatchLength int32
	// PartitionLeaderEpoch is the epoch of the leader that wrote the batch
	// (in a snapshot: the snapshot's epoch). It is outside the CRC.
	PartitionLeaderEpoch int32
	// Magic is the format version, always 2 here.
	Magic int8
	// CRC is the CRC-32C of the bytes from Attributes to the end.
	CRC uint32
	// Attributes holds the codec, timestamp type, transactional, control
	// and delete-horizon bits.
	Attributes Attributes
	// LastOffsetDelta is the offset delta of the last record (records-1
	// for batches written by KRaft).
	LastOffsetDelta int32
	// BaseTimestamp is the timestamp of the first record, in ms.
	BaseTimestamp int64
	// MaxTimestamp is the largest record timestamp, in ms.
	MaxTimestamp int64
	// ProducerID is -1 outside idempotent or transactional production.
	ProducerID int64
	// ProducerEpoch is -1 outside idempotent or transactional production.
	ProducerEpoch int16
	// BaseSequence is -1 outside idempotent or transactional production.
	BaseSequence int32
	// NumRecords is the RecordsCount field.
	NumRecords int32
}

// Size returns the total encoded size of the batch, BatchLength + 12.
func (h Header) Size() int { return int(h.BatchLength) + LogOverhead }

// LastOffset returns BaseOffset + LastOffsetDelta.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset returns the offset after the batch, LastOffset + 1.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression returns the batch's codec.
func (h Header) Compression() Compression { return h.Attributes.Compression() }

// TimestampType returns the batch's timestamp type.
func (h Header) TimestampType() TimestampType { return h.Attributes.TimestampType() }

// IsTransactional reports the transactional bit.
func (h Header) IsTransactional() bool { return h.Attributes.Transactional() }

// IsControl reports the control bit: the batch holds control records.
func (h Header) IsControl() bool { return h.Attributes.Control() }

// RecordOffset returns the offset of r in this batch, BaseOffset +
// OffsetDelta.
func (h Header) RecordOffset(r *Record) int64 { return h.BaseOffset + int64(r.OffsetDelta) }

// RecordTimestamp returns the timestamp of r in ms: MaxTimestamp for a
// LogAppendTime batch (the broker's time applies to every record, as in
// Kafka's DefaultRecordBatch), else BaseTimestamp + TimestampDelta.
func (h Header) RecordTimestamp(r *Record) int64 {
	if h.TimestampType() == LogAppendTime {
		return h.MaxTimestamp
	}
	return h.BaseTimestamp + r.TimestampDelta
}

// readHeader decodes the 61 header bytes of b, which must be that long.
func readHeader(b []byte) Header {
	_ = b[HeaderSize-1]
	return Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           Attributes(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offRecordsCount:])),
	}
}

// putHeader writes h into the 61 bytes of b (CRC included as given).
func putHeader(b []byte, h *Header) {
	_ = b[HeaderSize-1]
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(h.BatchLength))
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = byte(h.Magic)
	binary.BigEndian.PutUint32(b[offCRC:], h.CRC)
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offRecordsCount:], uint32(h.NumRecords))
}

// baseOffsetOf returns the BaseOffset field if b holds it, else -1.
func baseOffsetOf(b []byte) int64 {
	if len(b) < 8 {
		return -1
	}
	return int64(binary.BigEndian.Uint64(b))
}

// errAt builds an *Error for the batch starting at b (at input position
// pos) with the problem at relative position rel.
func errAt(b []byte, pos int64, rel int, r Reason, detail string, cause error) *Error {
	return &Error{Pos: pos + int64(rel), BatchPos: pos, BaseOffset: baseOffsetOf(b), Reason: r, Detail: detail, Err: cause}
}

// TotalSize returns the encoded size of the batch that starts at b, read
// from its first 12 bytes (BatchLength + 12). It fails with
// ReasonTruncated when b is shorter than 12 bytes and with
// ReasonLengthOutOfBounds when BatchLength is below the v2 minimum of 49.
// It does not check that b holds the whole batch.
func TotalSize(b []byte) (int, error) {
	return totalSize(b, 0)
}

func totalSize(b []byte, pos int64) (int, error) {
	if len(b) < LogOverhead {
		return 0, errAt(b, pos, len(b), ReasonTruncated, fmt.Sprintf("need %d bytes for offset and length, have %d", LogOverhead, len(b)), nil)
	}
	n := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if n < MinBatchLength {
		return 0, errAt(b, pos, offBatchLength, ReasonLengthOutOfBounds, fmt.Sprintf("batch length %d below minimum %d", n, MinBatchLength), nil)
	}
	return int(n) + LogOverhead, nil
}

// PeekHeader decodes the 61-byte header at the start of b without looking
// at the records or the CRC. It checks that the header is present,
// BatchLength is at least 49 and the magic is 2; the rest of the batch
// need not be in b. The log store uses it to read offsets and epochs of
// batches it has already validated.
func PeekHeader(b []byte) (Header, error) {
	return peekHeader(b, 0)
}

func peekHeader(b []byte, pos int64) (Header, error) {
	if _, err := totalSize(b, pos); err != nil {
		return Header{}, err
	}
	if len(b) < HeaderSize {
		return Header{}, errAt(b, pos, len(b), ReasonTruncated, fmt.Sprintf("need %d header bytes, have %d", HeaderSize, len(b)), nil)
	}
	if b[offMagic] != Magic {
		return Header{}, errAt(b, pos, offMagic, ReasonBadMagic, fmt.Sprintf("magic %d, want %d", int8(b[offMagic]), Magic), nil)
	}
	return readHeader(b), nil
}

// Validate checks the batch at the start of b: that it is complete, its
// length is in bounds, its magic is 2 and its CRC-32C matches. It does not
// decode records. It returns the header; the batch occupies
// b[:h.Size()]. Bytes after the batch are ignored.
func Validate(b []byte) (Header, error) {
	return validate(b, 0)
}

func validate(b []byte, pos int64) (Header, error) {
	size, err := totalSize(b, pos)
	if err != nil {
		return Header{}, err
	}
	if len(b) < size {
		return Header{}, errAt(b, pos, len(b), ReasonTruncated, fmt.Sprintf("batch of %d bytes, have %d", size, len(b)), nil)
	}
	if b[offMagic] != Magic {
		return Header{}, errAt(b, pos, offMagic, ReasonBadMagic, fmt.Sprintf("magic %d, want %d", int8(b[offMagic]), Magic), nil)
	}
	h := readHeader(b)
	if got := crc32.Checksum(b[offAttributes:size], castagnoli); got != h.CRC {
		return Header{}, errAt(b, pos, offCRC, ReasonCRCMismatch, fmt.Sprintf("stored crc %#08x, computed %#08x", h.CRC, got), nil)
	}
	return h, nil
}

// Stamp rewrites BaseOffset and PartitionLeaderEpoch of the encoded batch
// at the start of b in place. Both fields are outside the CRC, so the CRC
// stays valid and is not recomputed. The leader's append path builds a
// batch before it knows its offset and stamps it under the log's lock.
func Stamp(b []byte, baseOffset int64, partitionLeaderEpoch int32) error {
	if _, err := peekHeader(b, 0); err != nil {
		return fmt.Errorf("recordbatch: stamp: %w", err)
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(partitionLeaderEpoch))
	return nil
}

// StampAll stamps every batch of the concatenated batches in b with
// consecutive offsets starting at firstOffset (each batch gets
// BaseOffset = the previous batch's NextOffset) and with
// partitionLeaderEpoch. It returns the offset after the last batch. b must
// consist of whole batches; on error nothing after the failing batch is
// changed.
func StampAll(b []byte, firstOffset int64, partitionLeaderEpoch int32) (int64, error) {
	next := firstOffset
	for pos := 0; pos < len(b); {
		h, err := peekHeader(b[pos:], int64(pos))
		if err != nil {
			return next, fmt.Errorf("recordbatch: stamp all: %w", err)
		}
		if len(b)-pos < h.Size() {
			return next, fmt.Errorf("recordbatch: stamp all: %w", errAt(b[pos:], int64(pos), len(b)-pos, ReasonTruncated, fmt.Sprintf("batch of %d bytes, have %d", h.Size(), len(b)-pos), nil))
		}
		binary.BigEndian.PutUint64(b[pos+offBaseOffset:], uint64(next))
		binary.BigEndian.PutUint32(b[pos+offPartitionLeaderEpoch:], uint32(partitionLeaderEpoch))
		next += int64(h.LastOffsetDelta) + 1
		pos += h.Size()
	}
	return next, nil
}
