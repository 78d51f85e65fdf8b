package transport

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tests in this file run under testing/synctest on a MemNetwork: time is
// fake, so timeouts of seconds or minutes take no real time, and
// synctest.Wait lets every goroutine of the bubble settle before a check.

const serverAddr = "10.0.0.100:9093"

// withAPIVersions answers ApiVersions itself, as the runtime will, and
// passes every other request to h.
func withAPIVersions(h Handler) Handler {
	return HandlerFunc(func(ctx context.Context, req *Request, reply *Reply) {
		if av, ok := req.Body.(*kmsg.ApiVersionsRequest); ok {
			reply.Send(wire.AnswerAPIVersions(av, wire.FeatureState{
				MetadataVersion: wire.SupportedFeature{Min: 7, Max: 30}, FinalizedEpoch: -1,
			}))
			return
		}
		h.Serve(ctx, req, reply)
	})
}

// memServer serves cfg on n at serverAddr; its handler is wrapped with
// withAPIVersions.
func memServer(t *testing.T, n *MemNetwork, cfg ServerConfig) *Server {
	t.Helper()
	return memServerAt(t, n, serverAddr, cfg)
}

// memServerAt is memServer at addr.
func memServerAt(t *testing.T, n *MemNetwork, addr string, cfg ServerConfig) *Server {
	t.Helper()
	cfg.Handler = withAPIVersions(cfg.Handler)
	ln, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(t.Context(), ln, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func memDial(t *testing.T, n *MemNetwork, host string) *client {
	t.Helper()
	nc, err := n.DialFrom(t.Context(), host, serverAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &client{t: t, nc: nc}
}

// isOpen reports, after the bubble settled, whether the server still holds
// the client's connection open: a read that would block means open.
func (c *client) isOpen() bool {
	got := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := c.nc.Read(b[:])
		got <- err
	}()
	synctest.Wait()
	select {
	case err := <-got:
		if !errors.Is(err, io.EOF) {
			c.t.Fatalf("read: %v, want EOF or blocking", err)
		}
		return false
	default:
		// Unblock the probe so it does not outlive the bubble.
		_ = c.nc.SetReadDeadline(time.Now())
		<-got
		_ = c.nc.SetReadDeadline(time.Time{})
		return true
	}
}

func TestIdleConnectionExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		cfg := testServerConfig(echoHandler())
		cfg.IdleTimeout = 10 * time.Second
		s := memServer(t, n, cfg)

		silent := memDial(t, n, "10.0.0.1")
		busy := memDial(t, n, "10.0.0.2")
		time.Sleep(6 * time.Second)
		busy.send(1, describeQuorum())
		busy.recv(describeQuorum())
		time.Sleep(5 * time.Second) // t = 11 s
		if silent.isOpen() {
			t.Error("a connection silent for 11 s is still open (idle timeout 10 s)")
		}
		if !busy.isOpen() {
			t.Error("a connection with a request 5 s ago was closed")
		}
		time.Sleep(5 * time.Second) // t = 16 s, 10 s after the last request
		if busy.isOpen() {
			t.Error("the busy connection did not expire 10 s after its last request")
		}
		if st := s.Stats(); st.ClosedIdle != 2 || st.Active != 0 {
			t.Errorf("stats = %+v, want 2 closed idle, none active", st)
		}
	})
}

// W2: a frame trickled in is bounded by the same deadline.
func TestSlowFrameIsCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		cfg := testServerConfig(echoHandler())
		cfg.IdleTimeout = 10 * time.Second
		memServer(t, n, cfg)
		c := memDial(t, n, "10.0.0.1")
		c.writeRaw([]byte{0, 0, 0, 20, 0, 55})
		time.Sleep(9 * time.Second)
		c.writeRaw([]byte{0, 2})
		time.Sleep(2 * time.Second)
		if c.isOpen() {
			t.Error("a frame still incomplete after the idle timeout kept its connection open")
		}
	})
}

// TestMaxConnectionsPerIP: a connection over its address's limit is
// refused at once; one over max.connections waits unserved for a slot,
// holding the acceptor, and is served when a connection closes. A refusal
// takes no slot.
func TestMaxConnectionsPerIP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		cfg := testServerConfig(echoHandler())
		cfg.Quotas = newQuotas(t, QuotaConfig{MaxConnections: 3, MaxConnectionsPerIP: 2})
		s := memServer(t, n, cfg)
		a1, a2 := memDial(t, n, "10.0.0.1"), memDial(t, n, "10.0.0.1")
		a3 := memDial(t, n, "10.0.0.1")
		synctest.Wait()
		if a3.isOpen() {
			t.Error("a third connection from one IP was admitted (max.connections.per.ip 2)")
		}
		b1 := memDial(t, n, "10.0.0.2")
		synctest.Wait()
		if !b1.isOpen() {
			t.Error("a connection from another IP was refused")
		}
		for _, c := range []*client{a1, a2, b1} {
			c.send(1, describeQuorum())
			c.recv(describeQuorum())
		}
		b2 := memDial(t, n, "10.0.0.3") // a fourth: waits for a slot
		synctest.Wait()
		if st := s.Stats(); st.Accepted != 3 || st.Rejected != 1 || st.SlotWaits != 1 || st.Active != 3 {
			t.Errorf("stats = %+v, want 3 accepted, 1 rejected, 1 accept waiting, 3 active", st)
		}
		_ = a1.nc.Close()
		b2.send(2, describeQuorum()) // the memory pipe's write waits for the server to read
		if corr, _ := b2.recv(describeQuorum()); corr != 2 {
			t.Fatalf("correlation id %d", corr)
		}
		// The per-IP refusal took no slot: with one more closed, a new
		// connection from the first IP fits again.
		_ = b1.nc.Close()
		synctest.Wait()
		a4 := memDial(t, n, "10.0.0.1")
		a4.send(3, describeQuorum())
		if corr, _ := a4.recv(describeQuorum()); corr != 3 {
			t.Fatalf("correlation id %d", corr)
		}
	})
}

func TestHandshakeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		cfg := testServerConfig(echoHandler())
		cfg.HandshakeTimeout = 5 * time.Second
		cfg.Handshake = handshakeFunc(func(ctx context.Context, nc net.Conn) (net.Conn, Principal, error) {
			var b [1]byte // waits for a client hello that never comes
			_, err := nc.Read(b[:])
			return nil, Principal{}, err
		})
		memServer(t, n, cfg)
		c := memDial(t, n, "10.0.0.1")
		time.Sleep(4 * time.Second)
		if !c.isOpen() {
			t.Fatal("closed before the handshake timeout")
		}
		time.Sleep(2 * time.Second)
		if c.isOpen() {
			t.Error("open after the handshake timeout")
		}
	})
}

// W30: with MaxInFlight unanswered requests the server stops reading.
func TestBackPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		replies := make(chan *Reply, 10)
		cfg := testServerConfig(HandlerFunc(func(_ context.Context, _ *Request, reply *Reply) { replies <- reply }))
		cfg.MaxInFlight = 2
		memServer(t, n, cfg)
		c := memDial(t, n, "10.0.0.1")
		written := make(chan int32, 3)
		go func() {
			for i := range int32(3) {
				c.send(i, describeQuorum())
				written <- i
			}
		}()
		synctest.Wait()
		if len(replies) != 2 || len(written) != 2 {
			t.Fatalf("%d requests served, %d written; want 2 and 2 (the third blocks)", len(replies), len(written))
		}
		(<-replies).Send(describeQuorum().ResponseKind())
		c.recv(describeQuorum())
		synctest.Wait()
		if len(written) != 3 || len(replies) != 2 {
			t.Fatalf("after one answer: %d written, %d held; want 3 and 2", len(written), len(replies))
		}
		for range 2 {
			(<-replies).Send(describeQuorum().ResponseKind())
			c.recv(describeQuorum())
		}
	})
}

func memPeer(t *testing.T, n *MemNetwork, mod func(*PeerConfig)) *Peer {
	t.Helper()
	cfg := DefaultPeerConfig()
	cfg.Addr = serverAddr
	cfg.ClientID = "raft-client-1"
	cfg.Dial = n.Dial
	if mod != nil {
		mod(&cfg)
	}
	p, err := DialPeer(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

type outcome struct {
	resp kmsg.Response
	err  error
}

func collect(ch chan outcome) Callback {
	return func(resp kmsg.Response, err error) { ch <- outcome{resp, err} }
}

// describeQuorumFor returns a request whose topic name identifies it; the
// echoing handler below puts that name in the answer.
func describeQuorumFor(name string) *kmsg.DescribeQuorumRequest {
	r := describeQuorum()
	tp := kmsg.NewDescribeQuorumRequestTopic()
	tp.Topic = name
	r.Topics = append(r.Topics, tp)
	return r
}

func nameEcho(req *Request) kmsg.Response {
	resp := req.Body.ResponseKind().(*kmsg.DescribeQuorumResponse)
	for _, tp := range req.Body.(*kmsg.DescribeQuorumRequest).Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = tp.Topic
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func answeredName(t *testing.T, o outcome) string {
	t.Helper()
	if o.err != nil {
		t.Fatalf("request failed: %v", o.err)
	}
	return o.resp.(*kmsg.DescribeQuorumResponse).Topics[0].Topic
}

// The peer pipelines requests on one connection and matches each answer to
// its request, even though the server's handler completes them out of
// order (the server still writes them in order).
func TestPeerPipelinesAndMatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		held := make(chan *Request, 3)
		replies := make(chan *Reply, 3)
		memServer(t, n, testServerConfig(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
			if req.Header.ClientID != "raft-client-1" {
				t.Errorf("client id %q", req.Header.ClientID)
			}
			held <- req
			replies <- reply
		})))
		p := memPeer(t, n, nil)
		got := make(chan outcome, 3)
		names := []string{"a", "b", "c"}
		for _, name := range names {
			if !p.Send(describeQuorumFor(name), collect(got)) {
				t.Fatal("Send refused")
			}
		}
		synctest.Wait()
		if len(held) != 3 {
			t.Fatalf("server holds %d requests, want 3 pipelined", len(held))
		}
		var reqs []*Request
		var rs []*Reply
		for range 3 {
			reqs, rs = append(reqs, <-held), append(rs, <-replies)
		}
		for i := 2; i >= 0; i-- {
			rs[i].Send(nameEcho(reqs[i]))
		}
		for _, want := range names {
			if name := answeredName(t, <-got); name != want {
				t.Errorf("answer for %q, want %q", name, want)
			}
		}
		if st := p.Stats(); st.Sent != 4 || st.Dials != 1 {
			t.Errorf("stats = %+v, want ApiVersions and 3 requests sent on 1 dial", st)
		}
	})
}

func TestPeerRequestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		never := make(chan *Reply, 4)
		s := memServer(t, n, testServerConfig(HandlerFunc(func(_ context.Context, _ *Request, reply *Reply) {
			never <- reply
		})))
		p := memPeer(t, n, func(c *PeerConfig) { c.RequestTimeout = 2 * time.Second })
		got := make(chan outcome, 2)
		p.Send(describeQuorumFor("first"), collect(got))
		time.Sleep(time.Second)
		p.Send(describeQuorumFor("second"), collect(got))
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if len(got) != 0 {
			t.Fatalf("a request completed before its timeout: %+v", <-got)
		}
		time.Sleep(time.Millisecond) // t = 2 s: the first request times out
		if o := <-got; !errors.Is(o.err, ErrRequestTimeout) {
			t.Fatalf("first request: %v, want ErrRequestTimeout", o.err)
		}
		// The connection is closed, so the second fails as disconnected.
		if o := <-got; !errors.Is(o.err, ErrDisconnected) {
			t.Fatalf("second request: %v, want ErrDisconnected", o.err)
		}
		synctest.Wait()
		if st := s.Stats(); st.Active != 0 {
			t.Errorf("server still has %d connections after the timeout", st.Active)
		}
		// The next request dials again.
		p.Send(describeQuorumFor("third"), collect(got))
		synctest.Wait()
		if st := p.Stats(); st.Dials != 2 || st.TimedOut != 1 {
			t.Errorf("stats = %+v, want 2 dials and 1 timeout", st)
		}
	})
}

func TestPeerReconnectsAfterServerRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		echo := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) { reply.Send(nameEcho(req)) })
		s1 := memServer(t, n, testServerConfig(echo))
		p := memPeer(t, n, func(c *PeerConfig) {
			c.RetryBackoff = 20 * time.Millisecond
			c.MaxRetryBackoff = 80 * time.Millisecond
		})
		got := make(chan outcome, 1)
		p.Send(describeQuorumFor("before"), collect(got))
		if name := answeredName(t, <-got); name != "before" {
			t.Fatalf("answer %q", name)
		}

		if err := s1.Close(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the peer notices the closed connection
		p.Send(describeQuorumFor("down"), collect(got))
		if o := <-got; !errors.Is(o.err, ErrDisconnected) || !errors.Is(o.err, ErrConnRefused) || !ConnectionLost(o.err) {
			t.Fatalf("while down: %v, want a refused dial, a lost connection", o.err)
		}
		p.Send(describeQuorumFor("backoff"), collect(got))
		if o := <-got; !errors.Is(o.err, ErrBackoff) || !ConnectionLost(o.err) {
			t.Fatalf("during backoff: %v, want ErrBackoff after a refused dial, a lost connection", o.err)
		}
		// Failures double the backoff: 20 ms, then 40 ms, capped at 80 ms.
		time.Sleep(20 * time.Millisecond)
		p.Send(describeQuorumFor("down2"), collect(got))
		if o := <-got; !errors.Is(o.err, ErrConnRefused) {
			t.Fatalf("second dial: %v, want refused", o.err)
		}
		time.Sleep(20 * time.Millisecond)
		p.Send(describeQuorumFor("backoff2"), collect(got))
		if o := <-got; !errors.Is(o.err, ErrBackoff) {
			t.Fatalf("20 ms into a 40 ms backoff: %v, want ErrBackoff", o.err)
		}

		memServer(t, n, testServerConfig(echo)) // restart at the same address
		time.Sleep(20 * time.Millisecond)
		p.Send(describeQuorumFor("after"), collect(got))
		if name := answeredName(t, <-got); name != "after" {
			t.Fatalf("answer %q", name)
		}
		if st := p.Stats(); st.Dials != 4 || st.DialFailures != 2 {
			t.Errorf("stats = %+v, want 4 dials, 2 failed", st)
		}
	})
}

// A full queue drops instead of blocking the caller.
func TestPeerQueueFullDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dialing := make(chan struct{}, 1)
		p := memPeer(t, NewMemNetwork(), func(c *PeerConfig) {
			c.QueueSize = 2
			c.Dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
				dialing <- struct{}{}
				<-ctx.Done() // a connect that hangs until the request timeout
				return nil, ctx.Err()
			}
		})
		got := make(chan outcome, 4)
		if !p.Send(describeQuorumFor("1"), collect(got)) {
			t.Fatal("first Send refused")
		}
		<-dialing // the sender took it and is stuck dialling
		for _, name := range []string{"2", "3"} {
			if !p.Send(describeQuorumFor(name), collect(got)) {
				t.Fatalf("Send %s refused with room in the queue", name)
			}
		}
		if p.Send(describeQuorumFor("4"), collect(got)) {
			t.Fatal("Send into a full queue returned true")
		}
		if st := p.Stats(); st.Dropped != 1 {
			t.Errorf("Dropped = %d, want 1", st.Dropped)
		}
		time.Sleep(2 * time.Second) // the dial times out
		synctest.Wait()
		if len(got) != 3 {
			t.Fatalf("%d callbacks, want 3 (the dropped request gets none)", len(got))
		}
		for range 3 {
			if o := <-got; o.err == nil {
				t.Error("a request succeeded without a connection")
			}
		}
	})
}

func TestPeerCloseFailsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		held := make(chan *Reply, 1)
		memServer(t, n, testServerConfig(HandlerFunc(func(_ context.Context, _ *Request, reply *Reply) { held <- reply })))
		cfg := DefaultPeerConfig()
		cfg.Addr, cfg.Dial = serverAddr, n.Dial
		p, err := DialPeer(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan outcome, 1)
		p.Send(describeQuorum(), collect(got))
		<-held
		p.Close()
		if o := <-got; !errors.Is(o.err, ErrPeerClosed) {
			t.Errorf("pending request: %v, want ErrPeerClosed", o.err)
		}
		if p.Send(describeQuorum(), collect(got)) {
			t.Error("Send after Close returned true")
		}
	})
}

func TestPeerConfigValidate(t *testing.T) {
	err := PeerConfig{RetryBackoff: time.Second}.Validate()
	if err == nil {
		t.Fatal("Validate accepted an empty config")
	}
	for _, want := range []string{"Addr", "RequestTimeout", "RetryBackoff", "QueueSize", "MaxFrameSize"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
	cfg := DefaultPeerConfig()
	cfg.Addr = "localhost:9093"
	if err := cfg.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

func TestMemNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		if _, err := n.Dial(t.Context(), "tcp", serverAddr); !errors.Is(err, ErrConnRefused) {
			t.Errorf("dial with no listener: %v", err)
		}
		ln, err := n.Listen(serverAddr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Listen(serverAddr); err == nil {
			t.Error("second Listen on one address succeeded")
		}
		if _, err := n.Listen("no-port"); err == nil {
			t.Error("Listen without a port succeeded")
		}
		go func() {
			c, err := ln.Accept()
			if err == nil {
				if c.RemoteAddr().String() != "10.1.2.3:40001" || c.LocalAddr().String() != serverAddr {
					t.Errorf("server side addresses %v -> %v", c.RemoteAddr(), c.LocalAddr())
				}
				_ = c.Close()
			}
		}()
		c, err := n.DialFrom(t.Context(), "10.1.2.3", serverAddr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		_ = ln.Close()
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	})
}

// wrappedConn stands for a TLS connection layered over the accepted one.
type wrappedConn struct {
	net.Conn
	writes *int
}

func (w wrappedConn) Write(b []byte) (int, error) {
	*w.writes++
	return w.Conn.Write(b)
}

// A handshake that replaces the connection: requests and answers then go
// through the replacement.
func TestHandshakeReplacesConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		writes := 0
		cfg := testServerConfig(echoHandler())
		cfg.Handshake = handshakeFunc(func(_ context.Context, nc net.Conn) (net.Conn, Principal, error) {
			return wrappedConn{Conn: nc, writes: &writes}, Principal{Type: "User", Name: "tls-peer"}, nil
		})
		s := memServer(t, n, cfg)
		c := memDial(t, n, "10.0.0.1")
		for i := range int32(2) {
			c.send(i, describeQuorum())
			c.recv(describeQuorum())
		}
		if writes != 2 {
			t.Errorf("%d answers written through the upgraded connection, want 2", writes)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if c.isOpen() {
			t.Error("connection open after Close")
		}
	})
}

// Close does not wait for a handshake stuck on a silent client: the
// deadline set through the context unblocks it.
func TestCloseDuringHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		started := make(chan struct{})
		cfg := testServerConfig(echoHandler())
		cfg.HandshakeTimeout = 0 // no deadline of its own
		cfg.Handshake = handshakeFunc(func(_ context.Context, nc net.Conn) (net.Conn, Principal, error) {
			close(started)
			var b [1]byte
			_, err := nc.Read(b[:])
			return nil, Principal{}, err
		})
		s := memServer(t, n, cfg)
		memDial(t, n, "10.0.0.1")
		<-started
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Active != 0 {
			t.Errorf("Active = %d after Close", st.Active)
		}
	})
}

// rawPeerServer accepts one connection at serverAddr and runs script on
// it, in a goroutine the test waits for.
func rawPeerServer(t *testing.T, n *MemNetwork, script func(nc net.Conn)) (wait func()) {
	t.Helper()
	ln, err := n.Listen(serverAddr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = ln.Close() }()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = nc.Close() }()
		script(nc)
	}()
	return func() { <-done }
}

// readReq reads and decodes one request frame on the server side.
func readReq(t *testing.T, nc net.Conn) *wire.Request {
	t.Helper()
	frame, err := wire.ReadFrame(nc, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		t.Errorf("server read: %v", err)
		return nil
	}
	req, err := wire.DecodeRequest(frame)
	if re, ok := errors.AsType[*wire.RequestError](err); ok && re.Answer != nil {
		return &wire.Request{Header: re.Header, Body: nil}
	}
	if err != nil {
		t.Errorf("server decode: %v", err)
		return nil
	}
	return req
}

func TestPeerNegotiatesVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		memServer(t, n, testServerConfig(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
			reply.Send(req.Body.ResponseKind())
		})))
		p := memPeer(t, n, nil)
		got := make(chan outcome, 3)
		auto := describeQuorum()
		auto.SetVersion(NegotiateVersion)
		p.Send(auto, collect(got))
		if o := <-got; o.err != nil || o.resp.GetVersion() != 2 {
			t.Fatalf("negotiated DescribeQuorum: %v, version %d; want v2", o.err, o.resp.GetVersion())
		}
		vote := kmsg.NewPtrVoteRequest()
		vote.SetVersion(3)
		p.Send(vote, collect(got))
		if o := <-got; !errors.Is(o.err, kerr.UnsupportedVersion) {
			t.Fatalf("Vote v3: %v, want UNSUPPORTED_VERSION", o.err)
		}
		produce := kmsg.NewPtrProduceRequest()
		produce.SetVersion(NegotiateVersion)
		p.Send(produce, collect(got))
		if o := <-got; !errors.Is(o.err, kerr.UnsupportedVersion) {
			t.Fatalf("Produce: %v, want UNSUPPORTED_VERSION", o.err)
		}
		if st := p.Stats(); st.Sent != 2 {
			t.Errorf("Sent = %d, want 2 (ApiVersions and DescribeQuorum)", st.Sent)
		}
	})
}

// Against an older server: ApiVersions v4 is answered at v0 with
// UNSUPPORTED_VERSION and the server's range; the peer asks again at that
// range's maximum, then negotiates Vote down to the server's v1.
func TestPeerFallsBackToOlderApiVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		wait := rawPeerServer(t, n, func(nc net.Conn) {
			first := readReq(t, nc)
			if first == nil || first.Header.APIKey != wire.KeyAPIVersions || first.Header.APIVersion != 4 {
				t.Errorf("first request %+v, want ApiVersions v4", first)
				return
			}
			old := kmsg.NewPtrApiVersionsResponse()
			old.SetVersion(0)
			old.ErrorCode = kerr.UnsupportedVersion.Code
			old.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 2}}
			_, _ = nc.Write(wire.AppendResponse(nil, first.Header.CorrelationID, old))

			second := readReq(t, nc)
			if second == nil || second.Header.APIKey != wire.KeyAPIVersions || second.Header.APIVersion != 2 {
				t.Errorf("second request %+v, want ApiVersions v2", second)
				return
			}
			ok := kmsg.NewPtrApiVersionsResponse()
			ok.SetVersion(2)
			ok.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 2}, {ApiKey: 52, MaxVersion: 1}}
			_, _ = nc.Write(wire.AppendResponse(nil, second.Header.CorrelationID, ok))

			vote := readReq(t, nc)
			if vote == nil || vote.Header.APIKey != wire.KeyVote || vote.Header.APIVersion != 1 {
				t.Errorf("third request %+v, want Vote v1", vote)
				return
			}
			_, _ = nc.Write(wire.AppendResponse(nil, vote.Header.CorrelationID, vote.Body.ResponseKind()))
		})
		p := memPeer(t, n, nil)
		got := make(chan outcome, 1)
		vote := kmsg.NewPtrVoteRequest()
		vote.SetVersion(NegotiateVersion)
		p.Send(vote, collect(got))
		if o := <-got; o.err != nil || o.resp.GetVersion() != 1 {
			t.Fatalf("Vote: %v, version %v; want an answer at v1", o.err, o.resp)
		}
		p.Close()
		wait()
	})
}

// Requests that wait for an ApiVersions answer that never comes time out.
func TestPeerWaitingRequestsTimeOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		wait := rawPeerServer(t, n, func(nc net.Conn) {
			readReq(t, nc) // ApiVersions, never answered
			var b [1]byte
			_, _ = nc.Read(b[:]) // until the peer hangs up
		})
		p := memPeer(t, n, func(c *PeerConfig) { c.RequestTimeout = 2 * time.Second })
		got := make(chan outcome, 1)
		time.Sleep(time.Second)
		p.Send(describeQuorum(), collect(got))
		if o := <-got; !errors.Is(o.err, ErrRequestTimeout) {
			t.Fatalf("waiting request: %v, want ErrRequestTimeout", o.err)
		}
		wait()
		if st := p.Stats(); st.TimedOut != 2 || st.Sent != 1 {
			t.Errorf("stats = %+v, want ApiVersions sent, it and the request timed out", st)
		}
	})
}

func TestPeerWithoutNegotiationUsesOurMaximum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		memServer(t, n, testServerConfig(echoHandler()))
		p := memPeer(t, n, func(c *PeerConfig) { c.NegotiateVersions = false })
		got := make(chan outcome, 1)
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(NegotiateVersion)
		p.Send(req, collect(got))
		if o := <-got; o.err != nil || o.resp.GetVersion() != 18 {
			t.Fatalf("Fetch: %v; want an answer at v18", o.err)
		}
		if st := p.Stats(); st.Sent != 1 {
			t.Errorf("Sent = %d, want 1 (no ApiVersions)", st.Sent)
		}
	})
}

// TestOrderUnderShuffledCompletion pipelines many requests; answers are
// completed in shuffled batches from several goroutines, and the client
// must still read them in request order.
func TestOrderUnderShuffledCompletion(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		synctest.Test(t, func(t *testing.T) {
			const total, batch = 200, 10
			n := NewMemNetwork()
			type held struct {
				req   *Request
				reply *Reply
			}
			arrivals := make(chan held, total)
			cfg := testServerConfig(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
				arrivals <- held{req, reply}
			}))
			cfg.MaxInFlight = 32
			memServer(t, n, cfg)
			c := memDial(t, n, "10.0.0.1")
			go func() {
				for i := range int32(total) {
					c.send(i, describeQuorum())
				}
			}()
			go func() {
				rng := rand.New(rand.NewPCG(seed, 0))
				for got := 0; got < total; {
					var b []held
					for len(b) < batch && got < total {
						b = append(b, <-arrivals)
						got++
					}
					rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
					var wg sync.WaitGroup
					for _, h := range b {
						wg.Go(func() { h.reply.Send(h.req.Body.ResponseKind()) })
					}
					wg.Wait()
				}
			}()
			for i := range int32(total) {
				if corr, _ := c.recv(describeQuorum()); corr != i {
					t.Fatalf("seed %d: response %d has correlation id %d", seed, i, corr)
				}
			}
		})
	}
}

// The private RPCs travel like Kafka's: negotiated through ApiVersions,
// framed, decoded into wire's types and answered.
func TestPeerPrivateRPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		memServer(t, n, testServerConfig(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
			sc, ok := req.Body.(*wire.SubmitChangeRequest)
			if !ok {
				t.Errorf("body %T, want *wire.SubmitChangeRequest", req.Body)
				reply.Close()
				return
			}
			resp := wire.NewSubmitChangeResponse()
			resp.BaseOffset, resp.Epoch = 100, 4
			resp.LeaderID, resp.LeaderEpoch = 1, 4
			if len(sc.Records) != 2 {
				resp.ErrorCode = 42
			}
			reply.Send(resp)
		})))
		p := memPeer(t, n, nil)
		got := make(chan outcome, 1)
		req := &wire.SubmitChangeRequest{Version: NegotiateVersion, Records: [][]byte{{1, 0x0c, 0}, {1, 0x14, 0}}}
		p.Send(req, collect(got))
		o := <-got
		if o.err != nil {
			t.Fatal(o.err)
		}
		resp := o.resp.(*wire.SubmitChangeResponse)
		if resp.ErrorCode != 0 || resp.BaseOffset != 100 || resp.Epoch != 4 || resp.LeaderID != 1 {
			t.Errorf("response %+v", resp)
		}
	})
}
