package raft

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// tlsStores are one SSL listener's key store and trust store. Stores
// given as files (JKS, PKCS12 or PEM) are read again, with the same type
// and passwords, when a file's modification time or size changes,
// checked at each handshake: a new connection gets the new
// certificate, established ones keep theirs. A file that no longer reads
// keeps the stores as they were and logs an error once per change.
type tlsStores struct {
	listener string
	log      *slog.Logger
	// keyFile and trustFile are ssl.keystore.location and
	// ssl.truststore.location; empty for an inline store or none.
	keyFile, trustFile string
	// keyStore and trustStore say how keyFile and trustFile read: their
	// types and passwords.
	keyStore   keystoreFile
	trustStore truststoreFile

	mu         sync.Mutex
	cert       *tls.Certificate
	roots      *x509.CertPool // nil: the system's roots
	keyStamp   fileStamp      // of the file cert was read from, or last tried
	trustStamp fileStamp
}

// fileStamp is what a store's reload compares: a change of either means
// the file was replaced or rewritten.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// newTLSStores reads the stores of the listener called name from its
// settings (Validate has checked them).
func newTLSStores(name string, s map[string]sslSetting, log *slog.Logger) (*tlsStores, error) {
	st := &tlsStores{listener: name, log: log}
	if loc := s[keySSLKeystoreLocation]; loc.set {
		st.keyFile = loc.value
		st.keyStore = keystoreFile{typ: storeType(s[keySSLKeystoreType].value), storePassword: s[keySSLKeystorePassword].value, keyPassword: s[keySSLKeyPassword].value}
		if st.keyStore.typ != storePEM && !s[keySSLKeyPassword].set {
			st.keyStore.keyPassword = st.keyStore.storePassword
		}
		stamp, cert, err := readStore(loc.value, st.keyStore.decode)
		if err != nil {
			return nil, &ConfigError{Key: loc.key, Value: loc.value, Reason: err.Error()}
		}
		st.cert, st.keyStamp = cert, stamp
	} else if chain, key := s[keySSLKeystoreCertificateChain], s[keySSLKeystoreKey]; chain.set {
		cert, err := keyPair([]byte(chain.value), []byte(key.value), s[keySSLKeyPassword].value)
		if err != nil {
			return nil, &ConfigError{Key: chain.key, Reason: fmt.Sprintf("with %s: %v", key.key, err)}
		}
		st.cert = cert
	}
	if loc := s[keySSLTruststoreLocation]; loc.set {
		st.trustFile = loc.value
		pass := s[keySSLTruststorePassword]
		st.trustStore = truststoreFile{typ: storeType(s[keySSLTruststoreType].value), password: pass.value, passwordSet: pass.set}
		stamp, roots, err := readStore(loc.value, st.trustStore.decode)
		if err != nil {
			return nil, &ConfigError{Key: loc.key, Value: loc.value, Reason: err.Error()}
		}
		st.roots, st.trustStamp = roots, stamp
	} else if certs := s[keySSLTruststoreCertificates]; certs.set {
		roots, err := certPool([]byte(certs.value))
		if err != nil {
			return nil, &ConfigError{Key: certs.key, Reason: err.Error()}
		}
		st.roots = roots
	}
	return st, nil
}

// readStore reads the store file at path with parse, and the stamp it
// had before it was read. A file larger than maxStoreFile is refused
// unread.
func readStore[T any](path string, parse func([]byte) (T, error)) (fileStamp, T, error) {
	var zero T
	stamp, err := stampOf(path)
	if err != nil {
		return stamp, zero, err
	}
	if stamp.size > maxStoreFile {
		return stamp, zero, fmt.Errorf("the file has %d bytes, more than a key or trust store holds (at most %d)", stamp.size, maxStoreFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return stamp, zero, err
	}
	v, err := parse(data)
	return stamp, v, err
}

// current returns the stores as they are now, reading a changed file
// first.
func (st *tlsStores) current() (*tls.Certificate, *x509.CertPool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.reload(keySSLKeystoreLocation, st.keyFile, &st.keyStamp, func() error {
		_, cert, err := readStore(st.keyFile, st.keyStore.decode)
		if err == nil {
			st.cert = cert
		}
		return err
	})
	st.reload(keySSLTruststoreLocation, st.trustFile, &st.trustStamp, func() error {
		_, roots, err := readStore(st.trustFile, st.trustStore.decode)
		if err == nil {
			st.roots = roots
		}
		return err
	})
	return st.cert, st.roots
}

// reload runs read, which replaces a store with the contents of path,
// when path (the property key's value; empty for none) no longer has
// stamp, and records its new stamp. A failed read leaves the store as it
// was and is logged.
func (st *tlsStores) reload(key, path string, stamp *fileStamp, read func() error) {
	if path == "" {
		return
	}
	now, err := stampOf(path)
	if err != nil || now == *stamp {
		return
	}
	*stamp = now
	attrs := []slog.Attr{slog.String(logKeyListener, st.listener), slog.String(logKeyProperty, key), slog.String(logKeyFile, path)}
	if err := read(); err != nil {
		st.log.LogAttrs(context.Background(), slog.LevelError, "TLS store changed but does not read; keeping the one in use", append(attrs, slog.Any(logKeyError, err))...)
		return
	}
	st.log.LogAttrs(context.Background(), slog.LevelInfo, "TLS store reloaded", attrs...)
}

// pemBlock matches one PEM block, also when a properties file's line
// continuations have turned its line breaks into spaces or removed them,
// as Kafka's PemParser accepts.
var pemBlock = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\s]*)-----END ([A-Z0-9 ]+)-----`)

// pemBlocks returns the PEM blocks of data, of any layout.
func pemBlocks(data []byte) ([]*pem.Block, error) {
	var blocks []*pem.Block
	for _, m := range pemBlock.FindAllSubmatch(data, -1) {
		if !bytes.Equal(m[1], m[3]) {
			return nil, fmt.Errorf("PEM block BEGIN %s ends with END %s", m[1], m[3])
		}
		der, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(m[2]), nil)))
		if err != nil {
			return nil, fmt.Errorf("PEM block %s: %w", m[1], err)
		}
		blocks = append(blocks, &pem.Block{Type: string(m[1]), Bytes: der})
	}
	return blocks, nil
}

// keyPair reads a certificate chain (leaf first) from chain and the
// private key from key, which may be the same PEM text: Kafka's
// FileBasedPemStore reads both from one file. An encrypted key is
// decrypted with password (ssl.key.password), which must be set exactly
// when the key is encrypted, as Kafka's PemStore requires.
func keyPair(chain, key []byte, password string) (*tls.Certificate, error) {
	var certPEM, keyPEM []byte
	cb, err := pemBlocks(chain)
	if err != nil {
		return nil, err
	}
	for _, b := range cb {
		if b.Type == "CERTIFICATE" {
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		}
	}
	kb, err := pemBlocks(key)
	if err != nil {
		return nil, err
	}
	for _, b := range kb {
		if keyPEM != nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		if b.Type != "ENCRYPTED PRIVATE KEY" {
			if password != "" {
				return nil, fmt.Errorf("%s is set but the private key is not encrypted; remove the property", keySSLKeyPassword)
			}
			keyPEM = pem.EncodeToMemory(b)
			continue
		}
		if password == "" {
			return nil, fmt.Errorf("the private key is encrypted: set %s", keySSLKeyPassword)
		}
		der, err := decryptPKCS8(b.Bytes, password)
		if err != nil {
			return nil, err
		}
		if _, err := x509.ParsePKCS8PrivateKey(der); err != nil {
			return nil, errWrongKeyPassword
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	switch {
	case certPEM == nil:
		return nil, errors.New("no PEM certificate (BEGIN CERTIFICATE) found")
	case keyPEM == nil:
		return nil, errors.New("no PEM private key (BEGIN PRIVATE KEY or BEGIN ENCRYPTED PRIVATE KEY) found")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &cert, nil
}

// certPool reads the PEM certificates of a trust store.
func certPool(data []byte) (*x509.CertPool, error) {
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("trust store certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM certificate (BEGIN CERTIFICATE) found")
	}
	return pool, nil
}

// listenerTLS is what one SSL listener's settings make: the server side
// of its TLS, and the client side over the same stores, which this node
// uses to reach the other controllers when the listener is the first
// controller listener.
type listenerTLS struct {
	server *tls.Config
	client func(host string) *tls.Config
	// mapName names a client by its certificate's subject
	// (ssl.principal.mapping.rules).
	mapName func(dn string) (string, error)
}

// newListenerTLS builds the TLS configurations of the listener called
// name.
func newListenerTLS(name string, s map[string]sslSetting, log *slog.Logger) (listenerTLS, error) {
	base, err := tlsBase(s)
	if err != nil {
		return listenerTLS{}, err
	}
	st, err := newTLSStores(name, s, log)
	if err != nil {
		return listenerTLS{}, err
	}
	if st.cert == nil {
		return listenerTLS{}, &ConfigError{Key: s[keySSLKeystoreLocation].key, Reason: fmt.Sprintf("required: listener %s is mapped to SSL and needs a key store", name)}
	}
	clientAuth := tls.NoClientCert
	switch strings.ToLower(s[keySSLClientAuth].value) {
	case "required":
		clientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		clientAuth = tls.VerifyClientCertIfGiven
	}
	server := base.Clone()
	server.ClientAuth = clientAuth
	// No session resumption: every connection runs a full handshake
	// against the stores as they are then, so that a replaced trust store
	// holds for every new connection.
	server.SessionTicketsDisabled = true
	server.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cert, roots := st.current()
		c := base.Clone()
		c.SessionTicketsDisabled = true
		c.ClientAuth = clientAuth
		c.Certificates = []tls.Certificate{*cert}
		c.ClientCAs = roots
		return c, nil
	}
	mapper, err := parsePrincipalMappingRules(s[keySSLPrincipalMappingRules].value)
	if err != nil {
		return listenerTLS{}, &ConfigError{Key: s[keySSLPrincipalMappingRules].key, Value: s[keySSLPrincipalMappingRules].value, Reason: err.Error()}
	}
	return listenerTLS{server: server, client: newClientTLS(base, st, s), mapName: mapper.name}, nil
}

// tlsBase is the part of a TLS configuration both sides share: the
// protocol versions and the TLS 1.2 cipher suites of s.
func tlsBase(s map[string]sslSetting) (*tls.Config, error) {
	minV, maxV, err := versionRange(s)
	if err != nil {
		return nil, err
	}
	var suites []uint16
	for _, n := range splitCSV(s[keySSLCipherSuites].value) {
		if id, is13, _ := cipherSuite(n); !is13 {
			suites = append(suites, id)
		}
	}
	return &tls.Config{MinVersion: minV, MaxVersion: maxV, CipherSuites: suites}, nil
}

// newClientTLS returns the client side of TLS over the stores st: the
// configuration for a connection to host, which presents st's
// certificate when the server asks for one (none when st has no key
// store) and checks the server's chain against st's trust store, and its
// host name unless ssl.endpoint.identification.algorithm is empty.
func newClientTLS(base *tls.Config, st *tlsStores, s map[string]sslSetting) func(host string) *tls.Config {
	checkHost := s[keySSLEndpointIdentification].value != ""
	return func(host string) *tls.Config {
		cert, roots := st.current()
		if cert == nil {
			cert = &tls.Certificate{} // sends no certificate
		}
		c := base.Clone()
		c.ServerName = host
		c.RootCAs = roots
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		if !checkHost {
			// ssl.endpoint.identification.algorithm is empty: the chain
			// is checked here, against the same roots, without the host
			// name that Go's own check would require.
			c.InsecureSkipVerify = true
			c.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, roots) }
		}
		return c
	}
}

// verifyChain checks the server's certificate chain against roots (nil:
// the system's), without its host name.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server sent no certificate")
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}
