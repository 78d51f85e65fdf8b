package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// testLifetime is the session lifetime (connections.max.reauth.ms) of the
// re-authentication tests, which run on fake time.
const testLifetime = 10 * time.Second

// reauthServer serves a SASL_PLAINTEXT listener on n enabling PLAIN (users
// alice and admin) and SCRAM-SHA-256 (alice), whose PLAIN sessions last
// lifetime (none at 0); h, when not nil, serves the requests instead of
// the echo of describeQuorumFor's name.
func reauthServer(t *testing.T, n *MemNetwork, lifetime time.Duration, h Handler) *Server {
	t.Helper()
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(t, MechanismScramSHA256, "alice", "alice-secret")
	if h == nil {
		h = HandlerFunc(func(_ context.Context, req *Request, reply *Reply) { reply.Send(nameEcho(req)) })
	}
	cfg := testServerConfig(h)
	cfg.Handshake = SASL{
		Mechanisms:       []string{MechanismPlain, MechanismScramSHA256},
		PlainUsers:       map[string]string{"alice": "alice-secret", "admin": "admin-secret"},
		ScramCredentials: store.lookup,
		MaxReceiveSize:   DefaultSASLMaxReceiveSize,
		FailedDelay:      testFailedDelay,
		MaxReauth:        map[string]time.Duration{MechanismPlain: lifetime},
	}
	return memServer(t, n, cfg)
}

// authenticated serves reauthServer(lifetime, h) and returns it with a
// client authenticated as alice with PLAIN (correlation ids 1 and 2).
func authenticated(t *testing.T, lifetime time.Duration, h Handler) (*Server, *client) {
	t.Helper()
	n := NewMemNetwork()
	s := reauthServer(t, n, lifetime, h)
	c := memDial(t, n, "10.0.0.1")
	if resp := c.plainAuth(1, "alice", "alice-secret"); resp.ErrorCode != 0 {
		t.Fatalf("SaslAuthenticate answered %+v", resp)
	}
	return s, c
}

// plainAuth runs SaslHandshake v1 and SaslAuthenticate v2 for PLAIN user
// with password on c, from correlation id corr, and returns the
// SaslAuthenticate answer.
func (c *client) plainAuth(corr int32, user, password string) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	if resp := c.saslHandshake(corr, MechanismPlain); resp.ErrorCode != 0 {
		c.t.Fatalf("SaslHandshake answered %+v", resp)
	}
	auth := authenticateRequest([]byte("\x00" + user + "\x00" + password))
	c.send(corr+1, auth)
	_, resp := c.recv(auth)
	return resp.(*kmsg.SASLAuthenticateResponse)
}

// saslHandshake sends SaslHandshake v1 for mechanism with correlation id
// corr and returns its answer.
func (c *client) saslHandshake(corr int32, mechanism string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	hs := c.sendHandshake(corr, mechanism)
	_, resp := c.recv(hs)
	return resp.(*kmsg.SASLHandshakeResponse)
}

// sendHandshake sends SaslHandshake v1 for mechanism without waiting for
// the answer, and returns the request.
func (c *client) sendHandshake(corr int32, mechanism string) *kmsg.SASLHandshakeRequest {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mechanism
	c.send(corr, hs)
	return hs
}

// closedWith checks that the server closes c, then, once the server has
// settled, that its stats pass ok.
func (c *client) closedWith(s *Server, ok func(ServerStats) bool, want string) {
	c.t.Helper()
	c.expectClosed()
	synctest.Wait()
	if st := s.Stats(); !ok(st) {
		c.t.Errorf("stats %+v, want %s", st, want)
	}
}

// describe sends a DescribeQuorum named name and checks its answer.
func (c *client) describe(corr int32, name string) {
	c.t.Helper()
	c.send(corr, describeQuorumFor(name))
	if got, resp := c.recv(describeQuorumFor("")); got != corr || resp.(*kmsg.DescribeQuorumResponse).Topics[0].Topic != name {
		c.t.Fatalf("answer %d %+v, want %d for %q", got, resp, corr, name)
	}
}

// TestReauthSessionLifetime: SaslAuthenticate v1+ carries the session
// lifetime (KIP-368), the mechanism's connections.max.reauth.ms, and 0
// for a mechanism without one.
func TestReauthSessionLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		reauthServer(t, n, testLifetime, nil)
		c := memDial(t, n, "10.0.0.1")
		if resp := c.plainAuth(1, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != testLifetime.Milliseconds() {
			t.Fatalf("SaslAuthenticate answered %+v, want session_lifetime_ms %d", resp, testLifetime.Milliseconds())
		}

		// SCRAM-SHA-256 has no lifetime here.
		cl := scramPeerSession(t, n, MechanismScramSHA256)
		if cl != 0 {
			t.Errorf("SCRAM session lifetime %v, want 0", cl)
		}
	})
}

// scramPeerSession authenticates alice with mechanism on a new connection
// and returns the session lifetime the server gave.
func scramPeerSession(t *testing.T, n *MemNetwork, mechanism string) time.Duration {
	t.Helper()
	nc, err := n.DialFrom(t.Context(), "10.0.0.9", serverAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nc.Close() }()
	sc := &SASLClient{Mechanism: mechanism, Username: "alice", Password: "alice-secret"}
	lifetime, err := sc.authenticate(nc, "test", DefaultSASLMaxReceiveSize)
	if err != nil {
		t.Fatal(err)
	}
	return lifetime
}

// TestReauthExpiredSessionIsClosed: a client that keeps sending after its
// session expired, without re-authenticating, has its connection closed
// at the first request after expiry, unanswered, as Kafka's SocketServer
// closes it; before expiry it is served.
func TestReauthExpiredSessionIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, c := authenticated(t, testLifetime, nil)
		time.Sleep(testLifetime - time.Second)
		c.describe(3, "before expiry")
		time.Sleep(2 * time.Second) // 1 s past the lifetime
		c.send(4, describeQuorumFor("after expiry"))
		c.closedWith(s, func(st ServerStats) bool { return st.ClosedExpired == 1 && st.Active == 0 }, "1 closed expired and none active")
	})
}

// TestReauthRenewsSession: a re-authentication on the same connection
// (SaslHandshake and SaslAuthenticate again, same user) starts a new
// lifetime: the connection is served past the first one, then closed
// after the second.
func TestReauthRenewsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, c := authenticated(t, testLifetime, nil)
		time.Sleep(testLifetime - time.Second)
		if resp := c.plainAuth(3, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != testLifetime.Milliseconds() {
			t.Fatalf("re-authentication answered %+v", resp)
		}
		time.Sleep(testLifetime - time.Second) // past the first lifetime
		c.describe(5, "renewed")
		time.Sleep(2 * time.Second) // past the second
		c.send(6, describeQuorumFor("expired"))
		c.closedWith(s, func(st ServerStats) bool { return st.Reauthenticated == 1 && st.ClosedExpired == 1 && st.Accepted == 1 },
			"1 re-authentication and 1 expired close on one connection")
	})
}

// TestReauthAfterExpiry: a re-authentication that starts after the
// session expired is still served (Kafka checks expiry only for requests
// that are not a SaslHandshake).
func TestReauthAfterExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := authenticated(t, testLifetime, nil)
		time.Sleep(testLifetime + time.Second)
		if resp := c.plainAuth(3, "alice", "alice-secret"); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication after expiry answered %+v", resp)
		}
		c.describe(5, "renewed late")
	})
}

// TestReauthRefusesAnotherPrincipal: a re-authentication as another user
// fails with SASL_AUTHENTICATION_FAILED and Kafka's message, after the
// failed authentication delay, and closes the connection.
func TestReauthRefusesAnotherPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, c := authenticated(t, testLifetime, nil)
		time.Sleep(2 * time.Second)
		start := time.Now()
		resp := c.plainAuth(3, "admin", "admin-secret")
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
			*resp.ErrorMessage != "Cannot change principals during re-authentication from User.alice: User.admin" {
			t.Fatalf("re-authentication as admin answered %+v", resp)
		}
		if waited := time.Since(start); waited < testFailedDelay {
			t.Errorf("answered after %v, before the failed authentication delay %v", waited, testFailedDelay)
		}
		c.closedWith(s, func(st ServerStats) bool { return st.ReauthFailed == 1 && st.Reauthenticated == 0 }, "1 failed re-authentication")
	})
}

// TestReauthRefusesAnotherMechanism: a re-authentication naming another
// enabled mechanism gets its SaslHandshake answered, and then the
// connection is closed at the next token, unanswered (Kafka's
// REAUTH_BAD_MECHANISM).
func TestReauthRefusesAnotherMechanism(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := authenticated(t, testLifetime, nil)
		time.Sleep(2 * time.Second)
		if resp := c.saslHandshake(3, MechanismScramSHA256); resp.ErrorCode != 0 {
			t.Fatalf("SaslHandshake answered %+v", resp)
		}
		c.send(4, authenticateRequest([]byte("n,,n=alice,r=abcdefgh")))
		c.expectClosed()
	})
}

// TestReauthHostileExchanges: a re-authentication is held to the rules
// of a first one: another request in the middle of it is answered
// ILLEGAL_SASL_STATE where it can be and closes the connection, and one
// that stalls is cut off at the handshake timeout (10 s), so a renewal
// cannot hold a connection, and its buffers, open.
func TestReauthHostileExchanges(t *testing.T) {
	// begin authenticates, waits past the one-second rule and starts a
	// re-authentication.
	begin := func(t *testing.T) (*Server, *client) {
		t.Helper()
		s, c := authenticated(t, testLifetime, nil)
		time.Sleep(2 * time.Second)
		if resp := c.saslHandshake(3, MechanismPlain); resp.ErrorCode != 0 {
			t.Fatalf("SaslHandshake answered %+v", resp)
		}
		return s, c
	}
	synctest.Test(t, func(t *testing.T) {
		s, c := begin(t)
		c.send(4, describeQuorumFor("in the middle"))
		c.expectIllegalSASLState(4, describeQuorumFor(""))
		c.closedWith(s, func(st ServerStats) bool { return st.ReauthFailed == 1 }, "the interrupted re-authentication failed")
	})
	synctest.Test(t, func(t *testing.T) {
		s, c := begin(t)
		time.Sleep(9 * time.Second)
		if !c.isOpen() {
			t.Fatal("closed before the handshake timeout")
		}
		time.Sleep(2 * time.Second)
		c.closedWith(s, func(st ServerStats) bool { return st.ReauthFailed == 1 && st.Active == 0 }, "the stalled re-authentication cut off")
	})
}

// TestReauthNotOffered: without a session lifetime, and within a second
// of the last re-authentication, a SaslHandshake is answered
// ILLEGAL_SASL_STATE and the connection stays open; so is a
// SaslAuthenticate outside an exchange, with Kafka's message.
func TestReauthNotOffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		illegal := func(t *testing.T, c *client, corr int32) {
			t.Helper()
			if resp := c.saslHandshake(corr, MechanismPlain); resp.ErrorCode != kerr.IllegalSaslState.Code {
				t.Fatalf("SaslHandshake answered %+v, want ILLEGAL_SASL_STATE", resp)
			}
			auth := authenticateRequest([]byte("\x00alice\x00alice-secret"))
			c.send(corr+1, auth)
			_, resp := c.recv(auth)
			if ar := resp.(*kmsg.SASLAuthenticateResponse); ar.ErrorCode != kerr.IllegalSaslState.Code || ar.ErrorMessage == nil ||
				*ar.ErrorMessage != "SaslAuthenticate request received after successful authentication" {
				t.Fatalf("SaslAuthenticate answered %+v", ar)
			}
			c.describe(corr+2, "still open")
		}
		n := NewMemNetwork()
		reauthServer(t, n, 0, nil)
		c := memDial(t, n, "10.0.0.1")
		if resp := c.plainAuth(1, "alice", "alice-secret"); resp.SessionLifetimeMillis != 0 {
			t.Fatalf("session lifetime %d without connections.max.reauth.ms", resp.SessionLifetimeMillis)
		}
		illegal(t, c, 3) // no lifetime

		_, c2 := authenticated(t, testLifetime, nil)
		time.Sleep(2 * time.Second)
		c2.plainAuth(3, "alice", "alice-secret")
		illegal(t, c2, 5) // within a second of the last
	})
}

// TestReauthAnswersEarlierRequestsFirst: a SaslHandshake pipelined behind
// a request not yet answered is served after that answer is written, so
// the client reads the answers in request order.
func TestReauthAnswersEarlierRequestsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		held := make(chan *Reply, 1)
		var heldReq *Request
		h := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
			if req.Body.(*kmsg.DescribeQuorumRequest).Topics[0].Topic == "held" {
				heldReq = req
				held <- reply
				return
			}
			reply.Send(nameEcho(req))
		})
		_, c := authenticated(t, testLifetime, h)
		time.Sleep(2 * time.Second)
		c.send(3, describeQuorumFor("held"))
		hs := c.sendHandshake(4, MechanismPlain)
		reply := <-held
		synctest.Wait()
		reply.Send(nameEcho(heldReq))
		if corr, _ := c.recv(describeQuorumFor("")); corr != 3 {
			t.Fatalf("first answer has correlation id %d, want 3 (the held request)", corr)
		}
		if corr, resp := c.recv(hs); corr != 4 || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("second answer %d %+v, want the SaslHandshake's", corr, resp)
		}
		auth := authenticateRequest([]byte("\x00alice\x00alice-secret"))
		c.send(5, auth)
		if _, resp := c.recv(auth); resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
			t.Fatalf("SaslAuthenticate answered %+v", resp)
		}
		c.describe(6, "after")
	})
}

// memSASLPeer is a Peer of the listener at serverAddr on n that
// authenticates as alice (password alice-secret) with mechanism.
func memSASLPeer(t *testing.T, n *MemNetwork, mechanism string) *Peer {
	t.Helper()
	return testPeer(t, func(cfg *PeerConfig) {
		cfg.Addr, cfg.Dial = serverAddr, n.Dial
		cfg.SASL = &SASLClient{Mechanism: mechanism, Username: "alice", Password: "alice-secret"}
	})
}

// TestReauthPeer: a Peer whose session has a lifetime re-authenticates
// on its connection before the lifetime ends, at 85–95% of it as Kafka's
// client does, and keeps being served on that one connection.
func TestReauthPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		s := reauthServer(t, n, testLifetime, nil)
		p := memSASLPeer(t, n, MechanismPlain)
		got := make(chan outcome, 1)
		ask := func(name string) {
			t.Helper()
			p.Send(describeQuorumFor(name), collect(got))
			if a := answeredName(t, <-got); a != name {
				t.Fatalf("answer %q, want %q", a, name)
			}
		}
		ask("first")
		for i := range 4 {
			// Every 96% of a lifetime: past the renewal point, before the
			// end of the session.
			time.Sleep(testLifetime * 96 / 100)
			ask("later")
			if st := p.Stats(); st.Reauthenticated != uint64(i+1) || st.Dials != 1 {
				t.Fatalf("after %d lifetimes: peer stats %+v, want %d re-authentications on 1 connection", i+1, st, i+1)
			}
		}
		if st := s.Stats(); st.Reauthenticated != 4 || st.ClosedExpired != 0 || st.Accepted != 1 {
			t.Errorf("server stats %+v, want 4 re-authentications on one connection, none expired", st)
		}
	})
}

// TestReauthPeerShortLifetime: with a lifetime of a second, a Peer's
// second renewal on a connection comes less than a second after its
// first, which the listener refuses (ILLEGAL_SASL_STATE); the Peer then
// reconnects and authenticates afresh, and no request is lost.
func TestReauthPeerShortLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		s := reauthServer(t, n, time.Second, nil)
		p := memSASLPeer(t, n, MechanismPlain)
		got := make(chan outcome, 1)
		// A request every 10 ms: a renewal starts within 10 ms of its
		// point, 85–95% of the lifetime after the last, so always less
		// than a second after it (with requests 100 ms apart, a point
		// past 90% would round up to a full second and be allowed).
		for range 600 {
			p.Send(describeQuorumFor("short"), collect(got))
			if name := answeredName(t, <-got); name != "short" {
				t.Fatalf("answer %q", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := p.Stats(); st.Dials < 2 || st.Reauthenticated == 0 {
			t.Errorf("peer stats %+v, want renewals and reconnections", st)
		}
		if st := s.Stats(); st.ClosedExpired != 0 {
			t.Errorf("server stats %+v, want no expired session", st)
		}
	})
}

// TestReauthKgo: franz-go's client re-authenticates on the
// session_lifetime_ms it is given, on the same connection, and is served
// past the first lifetime.
func TestReauthKgo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		s := reauthServer(t, n, testLifetime, nil)
		cl, err := kgo.NewClient(kgo.SeedBrokers(serverAddr),
			kgo.Dialer(func(ctx context.Context, _, host string) (net.Conn, error) { return n.DialFrom(ctx, "10.0.0.7", host) }),
			kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := range 3 {
			resp, err := cl.SeedBrokers()[0].Request(t.Context(), describeQuorumFor("kgo"))
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if name := resp.(*kmsg.DescribeQuorumResponse).Topics[0].Topic; name != "kgo" {
				t.Fatalf("answer %q", name)
			}
			// franz-go renews a second before the lifetime ends.
			time.Sleep(testLifetime - time.Second/2)
		}
		if st := s.Stats(); st.Reauthenticated < 2 || st.ClosedExpired != 0 || st.Accepted != 1 {
			t.Errorf("server stats %+v, want franz-go to re-authenticate its one connection", st)
		}
	})
}

// TestReauthKgoSCRAMOverTLS: over SASL_SSL, franz-go's SCRAM-SHA-512
// client renews its session on its one TLS connection (real time: a
// lifetime of 2 s, which franz-go renews a second early).
func TestReauthKgoSCRAMOverTLS(t *testing.T) {
	store := &scramStore{creds: map[string]ScramCredential{}}
	store.put(t, MechanismScramSHA512, "alice", "alice-secret")
	ca := tlstest.NewCA(t, "reauth-ca")
	srv := scramServerWith(t, store, ca, func(h *SASL) {
		h.MaxReauth = map[string]time.Duration{MechanismScramSHA512: 2 * time.Second}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()),
		kgo.DialTLSConfig(&tls.Config{RootCAs: tlstest.Pool(ca), MinVersion: tls.VersionTLS12}),
		kgo.SASL(scramMech(MechanismScramSHA512, "alice", "alice-secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(testDeadline)
	for srv.Stats().Reauthenticated == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no re-authentication within %v: %+v", testDeadline, srv.Stats())
		}
		if _, err := cl.SeedBrokers()[0].Request(t.Context(), describeQuorumFor("tls")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := cl.SeedBrokers()[0].Request(t.Context(), describeQuorumFor("tls")); err != nil {
		t.Fatalf("after the re-authentication: %v", err)
	}
	if st := srv.Stats(); st.Accepted != 1 || st.ClosedExpired != 0 || st.ReauthFailed != 0 {
		t.Errorf("stats %+v, want one connection, renewed", st)
	}
}

// TestReauthRemovedCredentialClosesSession: a session outlives its
// credential only until its lifetime: a Peer whose SCRAM credential was
// removed fails to renew, its connection is closed, and a new one cannot
// authenticate.
func TestReauthRemovedCredentialClosesSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		store := &scramStore{creds: map[string]ScramCredential{}}
		store.put(t, MechanismScramSHA256, "alice", "alice-secret")
		cfg := testServerConfig(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) { reply.Send(nameEcho(req)) }))
		cfg.Handshake = SASL{
			Mechanisms:       []string{MechanismScramSHA256},
			ScramCredentials: store.lookup,
			MaxReceiveSize:   DefaultSASLMaxReceiveSize,
			MaxReauth:        map[string]time.Duration{MechanismScramSHA256: testLifetime},
		}
		s := memServer(t, n, cfg)
		p := memSASLPeer(t, n, MechanismScramSHA256)
		got := make(chan outcome, 1)
		p.Send(describeQuorumFor("before"), collect(got))
		answeredName(t, <-got)
		store.mu.Lock()
		delete(store.creds, MechanismScramSHA256+"/alice")
		store.mu.Unlock()
		p.Send(describeQuorumFor("within the lifetime"), collect(got))
		answeredName(t, <-got) // the open session still holds
		time.Sleep(testLifetime * 96 / 100)
		p.Send(describeQuorumFor("after"), collect(got))
		if o := <-got; o.err == nil {
			t.Fatalf("a request after the credential's removal and the renewal point was answered: %+v", o.resp)
		}
		synctest.Wait()
		if st := s.Stats(); st.ReauthFailed != 1 || st.Active != 0 {
			t.Errorf("server stats %+v, want the renewal failed and the connection closed", st)
		}
	})
}

// FuzzReauthExchange: whatever bytes a client sends as a
// re-authentication of alice's PLAIN session (its SaslHandshake frame,
// then the rest of the stream), the exchange never panics, and when it
// succeeds the session keeps alice's principal and mechanism and gets a
// lifetime.
func FuzzReauthExchange(f *testing.F) {
	hs := func(mechanism string) []byte {
		b, _ := wire.AppendRequest(nil, 1, nil, &kmsg.SASLHandshakeRequest{Version: 1, Mechanism: mechanism})
		return b[4:]
	}
	auth := func(token string) []byte {
		b, _ := wire.AppendRequest(nil, 2, nil, authenticateRequest([]byte(token)))
		return b
	}
	f.Add(hs(MechanismPlain), auth("\x00alice\x00alice-secret"))
	f.Add(hs(MechanismPlain), auth("\x00admin\x00admin-secret"))
	f.Add(hs(MechanismScramSHA256), auth("n,,n=alice,r=abc"))
	f.Add(hs(MechanismPlain), []byte("\x00\x00\x00\x05hello"))
	h := SASL{
		Mechanisms:       []string{MechanismPlain, MechanismScramSHA256},
		PlainUsers:       map[string]string{"alice": "alice-secret", "admin": "admin-secret"},
		ScramCredentials: func(string, string) (ScramCredential, bool) { return ScramCredential{}, false },
		MaxReceiveSize:   DefaultSASLMaxReceiveSize,
		MaxReauth:        map[string]time.Duration{MechanismPlain: testLifetime},
	}
	prev := saslSession{principal: Principal{Type: "User", Name: "alice"}, mechanism: MechanismPlain, expires: time.Now()}
	f.Fuzz(func(t *testing.T, first, rest []byte) {
		var out bytes.Buffer
		sess, err := h.reauthenticate(t.Context(), bytes.NewReader(rest), &out, first, prev)
		if err != nil {
			return
		}
		if sess.principal != prev.principal || sess.mechanism != prev.mechanism || sess.expires.IsZero() {
			t.Fatalf("re-authentication gave %+v, from %+v", sess, prev)
		}
	})
}
