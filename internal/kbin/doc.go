// Package kbin reads and writes the primitive types of Kafka's binary
// message format: fixed-width big-endian integers, unsigned and zig-zag
// varints, float64, bool, UUIDs, classic and compact (nullable) strings and
// bytes, array lengths and tagged-field sections.
//
// It is the runtime under the generated codecs in package metadata,
// internal/control and internal/wire (whose private RPCs use the aliasing,
// UTF-8-checking readers and [Reader.SkipTags]) and under the request and
// response headers, and is kept free of reflection so that decoding a
// record costs a handful of bounds checks and copies.
//
// # Reading
//
// A [Reader] walks a byte slice with a sticky error: after the first
// failure every further read returns a zero value and [Reader.Err] reports
// the first problem together with the byte offset where it happened. Callers
// therefore read a whole structure and check the error once (or once per
// field when they want to name the field in the error).
//
// A Reader never allocates from a length it has not checked against the
// bytes that remain: a string or byte length larger than the remainder is an
// error, and an array count is checked against the remainder times the
// smallest possible encoded size of one element before the caller allocates
// the slice ([Reader.ArrayLen], [Reader.CompactArrayLen]). A hostile length
// field can therefore make a decoder allocate at most a small multiple of
// the input size.
//
// The Reader accepts only the canonical encodings that Kafka's writers
// produce: varints must be minimal (no redundant continuation bytes) and
// booleans must be 0 or 1. This makes decoding followed by encoding an exact
// identity on every input that decodes, which the record codecs and their
// fuzz tests rely on.
//
// # Writing
//
// Writers are append-style functions (AppendInt32, AppendCompactString, ...)
// that take a destination slice and return it extended, in the manner of
// strconv.AppendInt, so a caller can encode a whole record into one reused
// buffer without intermediate allocations.
//
// # Encodings
//
// Classic (non-flexible) message versions use an int16 length for strings
// (-1 for null), an int32 length for bytes and arrays (-1 for null). Flexible
// versions use "compact" forms: an unsigned varint holding length+1, where 0
// means null, and every structure ends with a tagged-field section: an
// unsigned varint count followed by that many (uvarint tag, uvarint size,
// size bytes) entries in strictly ascending tag order.
package kbin
