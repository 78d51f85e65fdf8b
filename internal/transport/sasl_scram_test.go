package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"
)

// scramStore is a credential store the tests change while a listener
// runs, as the metadata image changes under a controller.
type scramStore struct {
	mu    sync.Mutex
	creds map[string]ScramCredential
}

func (s *scramStore) put(t *testing.T, mechanism, user, password string) {
	t.Helper()
	gen := xscram.SHA256
	if mechanism == MechanismScramSHA512 {
		gen = xscram.SHA512
	}
	cl, err := gen.NewClient(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	salt := "salt-of-" + user
	sc, err := cl.GetStoredCredentialsWithError(xscram.KeyFactors{Salt: salt, Iters: ScramMinIterations})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creds[mechanism+"/"+user] = ScramCredential{Salt: []byte(salt), StoredKey: sc.StoredKey, ServerKey: sc.ServerKey, Iterations: ScramMinIterations}
}

func (s *scramStore) lookup(mechanism, user string) (ScramCredential, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.creds[mechanism+"/"+user]
	return c, ok
}

// scramServer serves a SASL listener enabling both SCRAM mechanisms and
// PLAIN, with credentials from store; tlsOn makes it SASL_SSL.
func scramServer(t *testing.T, store *scramStore, ca *tlstest.CA) *Server {
	t.Helper()
	h := withAPIVersions(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		reply.Send(nameEcho(req))
	}))
	cfg := testServerConfig(h)
	hs := SASL{
		Mechanisms:       []string{MechanismScramSHA256, MechanismScramSHA512},
		ScramCredentials: store.lookup,
		MaxReceiveSize:   DefaultSASLMaxReceiveSize,
		FailedDelay:      testFailedDelay,
	}
	if ca != nil {
		leaf := ca.Issue(t, "localhost", tlstest.Options{Names: []string{"127.0.0.1"}})
		hs.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLSCertificate(t)}, MinVersion: tls.VersionTLS12}
	}
	cfg.Handshake = hs
	return startTCP(t, cfg)
}

func scramMech(mechanism, user, password string) sasl.Mechanism {
	a := scram.Auth{User: user, Pass: password}
	if mechanism == MechanismScramSHA512 {
		return a.AsSha512Mechanism()
	}
	return a.AsSha256Mechanism()
}

// TestSCRAMKgo: franz-go's SCRAM client authenticates with each
// mechanism; a wrong password, an unknown user and a mechanism without
// the user's credential fail with SASL_AUTHENTICATION_FAILED; a
// credential added after the listener started works, and one removed
// stops working.
func TestSCRAMKgo(t *testing.T) {
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(t, MechanismScramSHA256, "alice", "alice-secret")
	store.put(t, MechanismScramSHA512, "bob", "bob-secret")
	srv := scramServer(t, store, nil)
	addr := srv.Addr().String()
	ok := func(mech, user, pass string) {
		t.Helper()
		if _, err := kgoDescribeQuorum(t, addr, scramMech(mech, user, pass)); err != nil {
			t.Fatalf("%s as %s: %v", mech, user, err)
		}
	}
	fail := func(mech, user, pass string) {
		t.Helper()
		_, err := kgoDescribeQuorum(t, addr, scramMech(mech, user, pass))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s as %s: %v, want SASL_AUTHENTICATION_FAILED", mech, user, err)
		}
		if strings.Contains(err.Error(), pass) {
			t.Fatalf("error holds the password: %v", err)
		}
	}
	ok(MechanismScramSHA256, "alice", "alice-secret")
	ok(MechanismScramSHA512, "bob", "bob-secret")
	fail(MechanismScramSHA256, "alice", "wrong-secret")
	fail(MechanismScramSHA256, "nobody", "whatever")
	fail(MechanismScramSHA512, "alice", "alice-secret")
	fail(MechanismScramSHA256, "carol", "carol-secret")
	store.put(t, MechanismScramSHA256, "carol", "carol-secret")
	ok(MechanismScramSHA256, "carol", "carol-secret")
	store.mu.Lock()
	delete(store.creds, MechanismScramSHA256+"/carol")
	store.mu.Unlock()
	fail(MechanismScramSHA256, "carol", "carol-secret")
}

// TestSCRAMKgoSASLSSL: SCRAM over SASL_SSL.
func TestSCRAMKgoSASLSSL(t *testing.T) {
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(t, MechanismScramSHA512, "alice", "alice-secret")
	ca := tlstest.NewCA(t, "scram-ca")
	srv := scramServer(t, store, ca)
	tc := &tls.Config{RootCAs: tlstest.Pool(ca), MinVersion: tls.VersionTLS12}
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()), kgo.DialTLSConfig(tc),
		kgo.SASL(scramMech(MechanismScramSHA512, "alice", "alice-secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), testDeadline)
	defer cancel()
	if _, err := cl.SeedBrokers()[0].Request(ctx, describeQuorumFor("sasl")); err != nil {
		t.Fatal(err)
	}
}
