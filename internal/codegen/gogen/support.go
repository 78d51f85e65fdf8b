package gogen

import (
	"bytes"
	"fmt"

	"github.com/krabka-go/krabka/internal/codegen"
)

// support returns the per-package file with the types and helpers the
// generated codecs share.
func support(pkg string, used map[string]bool) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	p("%s", Header)
	p("")
	p("package %s", pkg)
	p("")
	p("import (")
	p("\"errors\"")
	p("\"fmt\"")
	p("")
	p("\"github.com/krabka-go/krabka/internal/kbin\"")
	p(")")
	p(`
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
	return fmt.Sprintf("%[1]s: encode %%s v%%d: field %%s: %%s", e.Message, e.Version, e.Field, e.Reason)
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
		return fmt.Sprintf("%[1]s: decode %%s v%%d: %%v", e.Message, e.Version, e.Err)
	}
	return fmt.Sprintf("%[1]s: decode %%s v%%d: field %%s: %%v", e.Message, e.Version, e.Field, e.Err)
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
	return fmt.Sprintf("%[1]s: %%s has no version %%d (valid versions %%d-%%d)", e.Message, e.Version, e.Min, e.Max)
}

func fieldError(field string, err error) error {
	return &DecodeError{Field: field, Err: err}
}

func prefixDecodeError(err error, prefix string) error {
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

func finishDecodeError(err error, message string, version int16) error {
	var de *DecodeError
	if errors.As(err, &de) {
		de.Message, de.Version = message, version
	}
	return err
}

func prefixEncodeError(err error, prefix string) error {
	var ee *EncodeError
	if errors.As(err, &ee) {
		ee.Field = prefix + "." + ee.Field
	}
	return err
}

func finishEncodeError(err error, message string, version int16) error {
	var ee *EncodeError
	if errors.As(err, &ee) {
		ee.Message, ee.Version = message, version
	}
	return err
}

func defaultTagError(tag uint32) error {
	return fmt.Errorf("tag %%d carries the field's default value, which Kafka never writes: %%w", tag, kbin.ErrInvalid)
}

// checkUnknownTags checks that raw tagged fields are in strictly
// ascending order and do not collide with a field known at version.
func checkUnknownTags(tags []RawTaggedField, version int16, known func(uint32, int16) bool) error {
	for i, t := range tags {
		if i > 0 && t.Tag <= tags[i-1].Tag {
			return &EncodeError{Field: "UnknownTags", Reason: fmt.Sprintf("tag %%d follows tag %%d; tags must be strictly ascending", t.Tag, tags[i-1].Tag)}
		}
		if known != nil && known(t.Tag, version) {
			return &EncodeError{Field: "UnknownTags", Reason: fmt.Sprintf("tag %%d is a known field at this version", t.Tag)}
		}
		if int64(len(t.Data)) > 0x7fffffff {
			return &EncodeError{Field: "UnknownTags", Reason: fmt.Sprintf("tag %%d is too large", t.Tag)}
		}
	}
	return nil
}

func appendRawTag(dst []byte, t RawTaggedField) []byte {
	dst = kbin.AppendUvarint(dst, t.Tag)
	dst = kbin.AppendUvarint(dst, uint32(len(t.Data)))
	return append(dst, t.Data...)
}`, pkg)
	if used["strPtr"] {
		p(`
func strPtr(s string) *string { return &s }`)
	}
	return b.Bytes()
}

// registry returns the file listing the metadata records: API key
// constants, NewRecord and APIKey.String. The package must declare the
// types APIKey (an int16) and Record (an interface the records satisfy).
func registry(pkg string, msgs []*codegen.Message) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	p("%s", Header)
	p("")
	p("package %s", pkg)
	p("")
	p("import \"strconv\"")
	p("")
	p("// API keys of the metadata records.")
	p("const (")
	for _, m := range msgs {
		p("// APIKey%s is the API key of %s.", m.Name, m.Name)
		p("APIKey%s APIKey = %d", m.Name, m.APIKey)
	}
	p(")")
	p("")
	p("// NewRecord returns a new record of the type key with its defaults")
	p("// set, or nil when key is not a known record type.")
	p("func NewRecord(key APIKey) Record {")
	p("switch key {")
	for _, m := range msgs {
		p("case APIKey%s:", m.Name)
		p("return New%s()", m.Name)
	}
	p("}")
	p("return nil")
	p("}")
	p("")
	p("// APIKeys returns every known API key in ascending order.")
	p("func APIKeys() []APIKey {")
	p("return []APIKey{")
	sorted := append([]*codegen.Message(nil), msgs...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j].APIKey < sorted[j-1].APIKey; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, m := range sorted {
		p("APIKey%s,", m.Name)
	}
	p("}")
	p("}")
	p("")
	p("// String returns the record name of k, or APIKey(n) when unknown.")
	p("func (k APIKey) String() string {")
	p("switch k {")
	for _, m := range msgs {
		p("case APIKey%s:", m.Name)
		p("return %q", m.Name)
	}
	p("}")
	p("return \"APIKey(\" + strconv.Itoa(int(k)) + \")\"")
	p("}")
	return b.Bytes()
}
