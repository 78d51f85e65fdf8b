package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testDeadline bounds every blocking step of the real-TCP tests.
const testDeadline = 10 * time.Second

// describeQuorum returns a DescribeQuorum v2 request, the simplest request
// with a flexible header.
func describeQuorum() *kmsg.DescribeQuorumRequest {
	r := kmsg.NewPtrDescribeQuorumRequest()
	r.SetVersion(2)
	return r
}

// echoHandler answers every request at once with an empty response of the
// request's kind.
func echoHandler() Handler {
	return HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		reply.Send(req.Body.ResponseKind())
	})
}

func startTCP(t testing.TB, cfg ServerConfig) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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

func testServerConfig(h Handler) ServerConfig {
	cfg := DefaultServerConfig()
	cfg.Handler = h
	return cfg
}

// client is a raw Kafka client connection for tests.
type client struct {
	t  *testing.T
	nc net.Conn
}

func dialTCP(t *testing.T, addr net.Addr) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr.String(), testDeadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(testDeadline))
	return &client{t: t, nc: nc}
}

func (c *client) send(corr int32, req kmsg.Request) {
	c.t.Helper()
	id := "test"
	b, err := wire.AppendRequest(nil, corr, &id, req)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *client) writeRaw(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads one response to req and returns its correlation id.
func (c *client) recv(req kmsg.Request) (int32, kmsg.Response) {
	c.t.Helper()
	frame, err := wire.ReadFrame(c.nc, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	corr, err := wire.ResponseCorrelationID(frame)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := wire.DecodeResponse(frame, req)
	if err != nil {
		c.t.Fatal(err)
	}
	return corr, resp
}

// expectClosed checks that the server closes the connection without
// writing anything.
func (c *client) expectClosed() {
	c.t.Helper()
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if n != 0 || (!errors.Is(err, io.EOF) && !isReset(err)) {
		c.t.Fatalf("read = %d bytes, %v; want the server to close the connection", n, err)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func TestServerAnswersRequests(t *testing.T) {
	s := startTCP(t, testServerConfig(echoHandler()))
	c := dialTCP(t, s.Addr())
	for i := range int32(3) {
		req := describeQuorum()
		c.send(100+i, req)
		corr, resp := c.recv(req)
		if corr != 100+i || resp.Key() != wire.KeyDescribeQuorum {
			t.Fatalf("response %d: correlation id %d, key %d", i, corr, resp.Key())
		}
	}
	if st := s.Stats(); st.Accepted != 1 || st.Active != 1 {
		t.Errorf("stats = %+v, want one accepted, active connection", st)
	}
}

// TestServerWritesInRequestOrder: the handler answers a pipeline of
// requests in reverse order; the client still reads them in request order.
func TestServerWritesInRequestOrder(t *testing.T) {
	const n = 8
	h, take := heldReplies(n)
	s := startTCP(t, testServerConfig(h))
	c := dialTCP(t, s.Addr())
	for i := range int32(n) {
		c.send(i, describeQuorum())
	}
	heldReqs, held := take()
	for i := n - 1; i >= 0; i-- {
		if !held[i].Send(heldReqs[i].Body.ResponseKind()) {
			t.Fatalf("Send for request %d returned false", i)
		}
		if held[i].Send(heldReqs[i].Body.ResponseKind()) {
			t.Fatalf("a second Send for request %d returned true", i)
		}
	}
	for i := range int32(n) {
		if corr, _ := c.recv(describeQuorum()); corr != i {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
}

// The answer to a request held by the handler does not block answers to
// other connections.
func TestServerConnectionsAreIndependent(t *testing.T) {
	first := make(chan *Reply, 1)
	var once sync.Once
	h := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		held := false
		once.Do(func() { first <- reply; held = true })
		if !held {
			reply.Send(req.Body.ResponseKind())
		}
	})
	s := startTCP(t, testServerConfig(h))
	a := dialTCP(t, s.Addr())
	a.send(1, describeQuorum())
	r := <-first
	b := dialTCP(t, s.Addr())
	b.send(2, describeQuorum())
	if corr, _ := b.recv(describeQuorum()); corr != 2 {
		t.Fatalf("b got correlation id %d", corr)
	}
	r.Send(describeQuorum().ResponseKind())
	if corr, _ := a.recv(describeQuorum()); corr != 1 {
		t.Fatalf("a got correlation id %d", corr)
	}
}

func TestServerClosesOnlyTheOffendingConnection(t *testing.T) {
	sizePrefix := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	for _, tc := range []struct {
		name string
		send []byte
		want InvalidCounts
	}{
		{"W5 oversize frame", sizePrefix(1 << 20), InvalidCounts{FrameSize: 1}},
		{"W3 negative size", sizePrefix(0xfffffff0), InvalidCounts{FrameSize: 1}},
		{"W6 TLS ClientHello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00}, InvalidCounts{FrameSize: 1}},
		{"W9 unknown api key", frameOf(header(9999, 0, 1)), InvalidCounts{UnknownAPIKey: 1}},
		{"W10 Produce", frameOf(header(0, 9, 1)), InvalidCounts{UnknownAPIKey: 1}},
		{"W11 Vote v3", frameOf(header(wire.KeyVote, 3, 1)), InvalidCounts{UnsupportedVersion: 1}},
		{"W13 bad client id", frameOf([]byte{0, 52, 0, 2, 0, 0, 0, 1, 0xff, 0xfe, 0}), InvalidCounts{MalformedHeader: 1}},
		{"W14 truncated body", frameOf(append(header(wire.KeyVote, 2, 1), 0, 0, 0)), InvalidCounts{MalformedBody: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testServerConfig(echoHandler())
			cfg.MaxFrameSize = 1 << 16
			s := startTCP(t, cfg)
			good := dialTCP(t, s.Addr())
			bad := dialTCP(t, s.Addr())
			bad.writeRaw(tc.send)
			bad.expectClosed()
			good.send(5, describeQuorum())
			if corr, _ := good.recv(describeQuorum()); corr != 5 {
				t.Fatalf("the other connection got correlation id %d", corr)
			}
			waitFor(t, func() bool { return s.Stats().ClosedInvalid == 1 }, "ClosedInvalid == 1")
			if got := s.Stats().Invalid; got != tc.want {
				t.Errorf("invalid counts = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// header builds a v2 request header with a null client id and no tags.
func header(key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(b, 0xff, 0xff, 0)
}

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// W12: an ApiVersions request at an unsupported version gets Kafka's v0
// UNSUPPORTED_VERSION answer and the connection stays open.
func TestServerAnswersUnsupportedApiVersions(t *testing.T) {
	called := make(chan struct{}, 1)
	h := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		if req.Header.APIKey == wire.KeyAPIVersions {
			called <- struct{}{}
		}
		reply.Send(req.Body.ResponseKind())
	})
	s := startTCP(t, testServerConfig(h))
	c := dialTCP(t, s.Addr())
	c.writeRaw(frameOf(append(header(wire.KeyAPIVersions, 7, 77), 0)))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(7)
	corr, resp := c.recv(av)
	got := resp.(*kmsg.ApiVersionsResponse)
	if corr != 77 || got.Version != 0 || got.ErrorCode != 35 || len(got.ApiKeys) != 1 || got.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("answer: correlation id %d, %+v", corr, got)
	}
	c.send(78, describeQuorum())
	if corr, _ := c.recv(describeQuorum()); corr != 78 {
		t.Fatalf("next answer has correlation id %d", corr)
	}
	select {
	case <-called:
		t.Error("the handler saw the unsupported ApiVersions request")
	default:
	}
}

func TestServerReplyCloseClosesAfterEarlierAnswers(t *testing.T) {
	h := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		if req.Header.CorrelationID == 2 {
			reply.Close()
			return
		}
		reply.Send(req.Body.ResponseKind())
	})
	s := startTCP(t, testServerConfig(h))
	c := dialTCP(t, s.Addr())
	c.send(1, describeQuorum())
	c.send(2, describeQuorum())
	c.send(3, describeQuorum())
	if corr, _ := c.recv(describeQuorum()); corr != 1 {
		t.Fatalf("first answer has correlation id %d", corr)
	}
	c.expectClosed()
}

func TestServerHandshake(t *testing.T) {
	principals := make(chan Principal, 1)
	h := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		principals <- req.Conn.Principal
		reply.Send(req.Body.ResponseKind())
	})
	t.Run("plaintext is anonymous", func(t *testing.T) {
		s := startTCP(t, testServerConfig(h))
		c := dialTCP(t, s.Addr())
		c.send(1, describeQuorum())
		c.recv(describeQuorum())
		if p := <-principals; p != Anonymous() || p.String() != "User:ANONYMOUS" {
			t.Errorf("principal = %v", p)
		}
	})
	t.Run("custom principal", func(t *testing.T) {
		cfg := testServerConfig(h)
		cfg.Handshake = handshakeFunc(func(_ context.Context, nc net.Conn) (net.Conn, Principal, error) {
			return nc, Principal{Type: "User", Name: "controller-1"}, nil
		})
		s := startTCP(t, cfg)
		c := dialTCP(t, s.Addr())
		c.send(1, describeQuorum())
		c.recv(describeQuorum())
		if p := <-principals; p.Name != "controller-1" {
			t.Errorf("principal = %v", p)
		}
	})
	t.Run("failure closes", func(t *testing.T) {
		cfg := testServerConfig(h)
		cfg.Handshake = handshakeFunc(func(context.Context, net.Conn) (net.Conn, Principal, error) {
			return nil, Principal{}, errors.New("bad certificate")
		})
		s := startTCP(t, cfg)
		c := dialTCP(t, s.Addr())
		c.expectClosed()
	})
}

type handshakeFunc func(context.Context, net.Conn) (net.Conn, Principal, error)

func (f handshakeFunc) Upgrade(ctx context.Context, nc net.Conn) (net.Conn, Principal, error) {
	return f(ctx, nc)
}

func TestServerMaxConnectionsTCP(t *testing.T) {
	cfg := testServerConfig(echoHandler())
	cfg.Quotas = newQuotas(t, QuotaConfig{MaxConnections: 2, MaxConnectionsPerIP: math.MaxInt32})
	s := startTCP(t, cfg)
	a, b := dialTCP(t, s.Addr()), dialTCP(t, s.Addr())
	for i, c := range []*client{a, b} {
		c.send(int32(i), describeQuorum())
		c.recv(describeQuorum())
	}
	third := dialTCP(t, s.Addr())
	third.held(9)
	if st := s.Stats(); st.Rejected != 0 || st.Active != 2 || st.SlotWaits != 1 {
		t.Errorf("stats = %+v, want none rejected, 2 active, one accept waiting", st)
	}
	// Closing one frees its slot for the connection that waited.
	_ = a.nc.Close()
	third.answered(9)
	if st := s.Stats(); st.Accepted != 3 || st.Active != 2 {
		t.Errorf("stats = %+v, want 3 accepted, 2 active", st)
	}
}

// Close releases the port and waits for every goroutine (goleak checks the
// rest in TestMain).
func TestServerCloseReleasesPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	held := make(chan *Reply, 1)
	s, err := Serve(t.Context(), ln, testServerConfig(HandlerFunc(func(_ context.Context, _ *Request, reply *Reply) {
		held <- reply // never answered: Close must not wait for it
	})))
	if err != nil {
		t.Fatal(err)
	}
	c := dialTCP(t, s.Addr())
	c.send(1, describeQuorum())
	r := <-held
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("second Close = %v, want ErrServerClosed", err)
	}
	if r.Send(describeQuorum().ResponseKind()) {
		t.Error("Send after Close returned true")
	}
	c.expectClosed()
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port not released: %v", err)
	}
	_ = ln2.Close()
}

func TestServerConfigValidate(t *testing.T) {
	cfg := ServerConfig{MaxFrameSize: -1, IdleTimeout: -1}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad config")
	}
	for _, want := range []string{"Handler", "MaxFrameSize", "IdleTimeout", "MaxInFlight"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
	if err := testServerConfig(echoHandler()).Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	if _, err := Serve(t.Context(), nil, ServerConfig{}); err == nil {
		t.Error("Serve with an invalid config succeeded")
	}
}

// waitFor polls cond until it holds or the test deadline passes.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.NewTimer(testDeadline)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// TestPeerOverTCP runs a Peer with the default dialer against a real
// listener, through a server restart on the same port.
func TestPeerOverTCP(t *testing.T) {
	echo := withAPIVersions(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) { reply.Send(nameEcho(req)) }))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	s1, err := Serve(t.Context(), ln, testServerConfig(echo))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultPeerConfig()
	cfg.Addr = addr
	cfg.RequestTimeout = testDeadline
	p, err := DialPeer(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := make(chan outcome, 1)
	if !p.Send(describeQuorumFor("one"), collect(got)) {
		t.Fatal("Send refused")
	}
	if name := answeredName(t, <-got); name != "one" {
		t.Fatalf("answer %q", name)
	}

	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	s2, err := Serve(t.Context(), ln2, testServerConfig(echo))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s2.Close() }()
	// The first sends after the restart may meet the old, closed
	// connection or a backoff; poll until one is answered.
	deadline := time.Now().Add(testDeadline)
	for {
		p.Send(describeQuorumFor("two"), collect(got))
		o := <-got
		if o.err == nil {
			if name := answeredName(t, o); name != "two" {
				t.Fatalf("answer %q", name)
			}
			break
		}
		if !errors.Is(o.err, ErrDisconnected) && !errors.Is(o.err, ErrBackoff) {
			t.Fatalf("unexpected error after restart: %v", o.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer after the restart: %v", o.err)
		}
		waitTick := time.NewTimer(10 * time.Millisecond)
		<-waitTick.C
	}
	if st := p.Stats(); st.Dials < 2 {
		t.Errorf("stats = %+v, want a second dial", st)
	}
}

func TestInvalidFrameWarningsAreRateLimited(t *testing.T) {
	var s Server
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{0, "WARN"}, {10 * time.Millisecond, "DEBUG"}, {999 * time.Millisecond, "DEBUG"},
		{time.Second, "WARN"}, {time.Second + time.Millisecond, "DEBUG"}, {3 * time.Second, "WARN"},
	} {
		if got := s.invalidLevel(t0.Add(tc.at)).String(); got != tc.want {
			t.Errorf("at +%v: level %s, want %s", tc.at, got, tc.want)
		}
	}
}

// TestServerReleasesPortBeforeReturning rebinds the port the moment the
// server has stopped, many times, by Close and by the end of its context:
// a restarted node binds its port again at once, so the socket must be
// released before Close returns (not by a goroutine that may still run).
func TestServerReleasesPortBeforeReturning(t *testing.T) {
	for i := range 300 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ctx, cancel := context.WithCancel(t.Context())
		s, err := Serve(ctx, ln, testServerConfig(echoHandler()))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			cancel()
		}
		_ = s.Close()
		cancel()
		ln2, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("round %d: port not released when Close returned: %v", i, err)
		}
		_ = ln2.Close()
	}
}

// TestServerNamesItsListener: every request's ConnInfo names the listener
// that accepted its connection.
func TestServerNamesItsListener(t *testing.T) {
	conns := make(chan ConnInfo, 1)
	h := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		conns <- req.Conn
		reply.Send(req.Body.ResponseKind())
	})
	cfg := testServerConfig(h)
	cfg.Name = "CONTROLLER"
	s := startTCP(t, cfg)
	c := dialTCP(t, s.Addr())
	c.send(1, describeQuorum())
	c.recv(describeQuorum())
	if info := <-conns; info.Listener != "CONTROLLER" || info.LocalAddr.String() != s.Addr().String() {
		t.Errorf("conn info %+v, want listener CONTROLLER at %s", info, s.Addr())
	}
}
