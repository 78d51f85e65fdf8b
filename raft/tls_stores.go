package raft

import (
	"bytes"
	"crypto"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// The store types of ssl.keystore.type and ssl.truststore.type that
// Krabka reads: Kafka's default JKS, PKCS12, and PEM (KIP-651).
const (
	storeJKS    = "JKS"
	storePKCS12 = "PKCS12"
	storePEM    = "PEM"
)

// storeTypes are the store types Krabka reads, as an error lists them.
var storeTypes = []string{storeJKS, storePKCS12, storePEM}

// storeType returns the store type Kafka's DefaultSslEngineFactory reads
// from value: PEM exactly as written (Kafka compares the name), JKS and
// PKCS12 in any case (Java's KeyStore.getInstance ignores it); "" for a
// type Krabka does not read.
func storeType(value string) string {
	switch {
	case value == storePEM:
		return storePEM
	case strings.EqualFold(value, storeJKS):
		return storeJKS
	case strings.EqualFold(value, storePKCS12):
		return storePKCS12
	}
	return ""
}

// maxStoreFile bounds the size of a key store or trust store file Krabka
// reads: far above a real store (Java's cacerts of about 150 CAs is
// under 200 KiB), far below a memory problem.
const maxStoreFile = 16 << 20

// keystoreFile is one ssl.keystore.location file as Kafka's
// FileBasedStore reads it: its type, the store password
// (ssl.keystore.password), and the password of its private key
// (ssl.key.password, which for JKS and PKCS12 defaults to the store
// password, as Kafka's KeyManagerFactory is initialised).
type keystoreFile struct {
	typ                        string
	storePassword, keyPassword string
}

// decode reads the certificate chain and private key of a key store.
func (k keystoreFile) decode(data []byte) (*tls.Certificate, error) {
	switch k.typ {
	case storePKCS12:
		return decodePKCS12Keystore(data, k.storePassword, k.keyPassword)
	case storeJKS:
		return decodeJKSKeystore(data, k.storePassword, k.keyPassword)
	}
	return keyPair(data, data, k.keyPassword)
}

// truststoreFile is one ssl.truststore.location file: its type and
// ssl.truststore.password, and whether that is set (an empty password
// is a password).
type truststoreFile struct {
	typ, password string
	passwordSet   bool
}

// decode reads the trusted certificates of a trust store.
func (t truststoreFile) decode(data []byte) (*x509.CertPool, error) {
	switch t.typ {
	case storePKCS12:
		return decodePKCS12Truststore(data, t.password)
	case storeJKS:
		if !t.passwordSet {
			return decodeJKSTruststoreUnchecked(data)
		}
		return decodeJKSTruststore(data, t.password)
	}
	return certPool(data)
}

// decodePKCS12Keystore reads a PKCS12 key store: one private key and its
// certificate chain. The store opens with storePassword and the key
// decrypts with keyPassword, as Kafka's KeyManagerFactory takes it; a key
// whose password is not the store's is read through
// pkcs12WithKeyPassword.
func decodePKCS12Keystore(data []byte, storePassword, keyPassword string) (*tls.Certificate, error) {
	if keyPassword != storePassword {
		var err error
		if data, err = pkcs12WithKeyPassword(data, storePassword, keyPassword); err != nil {
			return nil, err
		}
	}
	key, leaf, chain, err := pkcs12.DecodeChain(data, storePassword)
	if err != nil {
		if keyPassword == storePassword {
			// Which password failed, if one did: the store's MAC's, or
			// the key's.
			var pe passwordError
			if _, perr := pkcs12WithKeyPassword(data, storePassword, keyPassword); errors.As(perr, &pe) {
				return nil, perr
			}
		}
		if strings.Contains(err.Error(), "expected exactly one key bag") {
			return nil, severalKeys("the PKCS12 key store holds more than one private key entry")
		}
		return nil, pkcs12Error("key store", keySSLKeystorePassword, err)
	}
	return certificateFor(key, append([]*x509.Certificate{leaf}, chain...))
}

// severalKeys refuses a key store with more than one private key entry
// (what says which store and entries). Kafka hands the whole store to
// Java's default key manager (SunX509), which picks an entry at each
// handshake: by the key type the handshake asks for (from the client's
// signature algorithms in TLS 1.3, the server's cipher suite order in
// TLS 1.2, each as the JDK's version decides), and among entries of one
// type by the iteration order of a Java HashMap of the aliases. Go's
// crypto/tls picks the first certificate a client hello supports, in
// the order given; neither rule reproduces the other for every client,
// so a node would present another certificate than Kafka to some
// clients. The store must hold one entry.
func severalKeys(what string) error {
	return fmt.Errorf("%s; Kafka's key manager (SunX509) chooses among several at each handshake by key type and, within a type, by the order of a Java hash map of the aliases, which Go's TLS certificate selection cannot reproduce, so Krabka reads a key store of one private key entry: keep one (keytool -delete -alias NAME), or give each listener its own store (listener.name.<listener>.ssl.keystore.location)", what)
}

// decodePKCS12Truststore reads a PKCS12 trust store: certificates that
// Java marks as trusted, as keytool -importcert writes them. An empty
// password also reads a store written without one.
func decodePKCS12Truststore(data []byte, password string) (*x509.CertPool, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err != nil {
		return nil, pkcs12Error("trust store", keySSLTruststorePassword, err)
	}
	if len(certs) == 0 {
		return nil, errors.New("the PKCS12 trust store holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pkcs12Error says why a PKCS12 store did not read; passwordKey is the
// property whose password opens it. The error never holds a password.
func pkcs12Error(what, passwordKey string, err error) error {
	switch {
	case errors.Is(err, pkcs12.ErrIncorrectPassword), errors.Is(err, pkcs12.ErrDecryption):
		return fmt.Errorf("the PKCS12 %s does not open with %s: wrong password, or a damaged store", what, passwordKey)
	case strings.Contains(err.Error(), "no MAC in data"):
		return fmt.Errorf("the PKCS12 %s has no password, so %s must not be set", what, passwordKey)
	}
	if strings.Contains(err.Error(), "error reading P12 data") {
		return fmt.Errorf("not a PKCS12 %s, or a damaged one: the file is not DER-encoded PKCS#12", what)
	}
	var ni pkcs12.NotImplementedError
	if errors.As(err, &ni) {
		return fmt.Errorf("the PKCS12 %s uses a layout Krabka does not read (%v); write it with keytool or openssl pkcs12", what, err)
	}
	return fmt.Errorf("not a PKCS12 %s, or a damaged one: %v", what, err)
}

// certificateFor returns the tls.Certificate of key with certs, ordered
// leaf first: the certificate whose public key is key's, then the others
// as the store lists them.
func certificateFor(key crypto.PrivateKey, certs []*x509.Certificate) (*tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the private key (%T) cannot sign", key)
	}
	leaf := -1
	for i, c := range certs {
		if pub, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); ok && pub.Equal(signer.Public()) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return nil, errors.New("no certificate of the key store matches its private key")
	}
	cert := &tls.Certificate{PrivateKey: key, Leaf: certs[leaf]}
	cert.Certificate = append(cert.Certificate, certs[leaf].Raw)
	for i, c := range certs {
		if i != leaf {
			cert.Certificate = append(cert.Certificate, c.Raw)
		}
	}
	return cert, nil
}

// loadJKS reads a JKS store and checks its integrity with password, as
// Java's KeyStore.load does.
func loadJKS(data []byte, what, passwordKey, password string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithCaseExactAliases())
	if err := checkJKSLayout(data); err != nil {
		return ks, fmt.Errorf("not a JKS %s, or a damaged one: %w", what, err)
	}
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return ks, fmt.Errorf("the JKS %s does not open with %s: wrong password, or a damaged store", what, passwordKey)
		}
		return ks, fmt.Errorf("not a JKS %s, or a damaged one: %v", what, err)
	}
	return ks, nil
}

// decodeJKSKeystore reads a JKS key store: exactly one private key entry
// (see severalKeys), decrypted with keyPassword, and its certificate
// chain.
func decodeJKSKeystore(data []byte, storePassword, keyPassword string) (*tls.Certificate, error) {
	ks, err := loadJKS(data, "key store", keySSLKeystorePassword, storePassword)
	if err != nil {
		return nil, err
	}
	var aliases []string
	for _, a := range ks.Aliases() {
		if ks.IsPrivateKeyEntry(a) {
			aliases = append(aliases, a)
		}
	}
	switch len(aliases) {
	case 0:
		return nil, errors.New("the JKS key store holds no private key entry")
	case 1:
	default:
		return nil, severalKeys(fmt.Sprintf("the JKS key store holds %d private key entries (%s)", len(aliases), strings.Join(aliases, ", ")))
	}
	entry, err := ks.GetPrivateKeyEntry(aliases[0], []byte(keyPassword))
	if err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return nil, fmt.Errorf("the private key %q does not decrypt with %s (or %s when that is not set): wrong password", aliases[0], keySSLKeyPassword, keySSLKeystorePassword)
		}
		return nil, fmt.Errorf("the private key %q: %v", aliases[0], err)
	}
	key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("the private key %q: %v", aliases[0], err)
	}
	var certs []*x509.Certificate
	for _, c := range entry.CertificateChain {
		cert, err := x509.ParseCertificate(c.Content)
		if err != nil {
			return nil, fmt.Errorf("the certificate chain of %q: %v", aliases[0], err)
		}
		certs = append(certs, cert)
	}
	return certificateFor(key, certs)
}

// decodeJKSTruststoreUnchecked reads a JKS trust store without a
// password, as Kafka's FileBasedStore loads one when
// ssl.truststore.password is not set: Java's KeyStore.load with a null
// password reads the entries and checks no digest. The digest of the
// file is replaced with the one of the empty password, which the
// decoder then finds, so that the entries are read as they are.
func decodeJKSTruststoreUnchecked(data []byte) (*x509.CertPool, error) {
	if len(data) < jksDigestSize {
		return decodeJKSTruststore(data, "")
	}
	body := data[:len(data)-jksDigestSize]
	h := sha1.New()
	h.Write([]byte(jksWhitener)) // the empty password adds no bytes before it
	h.Write(body)
	return decodeJKSTruststore(h.Sum(bytes.Clone(body)), "")
}

// jksWhitener is the text Sun's JavaKeyStore hashes after the password
// and before the store's contents to make its digest.
const jksWhitener = "Mighty Aphrodite"

// decodeJKSTruststore reads a JKS trust store: its trusted certificate
// entries and the certificate of each private key entry, the
// certificates Java's trust manager takes from a store, after checking
// the store's integrity with password.
func decodeJKSTruststore(data []byte, password string) (*x509.CertPool, error) {
	ks, err := loadJKS(data, "trust store", keySSLTruststorePassword, password)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for _, a := range ks.Aliases() {
		var der []byte
		if e, err := ks.GetTrustedCertificateEntry(a); err == nil {
			der = e.Certificate.Content
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(a); err == nil && len(chain) > 0 {
			der = chain[0].Content
		} else {
			continue
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("trust store entry %q: %v", a, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("the JKS trust store holds no certificate")
	}
	return pool, nil
}

// The JKS layout (Sun's JavaKeyStore): a magic number and version, the
// entry count, then each entry's tag, alias, creation time and contents,
// then a SHA-1 digest.
const (
	jksMagic          = 0xfeedfeed
	jksTagPrivateKey  = 1
	jksTagTrustedCert = 2
	jksDigestSize     = 20
)

// checkJKSLayout walks a JKS store's lengths and counts before it is
// decoded, so that no length or count in a damaged file can ask for more
// memory than the file holds: the JKS decoder allocates what the file
// says.
func checkJKSLayout(data []byte) error {
	r := jksReader{data: data}
	if r.u32() != jksMagic {
		return errors.New("it does not start with the JKS magic number")
	}
	version := r.u32()
	if version != 1 && version != 2 {
		return fmt.Errorf("JKS version %d", version)
	}
	count := r.u32()
	for i := uint32(0); i < count && r.err == nil; i++ {
		tag := r.u32()
		r.skip(int(r.u16())) // alias
		r.skip(8)            // creation time
		switch tag {
		case jksTagPrivateKey:
			r.skip(int(r.u32()))
			certs := r.u32()
			for j := uint32(0); j < certs && r.err == nil; j++ {
				r.cert(version)
			}
		case jksTagTrustedCert:
			r.cert(version)
		default:
			return fmt.Errorf("entry %d has tag %d", i, tag)
		}
	}
	r.skip(jksDigestSize)
	if r.err != nil {
		return r.err
	}
	if len(r.data) != 0 {
		return fmt.Errorf("%d bytes after the digest", len(r.data))
	}
	return nil
}

// jksReader reads big-endian fields from a JKS store; the first read
// past the end sets err and every later read returns zero.
type jksReader struct {
	data []byte
	err  error
}

func (r *jksReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.data) {
		r.err = fmt.Errorf("a field of %d bytes runs past the end of the file", n)
		return nil
	}
	b := r.data[:n]
	r.data = r.data[n:]
	return b
}

func (r *jksReader) skip(n int) { r.take(n) }

func (r *jksReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *jksReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// cert skips one certificate: its type name (version 2) and its DER.
func (r *jksReader) cert(version uint32) {
	if version == 2 {
		r.skip(int(r.u16()))
	}
	r.skip(int(r.u32()))
}
