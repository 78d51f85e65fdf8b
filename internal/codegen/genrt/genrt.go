// Package genrt is the runtime shared by every package of codecs that
// krabkagen generates: the unknown tagged field, the typed encode and
// decode errors, and the helpers the generated code calls to build them.
//
// The types live here once so that an error from any generated package
// has the same type: errors.As with a *DecodeError target matches a
// decode error of package metadata, internal/control or internal/wire
// alike. Each generated package re-exports the types under their own names
// with type aliases (support_gen.go), so callers need not import this
// package.
package genrt

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/kbin"
)

// RawTaggedField is a tagged field that the decoding version does not
// know. It is kept so that encoding the value again reproduces the input.
type RawTaggedField struct {
	// Tag is the field's tag.
	Tag uint32
	// Data is the field's encoded payload.
	Data []byte
}

// EncodeError reports a value that cannot be encoded at the requested
// version, following Kafka's rules (a field that the version lacks must hold
// its default unless it is ignorable; null only where nullable; strings of
// at most 32767 bytes).
type EncodeError struct {
	// Message is the top-level message being encoded.
	Message string
	// Version is the version being encoded.
	Version int16
	// Field is the path of the field ("EndPoints[2].Host").
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *EncodeError) Error() string {
	return fmt.Sprintf("encode %s v%d: field %s: %s", e.Message, e.Version, e.Field, e.Reason)
}

// DecodeError reports bytes that cannot be decoded as a message.
type DecodeError struct {
	// Message is the top-level message being decoded.
	Message string
	// Version is the version being decoded.
	Version int16
	// Field is the path of the field being read ("EndPoints[2].Host"),
	// empty when the problem is after the last field.
	Field string
	// Err is the cause; errors.Is matches it against kbin's ErrTruncated
	// or ErrInvalid, which public packages re-export.
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("decode %s v%d: %v", e.Message, e.Version, e.Err)
	}
	return fmt.Sprintf("decode %s v%d: field %s: %v", e.Message, e.Version, e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// UnsupportedVersionError reports a version outside a message's valid
// versions.
type UnsupportedVersionError struct {
	// Message names the message.
	Message string
	// Version is the requested version.
	Version int16
	// Min and Max are the message's valid versions.
	Min, Max int16
}

// Error implements error.
func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("%s has no version %d (valid versions %d-%d)", e.Message, e.Version, e.Min, e.Max)
}

// FieldError returns a *DecodeError for field with cause err; the message
// and version are filled in by [FinishDecodeError].
func FieldError(field string, err error) error {
	return &DecodeError{Field: field, Err: err}
}

// PrefixDecodeError prepends prefix to the field path of a *DecodeError in
// err, and returns err.
func PrefixDecodeError(err error, prefix string) error {
	var de *DecodeError
	if errors.As(err, &de) {
		if de.Field == "" {
			de.Field = prefix
		} else {
			de.Field = prefix + "." + de.Field
		}
	}
	return err
}

// FinishDecodeError sets the message and version of a *DecodeError in err,
// and returns err.
func FinishDecodeError(err error, message string, version int16) error {
	var de *DecodeError
	if errors.As(err, &de) {
		de.Message, de.Version = message, version
	}
	return err
}

// PrefixEncodeError prepends prefix to the field path of an *EncodeError
// in err, and returns err.
func PrefixEncodeError(err error, prefix string) error {
	var ee *EncodeError
	if errors.As(err, &ee) {
		ee.Field = prefix + "." + ee.Field
	}
	return err
}

// FinishEncodeError sets the message and version of an *EncodeError in
// err, and returns err.
func FinishEncodeError(err error, message string, version int16) error {
	var ee *EncodeError
	if errors.As(err, &ee) {
		ee.Message, ee.Version = message, version
	}
	return err
}

// DefaultTagError is the cause of a decode error for a tagged field whose
// payload is the field's default, which Kafka's writers never emit.
func DefaultTagError(tag uint32) error {
	return fmt.Errorf("tag %d carries the field's default value, which Kafka never writes: %w", tag, kbin.ErrInvalid)
}

// CheckUnknownTags checks that raw tagged fields are in strictly
// ascending order, fit an int32 size and do not collide with a field known
// at version (known may be nil when the structure has no tagged fields).
func CheckUnknownTags(tags []RawTaggedField, version int16, known func(uint32, int16) bool) error {
	for i, t := range tags {
		if i > 0 && t.Tag <= tags[i-1].Tag {
			return &EncodeError{Field: "UnknownTags", Reason: fmt.Sprintf("tag %d follows tag %d; tags must be strictly ascending", t.Tag, tags[i-1].Tag)}
		}
		if known != nil && known(t.Tag, version) {
			return &EncodeError{Field: "UnknownTags", Reason: fmt.Sprintf("tag %d is a known field at this version", t.Tag)}
		}
		if int64(len(t.Data)) > 0x7fffffff {
			return &EncodeError{Field: "UnknownTags", Reason: fmt.Sprintf("tag %d is too large", t.Tag)}
		}
	}
	return nil
}

// AppendRawTag appends t as one entry of a tagged-field section: uvarint
// tag, uvarint size, payload.
func AppendRawTag(dst []byte, t RawTaggedField) []byte {
	dst = kbin.AppendUvarint(dst, t.Tag)
	dst = kbin.AppendUvarint(dst, uint32(len(t.Data)))
	return append(dst, t.Data...)
}

// Resize returns s with length n, in s's own array when its capacity
// suffices and in a new one otherwise, so that a value decoded again
// reuses the arrays of its previous decode. The elements kept are the
// caller's to overwrite. The result is never nil: a decoded empty array
// differs from a null one.
func Resize[T any](s []T, n int) []T {
	if s != nil && cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// StrPtr returns a pointer to a copy of s, for the non-null default of a
// nullable string.
func StrPtr(s string) *string { return &s }
