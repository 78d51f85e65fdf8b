package gogen

import (
	"bytes"
	"fmt"

	"github.com/krabka-go/krabka/internal/codegen"
)

// support returns the per-package file that names the shared runtime
// types of package genrt in the generated package, so that its API reads
// metadata.DecodeError while errors.As matches across packages.
// RawTaggedField is named only when a message keeps unknown tags (a
// package of private RPCs skips them).
func support(pkg string, keepsTags bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `%s

package %s

import "github.com/krabka-go/krabka/internal/codegen/genrt"
`, Header, pkg)
	if keepsTags {
		b.WriteString(`
// RawTaggedField is a tagged field that the decoding version does not
// know. It is kept so that encoding the value again reproduces the input.
type RawTaggedField = genrt.RawTaggedField
`)
	}
	b.WriteString(`
// EncodeError reports a value that cannot be encoded at the requested
// version.
type EncodeError = genrt.EncodeError

// DecodeError reports bytes that cannot be decoded as a message; it is the
// same type in every generated package.
type DecodeError = genrt.DecodeError

// UnsupportedVersionError reports a version outside a message's valid
// versions.
type UnsupportedVersionError = genrt.UnsupportedVersionError
`)
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
