package kbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/krabka-go/krabka/internal/bugzoo"
)

// ErrTruncated is the cause of an [Error] when the input ends before the
// value being read.
var ErrTruncated = errors.New("kbin: truncated input")

// ErrInvalid is the cause of an [Error] when the bytes cannot be a valid
// encoding (a negative length, a non-minimal varint, a boolean other than 0
// or 1, a string longer than Kafka allows).
var ErrInvalid = errors.New("kbin: invalid encoding")

// MaxStringLen is the longest string Kafka encodes or accepts (its writers
// and readers both refuse strings longer than 0x7fff bytes).
const MaxStringLen = math.MaxInt16

// Error reports where and why a [Reader] failed. Its Unwrap returns
// [ErrTruncated] or [ErrInvalid].
type Error struct {
	// Offset is the byte offset, from the start of the outermost input,
	// of the value that could not be read.
	Offset int
	// What names the value being read ("int32", "compact string length").
	What string
	// Detail explains the failure.
	Detail string
	// Cause is ErrTruncated or ErrInvalid.
	Cause error
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("kbin: %s at byte %d: %s", e.What, e.Offset, e.Detail)
}

// Unwrap returns the cause, ErrTruncated or ErrInvalid.
func (e *Error) Unwrap() error { return e.Cause }

// Reader decodes Kafka primitives from a byte slice with a sticky error.
// The zero Reader reads nothing; build one with [NewReader]. A Reader is a
// small value and not safe for concurrent use.
type Reader struct {
	b   []byte // the unread bytes
	end int    // absolute offset of the end of b
	err error
}

// NewReader returns a Reader over b. Offsets in errors count from b[0].
func NewReader(b []byte) Reader { return Reader{b: b, end: len(b)} }

// Err returns the first error the Reader met, or nil.
func (r *Reader) Err() error { return r.err }

// Offset returns the absolute offset of the next unread byte.
func (r *Reader) Offset() int { return r.end - len(r.b) }

// Remaining returns the number of unread bytes.
func (r *Reader) Remaining() int { return len(r.b) }

// Fail records err as the Reader's error unless one is already recorded,
// and makes every later read return zero values.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

// Invalid records an [ErrInvalid] error for the value what at the current
// offset.
func (r *Reader) Invalid(what, detail string) {
	r.Fail(&Error{Offset: r.Offset(), What: what, Detail: detail, Cause: ErrInvalid})
}

func (r *Reader) short(what string, need int) {
	r.Fail(&Error{Offset: r.Offset(), What: what,
		Detail: fmt.Sprintf("need %d bytes, %d remain", need, len(r.b)), Cause: ErrTruncated})
}

// Int8 reads one signed byte.
func (r *Reader) Int8() int8 {
	if len(r.b) < 1 {
		r.short("int8", 1)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return int8(v)
}

// Bool reads a boolean, which must be encoded as 0 or 1.
func (r *Reader) Bool() bool {
	if len(r.b) < 1 {
		r.short("bool", 1)
		return false
	}
	v := r.b[0]
	if v > 1 {
		r.Invalid("bool", fmt.Sprintf("byte %d is neither 0 nor 1", v))
		return false
	}
	r.b = r.b[1:]
	return v == 1
}

// Int16 reads a big-endian int16.
func (r *Reader) Int16() int16 {
	if len(r.b) < 2 {
		r.short("int16", 2)
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return int16(v)
}

// Uint16 reads a big-endian uint16.
func (r *Reader) Uint16() uint16 {
	if len(r.b) < 2 {
		r.short("uint16", 2)
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

// Int32 reads a big-endian int32.
func (r *Reader) Int32() int32 {
	if len(r.b) < 4 {
		r.short("int32", 4)
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return int32(v)
}

// Uint32 reads a big-endian uint32.
func (r *Reader) Uint32() uint32 {
	if len(r.b) < 4 {
		r.short("uint32", 4)
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

// Int64 reads a big-endian int64.
func (r *Reader) Int64() int64 {
	if len(r.b) < 8 {
		r.short("int64", 8)
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return int64(v)
}

// Float64 reads a big-endian IEEE 754 double.
func (r *Reader) Float64() float64 {
	if len(r.b) < 8 {
		r.short("float64", 8)
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return math.Float64frombits(v)
}

// UUID reads a 16-byte UUID.
func (r *Reader) UUID() [16]byte {
	var u [16]byte
	if len(r.b) < 16 {
		r.short("uuid", 16)
		return u
	}
	copy(u[:], r.b)
	r.b = r.b[16:]
	return u
}

// Uvarint reads Kafka's unsigned varint (at most 5 bytes, 32 bits). The
// encoding must be minimal.
func (r *Reader) Uvarint() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(r.b) {
			r.short("uvarint", i+1)
			return 0
		}
		c := r.b[i]
		if i == 4 && c > 0x0f {
			r.Invalid("uvarint", "more than 32 bits")
			return 0
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				r.Invalid("uvarint", "non-minimal encoding")
				return 0
			}
			r.b = r.b[i+1:]
			return v
		}
	}
	r.Invalid("uvarint", "more than 5 bytes")
	return 0
}

// Uvarlong reads an unsigned varint of at most 10 bytes (64 bits). The
// encoding must be minimal.
func (r *Reader) Uvarlong() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		if i >= len(r.b) {
			r.short("uvarlong", i+1)
			return 0
		}
		c := r.b[i]
		if i == 9 && c > 0x01 {
			r.Invalid("uvarlong", "more than 64 bits")
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				r.Invalid("uvarlong", "non-minimal encoding")
				return 0
			}
			r.b = r.b[i+1:]
			return v
		}
	}
	r.Invalid("uvarlong", "more than 10 bytes")
	return 0
}

// Varint reads a zig-zag encoded signed 32-bit varint.
func (r *Reader) Varint() int32 {
	u := r.Uvarint()
	return int32(u>>1) ^ -int32(u&1)
}

// Varlong reads a zig-zag encoded signed 64-bit varint.
func (r *Reader) Varlong() int64 {
	u := r.Uvarlong()
	return int64(u>>1) ^ -int64(u&1)
}

// take returns the next n bytes (n already checked non-negative).
func (r *Reader) take(what string, n int) []byte {
	if n > len(r.b) {
		r.short(what, n)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Span returns the next n bytes without copying them; the result aliases
// the input.
func (r *Reader) Span(n int) []byte {
	if n < 0 {
		r.Invalid("span", fmt.Sprintf("negative length %d", n))
		return nil
	}
	return r.take("span", n)
}

// Sub returns a Reader over the next n bytes and advances r past them.
// Errors of the sub-reader report offsets in r's coordinates.
func (r *Reader) Sub(n int) Reader {
	start := r.Offset()
	b := r.Span(n)
	if r.err != nil {
		return Reader{err: r.err}
	}
	return Reader{b: b, end: start + n}
}

func (r *Reader) stringLen(what string, n int) int {
	if n > MaxStringLen {
		r.Invalid(what, fmt.Sprintf("length %d exceeds %d", n, MaxStringLen))
		return -1
	}
	if n > len(r.b) {
		r.short(what, n)
		return -1
	}
	return n
}

// String reads a non-null string with an int16 length.
func (r *Reader) String() string {
	n := r.Int16()
	if r.err != nil {
		return ""
	}
	if n < 0 {
		r.Invalid("string", fmt.Sprintf("length %d in a non-nullable string", n))
		return ""
	}
	if r.stringLen("string", int(n)) < 0 {
		return ""
	}
	return string(r.take("string", int(n)))
}

// NullableString reads a string with an int16 length; length -1 is null
// and returns nil.
func (r *Reader) NullableString() *string {
	n := r.Int16()
	if r.err != nil || n == -1 {
		return nil
	}
	if n < 0 {
		r.Invalid("nullable string", fmt.Sprintf("length %d", n))
		return nil
	}
	if r.stringLen("nullable string", int(n)) < 0 {
		return nil
	}
	s := string(r.take("nullable string", int(n)))
	return &s
}

// CompactString reads a non-null string with a uvarint length+1.
func (r *Reader) CompactString() string {
	n := r.Uvarint()
	if r.err != nil {
		return ""
	}
	if n == 0 {
		r.Invalid("compact string", "null in a non-nullable string")
		return ""
	}
	l := int(n - 1)
	if r.stringLen("compact string", l) < 0 {
		return ""
	}
	return string(r.take("compact string", l))
}

// CompactNullableString reads a string with a uvarint length+1; 0 is null
// and returns nil.
func (r *Reader) CompactNullableString() *string {
	n := r.Uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	l := int(n - 1)
	if r.stringLen("compact nullable string", l) < 0 {
		return nil
	}
	s := string(r.take("compact nullable string", l))
	return &s
}

func (r *Reader) copyBytes(what string, n int) []byte {
	b := r.take(what, n)
	if r.err != nil {
		return nil
	}
	out := make([]byte, n)
	copy(out, b)
	return out
}

// Bytes reads non-null bytes with an int32 length. The result is a copy;
// it is nil when the length is zero.
func (r *Reader) Bytes() []byte {
	n := r.Int32()
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.Invalid("bytes", fmt.Sprintf("length %d in non-nullable bytes", n))
		return nil
	}
	if n == 0 {
		return nil
	}
	return r.copyBytes("bytes", int(n))
}

// NullableBytes reads bytes with an int32 length; -1 is null and returns
// nil, and a zero length returns a non-nil empty slice.
func (r *Reader) NullableBytes() []byte {
	n := r.Int32()
	if r.err != nil || n == -1 {
		return nil
	}
	if n < 0 {
		r.Invalid("nullable bytes", fmt.Sprintf("length %d", n))
		return nil
	}
	return r.copyBytes("nullable bytes", int(n))
}

// CompactBytes reads non-null bytes with a uvarint length+1. The result is
// a copy; it is nil when the length is zero.
func (r *Reader) CompactBytes() []byte {
	b := r.CompactBytesAlias()
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// CompactNullableBytes reads bytes with a uvarint length+1; 0 is null and
// returns nil, and a zero length returns a non-nil empty slice.
func (r *Reader) CompactNullableBytes() []byte {
	return bytes.Clone(r.CompactNullableBytesAlias())
}

func (r *Reader) checkCount(what string, n int64, minElem int) int {
	if minElem < 1 {
		minElem = 1
	}
	if bugzoo.Active(bugzoo.Z25) {
		// Z25: the count is trusted, and the caller allocates what it
		// says before reading a byte of it.
		return int(n)
	}
	if n > int64(len(r.b))/int64(minElem) {
		r.Fail(&Error{Offset: r.Offset(), What: what, Cause: ErrTruncated,
			Detail: fmt.Sprintf("%d elements of at least %d bytes each cannot fit in the %d remaining bytes", n, minElem, len(r.b))})
		return -1
	}
	return int(n)
}

// ArrayLen reads an int32 array length. It returns -1 for null (length -1);
// any other negative length is an error. A count that cannot fit in the
// remaining bytes, given that each element takes at least minElem bytes, is
// an error, so the caller may allocate the returned count safely.
func (r *Reader) ArrayLen(minElem int) int {
	n := r.Int32()
	if r.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 {
		r.Invalid("array length", fmt.Sprintf("length %d", n))
		return 0
	}
	if r.checkCount("array length", int64(n), minElem) < 0 {
		return 0
	}
	return int(n)
}

// CompactArrayLen reads a uvarint array length+1. It returns -1 for null
// (encoded 0). Like [Reader.ArrayLen], it checks the count against the
// remaining bytes before returning it.
func (r *Reader) CompactArrayLen(minElem int) int {
	n := r.Uvarint()
	if r.err != nil {
		return 0
	}
	if n == 0 {
		return -1
	}
	if r.checkCount("compact array length", int64(n)-1, minElem) < 0 {
		return 0
	}
	return int(n - 1)
}

// TagCount reads the count of a tagged-field section and checks it against
// the remaining bytes (every tagged field takes at least two bytes).
func (r *Reader) TagCount() int {
	n := r.Uvarint()
	if r.err != nil {
		return 0
	}
	if r.checkCount("tagged field count", int64(n), 2) < 0 {
		return 0
	}
	return int(n)
}

// NextTag reads the header of one tagged field (uvarint tag, uvarint size)
// and returns the tag and a Reader over exactly its payload, advancing r
// past the payload. prev is the previous tag of the section, or -1 for the
// first; tags must be strictly ascending, as Kafka writes them.
func (r *Reader) NextTag(prev int64) (uint32, Reader) {
	at := r.Offset()
	tag := r.Uvarint()
	size := r.Uvarint()
	if r.err != nil {
		return 0, Reader{err: r.err}
	}
	if int64(tag) <= prev {
		r.Fail(&Error{Offset: at, What: "tagged field", Cause: ErrInvalid,
			Detail: fmt.Sprintf("tag %d follows tag %d; tags must be strictly ascending", tag, prev)})
		return 0, Reader{err: r.err}
	}
	if int64(size) > int64(len(r.b)) {
		r.short("tagged field", int(size))
		return 0, Reader{err: r.err}
	}
	return tag, r.Sub(int(size))
}

// CopyRest returns a copy of all remaining bytes and consumes them.
func (r *Reader) CopyRest() []byte {
	out := make([]byte, len(r.b))
	copy(out, r.b)
	r.b = r.b[len(r.b):]
	return out
}

// ExpectEnd records an error unless every byte has been consumed; what
// names the structure that should have ended.
func (r *Reader) ExpectEnd(what string) {
	if r.err == nil && len(r.b) != 0 {
		r.Invalid(what, fmt.Sprintf("%d unexpected trailing bytes", len(r.b)))
	}
}

// CompactStringUTF8 reads a non-null string with a uvarint length+1 that
// must be valid UTF-8. Unlike [Reader.CompactString] it has no length limit
// beyond the input: it is the reader of Krabka's private RPCs, whose
// strings are checked for UTF-8 rather than for Kafka's 32767-byte cap.
func (r *Reader) CompactStringUTF8() string {
	n := r.Uvarint()
	if r.err != nil {
		return ""
	}
	if n == 0 {
		r.Invalid("compact string", "null in a non-nullable string")
		return ""
	}
	s, _ := r.utf8("compact string", n-1)
	return s
}

// CompactNullableStringUTF8 reads a string with a uvarint length+1 (0 is
// null and returns nil) that must be valid UTF-8, with no length limit
// beyond the input, as [Reader.CompactStringUTF8].
func (r *Reader) CompactNullableStringUTF8() *string {
	n := r.Uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	s, ok := r.utf8("compact nullable string", n-1)
	if !ok {
		return nil
	}
	return &s
}

// utf8 reads n bytes as a string that must be valid UTF-8.
func (r *Reader) utf8(what string, n uint32) (string, bool) {
	at := r.Offset()
	b := r.take(what, int(n))
	if r.err != nil {
		return "", false
	}
	if !utf8.Valid(b) {
		r.Fail(&Error{Offset: at, What: what, Cause: ErrInvalid, Detail: "invalid UTF-8"})
		return "", false
	}
	return string(b), true
}

// CompactBytesAlias reads non-null bytes with a uvarint length+1. Unlike
// [Reader.CompactBytes] the result aliases the input (its capacity ends
// with the value), and an empty value is a non-nil empty slice.
func (r *Reader) CompactBytesAlias() []byte {
	n := r.Uvarint()
	if r.err != nil {
		return nil
	}
	if n == 0 {
		r.Invalid("compact bytes", "null in non-nullable bytes")
		return nil
	}
	return r.take("compact bytes", int(n-1))
}

// CompactNullableBytesAlias reads bytes with a uvarint length+1; 0 is null
// and returns nil. A non-null result aliases the input, as
// [Reader.CompactBytesAlias].
func (r *Reader) CompactNullableBytesAlias() []byte {
	n := r.Uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	return r.take("compact nullable bytes", int(n-1))
}

// SkipTags reads a tagged-field section and discards its fields, checking
// what [Reader.TagCount] and [Reader.NextTag] check: a count that fits the
// remaining bytes, strictly ascending tags, and sizes within the input.
func (r *Reader) SkipTags() {
	n := r.TagCount()
	prev := int64(-1)
	for i := 0; i < n && r.err == nil; i++ {
		tag, _ := r.NextTag(prev)
		prev = int64(tag)
	}
}
