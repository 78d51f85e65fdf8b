package raft

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// apiVersionsFrom connects to addr from the loopback address from (any of
// 127.0.0.0/8 on Linux) and asks ApiVersions; an error means the node
// closed the connection or did not answer.
func apiVersionsFrom(t *testing.T, from string, addr net.Addr) (*kmsg.ApiVersionsResponse, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	nc, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	return apiVersionsOn(t, nc)
}

// apiVersionsOn sends ApiVersions v3 on nc and returns the answer.
func apiVersionsOn(t *testing.T, nc net.Conn) (*kmsg.ApiVersionsResponse, error) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "krabka-test", "1"
	id := "test-client"
	b, err := wire.AppendRequest(nil, 7, &id, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(b); err != nil {
		return nil, err
	}
	frame, err := wire.ReadFrame(nc, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	resp, err := wire.DecodeResponse(frame, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ApiVersionsResponse), nil
}

func startNode(t *testing.T, cfg Config) *Controller {
	t.Helper()
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c
}

// TestStartEnforcesConnectionQuotas: max.connections.per.ip=0 admits only
// the overridden addresses, each up to its override, and an override of 0
// admits none (Kafka's ConnectionQuotas).
func TestStartEnforcesConnectionQuotas(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.MaxConnectionsPerIP = 0
	cfg.MaxConnectionsPerIPOverrides = map[string]int32{"127.0.0.2": 1, "::ffff:127.0.0.3": 0}
	c := startNode(t, cfg)

	if _, err := apiVersionsFrom(t, "127.0.0.2", c.Addr()); err != nil {
		t.Fatalf("127.0.0.2 (override 1), first connection: %v", err)
	}
	if _, err := apiVersionsFrom(t, "127.0.0.2", c.Addr()); err == nil {
		t.Error("127.0.0.2 (override 1) got a second connection")
	}
	if _, err := apiVersionsFrom(t, "127.0.0.1", c.Addr()); err == nil {
		t.Error("127.0.0.1 got a connection; max.connections.per.ip=0 admits only the overrides")
	}
	if _, err := apiVersionsFrom(t, "127.0.0.3", c.Addr()); err == nil {
		t.Error("127.0.0.3 got a connection; its override is 0")
	}
}

// heldUnserved dials addr and sends ApiVersions, and fails unless the
// connection stays open and unanswered for a while: the acceptor waits
// for a slot under max.connections. It returns the connection, on which
// the answer comes once a slot frees.
func heldUnserved(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if resp, err := apiVersionsOn(t, nc); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ApiVersions = %v, %v; want the connection held unanswered", resp, err)
	}
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	return nc
}

// TestStartEnforcesMaxConnections: max.connections counts every
// connection, and 0 serves none: the connection waits, unanswered, for a
// slot that never frees, as Kafka's acceptor waits.
func TestStartEnforcesMaxConnections(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.MaxConnections = 0
	c := startNode(t, cfg)
	heldUnserved(t, c.Addr())
}

// twoListenerConfig is a single-node quorum with two controller
// listeners, both on port 0.
func twoListenerConfig(t *testing.T) Config {
	cfg := ForTests(1, t.TempDir())
	cfg.ControllerListenerNames = []string{"CONTROLLER", "CONTROLLER2"}
	cfg.Listeners = append(cfg.Listeners, Endpoint{Name: "CONTROLLER2", Host: "127.0.0.1", Port: 0})
	return cfg
}

func describeQuorumRequest() *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(2)
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: wire.MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	return req
}

// TestStartBindsEveryControllerListener: each listener of
// controller.listener.names is bound and serves the controller protocol;
// the first stays the one Addr reports and the voters use, and each
// advertises the port it was bound to.
func TestStartBindsEveryControllerListener(t *testing.T) {
	c := startNode(t, twoListenerConfig(t))
	waitFor(t, "node 1 to lead", func() bool { return c.QuorumState().Role == RoleLeader })

	first, ok1 := c.ListenerAddr("CONTROLLER")
	second, ok2 := c.ListenerAddr("CONTROLLER2")
	if !ok1 || !ok2 || first.String() != c.Addr().String() || second.String() == first.String() {
		t.Fatalf("ListenerAddr = %v %v, %v %v; Addr %v: want two distinct listeners, the first at Addr", first, ok1, second, ok2, c.Addr())
	}
	if _, ok := c.ListenerAddr("PLAINTEXT"); ok {
		t.Error("ListenerAddr found a listener that is not configured")
	}
	for _, addr := range []net.Addr{first, second} {
		if _, err := apiVersionsFrom(t, "127.0.0.1", addr); err != nil {
			t.Errorf("ApiVersions on %v: %v", addr, err)
		}
		resp := roundTrip(t, addr.String(), describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DescribeQuorum on %v = %+v", addr, resp)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LeaderID != 1 {
			t.Errorf("DescribeQuorum on %v: error %d, leader %d; want node 1 leading", addr, p.ErrorCode, p.LeaderID)
		}
	}
	want := []Endpoint{
		{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(first.(*net.TCPAddr).Port)},
		{Name: "CONTROLLER2", Host: "127.0.0.1", Port: uint16(second.(*net.TCPAddr).Port)},
	}
	if got := c.rc.advertised; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("advertised endpoints = %v, want %v", got, want)
	}
}

// TestListenersShareConnectionQuotas: max.connections counts the
// connections of every listener together, as Kafka's node-wide
// ConnectionQuotas does.
func TestListenersShareConnectionQuotas(t *testing.T) {
	cfg := twoListenerConfig(t)
	cfg.MaxConnections = 1
	c := startNode(t, cfg)
	second, _ := c.ListenerAddr("CONTROLLER2")
	if _, err := apiVersionsFrom(t, "127.0.0.1", c.Addr()); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	heldUnserved(t, second)
}

// TestStartFailsWhenASecondListenerCannotBind: a controller listener that
// cannot be bound stops Start, and the ones bound before it are released.
func TestStartFailsWhenASecondListenerCannotBind(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := uint16(free.Addr().(*net.TCPAddr).Port)
	_ = free.Close()

	cfg := twoListenerConfig(t)
	cfg.Listeners = []Endpoint{
		{Name: "CONTROLLER", Host: "127.0.0.1", Port: freePort},
		{Name: "CONTROLLER2", Host: "127.0.0.1", Port: uint16(taken.Addr().(*net.TCPAddr).Port)},
	}
	cfg.QuorumVoters[0].Port = freePort
	if c, err := Start(t.Context(), cfg); err == nil {
		_ = c.Shutdown(context.Background())
		t.Fatal("Start succeeded with the second listener's port taken")
	} else if !strings.Contains(err.Error(), "listener CONTROLLER2") {
		t.Errorf("Start = %v, want it to name listener CONTROLLER2", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(freePort))))
	if err != nil {
		t.Fatalf("the first listener's port was not released: %v", err)
	}
	_ = ln.Close()
}

// TestStartEnforcesRequestMaxBytes: socket.request.max.bytes closes a
// connection whose frame announces more, before reading it.
func TestStartEnforcesRequestMaxBytes(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.SocketRequestMaxBytes = 1024
	c := startNode(t, cfg)
	if _, err := apiVersionsFrom(t, "127.0.0.1", c.Addr()); err != nil {
		t.Fatalf("a small request: %v", err)
	}
	nc, err := net.Dial("tcp", c.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nc.Close() }()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte{0, 0, 4, 1}); err != nil { // 1025 bytes announced
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := nc.Read(b[:]); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read = %d bytes, %v; want the node to close the connection", n, err)
	}
}

// TestStartEnforcesIdleTimeout: connections.max.idle.ms closes a
// connection that sends nothing for that long.
func TestStartEnforcesIdleTimeout(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.ConnectionsMaxIdle = 300 * time.Millisecond
	c := startNode(t, cfg)
	nc, err := net.Dial("tcp", c.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nc.Close() }()
	start := time.Now()
	_ = nc.SetDeadline(start.Add(5 * time.Second))
	var b [1]byte
	n, err := nc.Read(b[:])
	if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read = %d bytes, %v; want the node to close the idle connection", n, err)
	}
	if idle := time.Since(start); idle < 300*time.Millisecond {
		t.Errorf("closed after %v, before connections.max.idle.ms (300 ms)", idle)
	}
}
