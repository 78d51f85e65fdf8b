package transport

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

func (s *scramStore) put(t testing.TB, mechanism, user, password string) {
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
	return scramServerWith(t, store, ca, func(*SASL) {})
}

// scramServerWith is scramServer with the handshake adjusted by adjust.
func scramServerWith(t *testing.T, store *scramStore, ca *tlstest.CA, adjust func(*SASL)) *Server {
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
	adjust(&hs)
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

// TestSCRAMPeerAuthenticates: a Peer with SCRAM credentials (how the
// controllers reach each other) gets answers, one with a wrong password
// gets none.
func TestSCRAMPeerAuthenticates(t *testing.T) {
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(t, MechanismScramSHA512, "admin", "admin-secret")
	s := scramServer(t, store, nil)
	peer := func(password string) *Peer {
		return saslPeer(t, s, &SASLClient{Mechanism: MechanismScramSHA512, Username: "admin", Password: password})
	}
	got := make(chan outcome, 1)
	peer("admin-secret").Send(describeQuorumFor("peer"), collect(got))
	if name := answeredName(t, <-got); name != "peer" {
		t.Fatalf("answer %q", name)
	}
	peer("wrong").Send(describeQuorumFor("refused"), collect(got))
	if o := <-got; o.err == nil {
		t.Fatalf("a Peer with a wrong password got an answer: %+v", o)
	}
}

// scramRawExchange drives a SCRAM-SHA-256 exchange by hand on a fresh
// connection: SaslHandshake v1, client-first, then the client-final
// that final builds from the server-first message. It returns the
// second SaslAuthenticate answer.
func scramRawExchange(t *testing.T, s *Server, first string, final func(serverFirst string) string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	c := dialTCP(t, s.Addr())
	corr := int32(0)
	roundTrip := func(req kmsg.Request) kmsg.Response {
		corr++
		c.send(corr, req)
		_, resp := c.recv(req)
		return resp
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = MechanismScramSHA256
	if r := roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte(first)
	r := roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 {
		return r
	}
	auth = kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte(final(string(r.SASLAuthBytes)))
	return roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
}

// scramFinal computes, as a client knowing the password does, a
// client-final-message for nonce over the given client-first-bare and
// server-first messages (RFC 5802 §3).
func scramFinal(t *testing.T, password, firstBare, serverFirst, nonce string) string {
	t.Helper()
	salt, err := base64.StdEncoding.DecodeString(scramAttr(serverFirst, "s"))
	if err != nil {
		t.Fatal(err)
	}
	iters, err := strconv.Atoi(scramAttr(serverFirst, "i"))
	if err != nil {
		t.Fatal(err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iters, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	withoutProof := "c=biws,r=" + nonce
	sig := mac(stored[:], firstBare+","+serverFirst+","+withoutProof)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)
}

// TestSCRAMNonce (bug zoo Z27, CVE-2024-56128): a client-final whose
// nonce is not the server-first nonce is refused with Kafka's message
// for it, even when its proof is right for the messages it was computed
// over; the server nonce differs between exchanges; and the right nonce
// authenticates.
func TestSCRAMNonce(t *testing.T) {
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(t, MechanismScramSHA256, "alice", "alice-secret")
	s := scramServer(t, store, nil)
	const firstBare = "n=alice,r=clientnonce"
	var seen []string
	good := scramRawExchange(t, s, "n,,"+firstBare, func(sf string) string {
		seen = append(seen, scramAttr(sf, "r"))
		return scramFinal(t, "alice-secret", firstBare, sf, scramAttr(sf, "r"))
	})
	if good.ErrorCode != 0 {
		t.Fatalf("the right nonce: %v", kerr.ErrorForCode(good.ErrorCode))
	}
	for _, forged := range []func(serverNonce string) string{
		func(string) string { return "clientnonce" },
		func(string) string { return "clientnonce" + "forged-server-nonce" },
		func(n string) string { return n + "x" },
		func(n string) string { return "other" + strings.TrimPrefix(n, "clientnonce") },
	} {
		bad := scramRawExchange(t, s, "n,,"+firstBare, func(sf string) string {
			seen = append(seen, scramAttr(sf, "r"))
			return scramFinal(t, "alice-secret", firstBare, sf, forged(scramAttr(sf, "r")))
		})
		if bad.ErrorCode != kerr.SaslAuthenticationFailed.Code || bad.ErrorMessage == nil || *bad.ErrorMessage != scramInvalidNonce {
			msg := ""
			if bad.ErrorMessage != nil {
				msg = *bad.ErrorMessage
			}
			t.Fatalf("Z27: a forged final nonce was not refused as one: %v %q", kerr.ErrorForCode(bad.ErrorCode), msg)
		}
	}
	for i := range seen {
		if !strings.HasPrefix(seen[i], "clientnonce") || len(seen[i]) == len("clientnonce") || slices.Contains(seen[:i], seen[i]) {
			t.Fatalf("server-first nonces %q: each must extend the client nonce with a fresh part", seen)
		}
	}
}

// TestSCRAMTokenAuthRefused: a client-first with the tokenauth extension
// (delegation tokens, not implemented) fails, even with a user whose
// password credential exists.
func TestSCRAMTokenAuthRefused(t *testing.T) {
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(t, MechanismScramSHA256, "alice", "alice-secret")
	s := scramServer(t, store, nil)
	r := scramRawExchange(t, s, "n,,n=alice,r=clientnonce,tokenauth=true", func(string) string {
		t.Fatal("a tokenauth client-first was answered")
		return ""
	})
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("tokenauth=true: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// FuzzSCRAMClientMessages: no client-first or client-final message
// panics the SCRAM exchange, and none authenticates without the
// password's proof (the fuzzer cannot compute one).
func FuzzSCRAMClientMessages(f *testing.F) {
	f.Add("n,,n=alice,r=clientnonce", "c=biws,r=clientnonce,p=AAAA")
	f.Add("n,a=alice,n=alice,r=x,tokenauth=true", "")
	f.Add("y,,n=al=2Cice,r=", "c=biws,p=")
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(f, MechanismScramSHA256, "alice", "alice-secret")
	f.Fuzz(func(t *testing.T, first, final string) {
		c := newScramConv(MechanismScramSHA256, store.lookup)
		if _, done, _, msg := c.step([]byte(first)); done || msg != "" {
			return
		}
		if _, done, _, msg := c.step([]byte(final)); done || msg == "" {
			t.Fatalf("client-final %q authenticated", final)
		}
	})
}
