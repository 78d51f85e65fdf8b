package transport

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// rfc2253Keywords are the attribute types Java's X500Principal.getName()
// writes by name in RFC 2253 form, the form Kafka's principal builder and
// ssl.principal.mapping.rules see; every other type is written as its
// OID with the value's DER in hex (2.5.4.5=#1303…), as Java writes it.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
}

// attributeTypeAndValue is one attribute of a name, its value kept as
// encoded.
type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// subjectName returns the subject of cert in RFC 2253 form as Java's
// X500Principal.getName() writes it: the relative names from last to
// first, joined by commas, the attributes of a multi-valued one by +.
func subjectName(cert *x509.Certificate) string {
	var rdns []asn1.RawValue
	if rest, err := asn1.Unmarshal(cert.RawSubject, &rdns); err != nil || len(rest) != 0 {
		return cert.Subject.String() // the parser accepted it; cannot happen
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		var atvs []attributeTypeAndValue
		if _, err := asn1.UnmarshalWithParams(rdns[i].FullBytes, &atvs, "set"); err != nil {
			return cert.Subject.String()
		}
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, atv := range atvs {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, atv)
		}
	}
	return b.String()
}

// writeAttribute writes one attribute: a keyword type with a string
// value as keyword=value, escaped as RFC 2253 requires; any other as
// oid=#hex of the value's DER.
func writeAttribute(b *strings.Builder, atv attributeTypeAndValue) {
	oid := atv.Type.String()
	if kw, ok := rfc2253Keywords[oid]; ok {
		if s, ok := directoryString(atv.Value); ok {
			b.WriteString(kw)
			b.WriteByte('=')
			writeEscaped(b, s)
			return
		}
	}
	b.WriteString(oid)
	b.WriteString("=#")
	b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
}

// directoryString returns the text of a string-typed value.
func directoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String:
		return string(v.Bytes), utf8.Valid(v.Bytes)
	case asn1.TagPrintableString, asn1.TagIA5String, asn1.TagNumericString, asn1.TagT61String:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		r := make([]rune, 0, len(v.Bytes)/2)
		for i := 0; i < len(v.Bytes); i += 2 {
			r = append(r, rune(v.Bytes[i])<<8|rune(v.Bytes[i+1]))
		}
		return string(r), true
	}
	return "", false
}

// writeEscaped writes s with RFC 2253's escapes: a backslash before
// , + " \ < > ; anywhere, before # or a space at the start, and before a
// space at the end.
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(`,+"\<>;`, c) >= 0,
			i == 0 && (c == '#' || c == ' '),
			i == len(s)-1 && c == ' ':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
}
