package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const testFailedDelay = 150 * time.Millisecond

// saslServer serves a SASL_PLAINTEXT listener with PLAIN users alice and
// admin; the handler echoes DescribeQuorum and reports each request's
// principal on principals.
func saslServer(t *testing.T, principals chan<- Principal) *Server {
	t.Helper()
	h := withAPIVersions(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		if principals != nil {
			principals <- req.Conn.Principal
		}
		reply.Send(nameEcho(req))
	}))
	cfg := testServerConfig(h)
	cfg.Handshake = SASL{
		Mechanisms:     []string{MechanismPlain},
		PlainUsers:     map[string]string{"alice": "alice-secret", "admin": "admin-secret"},
		MaxReceiveSize: DefaultSASLMaxReceiveSize,
		FailedDelay:    testFailedDelay,
	}
	return startTCP(t, cfg)
}

// kgoDescribeQuorum sends one DescribeQuorum through a kgo client that
// authenticates with mech.
func kgoDescribeQuorum(t *testing.T, addr string, mech sasl.Mechanism) (kmsg.Response, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), testDeadline)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, describeQuorumFor("sasl"))
}

// TestSASLPlainKgoDescribeQuorum: franz-go's PLAIN mechanism
// authenticates, its DescribeQuorum is served, and the connection's
// principal is User:<name>.
func TestSASLPlainKgoDescribeQuorum(t *testing.T) {
	principals := make(chan Principal, 4)
	s := saslServer(t, principals)
	resp, err := kgoDescribeQuorum(t, s.Addr().String(), plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	if err != nil {
		t.Fatalf("DescribeQuorum over SASL/PLAIN: %v", err)
	}
	if dq := resp.(*kmsg.DescribeQuorumResponse); len(dq.Topics) != 1 || dq.Topics[0].Topic != "sasl" {
		t.Fatalf("answer %+v", dq)
	}
	if p := <-principals; p.String() != "User:alice" {
		t.Fatalf("principal %v, want User:alice", p)
	}
}

// TestSASLPlainRefusesBadCredentials: a wrong password, an unknown user
// and an authorization id other than the user each get
// SASL_AUTHENTICATION_FAILED, no sooner than the failed-authentication
// delay, and nothing reaches the handler.
func TestSASLPlainRefusesBadCredentials(t *testing.T) {
	s := saslServer(t, nil)
	for name, auth := range map[string]plain.Auth{
		"wrong password": {User: "alice", Pass: "admin-secret"},
		"unknown user":   {User: "mallory", Pass: "alice-secret"},
		"other authzid":  {Zid: "admin", User: "alice", Pass: "alice-secret"},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := kgoDescribeQuorum(t, s.Addr().String(), auth.AsMechanism())
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("err = %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			if el := time.Since(start); el < testFailedDelay {
				t.Errorf("refused after %v, before the %v delay", el, testFailedDelay)
			}
		})
	}
}

// TestSASLUnsupportedMechanism: a mechanism that is not enabled gets
// UNSUPPORTED_SASL_MECHANISM with the enabled list.
func TestSASLUnsupportedMechanism(t *testing.T) {
	s := saslServer(t, nil)
	_, err := kgoDescribeQuorum(t, s.Addr().String(), scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("err = %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}

	c := dialTCP(t, s.Addr())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	c.send(1, hs)
	_, resp := c.recv(hs)
	hr := resp.(*kmsg.SASLHandshakeResponse)
	if hr.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(hr.SupportedMechanisms) != 1 || hr.SupportedMechanisms[0] != MechanismPlain {
		t.Fatalf("answer %+v, want UNSUPPORTED_SASL_MECHANISM listing PLAIN", hr)
	}
	c.expectClosed()
}

// TestSASLRequestsOutOfOrder: before authentication only ApiVersions,
// SaslHandshake and SaslAuthenticate are served, in that order; anything
// else closes the connection, with ILLEGAL_SASL_STATE where the request
// has an answer that can carry it.
func TestSASLRequestsOutOfOrder(t *testing.T) {
	s := saslServer(t, nil)
	// handshake sends SaslHandshake PLAIN at version and returns the
	// answer's error code.
	handshake := func(c *client, corr int32, version int16) int16 {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(version)
		hs.Mechanism = MechanismPlain
		c.send(corr, hs)
		_, resp := c.recv(hs)
		return resp.(*kmsg.SASLHandshakeResponse).ErrorCode
	}
	t.Run("DescribeQuorum first", func(t *testing.T) {
		c := dialTCP(t, s.Addr())
		c.send(1, describeQuorumFor("early"))
		c.expectClosed()
	})
	t.Run("SaslAuthenticate before SaslHandshake", func(t *testing.T) {
		c := dialTCP(t, s.Addr())
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
		c.send(1, auth)
		c.expectClosed()
	})
	t.Run("second SaslHandshake", func(t *testing.T) {
		c := dialTCP(t, s.Addr())
		if code := handshake(c, 1, 1); code != 0 {
			t.Fatalf("SaslHandshake PLAIN: error %d", code)
		}
		if code := handshake(c, 2, 1); code != kerr.IllegalSaslState.Code {
			t.Fatalf("second SaslHandshake answered error %d, want ILLEGAL_SASL_STATE", code)
		}
		c.expectClosed()
	})
	t.Run("DescribeQuorum after SaslHandshake", func(t *testing.T) {
		c := dialTCP(t, s.Addr())
		if code := handshake(c, 1, 1); code != 0 {
			t.Fatalf("SaslHandshake PLAIN: error %d", code)
		}
		// Kafka's SaslServerAuthenticator.handleSaslToken: the request's
		// own error response with ILLEGAL_SASL_STATE, then the close.
		c.send(2, describeQuorumFor("early"))
		c.expectIllegalSASLState(2, describeQuorumFor(""))
		c.expectClosed()
	})
	t.Run("ApiVersions v3 after SaslHandshake", func(t *testing.T) {
		c := dialTCP(t, s.Addr())
		if code := handshake(c, 1, 1); code != 0 {
			t.Fatalf("SaslHandshake PLAIN: error %d", code)
		}
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(3)
		av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
		c.send(2, av)
		c.expectIllegalSASLState(2, av)
		c.expectClosed()
	})
	t.Run("bare PLAIN token after SaslHandshake v0", func(t *testing.T) {
		c := dialTCP(t, s.Addr())
		if code := handshake(c, 1, 0); code != 0 {
			t.Fatalf("SaslHandshake v0: error %d", code)
		}
		token := []byte("\x00alice\x00alice-secret")
		c.writeRaw(binary.BigEndian.AppendUint32(nil, uint32(len(token))))
		c.writeRaw(token)
		var size [4]byte
		if _, err := c.nc.Read(size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("bare token answer %v, %v; want an empty frame", size, err)
		}
		c.send(2, describeQuorumFor("after v0"))
		if _, resp := c.recv(describeQuorumFor("")); resp.(*kmsg.DescribeQuorumResponse).Topics[0].Topic != "after v0" {
			t.Fatalf("answer %+v", resp)
		}
	})
}

// expectIllegalSASLState reads the answer to req, sent with correlation
// id corr, and fails unless it is req's own response type at req's version
// with ILLEGAL_SASL_STATE.
func (c *client) expectIllegalSASLState(corr int32, req kmsg.Request) {
	c.t.Helper()
	got, resp := c.recv(req)
	code := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode").Int()
	if got != corr || resp.Key() != req.Key() || resp.GetVersion() != req.GetVersion() || code != int64(kerr.IllegalSaslState.Code) {
		c.t.Fatalf("answer corr %d %T v%d error %d, want corr %d key %d v%d ILLEGAL_SASL_STATE", got, resp, resp.GetVersion(), code, corr, req.Key(), req.GetVersion())
	}
}

// TestSASLOversizedFrame: a frame above sasl.server.max.receive.size
// before authentication closes the connection before it is read.
func TestSASLOversizedFrame(t *testing.T) {
	s := saslServer(t, nil)
	c := dialTCP(t, s.Addr())
	c.writeRaw(binary.BigEndian.AppendUint32(nil, uint32(DefaultSASLMaxReceiveSize)+1))
	c.expectClosed()
}

// TestSASLPeerAuthenticates: a Peer with PLAIN credentials gets answers
// from a SASL listener, and one with a wrong password gets none.
func TestSASLPeerAuthenticates(t *testing.T) {
	principals := make(chan Principal, 4)
	s := saslServer(t, principals)
	peer := func(password string) *Peer {
		return saslPeer(t, s, &SASLClient{Mechanism: MechanismPlain, Username: "admin", Password: password})
	}
	got := make(chan outcome, 1)
	peer("admin-secret").Send(describeQuorumFor("peer"), collect(got))
	if name := answeredName(t, <-got); name != "peer" {
		t.Fatalf("answer %q", name)
	}
	if p := <-principals; p.String() != "User:admin" {
		t.Errorf("principal %v, want User:admin", p)
	}

	peer("wrong").Send(describeQuorumFor("refused"), collect(got))
	if o := <-got; o.err == nil {
		t.Fatalf("a Peer with a wrong password got an answer: %+v", o)
	}
}

// saslPeer is a Peer of s that authenticates with client.
func saslPeer(t *testing.T, s *Server, client *SASLClient) *Peer {
	t.Helper()
	return testPeer(t, func(cfg *PeerConfig) {
		cfg.Addr = s.Addr().String()
		cfg.RequestTimeout = 2 * time.Second
		cfg.SASL = client
	})
}

// testPeer starts a Peer with the default configuration changed by
// adjust, closed when the test ends.
func testPeer(t *testing.T, adjust func(*PeerConfig)) *Peer {
	t.Helper()
	cfg := DefaultPeerConfig()
	adjust(&cfg)
	p, err := DialPeer(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// FuzzSASLFrame: a frame read before authentication never panics the
// header parser or the PLAIN check, and no token but the exact
// credentials of a user authenticates.
func FuzzSASLFrame(f *testing.F) {
	f.Add([]byte("\x00\x24\x00\x02\x00\x00\x00\x01\x00\x00\x00"), []byte("\x00alice\x00alice-secret"))
	f.Add([]byte("\x00\x11\x00\x01\x00\x00\x00\x01\xff\xff\x00\x05PLAIN"), []byte("alice\x00alice\x00alice-secret"))
	h := SASL{PlainUsers: map[string]string{"alice": "alice-secret"}}
	f.Fuzz(func(t *testing.T, frame, token []byte) {
		if req, err := parseSASLRequest(frame); err == nil && req.body != nil && len(req.body) > len(frame) {
			t.Fatalf("body of %d bytes from a frame of %d", len(req.body), len(frame))
		}
		name, failure := h.authenticatePlain(token)
		ok := string(token) == "\x00alice\x00alice-secret" || string(token) == "alice\x00alice\x00alice-secret"
		if (failure == "") != ok || (ok && name != "alice") {
			t.Fatalf("token %q: name %q, failure %q", token, name, failure)
		}
		if strings.Contains(failure, "alice-secret") {
			t.Fatalf("failure %q shows the password", failure)
		}
	})
}
