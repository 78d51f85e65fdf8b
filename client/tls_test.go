package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/krabka-go/krabka/client"
	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// TestClientOverTLS: with Config.TLS the Client reaches a controller
// whose listener is SSL and requires a client certificate; without the
// certificate, or without trusting the controller's CA, Dial fails at once
// with ErrAuthentication.
func TestClientOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := raft.ForTests(1, filepath.Join(dir, "data"))
	cfg.ListenerSecurityProtocolMap = map[string]raft.SecurityProtocol{"CONTROLLER": raft.SecuritySSL}
	cfg.SSL = map[string]string{
		"ssl.keystore.type":       "PEM",
		"ssl.keystore.location":   write("keystore.pem", ca.Issue(t, "controller", tlstest.Options{Names: []string{"127.0.0.1"}}).Keystore()),
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": write("truststore.pem", ca.PEM),
		"ssl.client.auth":         "required",
	}
	ctx, ccfg := startSingle(t, cfg)
	ccfg.TLS = &tls.Config{RootCAs: tlstest.Pool(ca), MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{ca.Issue(t, "broker", tlstest.Options{}).TLSCertificate(t)}}
	cl, err := client.Dial(ctx, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := cl.SubmitChange(ctx, []metadata.Record{topic("secure")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Offset < 0 {
		t.Errorf("SubmitChange over TLS = %+v", res)
	}

	ccfg.TLS = &tls.Config{RootCAs: tlstest.Pool(ca), MinVersion: tls.VersionTLS12}
	if _, err := client.Dial(ctx, ccfg); !errors.Is(err, client.ErrAuthentication) {
		t.Errorf("Dial without a client certificate = %v, want ErrAuthentication", err)
	}
	ccfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12} // the system's roots do not hold ca
	if _, err := client.Dial(ctx, ccfg); !errors.Is(err, client.ErrAuthentication) {
		t.Errorf("Dial without trusting the controller's CA = %v, want ErrAuthentication", err)
	}
}

// TestClientOverSASL: with Config.SASL the Client authenticates to a
// SASL_PLAINTEXT listener with PLAIN; a wrong password makes Dial fail
// at once with ErrAuthentication.
func TestClientOverSASL(t *testing.T) {
	cfg := raft.ForTests(1, t.TempDir())
	cfg.ListenerSecurityProtocolMap = map[string]raft.SecurityProtocol{"CONTROLLER": raft.SecuritySASLPlaintext}
	cfg.SASL = map[string]string{
		"listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
		"sasl.mechanism.controller.protocol":               "PLAIN",
		"listener.name.controller.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_broker="broker-secret";`,
		"connection.failed.authentication.delay.ms":        "10",
	}
	ctx, ccfg := startSingle(t, cfg)
	ccfg.SASL = &client.SASL{Mechanism: "PLAIN", Username: "broker", Password: "broker-secret"}
	cl, err := client.Dial(ctx, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := client.NewReadImageRequest()
	req.Linearizable = true
	if _, err := cl.ReadImage(ctx, req); err != nil {
		t.Fatal(err)
	}

	ccfg.SASL.Password = "wrong"
	if _, err := client.Dial(ctx, ccfg); !errors.Is(err, client.ErrAuthentication) {
		t.Errorf("Dial with a wrong password = %v, want ErrAuthentication", err)
	}
}

// startSingle starts a single-node quorum with cfg and returns a context
// for the test's calls and a client Config naming the node.
func startSingle(t *testing.T, cfg raft.Config) (context.Context, client.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	node, err := raft.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	ccfg := client.DefaultConfig()
	ccfg.Controllers = []string{node.Addr().String()}
	return ctx, ccfg
}
