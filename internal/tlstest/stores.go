package tlstest

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// PKCS12 returns the leaf's key and chain (the leaf, then its issuer) as
// a PKCS12 key store protected by password, as keytool and openssl
// pkcs12 -export write one (AES-256, PBKDF2, an HMAC-SHA-256 MAC).
func (l *Leaf) PKCS12(t testing.TB, password string) []byte {
	t.Helper()
	data, err := pkcs12.Modern.Encode(l.key, l.Cert, []*x509.Certificate{l.issuer}, password)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// JKS returns the leaf's key and chain as a JKS key store: the store
// protected by storePassword, its one private key entry "server" by
// keyPassword.
func (l *Leaf) JKS(t testing.TB, storePassword, keyPassword string) []byte {
	t.Helper()
	pkcs8, err := x509.MarshalPKCS8PrivateKey(l.key)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	entry := keystore.PrivateKeyEntry{
		CreationTime: time.Now(),
		PrivateKey:   pkcs8,
		CertificateChain: []keystore.Certificate{
			{Type: "X509", Content: l.Cert.Raw},
			{Type: "X509", Content: l.issuer.Raw},
		},
	}
	if err := ks.SetPrivateKeyEntry("server", entry, []byte(keyPassword)); err != nil {
		t.Fatal(err)
	}
	return storeJKS(t, ks, storePassword)
}

// PKCS12Truststore returns the certificates of cas as a PKCS12 trust
// store, each marked trusted as keytool -importcert marks it; an empty
// password writes a store without one.
func PKCS12Truststore(t testing.TB, password string, cas ...*CA) []byte {
	t.Helper()
	var certs []*x509.Certificate
	for _, ca := range cas {
		certs = append(certs, ca.Cert)
	}
	enc := pkcs12.Modern
	if password == "" {
		enc = pkcs12.Passwordless
	}
	data, err := enc.EncodeTrustStore(certs, password)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// JKSTruststore returns the certificates of cas as a JKS trust store of
// trusted certificate entries, protected by password.
func JKSTruststore(t testing.TB, password string, cas ...*CA) []byte {
	t.Helper()
	ks := keystore.New()
	for i, ca := range cas {
		entry := keystore.TrustedCertificateEntry{CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: ca.Cert.Raw}}
		if err := ks.SetTrustedCertificateEntry(string(rune('a'+i))+"-ca", entry); err != nil {
			t.Fatal(err)
		}
	}
	return storeJKS(t, ks, password)
}

// WriteFile writes data to name in dir, readable by its owner only as a
// store file should be, and returns its path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func storeJKS(t testing.TB, ks keystore.KeyStore, password string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
