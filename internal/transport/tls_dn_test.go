package transport

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/tlstest"
)

// TestSubjectNameAsJavaWritesIt: the principal name of a certificate is
// its subject as Java's X500Principal.getName() writes it (RFC 2253),
// which ssl.principal.mapping.rules are written against: DC and UID by
// name, SERIALNUMBER, emailAddress and other types as OID=#DER in hex
// with the value's own tag, the last relative name first, a multi-valued
// one joined by +, and RFC 2253's escapes.
func TestSubjectNameAsJavaWritesIt(t *testing.T) {
	attr := func(oid asn1.ObjectIdentifier, v any) pkix.AttributeTypeAndValue {
		return pkix.AttributeTypeAndValue{Type: oid, Value: v}
	}
	ia5 := func(s string) asn1.RawValue { return asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(s)} }
	var (
		dc     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
		uid    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
		cn     = asn1.ObjectIdentifier{2, 5, 4, 3}
		ou     = asn1.ObjectIdentifier{2, 5, 4, 11}
		serial = asn1.ObjectIdentifier{2, 5, 4, 5}
		email  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	)
	for _, tt := range []struct {
		name pkix.RDNSequence
		want string
	}{
		{pkix.RDNSequence{{attr(dc, ia5("com"))}, {attr(dc, ia5("mycp"))}, {attr(ou, "sme")}, {attr(cn, "duke")}}, "CN=duke,OU=sme,DC=mycp,DC=com"},
		{pkix.RDNSequence{{attr(uid, "u1")}, {attr(serial, "42")}, {attr(email, ia5("a@b"))}}, "1.2.840.113549.1.9.1=#1603614062,2.5.4.5=#13023432,UID=u1"},
		{pkix.RDNSequence{{attr(ou, "a"), attr(cn, "b")}}, "CN=b+OU=a"}, // DER sorts a SET; the order is the encoding's
		{pkix.RDNSequence{{attr(cn, `Tkac, Adam "x" <y>;+\`)}}, `CN=Tkac\, Adam \"x\" \<y\>\;\+\\`},
		{pkix.RDNSequence{{attr(cn, "#lead ")}}, `CN=\#lead\ `},
	} {
		if got := subjectName(certWithSubject(t, tt.name)); got != tt.want {
			t.Errorf("subjectName = %q, want %q", got, tt.want)
		}
	}
}

func certWithSubject(t *testing.T, name pkix.RDNSequence) *x509.Certificate {
	t.Helper()
	raw, err := asn1.Marshal(name)
	if err != nil {
		t.Fatal(err)
	}
	return tlstest.SelfSigned(t, &x509.Certificate{SerialNumber: big.NewInt(1), RawSubject: raw, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)})
}
