package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// errShort is the cause recorded by reader when a field runs past the end
// of its input.
var errShort = errors.New("not enough bytes")

// reader is the bounds-checked cursor under the hand-written codecs of this
// package (the request header and the private RPCs). It keeps a sticky
// error: after the first failure every read returns a zero value, and err
// reports the first problem with the byte offset where it happened, so a
// decoder reads a whole structure and checks once.
//
// No read allocates from a length before checking that length against the
// bytes that remain; array counts are checked against the remainder times
// the smallest encoded element, so hostile input makes a decoder allocate at
// most a small multiple of its own size.
type reader struct {
	src []byte
	off int
	err error
}

func (r *reader) fail(what string, cause error) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d: %w", what, r.off, cause)
	}
	r.src = r.src[:r.off]
}

func (r *reader) remaining() int { return len(r.src) - r.off }

// take returns the next n bytes, or nil after recording an error.
func (r *reader) take(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.remaining() {
		r.fail(what, errShort)
		return nil
	}
	b := r.src[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

func (r *reader) int8(what string) int8 {
	b := r.take(what, 1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

// boolean reads one byte; any value but 0 is true, as Kafka's
// Readable.readBoolean decides.
func (r *reader) boolean(what string) bool {
	b := r.take(what, 1)
	return b != nil && b[0] != 0
}

func (r *reader) int16(what string) int16 {
	b := r.take(what, 2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) int32(what string) int32 {
	b := r.take(what, 4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64(what string) int64 {
	b := r.take(what, 8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *reader) uuid(what string) [16]byte {
	var u [16]byte
	copy(u[:], r.take(what, 16))
	return u
}

// uvarint reads an unsigned varint of at most 5 bytes whose value fits in
// 32 bits, as Kafka's ByteUtils.readUnsignedVarint does. Non-minimal
// encodings (a redundant trailing zero group) are rejected so that decoding
// followed by encoding is an identity.
func (r *reader) uvarint(what string) uint32 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < 5; i++ {
		if r.off >= len(r.src) {
			r.fail(what, errShort)
			return 0
		}
		c := r.src[r.off]
		r.off++
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				r.fail(what, errors.New("non-minimal varint"))
				return 0
			}
			if v > math.MaxUint32 {
				r.fail(what, errors.New("varint overflows 32 bits"))
				return 0
			}
			return uint32(v)
		}
	}
	r.fail(what, errors.New("varint longer than 5 bytes"))
	return 0
}

// compactLen reads a compact length (uvarint holding length+1). It returns
// -1 for null and checks a non-null length against the remaining bytes.
func (r *reader) compactLen(what string) int {
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	l := int(n) - 1
	if l > r.remaining() {
		r.fail(what, errShort)
		return 0
	}
	return l
}

// compactNullableBytes reads compact nullable bytes; null is returned as
// nil and empty as a non-nil empty slice. The result aliases the input.
func (r *reader) compactNullableBytes(what string) []byte {
	l := r.compactLen(what)
	if r.err != nil || l < 0 {
		return nil
	}
	return r.take(what, l)
}

// compactBytes reads non-nullable compact bytes; null is an error. The
// result aliases the input.
func (r *reader) compactBytes(what string) []byte {
	l := r.compactLen(what)
	if r.err != nil {
		return nil
	}
	if l < 0 {
		r.fail(what, errors.New("null for a non-nullable field"))
		return nil
	}
	return r.take(what, l)
}

// compactNullableString reads a compact nullable string that must be valid
// UTF-8.
func (r *reader) compactNullableString(what string) *string {
	l := r.compactLen(what)
	if r.err != nil || l < 0 {
		return nil
	}
	s, ok := r.utf8(what, l)
	if !ok {
		return nil
	}
	return &s
}

// compactString reads a non-nullable compact string that must be valid
// UTF-8; null is an error.
func (r *reader) compactString(what string) string {
	l := r.compactLen(what)
	if r.err != nil {
		return ""
	}
	if l < 0 {
		r.fail(what, errors.New("null for a non-nullable field"))
		return ""
	}
	s, _ := r.utf8(what, l)
	return s
}

// utf8 reads n bytes as a string, rejecting invalid UTF-8.
func (r *reader) utf8(what string, n int) (string, bool) {
	b := r.take(what, n)
	if r.err != nil {
		return "", false
	}
	if !utf8.Valid(b) {
		r.off -= n
		r.fail(what, errors.New("invalid UTF-8"))
		return "", false
	}
	return string(b), true
}

// compactArrayLen reads a compact array count (-1 for null) and checks that
// count×minElem bytes remain, so that the caller may allocate count
// elements.
func (r *reader) compactArrayLen(what string, minElem int) int {
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	l := int(n) - 1
	if l > 0 && l > r.remaining()/minElem {
		r.fail(what, errShort)
		return 0
	}
	return l
}

// nonNullArrayLen reads a compact array count like compactArrayLen and
// refuses null; it returns 0 after an error.
func (r *reader) nonNullArrayLen(what string, minElem int) int {
	n := r.compactArrayLen(what, minElem)
	if r.err == nil && n < 0 {
		r.fail(what, errors.New("null for a non-nullable array"))
	}
	if r.err != nil {
		return 0
	}
	return n
}

// skipTags reads a tagged-field section and discards every field, as Kafka
// keeps unknown tags aside without interpreting them. Tags must be strictly
// ascending and each size must fit in the remaining bytes.
func (r *reader) skipTags(what string) {
	n := r.uvarint(what)
	if r.err != nil {
		return
	}
	if int64(n) > int64(r.remaining())/2 {
		r.fail(what, errShort)
		return
	}
	var last int64 = -1
	for i := uint32(0); i < n && r.err == nil; i++ {
		tag := r.uvarint(what)
		if r.err == nil && int64(tag) <= last {
			r.fail(what, errors.New("tagged fields out of order"))
			return
		}
		last = int64(tag)
		size := r.uvarint(what)
		if r.err != nil {
			return
		}
		if int64(size) > int64(r.remaining()) {
			r.fail(what, errShort)
			return
		}
		r.off += int(size)
	}
}

// --- append-style writers -------------------------------------------------

func appendInt16(dst []byte, v int16) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(v))
}

func appendInt32(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v))
}

func appendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

func appendUvarint(dst []byte, v uint32) []byte {
	return binary.AppendUvarint(dst, uint64(v))
}

func appendCompactBytes(dst, b []byte) []byte {
	dst = appendUvarint(dst, uint32(len(b))+1)
	return append(dst, b...)
}

func appendCompactNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	return appendCompactBytes(dst, b)
}

func appendCompactNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, 0)
	}
	dst = appendUvarint(dst, uint32(len(*s))+1)
	return append(dst, *s...)
}

func appendCompactString(dst []byte, s string) []byte {
	dst = appendUvarint(dst, uint32(len(s))+1)
	return append(dst, s...)
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// appendEmptyTags appends a tagged-field section with no fields.
func appendEmptyTags(dst []byte) []byte { return append(dst, 0) }
