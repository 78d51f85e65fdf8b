package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/krabka-go/krabka/internal/transport"
)

// The SCRAM user of the krabka-tls system: the controllers authenticate
// to each other as it, and so do the harness's clients.
const (
	secureUser     = "bench"
	securePassword = "bench-secret"
	secureMech     = transport.MechanismScramSHA512
)

// secureSetup is what a krabka-tls system needs beside a plain one: the
// certificates in dir, the properties that put the listener on SASL_SSL,
// and the clients' TLS and SASL settings.
type secureSetup struct {
	roots *x509.CertPool
	dir   string
}

// newSecureSetup makes a CA and one certificate for 127.0.0.1, shared by
// every node, in dir.
func newSecureSetup(dir string) (*secureSetup, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "krabkabench-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "krabkabench-node"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	keystore := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), caPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "node.pem"), keystore, 0o600); err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return &secureSetup{roots: roots, dir: dir}, nil
}

// properties are the lines that put a node's controller listener on
// SASL_SSL with SCRAM-SHA-512, its peers included.
func (s *secureSetup) properties() []string {
	jaas := fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, secureUser, securePassword)
	return []string{
		"listener.security.protocol.map=CONTROLLER:SASL_SSL",
		"sasl.enabled.mechanisms=" + secureMech,
		"sasl.mechanism.controller.protocol=" + secureMech,
		"listener.name.controller." + strings.ToLower(secureMech) + ".sasl.jaas.config=" + jaas,
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + filepath.Join(s.dir, "node.pem"),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + filepath.Join(s.dir, "ca.pem"),
	}
}

// formatArgs are the storage format flags that give a new quorum the
// SCRAM credential.
func (s *secureSetup) formatArgs() []string {
	return []string{"--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", secureMech, secureUser, securePassword)}
}

// upgrade secures a client connection to addr: TLS, then SCRAM.
func (s *secureSetup) upgrade(ctx context.Context, nc net.Conn, addr string) (net.Conn, error) {
	tlsFor := func(string) *tls.Config {
		return &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	}
	sasl := &transport.SASLClient{Mechanism: secureMech, Username: secureUser, Password: securePassword}
	c, _, err := transport.UpgradeClient(ctx, nc, addr, tlsFor, sasl, benchClientID, 100<<20)
	return c, err
}
