package metadata

import (
	"errors"
	"fmt"
	"math"

	"github.com/krabka-go/krabka/internal/kbin"
)

//go:generate go run github.com/krabka-go/krabka/internal/codegen/cmd/krabkagen -pkg metadata -defs definitions -out .

// FrameVersion is the only frame version of metadata record values that
// Kafka writes and accepts.
const FrameVersion = 1

// APIKey identifies a metadata record type; it is the second varint of
// a record's frame. The APIKey... constants list the known types.
type APIKey int16

// Record is a metadata record: one of the generated record types
// (*TopicRecord, *PartitionRecord, ...).
type Record interface {
	// APIKey returns the record type.
	APIKey() APIKey
	// GetVersion returns the version the record is encoded at.
	GetVersion() int16
	// SetVersion sets the version the record is encoded at.
	SetVersion(version int16)
	// MinVersion and MaxVersion bound the record's valid versions.
	MinVersion() int16
	MaxVersion() int16
	// AppendTo appends the record body (without the frame) encoded at
	// version to dst.
	AppendTo(dst []byte, version int16) ([]byte, error)
	// DecodeFrom sets the record from a body (without the frame)
	// encoded at version.
	DecodeFrom(b []byte, version int16) error
	// Default sets every field to its default.
	Default()
}

// ErrUnsupportedFrame is the cause of an error for a record value whose
// frame version is not 1.
var ErrUnsupportedFrame = errors.New("metadata: unsupported frame version")

// ErrTruncated is matched (with errors.Is) by decode errors caused by
// input that ends inside a value.
var ErrTruncated = kbin.ErrTruncated

// ErrInvalid is matched (with errors.Is) by decode errors caused by bytes
// that are not a valid encoding: a negative or oversized length, a null
// where the version forbids it, a non-minimal varint, a boolean other than
// 0 or 1, tags out of order, a tagged field that carries its default, or
// trailing bytes.
var ErrInvalid = kbin.ErrInvalid

// UnknownAPIKeyError reports a record value with an API key that names no
// known record type.
type UnknownAPIKeyError struct {
	// APIKey is the key read from the frame.
	APIKey uint32
}

// Error implements error.
func (e *UnknownAPIKeyError) Error() string {
	return fmt.Sprintf("metadata: unknown record api key %d", e.APIKey)
}

// Encode returns the framed encoding of r at r.GetVersion(): uvarint frame
// version 1, uvarint API key, uvarint version, then the body.
func Encode(r Record) ([]byte, error) {
	return AppendRecord(nil, r)
}

// AppendRecord appends the framed encoding of r at r.GetVersion() to dst.
// On error dst is returned unchanged.
func AppendRecord(dst []byte, r Record) ([]byte, error) {
	v := r.GetVersion()
	if v < r.MinVersion() || v > r.MaxVersion() {
		return dst, &UnsupportedVersionError{Message: r.APIKey().String(), Version: v, Min: r.MinVersion(), Max: r.MaxVersion()}
	}
	out := kbin.AppendUvarint(dst, FrameVersion)
	out = kbin.AppendUvarint(out, uint32(r.APIKey()))
	out = kbin.AppendUvarint(out, uint32(v))
	out, err := r.AppendTo(out, v)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// newForDecode returns a record of type key for Decode to decode into: set
// to its defaults, except a ConfigRecord, whose only version decodes every
// field; its default Value would be one more allocation per config change.
func newForDecode(key APIKey) Record {
	if key == APIKeyConfigRecord {
		return new(ConfigRecord)
	}
	return NewRecord(key)
}

// Decode decodes one framed metadata record value. The whole of b must be
// the record: trailing bytes are an error. Errors are an
// *UnknownAPIKeyError, an *UnsupportedVersionError, a *DecodeError
// (matching ErrTruncated or ErrInvalid), or wrap ErrUnsupportedFrame,
// ErrTruncated or ErrInvalid for a malformed frame.
func Decode(b []byte) (Record, error) { return decode(b, newForDecode) }

// Decoder decodes metadata records into values it keeps, one per record
// type, so that decoding a stream of records allocates only where a
// record outgrows the arrays of the previous record of its type. A record
// it returns, and the record's slices, stay valid until it decodes the
// next record of the same type. [Delta.Replay] and [Delta.ReplayNext]
// keep no reference to a record, so a replay loop can decode every record
// with one Decoder. The zero Decoder is ready to use; it is not safe for
// concurrent use.
type Decoder struct {
	recs []Record // by API key
}

// Decode decodes one framed metadata record value, as [Decode] does,
// into the Decoder's record of its type.
func (d *Decoder) Decode(b []byte) (Record, error) { return decode(b, d.record) }

// record returns the Decoder's record of type key, nil for a key no
// record has.
func (d *Decoder) record(key APIKey) Record {
	if int(key) < len(d.recs) && d.recs[key] != nil {
		return d.recs[key]
	}
	rec := newForDecode(key)
	if rec == nil {
		return nil
	}
	if int(key) >= len(d.recs) {
		d.recs = append(d.recs, make([]Record, int(key)+1-len(d.recs))...)
	}
	d.recs[key] = rec
	return rec
}

// RunDecoder decodes a run of metadata records, each into a value of its
// own, and reuses those values and their arrays for the next run after
// [RunDecoder.Reset]: a stream decoded run by run, such as a snapshot
// whose runs are decoded ahead of their replay, allocates only where a
// run holds more records of a type than the runs before, or a record
// outgrows the arrays of the record it reuses. A record it returns stays
// valid until the next Reset. The zero RunDecoder is ready to use; it is
// not safe for concurrent use.
type RunDecoder struct {
	pools [][]Record // by API key
	used  []int      // by API key: records of pools handed out since Reset
}

// Decode decodes one framed metadata record value, as [Decode] does,
// into a record no other Decode of the run returned.
func (d *RunDecoder) Decode(b []byte) (Record, error) { return decode(b, d.record) }

// Reset starts a new run: the records decoded so far may be reused.
func (d *RunDecoder) Reset() { clear(d.used) }

// record returns the next unused record of type key, nil for a key no
// record has.
func (d *RunDecoder) record(key APIKey) Record {
	if int(key) < len(d.pools) && d.used[key] < len(d.pools[key]) {
		d.used[key]++
		return d.pools[key][d.used[key]-1]
	}
	rec := newForDecode(key)
	if rec == nil {
		return nil
	}
	if int(key) >= len(d.pools) {
		d.pools = append(d.pools, make([][]Record, int(key)+1-len(d.pools))...)
		d.used = append(d.used, make([]int, int(key)+1-len(d.used))...)
	}
	d.pools[key] = append(d.pools[key], rec)
	d.used[key]++
	return rec
}

// decode decodes b into the record get returns for its API key.
func decode(b []byte, get func(APIKey) Record) (Record, error) {
	r := kbin.NewReader(b)
	frame := r.Uvarint()
	key := r.Uvarint()
	version := r.Uvarint()
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("metadata: decode record frame: %w", err)
	}
	if frame != FrameVersion {
		return nil, fmt.Errorf("metadata: decode record: frame version %d: %w", frame, ErrUnsupportedFrame)
	}
	var rec Record
	if key <= math.MaxInt16 {
		rec = get(APIKey(key))
	}
	if rec == nil {
		return nil, &UnknownAPIKeyError{APIKey: key}
	}
	if version > math.MaxInt16 {
		return nil, fmt.Errorf("metadata: decode %s: version %d is outside %d-%d", rec.APIKey(), version, rec.MinVersion(), rec.MaxVersion())
	}
	if err := rec.DecodeFrom(b[r.Offset():], int16(version)); err != nil {
		// Report offsets from the start of the record value, frame
		// included.
		var ke *kbin.Error
		if errors.As(err, &ke) {
			ke.Offset += r.Offset()
		}
		return nil, err
	}
	return rec, nil
}
