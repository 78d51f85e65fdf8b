// Package tlstest makes certificate authorities and the certificates
// they issue, in memory, for tests of TLS listeners and clients.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// serial numbers the certificates of one test binary.
var serial atomic.Int64

// CA is a self-signed certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate in PEM, a truststore's contents.
	PEM []byte
}

// NewCA returns a CA whose subject is CN=name, valid from an hour ago for
// a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	cert := certify(t, tmpl, tmpl, key, key)
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}
}

// Leaf is an issued certificate and its key.
type Leaf struct {
	Cert *x509.Certificate
	// CertPEM is the certificate followed by its issuer's, a certificate
	// chain; KeyPEM is the unencrypted PKCS#8 key ("PRIVATE KEY").
	CertPEM, KeyPEM []byte

	key    *ecdsa.PrivateKey
	issuer *x509.Certificate
}

// Keystore returns the key followed by the chain: the contents of a PEM
// ssl.keystore.location file.
func (l *Leaf) Keystore() []byte { return append(append([]byte{}, l.KeyPEM...), l.CertPEM...) }

// TLSCertificate returns the leaf as a tls.Certificate.
func (l *Leaf) TLSCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Options shape an issued certificate.
type Options struct {
	// Names are the DNS names and IP addresses it is valid for.
	Names []string
	// NotAfter, when set, ends its validity (a time in the past makes an
	// expired certificate); the default is a day from now.
	NotAfter time.Time
}

// Issue returns a certificate with subject CN=cn, for both server and
// client authentication, signed by ca.
func (ca *CA) Issue(t testing.TB, cn string, o Options) *Leaf {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"krabka"}},
		NotBefore:    time.Now().Add(-2 * time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if !o.NotAfter.IsZero() {
		tmpl.NotAfter = o.NotAfter
	}
	for _, n := range o.Names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	cert := certify(t, tmpl, ca.Cert, key, ca.key)
	der := cert.Raw
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.PEM...)
	return &Leaf{
		Cert:    cert,
		CertPEM: chain,
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		key:     key,
		issuer:  ca.Cert,
	}
}

// Pool returns a pool holding the CA certificates of cas.
func Pool(cas ...*CA) *x509.CertPool {
	p := x509.NewCertPool()
	for _, ca := range cas {
		p.AddCert(ca.Cert)
	}
	return p
}

// SelfSigned returns tmpl as a certificate signed by a new key of its
// own, for tests of what a certificate's fields become.
func SelfSigned(t testing.TB, tmpl *x509.Certificate) *x509.Certificate {
	t.Helper()
	key := newKey(t)
	return certify(t, tmpl, tmpl, key, key)
}

// certify returns tmpl, for key's public key, signed by signer as
// parent.
func certify(t testing.TB, tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
