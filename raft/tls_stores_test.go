package raft

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka-go/krabka/internal/tlstest"
)

// storeNode makes cfg's CONTROLLER listener SSL with leaf's key store and
// ca's trust store as files of type typ (PKCS12 or JKS) in dir, each
// protected by password, and ssl.client.auth=required.
func storeNode(t *testing.T, cfg *Config, dir, typ, password string, leaf *tlstest.Leaf, ca *tlstest.CA) {
	t.Helper()
	keystore, truststore := leaf.PKCS12(t, password), tlstest.PKCS12Truststore(t, password, ca)
	if typ == storeJKS {
		keystore, truststore = leaf.JKS(t, password, password), tlstest.JKSTruststore(t, password, ca)
	}
	cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySSL}
	cfg.SSL = map[string]string{
		keySSLKeystoreType:       typ,
		keySSLKeystoreLocation:   writeFile(t, dir, "keystore."+strings.ToLower(typ), keystore),
		keySSLKeystorePassword:   password,
		keySSLTruststoreType:     typ,
		keySSLTruststoreLocation: writeFile(t, dir, "truststore."+strings.ToLower(typ), truststore),
		keySSLTruststorePassword: password,
		keySSLClientAuth:         "required",
	}
}

// TestSSLKeyAndTrustStoreTypes: a listener whose key store and trust
// store are PKCS12 or JKS files serves franz-go's TLS client with a
// certificate the trust store's CA signed, and refuses one that another
// CA signed; a JKS key whose password differs from its store's opens
// with ssl.key.password; ssl.keystore.type left unset reads JKS, Kafka's
// default.
func TestSSLKeyAndTrustStoreTypes(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	check := func(t *testing.T, cfg Config) {
		t.Helper()
		addr := startNode(t, cfg).Addr()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr.String()), kgo.DialTLSConfig(clientTLS(t, ca, ca.Issue(t, "admin", tlstest.Options{}))))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		resp, err := describeQuorumRequest().RequestWith(t.Context(), cl.SeedBrokers()[0])
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("DescribeQuorum over TLS = %+v, %v", resp, err)
		}
		stranger := clientTLS(t, ca, nil)
		cert := other.Issue(t, "stranger", tlstest.Options{}).TLSCertificate(t)
		stranger.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		if _, err := dialTLS(t, addr, stranger); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
			t.Errorf("a client of another CA: %v, want it refused by the trust store", err)
		}
	}
	for _, typ := range []string{storePKCS12, storeJKS} {
		t.Run(typ, func(t *testing.T) {
			cfg := ForTests(1, t.TempDir())
			storeNode(t, &cfg, t.TempDir(), typ, "store-secret", ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca)
			for _, key := range []string{keySSLKeystorePassword, keySSLTruststorePassword} {
				if got := cfg.Properties()[key]; got != hiddenValue {
					t.Errorf("Properties()[%s] = %q, want %s", key, got, hiddenValue)
				}
			}
			check(t, cfg)
		})
	}
	t.Run("JKS by default, with its own key password", func(t *testing.T) {
		cfg := ForTests(1, t.TempDir())
		dir := t.TempDir()
		leaf := ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}})
		storeNode(t, &cfg, dir, storeJKS, "store-secret", leaf, ca)
		delete(cfg.SSL, keySSLKeystoreType)
		delete(cfg.SSL, keySSLTruststoreType)
		writeFile(t, dir, "keystore.jks", leaf.JKS(t, "store-secret", "key-secret"))
		cfg.SSL[keySSLKeyPassword] = "key-secret"
		check(t, cfg)
	})
	t.Run("PKCS12 key store, PEM trust store", func(t *testing.T) {
		cfg := ForTests(1, t.TempDir())
		dir := t.TempDir()
		storeNode(t, &cfg, dir, storePKCS12, "store-secret", ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca)
		cfg.SSL[keySSLTruststoreType] = storePEM
		cfg.SSL[keySSLTruststoreLocation] = writeFile(t, dir, "truststore.pem", ca.PEM)
		delete(cfg.SSL, keySSLTruststorePassword)
		check(t, cfg)
	})
}

// TestSSLStoreRefusals: a store that does not open (a wrong password, a
// damaged or foreign file, a length that runs past the end) refuses to
// start with a *ConfigError naming the store's location property and
// file and saying why, never showing a password.
func TestSSLStoreRefusals(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	leaf := ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}})
	const password = "store-secret"
	p12, jks := leaf.PKCS12(t, password), leaf.JKS(t, password, password)
	truncated := func(b []byte) []byte { return b[:len(b)/2] }
	flipped := func(b []byte) []byte {
		c := append([]byte{}, b...)
		c[len(c)/2] ^= 0xff
		return c
	}
	// hugeAlias claims a JKS alias longer than the file, and hugeChain a
	// chain of four billion certificates.
	hugeAlias := append([]byte{}, jks[:16]...)
	hugeAlias = append(hugeAlias, 0xff, 0xff)
	hugeChain := binary.BigEndian.AppendUint32(append([]byte{}, jks[:12]...), 1)
	hugeChain = append(hugeChain, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff)
	for _, tt := range []struct {
		name, typ string
		data      []byte
		set       map[string]string
		key, want string
	}{
		{"PKCS12 wrong password", storePKCS12, p12, map[string]string{keySSLKeystorePassword: "hunter2", keySSLKeyPassword: "hunter2"}, keySSLKeystoreLocation, "does not open with ssl.keystore.password: wrong password"},
		{"PKCS12 truncated", storePKCS12, truncated(p12), nil, keySSLKeystoreLocation, "not a PKCS12 key store, or a damaged one"},
		{"PKCS12 altered", storePKCS12, flipped(p12), nil, keySSLKeystoreLocation, "PKCS12 key store"},
		{"PKCS12 wrong key password", storePKCS12, p12, map[string]string{keySSLKeyPassword: "hunter2"}, keySSLKeystoreLocation, "private key of the PKCS12 key store does not decrypt with ssl.key.password"},
		{"PKCS12 given a JKS file", storePKCS12, jks, nil, keySSLKeystoreLocation, "not a PKCS12 key store"},
		{"JKS wrong password", storeJKS, jks, map[string]string{keySSLKeystorePassword: "hunter2"}, keySSLKeystoreLocation, "does not open with ssl.keystore.password: wrong password"},
		{"JKS wrong key password", storeJKS, jks, map[string]string{keySSLKeyPassword: "hunter2"}, keySSLKeystoreLocation, "does not decrypt with ssl.key.password"},
		{"JKS truncated", storeJKS, truncated(jks), nil, keySSLKeystoreLocation, "not a JKS key store, or a damaged one"},
		{"JKS altered", storeJKS, flipped(jks), nil, keySSLKeystoreLocation, "JKS key store"},
		{"JKS huge alias", storeJKS, hugeAlias, nil, keySSLKeystoreLocation, "runs past the end of the file"},
		{"JKS huge chain", storeJKS, hugeChain, nil, keySSLKeystoreLocation, "runs past the end of the file"},
		{"JKS given a PEM file", storeJKS, leaf.Keystore(), nil, keySSLKeystoreLocation, "does not start with the JKS magic number"},
		{"JKS trust store wrong password", storeJKS, jks, map[string]string{keySSLTruststorePassword: "hunter2"}, keySSLTruststoreLocation, "does not open with ssl.truststore.password"},
		{"PKCS12 trust store damaged", storePKCS12, p12, map[string]string{keySSLTruststoreLocation: "garbage"}, keySSLTruststoreLocation, "not a PKCS12 trust store"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ForTests(1, t.TempDir())
			dir := t.TempDir()
			storeNode(t, &cfg, dir, tt.typ, password, leaf, ca)
			path := writeFile(t, dir, "keystore.bad", tt.data)
			cfg.SSL[keySSLKeystoreLocation] = path
			if tt.key == keySSLTruststoreLocation {
				cfg.SSL[keySSLKeystoreLocation] = writeFile(t, dir, "keystore.good", map[string][]byte{storePKCS12: p12, storeJKS: jks}[tt.typ])
				cfg.SSL[keySSLTruststoreLocation] = path
			}
			for k, v := range tt.set {
				if v == "garbage" {
					v = writeFile(t, dir, "garbage", []byte("not a store"))
					path = v
				}
				cfg.SSL[k] = v
			}
			c, err := Start(t.Context(), cfg)
			if err == nil {
				_ = c.Shutdown(t.Context())
				t.Fatal("Start accepted the store")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key || ce.Value != path || !strings.Contains(ce.Reason, tt.want) {
				t.Errorf("Start = %v, want a problem with %s=%s saying %q", err, tt.key, path, tt.want)
			}
			for _, secret := range []string{password, "hunter2"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows the password: %v", err)
				}
			}
		})
	}
}

// TestSSLStoreReload: a PKCS12 or JKS key store replaced on disk serves
// its new certificate to the next connection while an established one
// keeps working; a replacement that does not open (here: written with
// another password) keeps the store in use. A replaced trust store
// admits the new CA's clients.
func TestSSLStoreReload(t *testing.T) {
	for _, typ := range []string{storePKCS12, storeJKS} {
		t.Run(typ, func(t *testing.T) {
			ca, next := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "next CA")
			cfg := ForTests(1, t.TempDir())
			dir := t.TempDir()
			const password = "store-secret"
			storeNode(t, &cfg, dir, typ, password, ca.Issue(t, "first", tlstest.Options{Names: []string{"127.0.0.1"}}), ca)
			addr := startNode(t, cfg).Addr()
			client := clientTLS(t, ca, ca.Issue(t, "client", tlstest.Options{}))
			old, err := dialTLS(t, addr, client)
			if err != nil {
				t.Fatal(err)
			}
			encode := func(l *tlstest.Leaf, password string) []byte {
				if typ == storeJKS {
					return l.JKS(t, password, password)
				}
				return l.PKCS12(t, password)
			}
			replace := func(key string, data []byte) {
				t.Helper()
				if err := os.Rename(writeFile(t, dir, "store.new", data), cfg.SSL[key]); err != nil {
					t.Fatal(err)
				}
			}
			served := func(tc *tls.Config) string {
				t.Helper()
				conn, err := dialTLS(t, addr, tc)
				if err != nil {
					t.Fatal(err)
				}
				return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
			}

			replace(keySSLKeystoreLocation, encode(ca.Issue(t, "second", tlstest.Options{Names: []string{"127.0.0.1"}}), password))
			if got := served(client); got != "second" {
				t.Errorf("after the key store changed a new connection got CN=%s, want CN=second", got)
			}
			replace(keySSLKeystoreLocation, encode(ca.Issue(t, "third", tlstest.Options{Names: []string{"127.0.0.1"}}), "another-password"))
			if got := served(client); got != "second" {
				t.Errorf("after a key store that does not open a new connection got CN=%s, want CN=second kept", got)
			}
			if _, err := apiVersionsOn(t, old); err != nil {
				t.Errorf("the connection made before the reloads: %v", err)
			}

			trust := tlstest.PKCS12Truststore(t, password, ca, next)
			if typ == storeJKS {
				trust = tlstest.JKSTruststore(t, password, ca, next)
			}
			nextClient := clientTLS(t, ca, next.Issue(t, "next client", tlstest.Options{}))
			if _, err := dialTLS(t, addr, nextClient); err == nil {
				t.Fatal("a client of the next CA was admitted before the trust store named it")
			}
			replace(keySSLTruststoreLocation, trust)
			if _, err := dialTLS(t, addr, nextClient); err != nil {
				t.Errorf("a client of the next CA after the trust store changed: %v", err)
			}
		})
	}
}

// keytoolRunner returns a function that runs keytool with its
// arguments and fails the test if it fails, or skips the test when
// keytool is not installed, saying what is then left unchecked.
func keytoolRunner(t *testing.T, unchecked string) func(args ...string) {
	t.Helper()
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool is not installed; " + unchecked)
	}
	return func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestSSLStoresFromKeytool checks the stores against Java's own tool:
// a listener serves TLS from a JKS key store that keytool generated
// (its key under its own password) and a PKCS12 key store keytool
// converted from it, each checked by a client that trusts the
// certificate keytool exported.
func TestSSLStoresFromKeytool(t *testing.T) {
	run := keytoolRunner(t, "the stores are checked against go-pkcs12 and keystore-go only")
	dir := t.TempDir()
	jks, p12, cert := filepath.Join(dir, "ks.jks"), filepath.Join(dir, "ks.p12"), filepath.Join(dir, "cert.pem")
	run("-genkeypair", "-alias", "server", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=server",
		"-ext", "SAN=ip:127.0.0.1", "-validity", "1", "-keystore", jks, "-storetype", "JKS", "-storepass", "store-secret", "-keypass", "key-secret")
	run("-importkeystore", "-srckeystore", jks, "-srcstoretype", "JKS", "-srcstorepass", "store-secret", "-srckeypass", "key-secret",
		"-srcalias", "server", "-destkeystore", p12, "-deststoretype", "PKCS12", "-deststorepass", "store-secret")
	run("-exportcert", "-rfc", "-alias", "server", "-keystore", jks, "-storepass", "store-secret", "-file", cert)
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	for _, store := range []map[string]string{
		{keySSLKeystoreType: storeJKS, keySSLKeystoreLocation: jks, keySSLKeystorePassword: "store-secret", keySSLKeyPassword: "key-secret"},
		{keySSLKeystoreType: storePKCS12, keySSLKeystoreLocation: p12, keySSLKeystorePassword: "store-secret"},
	} {
		cfg := ForTests(1, t.TempDir())
		cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySSL}
		cfg.SSL = store
		if _, err := dialTLS(t, startNode(t, cfg).Addr(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}); err != nil {
			t.Errorf("%s key store from keytool: %v", store[keySSLKeystoreType], err)
		}
	}
}

// TestPKCS12TruststoreWithoutPassword: a PKCS12 trust store written
// without a password reads without ssl.truststore.password, which
// Validate then does not require.
func TestPKCS12TruststoreWithoutPassword(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	pool, err := decodePKCS12Truststore(tlstest.PKCS12Truststore(t, "", ca), "")
	if err != nil || !pool.Equal(tlstest.Pool(ca)) {
		t.Errorf("decodePKCS12Truststore = %v, %v; want the CA", pool, err)
	}
	_, _, err = ParseProperties([]byte(sslBase + "ssl.truststore.type=PKCS12\nssl.truststore.location=/t.p12\n"))
	if err != nil {
		t.Errorf("a PKCS12 trust store without a password: %v", err)
	}
}

// TestKeyStoreWithSeveralKeys: a JKS or PKCS12 key store holding two
// private key entries (an RSA and an EC key, as keytool writes them)
// refuses to start, naming ssl.keystore.location, its file and the
// entries, and saying why one is not picked as Kafka's key manager would.
func TestKeyStoreWithSeveralKeys(t *testing.T) {
	run := keytoolRunner(t, "a store of several keys is not written")
	dir := t.TempDir()
	jks, p12 := filepath.Join(dir, "ks.jks"), filepath.Join(dir, "ks.p12")
	for _, key := range [][]string{{"rsa", "-keyalg", "RSA", "-keysize", "2048"}, {"ec", "-keyalg", "EC", "-groupname", "secp256r1"}} {
		run(append([]string{"-genkeypair", "-alias", key[0], "-dname", "CN=" + key[0], "-validity", "1", "-keystore", jks, "-storetype", "JKS",
			"-storepass", "store-secret", "-keypass", "store-secret"}, key[1:]...)...)
	}
	run("-importkeystore", "-srckeystore", jks, "-srcstoretype", "JKS", "-srcstorepass", "store-secret",
		"-destkeystore", p12, "-deststoretype", "PKCS12", "-deststorepass", "store-secret")
	for _, tt := range []struct{ typ, path, want string }{
		{storeJKS, jks, "the JKS key store holds 2 private key entries (ec, rsa)"},
		{storePKCS12, p12, "the PKCS12 key store holds more than one private key entry"},
	} {
		cfg := ForTests(1, t.TempDir())
		cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySSL}
		cfg.SSL = map[string]string{keySSLKeystoreType: tt.typ, keySSLKeystoreLocation: tt.path, keySSLKeystorePassword: "store-secret"}
		c, err := Start(t.Context(), cfg)
		if err == nil {
			_ = c.Shutdown(t.Context())
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != keySSLKeystoreLocation || ce.Value != tt.path ||
			!strings.Contains(ce.Reason, tt.want) || !strings.Contains(ce.Reason, "cannot reproduce") {
			t.Errorf("Start with a %s key store of two keys = %v, want a problem with %s=%s saying %q and why", tt.typ, err, keySSLKeystoreLocation, tt.path, tt.want)
		}
	}
}

// rekeyJava is a Java program that copies the key entries of a PKCS12
// store (args: in, store password, out, key password) into a new PKCS12
// store written by Java's own KeyStore, each key under the key password
// and the store under the store password.
const rekeyJava = `import java.io.*;
import java.security.*;

public class Rekey {
    public static void main(String[] a) throws Exception {
        KeyStore in = KeyStore.getInstance("PKCS12");
        try (InputStream s = new FileInputStream(a[0])) { in.load(s, a[1].toCharArray()); }
        KeyStore out = KeyStore.getInstance("PKCS12");
        out.load(null, null);
        for (String alias : java.util.Collections.list(in.aliases())) {
            if (in.isKeyEntry(alias)) {
                out.setKeyEntry(alias, in.getKey(alias, a[1].toCharArray()), a[3].toCharArray(), in.getCertificateChain(alias));
            }
        }
        try (OutputStream s = new FileOutputStream(a[2])) { out.store(s, a[1].toCharArray()); }
    }
}
`

// TestPKCS12KeyPassword: a PKCS12 key store whose key has its own
// password, written by Java's PKCS12 KeyStore (in its default PBES2 and
// AES, and in its legacy 3DES and RC2), serves TLS with ssl.key.password,
// as Kafka's key manager opens the key; without ssl.key.password or with
// a wrong one it refuses to start naming the key password, and with a
// wrong store password naming the store password.
func TestPKCS12KeyPassword(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java is not installed; Java's PKCS12 stores cannot be written")
	}
	dir := t.TempDir()
	src := writeFile(t, dir, "Rekey.java", []byte(rekeyJava))
	ca := tlstest.NewCA(t, "test CA")
	in := writeFile(t, dir, "in.p12", ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}).PKCS12(t, "store-secret"))
	for name, flags := range map[string][]string{"default": nil, "legacy": {"-Dkeystore.pkcs12.legacy"}} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "keystore.p12")
			cmd := exec.Command(java, append(flags, src, in, "store-secret", out, "key-secret")...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("java Rekey.java: %v\n%s", err, b)
			}
			start := func(set map[string]string) (*Controller, error) {
				cfg := ForTests(1, t.TempDir())
				storeNode(t, &cfg, t.TempDir(), storePKCS12, "store-secret", ca.Issue(t, "unused", tlstest.Options{}), ca)
				cfg.SSL[keySSLKeystoreLocation] = out
				for k, v := range set {
					if v == "" {
						delete(cfg.SSL, k)
					} else {
						cfg.SSL[k] = v
					}
				}
				c, err := Start(t.Context(), cfg)
				if err == nil {
					t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
				}
				return c, err
			}
			c, err := start(map[string]string{keySSLKeyPassword: "key-secret"})
			if err != nil {
				t.Fatalf("Start with ssl.key.password = %v", err)
			}
			conn, err := dialTLS(t, c.Addr(), clientTLS(t, ca, ca.Issue(t, "admin", tlstest.Options{})))
			if err != nil {
				t.Fatal(err)
			}
			if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "server" {
				t.Errorf("the listener served CN=%s, want CN=server", cn)
			}
			for _, tt := range []struct {
				set  map[string]string
				want string
			}{
				{map[string]string{keySSLKeyPassword: ""}, "does not decrypt with ssl.key.password (or ssl.keystore.password when that is not set)"},
				{map[string]string{keySSLKeyPassword: "hunter2"}, "does not decrypt with ssl.key.password"},
				{map[string]string{keySSLKeyPassword: "key-secret", keySSLKeystorePassword: "hunter2"}, "does not open with ssl.keystore.password"},
			} {
				_, err := start(tt.set)
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Key != keySSLKeystoreLocation || ce.Value != out || !strings.Contains(ce.Reason, tt.want) {
					t.Errorf("Start with %v = %v, want a problem with %s=%s saying %q", tt.set, err, keySSLKeystoreLocation, out, tt.want)
				}
				for _, secret := range []string{"store-secret", "key-secret", "hunter2"} {
					if err != nil && strings.Contains(err.Error(), secret) {
						t.Errorf("the error shows a password: %v", err)
					}
				}
			}
		})
	}
}

// TestJKSTruststoreWithoutPassword: a JKS trust store file without
// ssl.truststore.password is read as Kafka's FileBasedStore reads it
// (Java's KeyStore.load with a null password): its certificates are
// trusted and its digest is not checked, so a store written with a
// password, and one whose digest is damaged, both verify clients; with a
// password set, the damaged digest is refused. The stores are written by
// keystore-go and, when it is installed, by keytool.
func TestJKSTruststoreWithoutPassword(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	stores := map[string][]byte{"keystore-go": tlstest.JKSTruststore(t, "store-secret", ca)}
	if keytool, err := exec.LookPath("keytool"); err == nil {
		dir := t.TempDir()
		jks := filepath.Join(dir, "t.jks")
		out, err := exec.Command(keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", writeFile(t, dir, "ca.pem", ca.PEM),
			"-keystore", jks, "-storetype", "JKS", "-storepass", "store-secret").CombinedOutput()
		if err != nil {
			t.Fatalf("keytool -importcert: %v\n%s", err, out)
		}
		if stores["keytool"], err = os.ReadFile(jks); err != nil {
			t.Fatal(err)
		}
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			damaged := append([]byte{}, store...)
			damaged[len(damaged)-1] ^= 0xff // the last byte of the digest
			for _, data := range [][]byte{store, damaged} {
				cfg := ForTests(1, t.TempDir())
				dir := t.TempDir()
				storeNode(t, &cfg, dir, storeJKS, "store-secret", ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca)
				cfg.SSL[keySSLTruststoreLocation] = writeFile(t, dir, "truststore.jks", data)
				delete(cfg.SSL, keySSLTruststorePassword)
				if err := cfg.Validate(); err != nil {
					t.Fatalf("Validate = %v, want a JKS trust store without a password accepted", err)
				}
				addr := startNode(t, cfg).Addr()
				if _, err := dialTLS(t, addr, clientTLS(t, ca, ca.Issue(t, "admin", tlstest.Options{}))); err != nil {
					t.Errorf("a client of the trusted CA: %v", err)
				}
				stranger := clientTLS(t, ca, nil)
				cert := other.Issue(t, "stranger", tlstest.Options{}).TLSCertificate(t)
				stranger.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
				if _, err := dialTLS(t, addr, stranger); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
					t.Errorf("a client of another CA: %v, want it refused by the trust store", err)
				}
			}
			if _, err := decodeJKSTruststore(damaged, "store-secret"); err == nil || !strings.Contains(err.Error(), "does not open with ssl.truststore.password") {
				t.Errorf("the damaged digest with the password = %v, want it refused", err)
			}
		})
	}
}

// FuzzJKSStore: no JKS key store or trust store file, however damaged,
// makes the decoder panic or allocate more than the file holds.
func FuzzJKSStore(f *testing.F) {
	ca := tlstest.NewCA(f, "test CA")
	f.Add(ca.Issue(f, "server", tlstest.Options{}).JKS(f, "p", "p"))
	f.Add(tlstest.JKSTruststore(f, "p", ca))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeJKSKeystore(data, "p", "p")
		_, _ = decodeJKSTruststore(data, "p")
	})
}

// FuzzPKCS12KeyPassword: no PKCS12 file, however damaged, makes the
// rewrite of a key under its own password panic.
func FuzzPKCS12KeyPassword(f *testing.F) {
	ca := tlstest.NewCA(f, "test CA")
	f.Add(ca.Issue(f, "server", tlstest.Options{}).PKCS12(f, "p"))
	f.Add(tlstest.PKCS12Truststore(f, "p", ca))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = pkcs12WithKeyPassword(data, "p", "k")
		_, _ = decodePKCS12Keystore(data, "p", "k")
	})
}
