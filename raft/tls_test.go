package raft

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/tlstest"
)

// writeFile writes data to name in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	return tlstest.WriteFile(t, dir, name, data)
}

// sslNode makes cfg's CONTROLLER listener SSL with leaf's key store and
// ca's trust store, as files in dir, and ssl.client.auth=clientAuth.
func sslNode(t *testing.T, cfg *Config, dir string, leaf *tlstest.Leaf, ca *tlstest.CA, clientAuth string) {
	t.Helper()
	cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySSL}
	cfg.SSL = map[string]string{
		keySSLKeystoreType:       "PEM",
		keySSLKeystoreLocation:   writeFile(t, dir, "keystore.pem", leaf.Keystore()),
		keySSLTruststoreType:     "PEM",
		keySSLTruststoreLocation: writeFile(t, dir, "truststore.pem", ca.PEM),
		keySSLClientAuth:         clientAuth,
	}
}

// dialTLS opens a TLS connection to addr with tc and completes the
// handshake; in TLS 1.3 a server's refusal of the client's certificate
// arrives with the first read, so it sends ApiVersions and reads the
// answer.
func dialTLS(t *testing.T, addr net.Addr, tc *tls.Config) (*tls.Conn, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	conn := tls.Client(nc, tc)
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.Handshake(); err != nil {
		return nil, err
	}
	if _, err := apiVersionsOn(t, conn); err != nil {
		return nil, err
	}
	return conn, nil
}

// clientTLS is a client configuration that trusts ca and presents leaf
// (when not nil).
func clientTLS(t *testing.T, ca *tlstest.CA, leaf *tlstest.Leaf) *tls.Config {
	tc := &tls.Config{RootCAs: tlstest.Pool(ca), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if leaf != nil {
		tc.Certificates = []tls.Certificate{leaf.TLSCertificate(t)}
	}
	return tc
}

// TestSSLQuorumElectsAndCommits: three voters whose controller listener
// is SSL, with client certificates required, elect a leader, commit a
// record forwarded from a follower, and serve franz-go's TLS client.
func TestSSLQuorumElectsAndCommits(t *testing.T) {
	ca := tlstest.NewCA(t, "quorum CA")
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		leaf := ca.Issue(t, "controller-"+cfg.NodeID.String(), tlstest.Options{Names: []string{"127.0.0.1", "localhost"}})
		sslNode(t, cfg, t.TempDir(), leaf, ca, "required")
	})
	leader := c.leader()
	res := submit(t, c.node(c.follower(leader)), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)

	admin := ca.Issue(t, "admin", tlstest.Options{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(leader).Addr().String()), kgo.DialTLSConfig(clientTLS(t, ca, admin)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "krabka-test", "1"
	versions, err := av.RequestWith(t.Context(), cl.SeedBrokers()[0])
	if err != nil || versions.ErrorCode != 0 {
		t.Fatalf("ApiVersions over TLS = %+v, %v", versions, err)
	}
	resp, err := describeQuorumRequest().RequestWith(t.Context(), cl.SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || NodeID(p.LeaderID) != leader || len(p.CurrentVoters) != 3 || p.HighWatermark <= res.LastOffset {
		t.Errorf("DescribeQuorum over TLS = %+v", p)
	}
}

// TestSSLListenerRefusesUntrustedClients: with ssl.client.auth=required
// a plaintext client, a client without a certificate, one whose
// certificate another CA signed and one whose certificate expired each
// fail with an error that says why, and every refused connection is
// freed; a client that does not trust the server's CA, or meets an
// expired server certificate, refuses the server.
func TestSSLListenerRefusesUntrustedClients(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	cfg := ForTests(1, t.TempDir())
	sslNode(t, &cfg, t.TempDir(), ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca, "required")
	node := startNode(t, cfg)
	addr := node.Addr()

	if _, err := dialTLS(t, addr, clientTLS(t, ca, ca.Issue(t, "good", tlstest.Options{}))); err != nil {
		t.Fatalf("a trusted client: %v", err)
	}
	if resp, err := apiVersionsFrom(t, "127.0.0.1", addr); err == nil {
		t.Fatalf("a plaintext client got an answer: %+v", resp)
	}
	// presenting sends leaf whatever CAs the server asks for, as a client
	// with one certificate does.
	presenting := func(trusted *tlstest.CA, leaf *tlstest.Leaf) *tls.Config {
		tc := clientTLS(t, trusted, nil)
		cert := leaf.TLSCertificate(t)
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		return tc
	}
	expired := ca.Issue(t, "expired", tlstest.Options{NotAfter: time.Now().Add(-time.Hour)})
	for name, tt := range map[string]struct {
		tc   *tls.Config
		want string
	}{
		"no client certificate":   {clientTLS(t, ca, nil), "certificate required"},
		"client from another CA":  {presenting(ca, other.Issue(t, "stranger", tlstest.Options{})), "unknown certificate authority"},
		"expired client":          {presenting(ca, expired), "expired certificate"},
		"server from another CA":  {clientTLS(t, other, nil), "certificate signed by unknown authority"},
		"TLS 1.1 and older":       {&tls.Config{RootCAs: tlstest.Pool(ca), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, "protocol version"},
		"another host name asked": {&tls.Config{RootCAs: tlstest.Pool(ca), ServerName: "elsewhere.example", MinVersion: tls.VersionTLS12}, "wanted to match elsewhere.example"},
	} {
		_, err := dialTLS(t, addr, tt.tc)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tt.want)
		}
	}
	srv := node.srv.srvs[0]
	waitFor(t, "the refused connections to be freed", func() bool { return srv.Stats().Active <= 1 })

	expiredServer := ForTests(2, t.TempDir())
	sslNode(t, &expiredServer, t.TempDir(), ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}, NotAfter: time.Now().Add(-time.Minute)}), ca, "none")
	if _, err := dialTLS(t, startNode(t, expiredServer).Addr(), clientTLS(t, ca, nil)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired server certificate: %v, want an error saying it expired", err)
	}
}

// TestSSLProtocolsAndCipherSuitesAreEnforced: a listener limited to TLS
// 1.3 refuses a TLS 1.2 client, and one limited to one TLS 1.2 suite
// refuses a client offering only another; a per-listener override wins
// over the node-wide key.
func TestSSLProtocolsAndCipherSuitesAreEnforced(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	leaf := ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}})
	tls13 := ForTests(1, t.TempDir())
	sslNode(t, &tls13, t.TempDir(), leaf, ca, "none")
	tls13.SSL[keySSLEnabledProtocols] = "TLSv1.2,TLSv1.3"
	tls13.SSL[listenerSSLKey("CONTROLLER", keySSLEnabledProtocols)] = "TLSv1.3"
	addr := startNode(t, tls13).Addr()
	old := clientTLS(t, ca, nil)
	old.MaxVersion = tls.VersionTLS12
	if _, err := dialTLS(t, addr, old); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.2 client against ssl.enabled.protocols=TLSv1.3: %v", err)
	}
	if conn, err := dialTLS(t, addr, clientTLS(t, ca, nil)); err != nil || conn.ConnectionState().Version != tls.VersionTLS13 {
		t.Errorf("TLS 1.3 client: %v", err)
	}

	one := ForTests(2, t.TempDir())
	sslNode(t, &one, t.TempDir(), leaf, ca, "none")
	one.SSL[keySSLEnabledProtocols] = "TLSv1.2"
	one.SSL[keySSLCipherSuites] = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
	addr = startNode(t, one).Addr()
	other := clientTLS(t, ca, nil)
	other.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
	if _, err := dialTLS(t, addr, other); err == nil || !strings.Contains(err.Error(), "handshake failure") {
		t.Errorf("client without the listed suite: %v", err)
	}
	if conn, err := dialTLS(t, addr, clientTLS(t, ca, nil)); err != nil || conn.ConnectionState().CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
		t.Errorf("client with the listed suite: %v", err)
	}
}

// TestSSLPeerEndpointIdentification: the node's own client side (its
// connections to the other controllers) checks the server's host name
// with ssl.endpoint.identification.algorithm=https, the default, and
// only the chain when it is empty; a server from another CA fails both.
func TestSSLPeerEndpointIdentification(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	wrongName := ca.Issue(t, "server", tlstest.Options{Names: []string{"elsewhere.example"}})
	serve := func(leaf *tlstest.Leaf) net.Addr {
		cfg := ForTests(1, t.TempDir())
		sslNode(t, &cfg, t.TempDir(), leaf, ca, "none")
		return startNode(t, cfg).Addr()
	}
	wrongAddr := serve(wrongName)
	strangerAddr := serve(other.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}))
	for _, tt := range []struct {
		algorithm           string
		wrongName, stranger bool // whether each handshake succeeds
	}{
		{"https", false, false},
		{"", true, false},
	} {
		cfg := ForTests(2, t.TempDir())
		sslNode(t, &cfg, t.TempDir(), ca.Issue(t, "client", tlstest.Options{}), ca, "none")
		cfg.SSL[keySSLEndpointIdentification] = tt.algorithm
		rc, err := newRuntimeConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for addr, want := range map[net.Addr]bool{wrongAddr: tt.wrongName, strangerAddr: tt.stranger} {
			_, err := dialTLS(t, addr, rc.peer.TLS("127.0.0.1"))
			if (err == nil) != want {
				t.Errorf("algorithm %q, server at %s: handshake error %v, want success %v", tt.algorithm, addr, err, want)
			}
		}
	}
}

// TestSSLCertificateReload: replacing the key store file gives new
// connections the new certificate while an established one keeps
// working; a file that no longer reads keeps the certificate in use.
func TestSSLCertificateReload(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	dir := t.TempDir()
	cfg := ForTests(1, t.TempDir())
	first := ca.Issue(t, "first", tlstest.Options{Names: []string{"127.0.0.1"}})
	sslNode(t, &cfg, dir, first, ca, "none")
	addr := startNode(t, cfg).Addr()
	served := func() *x509.Certificate {
		t.Helper()
		conn, err := dialTLS(t, addr, clientTLS(t, ca, nil))
		if err != nil {
			t.Fatal(err)
		}
		return conn.ConnectionState().PeerCertificates[0]
	}
	old, err := dialTLS(t, addr, clientTLS(t, ca, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := old.ConnectionState().PeerCertificates[0]; !got.Equal(first.Cert) {
		t.Fatalf("served %s, want the first certificate", got.Subject)
	}

	second := ca.Issue(t, "second", tlstest.Options{Names: []string{"127.0.0.1"}})
	replace := func(data []byte) {
		t.Helper()
		tmp := writeFile(t, dir, "keystore.new", data)
		if err := os.Rename(tmp, cfg.SSL[keySSLKeystoreLocation]); err != nil {
			t.Fatal(err)
		}
	}
	replace(second.Keystore())
	if got := served(); !got.Equal(second.Cert) {
		t.Errorf("after the file changed a new connection got %s, want the second certificate", got.Subject)
	}
	if _, err := apiVersionsOn(t, old); err != nil {
		t.Errorf("the connection made before the reload: %v", err)
	}

	replace([]byte("not a key store"))
	if got := served(); !got.Equal(second.Cert) {
		t.Errorf("after a bad file a new connection got %s, want the second certificate kept", got.Subject)
	}
}

// TestSSLTrustStoreReload: with ssl.client.auth=required, replacing the
// trust store with another CA's certificate refuses new clients of the
// old CA, also one that kept a TLS session to resume, and admits the
// new CA's, while a connection made before keeps working.
func TestSSLTrustStoreReload(t *testing.T) {
	ca, next := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "next CA")
	cfg := ForTests(1, t.TempDir())
	sslNode(t, &cfg, t.TempDir(), ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca, "required")
	addr := startNode(t, cfg).Addr()
	oldClient := clientTLS(t, ca, ca.Issue(t, "old client", tlstest.Options{}))
	// A client that keeps its sessions must not resume one past the
	// new trust store.
	oldClient.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	old, err := dialTLS(t, addr, oldClient)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := dialTLS(t, addr, oldClient); err != nil || again.ConnectionState().DidResume {
		t.Errorf("a second connection: %v, resumed %v; want a full handshake", err, err == nil && again.ConnectionState().DidResume)
	}

	path := cfg.SSL[keySSLTruststoreLocation]
	tmp := writeFile(t, filepath.Dir(path), "truststore.new", next.PEM)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if _, err := dialTLS(t, addr, oldClient); err == nil {
		t.Error("a client of the replaced CA was admitted after the reload")
	}
	nextClient := clientTLS(t, ca, nil) // the server's own certificate is still the old CA's
	cert := next.Issue(t, "next client", tlstest.Options{}).TLSCertificate(t)
	nextClient.Certificates = []tls.Certificate{cert}
	if _, err := dialTLS(t, addr, nextClient); err != nil {
		t.Errorf("a client of the new CA after the reload: %v", err)
	}
	if _, err := apiVersionsOn(t, old); err != nil {
		t.Errorf("the connection made before the reload: %v", err)
	}
}

// TestSSLInlinePEMFromProperties: a server.properties file with the key
// store and trust store inline (KIP-651), written over continuation
// lines, starts a node that serves TLS, and String hides the key.
func TestSSLInlinePEMFromProperties(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	leaf := ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}})
	continued := func(pem []byte) string {
		return strings.ReplaceAll(strings.TrimSpace(string(pem)), "\n", " \\\n    ")
	}
	props := "node.id=1\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n" +
		"listeners=CONTROLLER://127.0.0.1:0\ncontroller.quorum.voters=1@127.0.0.1:0\n" +
		"listener.security.protocol.map=CONTROLLER:SSL\nmetadata.log.dir=" + t.TempDir() + "\n" +
		"ssl.keystore.type=PEM\nssl.truststore.type=PEM\n" +
		"ssl.keystore.certificate.chain=" + continued(leaf.CertPEM) + "\n" +
		"ssl.keystore.key=" + continued(leaf.KeyPEM) + "\n" +
		"listener.name.controller.ssl.truststore.certificates=" + continued(ca.PEM) + "\n"
	cfg, _, err := ParseProperties([]byte(props))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cfg.String(), "PRIVATE KEY") || !strings.Contains(cfg.String(), "ssl.keystore.key=[hidden]") {
		t.Errorf("String() shows the private key:\n%s", cfg)
	}
	if _, err := dialTLS(t, startNode(t, cfg).Addr(), clientTLS(t, ca, nil)); err != nil {
		t.Errorf("inline PEM listener: %v", err)
	}
}

// TestSSLEncryptedKey: a PEM key encrypted with PBES2 (written by
// openssl pkcs8 -topk8 -v2, with HMAC-SHA256 and AES-256, and with
// HMAC-SHA1 and AES-128) is read with ssl.key.password; a wrong or
// missing password, a password for a key that is not encrypted, and an
// older scheme are refused at start with a message that says which, and
// without the password.
func TestSSLEncryptedKey(t *testing.T) {
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "tls", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cert := read("encrypted-key-cert.pem")
	start := func(key []byte, password string) (*Controller, error) {
		cfg := ForTests(1, t.TempDir())
		cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySSL}
		cfg.SSL = map[string]string{
			keySSLKeystoreType:     "PEM",
			keySSLKeystoreLocation: writeFile(t, t.TempDir(), "keystore.pem", append(append([]byte{}, key...), cert...)),
		}
		if password != "" {
			cfg.SSL[keySSLKeyPassword] = password
		}
		c, err := Start(t.Context(), cfg)
		if err == nil {
			t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
		}
		return c, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cert)
	for _, name := range []string{"key-pbes2-aes256-sha256.pem", "key-pbes2-aes128-sha1.pem"} {
		c, err := start(read(name), "krabka-test")
		if err != nil {
			t.Errorf("%s: Start = %v", name, err)
			continue
		}
		if _, err := dialTLS(t, c.Addr(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	plain := tlstest.NewCA(t, "test CA").Issue(t, "plain", tlstest.Options{}).KeyPEM
	for _, tt := range []struct {
		name, key, password, want string
	}{
		{"wrong password", "key-pbes2-aes256-sha256.pem", "hunter2", "does not decrypt with ssl.key.password"},
		{"no password", "key-pbes2-aes128-sha1.pem", "", "the private key is encrypted: set ssl.key.password"},
		{"PKCS#12 3DES", "key-pbe-sha1-3des.pem", "krabka-test", "is not implemented; re-encrypt the key with PBES2"},
		{"key not encrypted", "", "hunter2", "ssl.key.password is set but the private key is not encrypted"},
	} {
		key := plain
		if tt.key != "" {
			key = read(tt.key)
		}
		_, err := start(key, tt.password)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != keySSLKeystoreLocation || !strings.Contains(ce.Reason, tt.want) {
			t.Errorf("%s: Start = %v, want a problem with %s saying %q", tt.name, err, keySSLKeystoreLocation, tt.want)
		}
		if err != nil && tt.password != "" && strings.Contains(err.Error(), tt.password) {
			t.Errorf("%s: the error shows the password: %v", tt.name, err)
		}
	}
}

// TestSSLServedChainWithOpenSSL checks the listener with another TLS
// implementation: openssl s_client verifies the served chain against the
// CA.
func TestSSLServedChainWithOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed; the served chain is checked by Go's client only")
	}
	ca := tlstest.NewCA(t, "test CA")
	dir := t.TempDir()
	cfg := ForTests(1, t.TempDir())
	sslNode(t, &cfg, dir, ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca, "none")
	addr := startNode(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, openssl, "s_client", "-connect", addr.String(), "-CAfile", cfg.SSL[keySSLTruststoreLocation],
		"-verify_return_error", "-verify_ip", "127.0.0.1", "-showcerts")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Verify return code: 0 (ok)") || !strings.Contains(string(out), "CN = server") {
		t.Errorf("openssl s_client: %v\n%s", err, out)
	}
}

// TestSSLOnASecondListener: with CONTROLLER mapped to PLAINTEXT and
// CONTROLLER2 to SSL (its settings given per listener), each listener
// speaks its own protocol, and the node reaches the other controllers
// in plaintext, as its first controller listener does.
func TestSSLOnASecondListener(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	leaf := ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}})
	cfg := twoListenerConfig(t)
	dir := t.TempDir()
	cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecurityPlaintext, "CONTROLLER2": SecuritySSL}
	cfg.SSL = map[string]string{
		listenerSSLKey("CONTROLLER2", keySSLKeystoreType):     "PEM",
		listenerSSLKey("CONTROLLER2", keySSLKeystoreLocation): writeFile(t, dir, "keystore.pem", leaf.Keystore()),
	}
	node := startNode(t, cfg)
	if node.rc.peer.TLS != nil || node.rc.forward.TLS != nil {
		t.Error("the node dials the other controllers with TLS while its first listener is PLAINTEXT")
	}
	if _, err := apiVersionsFrom(t, "127.0.0.1", node.Addr()); err != nil {
		t.Errorf("plaintext on CONTROLLER: %v", err)
	}
	second, _ := node.ListenerAddr("CONTROLLER2")
	if _, err := apiVersionsFrom(t, "127.0.0.1", second); err == nil {
		t.Error("CONTROLLER2 answered a plaintext client")
	}
	if _, err := dialTLS(t, second, clientTLS(t, ca, nil)); err != nil {
		t.Errorf("TLS on CONTROLLER2: %v", err)
	}
}

// TestSSLPrincipalMappingRulesEmpty: an empty ssl.principal.mapping.rules
// starts the node, as Kafka's SslPrincipalMapper accepts a list without
// rules, and then refuses every client certificate at the handshake with
// the refusal of a subject no rule matches; a client without a
// certificate (ssl.client.auth=requested) is User:ANONYMOUS, which
// Kafka's principal builder does not map.
func TestSSLPrincipalMappingRulesEmpty(t *testing.T) {
	cfg, _, err := ParseProperties([]byte(sslBase + "ssl.principal.mapping.rules=\n"))
	if err != nil {
		t.Fatalf("an empty ssl.principal.mapping.rules: %v", err)
	}
	if s := cfg.listenerSSL("CONTROLLER")[keySSLPrincipalMappingRules]; !s.set || s.value != "" {
		t.Fatalf("an empty ssl.principal.mapping.rules reads as %+v, want it set and empty", s)
	}
	ca := tlstest.NewCA(t, "test CA")
	for _, rules := range []string{"", " , ,", "RULE:^CN=other,O=krabka$/other/"} {
		t.Run(fmt.Sprintf("%q", rules), func(t *testing.T) {
			var logs logBuffer
			cfg := ForTests(1, t.TempDir())
			sslNode(t, &cfg, t.TempDir(), ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca, "requested")
			cfg.SSL[keySSLPrincipalMappingRules] = rules
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			addr := startNode(t, cfg).Addr()
			if _, err := dialTLS(t, addr, clientTLS(t, ca, ca.Issue(t, "admin", tlstest.Options{}))); err == nil {
				t.Error("a client certificate was admitted")
			}
			want := errNoMappingRule.Error() + " to CN=admin,O=krabka"
			deadline := time.Now().Add(5 * time.Second)
			for logs.count(want) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if logs.count(want) == 0 {
				t.Errorf("the listener's log does not say %q", want)
			}
			if _, err := dialTLS(t, addr, clientTLS(t, ca, nil)); err != nil {
				t.Errorf("a client without a certificate: %v, want it admitted as User:ANONYMOUS", err)
			}
		})
	}
}

// TestSSLPrincipalMappingRules: on an SSL listener with the standard
// authorizer, ssl.principal.mapping.rules names a client by its mapped
// certificate subject (User:admin, a super user, from CN=Admin); a
// subject no rule matches is refused at the connection; a malformed rule
// refuses to start, and a rule for a SASL_SSL listener, which names its
// clients by SASL, is refused as ignored.
func TestSSLPrincipalMappingRules(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	node := func(rules string) net.Addr {
		cfg := ForTests(1, t.TempDir())
		sslNode(t, &cfg, t.TempDir(), ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca, "required")
		cfg.SSL[keySSLPrincipalMappingRules] = rules
		cfg.AuthorizerClassName = StandardAuthorizerClass
		cfg.SuperUsers = []string{"User:admin"}
		return startNode(t, cfg).Addr()
	}
	conn := func(addr net.Addr, cn string) (net.Conn, error) {
		tc, err := dialTLS(t, addr, clientTLS(t, ca, ca.Issue(t, cn, tlstest.Options{})))
		if err == nil {
			_ = tc.SetDeadline(time.Now().Add(20 * time.Second))
		}
		return tc, err
	}
	describe := func(nc net.Conn) int16 {
		return tlsRoundTrip(t, nc, describeQuorumRequest()).(*kmsg.DescribeQuorumResponse).ErrorCode
	}

	addr := node("RULE:^CN=([^,]+),O=krabka$/$1/L, DEFAULT")
	admin, err := conn(addr, "Admin")
	if err != nil {
		t.Fatal(err)
	}
	if code := describe(admin); code != 0 {
		t.Errorf("DescribeQuorum as CN=Admin,O=krabka (mapped to User:admin) = code %d, want 0", code)
	}
	viewer, err := conn(addr, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	if code := describe(viewer); code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("DescribeQuorum as User:viewer = code %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}

	addr = node("RULE:^CN=admin,O=krabka$/admin/")
	if _, err := conn(addr, "stranger"); err == nil {
		t.Error("a client whose subject no rule matches was admitted")
	}
	if admin, err := conn(addr, "admin"); err != nil {
		t.Errorf("CN=admin: %v", err)
	} else if code := describe(admin); code != 0 {
		t.Errorf("DescribeQuorum as User:admin = code %d, want 0", code)
	}

	_, _, err = ParseProperties([]byte(sslBase + "ssl.principal.mapping.rules=RULE:^CN=(.*)$/$1/L/U\n"))
	if got := configErrors(t, err); len(got) != 1 || got[0].Key != keySSLPrincipalMappingRules || !strings.Contains(got[0].Reason, `ends with "L/U"`) {
		t.Errorf("a malformed rule: %v, want a problem with %s", err, keySSLPrincipalMappingRules)
	}
	_, _, err = ParseProperties([]byte(baseProperties + "listener.security.protocol.map=CONTROLLER:SASL_SSL\nsasl.enabled.mechanisms=PLAIN\n" +
		"ssl.keystore.type=PEM\nssl.keystore.location=/k.pem\nssl.principal.mapping.rules=DEFAULT\n"))
	if got := configErrors(t, err); !slices.ContainsFunc(got, func(e *ConfigError) bool {
		return e.Key == keySSLPrincipalMappingRules && strings.Contains(e.Reason, "on SASL_SSL the principal is the SASL user")
	}) {
		t.Errorf("mapping rules on a SASL_SSL listener: %v, want them refused as ignored", err)
	}
}
