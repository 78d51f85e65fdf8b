package faults

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/internal/wire/wiretest"
	"github.com/krabka-go/krabka/raft"
)

// The security protocols a cluster's listeners can speak.
const (
	plaintext = "PLAINTEXT"
	saslSSL   = "SASL_SSL"
)

var (
	flagSecurity = flag.String("faults.security", plaintext, "security protocol of every controller listener, of the controllers' and embedded hosts' connections and of the campaign's clients: PLAINTEXT or SASL_SSL")
)

// The SCRAM-SHA-512 credential every controller, embedded host and client
// of a SASL_SSL cluster authenticates with, bootstrapped by krabka storage
// format --add-scram.
const (
	scramUser     = "controller"
	scramPassword = "controller-secret"
)

// security is a SASL_SSL cluster's certificates and client settings: a CA
// of the test's own, a certificate per host valid for its address and for
// the gateway (where its peers reach it, through the proxies), a client
// certificate (every listener requires one, ssl.client.auth=required),
// and the client properties of the test's tools and clients.
type security struct {
	ca          *tlstest.CA
	dir         string
	clientProps string
	client      raft.ClientSecurity
}

// newSecurity makes the CA and the certificates of hosts 1 to n under
// dir/certs, readable by every host, and the client properties.
func newSecurity(t *testing.T, dir string, n int, h hosts) *security {
	t.Helper()
	s := &security{ca: tlstest.NewCA(t, "krabka faults CA"), dir: filepath.Join(dir, "certs")}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"ca.pem": s.ca.PEM, "client.pem": s.ca.Issue(t, "client", tlstest.Options{}).Keystore()}
	for id := 1; id <= n; id++ {
		leaf := s.ca.Issue(t, fmt.Sprintf("node-%d", id), tlstest.Options{Names: []string{h.nodeAddr(id).String(), h.gateway().String()}})
		files[fmt.Sprintf("node-%d.pem", id)] = leaf.Keystore()
	}
	files["client.properties"] = []byte(fmt.Sprintf("security.protocol=SASL_SSL\n"+
		"ssl.keystore.type=PEM\nssl.keystore.location=%s\n"+
		"ssl.truststore.type=PEM\nssl.truststore.location=%s\n"+
		"sasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=%s\n", filepath.Join(s.dir, "client.pem"), filepath.Join(s.dir, "ca.pem"), scramJAAS()))
	for name, data := range files {
		// The containers read them through the bind mount, whatever
		// user the engine maps the image's root to.
		if err := os.Chmod(tlstest.WriteFile(t, s.dir, name, data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.clientProps = filepath.Join(s.dir, "client.properties")
	var err error
	if s.client, err = raft.LoadClientConfig(s.clientProps); err != nil {
		t.Fatal(err)
	}
	return s
}

func scramJAAS() string {
	return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, scramUser, scramPassword)
}

// serverProps are the properties that put host id's controller listener,
// and its connections to the voters, on SASL_SSL with SCRAM-SHA-512.
func (s *security) serverProps(id int) []string {
	return []string{
		"listener.security.protocol.map=CONTROLLER:SASL_SSL",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.mechanism.controller.protocol=SCRAM-SHA-512",
		"listener.name.controller.scram-sha-512.sasl.jaas.config=" + scramJAAS(),
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + filepath.Join(s.dir, fmt.Sprintf("node-%d.pem", id)),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + filepath.Join(s.dir, "ca.pem"),
		"ssl.client.auth=required",
	}
}

// formatArgs bootstraps the credential, as the secure compose quorum does.
func (s *security) formatArgs() []string {
	return []string{"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", scramUser, scramPassword)}
}

// toolArgs are the flags that give a krabka command the client settings.
func (c *cluster) toolArgs() []string {
	if c.sec == nil {
		return nil
	}
	return []string{"--command-config", c.sec.clientProps}
}

// call sends one request to addr on a new connection, secured as the
// cluster's listeners want, and returns the answer, giving up at ctx's
// deadline.
func (c *cluster) call(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	if c.sec == nil {
		return wiretest.Call(ctx, addr, req)
	}
	return secureCall(ctx, addr, c.sec.client, req)
}

// secureCall is one request on a new connection made with the client
// settings cs: TLS, then SASL, then the request.
func secureCall(ctx context.Context, addr string, cs raft.ClientSecurity, req kmsg.Request) (kmsg.Response, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	sasl := &transport.SASLClient{Mechanism: cs.SASLMechanism, Username: cs.SASLUsername, Password: cs.SASLPassword}
	conn, _, err := transport.UpgradeClient(ctx, nc, addr, cs.TLS, sasl, "krabka-faults", wire.DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return wiretest.Exchange(ctx, conn, req)
}

// TestSecureStrangersRefused runs a SASL_SSL quorum of three under
// clients that write and read, and has three strangers send every node,
// over and over, a write of one of those clients' keys: one with the
// quorum's client certificate and a wrong password, one with the right
// password and a client certificate of another CA, and one with the
// quorum's certificate that sends its write without authenticating.
// Each attempt is refused (SASL_AUTHENTICATION_FAILED, the server's TLS
// alert, the connection closed before any answer or an error answer), the clients'
// writes keep being acknowledged meanwhile, and no stranger's value is in
// the byte-identical committed logs (the log checker finds no value that
// the history does not hold).
func TestSecureStrangersRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for seconds")
	}
	s := seed(t)
	c := newCluster(t, 3, 0, *flagTags, s, saslSSL)
	c.startAll()
	w := newWorkload(t, c, 2, 2)
	stop := w.start(3, 0, s)
	defer stop()

	wrongPassword := c.sec.client
	wrongPassword.SASLPassword = "not-" + scramPassword
	otherCA := c.sec.client
	stranger := tlstest.NewCA(t, "stranger CA").Issue(t, "client", tlstest.Options{}).TLSCertificate(t)
	otherCA.TLS = func(host string) *tls.Config {
		cfg := c.sec.client.TLS(host).Clone()
		cfg.Certificates = nil
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger, nil }
		return cfg
	}
	strangers := []struct {
		name    string
		attempt func(ctx context.Context, addr string, req kmsg.Request) error
	}{
		{"wrong password", func(ctx context.Context, addr string, req kmsg.Request) error {
			_, err := secureCall(ctx, addr, wrongPassword, req)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				return fmt.Errorf("want SASL_AUTHENTICATION_FAILED, got %v", err)
			}
			return nil
		}},
		{"certificate of another CA", func(ctx context.Context, addr string, req kmsg.Request) error {
			_, err := secureCall(ctx, addr, otherCA, req)
			// The server's alert comes back as crypto/tls reports a
			// received one: a net.OpError "remote error".
			var alert *net.OpError
			if !errors.As(err, &alert) || alert.Op != "remote error" {
				return fmt.Errorf("want the server's TLS alert, got %v", err)
			}
			return nil
		}},
		{"no SASL", func(ctx context.Context, addr string, req kmsg.Request) error {
			var d net.Dialer
			nc, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			conn, _, err := transport.UpgradeClient(ctx, nc, addr, c.sec.client.TLS, nil, "stranger", wire.DefaultMaxFrameSize)
			if err != nil {
				return fmt.Errorf("TLS handshake: %w", err)
			}
			defer conn.Close()
			resp, err := wiretest.Exchange(ctx, conn, req)
			if err == nil && resp.(*wire.SubmitChangeResponse).ErrorCode == 0 {
				return fmt.Errorf("a write before authentication was acknowledged: %+v", resp)
			}
			return nil
		}},
	}
	began := time.Now()
	attempts := 0
	for round := 0; !ackedAfter(w, began, 20)() || round < 5; round++ {
		for _, st := range strangers {
			for id := 1; id <= c.n; id++ {
				req := wire.NewSubmitChangeRequest()
				req.Records = [][]byte{configRecord(t, w.keys[0].topic, w.keys[0].name, fmt.Sprintf("stranger-%d", attempts))}
				actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := st.attempt(actx, c.addr(id), req)
				acancel()
				if err != nil {
					t.Fatalf("%s, node %d: %v", st.name, id, err)
				}
				attempts++
			}
		}
		if time.Since(began) > 2*time.Minute {
			t.Fatalf("fewer than 20 writes of the clients acknowledged in the %d strangers' attempts of the last 2 minutes", attempts)
		}
	}
	t.Logf("%d strangers' attempts refused while the clients wrote", attempts)
	stop()
	entries := c.finalLog(t)
	f := checkLog(t, w.hist.all(), entries)
	t.Logf("acknowledged %d, indeterminate %d (%d applied), lost %d, duplicated %d, phantom %d, reads %d", f.acked, f.unknown, f.unknownApplied, f.lost, f.duplicated, f.phantom, f.reads)
	if w.reads {
		checkLinearizable(t, w.hist.all(), entries, c.dir)
	}
}
