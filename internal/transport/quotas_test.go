package transport

import (
	"errors"
	"math"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func newQuotas(t *testing.T, cfg QuotaConfig) *ConnectionQuotas {
	t.Helper()
	q, err := NewConnectionQuotas(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// dialTCPFrom connects to addr from the loopback address from (any of
// 127.0.0.0/8 on Linux), so that one test can be several clients.
func dialTCPFrom(t *testing.T, from string, addr net.Addr) *client {
	t.Helper()
	d := net.Dialer{Timeout: testDeadline, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	nc, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(testDeadline))
	return &client{t: t, nc: nc}
}

// admitted checks that c is served: a request gets its answer.
func (c *client) admitted(corr int32) {
	c.t.Helper()
	c.send(corr, describeQuorum())
	if got, _ := c.recv(describeQuorum()); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
}

// held sends a request on c and checks that no answer comes within a
// while, nor a close: the connection waits unserved for a slot. Its
// answer comes once the wait ends (answered).
func (c *client) held(corr int32) {
	c.t.Helper()
	c.send(corr, describeQuorum())
	_ = c.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatalf("read = %d bytes, %v; want the connection held unserved", n, err)
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(testDeadline))
}

// answered reads the answer to the request held sent.
func (c *client) answered(corr int32) {
	c.t.Helper()
	if got, _ := c.recv(describeQuorum()); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
}

// TestQuotasPerIPOverridesTCP: an override replaces max.connections.per.ip
// for its address, above or below it; an override of 0 refuses that
// address; an override written as an IPv4-mapped IPv6 address applies to
// the IPv4 address (as Java's InetAddress reads it).
func TestQuotasPerIPOverridesTCP(t *testing.T) {
	cfg := testServerConfig(echoHandler())
	cfg.Quotas = newQuotas(t, QuotaConfig{
		MaxConnections:               math.MaxInt32,
		MaxConnectionsPerIP:          1,
		MaxConnectionsPerIPOverrides: map[netip.Addr]int{netip.MustParseAddr("127.0.0.2"): 3, netip.MustParseAddr("::ffff:127.0.0.3"): 0},
	})
	s := startTCP(t, cfg)

	dialTCPFrom(t, "127.0.0.1", s.Addr()).admitted(1)
	dialTCPFrom(t, "127.0.0.1", s.Addr()).expectClosed() // the default, 1
	for i := range 3 {
		dialTCPFrom(t, "127.0.0.2", s.Addr()).admitted(int32(10 + i))
	}
	dialTCPFrom(t, "127.0.0.2", s.Addr()).expectClosed() // its override, 3
	dialTCPFrom(t, "127.0.0.3", s.Addr()).expectClosed() // its override, 0
	if st := s.Stats(); st.Accepted != 4 || st.Rejected != 3 || st.Active != 4 {
		t.Errorf("stats = %+v, want 4 accepted, 3 rejected, 4 active", st)
	}
}

// TestQuotasPerIPZeroAdmitsOnlyOverridesTCP: max.connections.per.ip=0
// admits no address but the overridden ones (Kafka's meaning; 0 is not
// "no limit").
func TestQuotasPerIPZeroAdmitsOnlyOverridesTCP(t *testing.T) {
	cfg := testServerConfig(echoHandler())
	cfg.Quotas = newQuotas(t, QuotaConfig{
		MaxConnections:               math.MaxInt32,
		MaxConnectionsPerIP:          0,
		MaxConnectionsPerIPOverrides: map[netip.Addr]int{netip.MustParseAddr("127.0.0.2"): 2},
	})
	s := startTCP(t, cfg)
	dialTCPFrom(t, "127.0.0.1", s.Addr()).expectClosed()
	dialTCPFrom(t, "127.0.0.2", s.Addr()).admitted(1)
	dialTCPFrom(t, "127.0.0.2", s.Addr()).admitted(2)
	dialTCPFrom(t, "127.0.0.2", s.Addr()).expectClosed()
	dialTCPFrom(t, "127.0.0.4", s.Addr()).expectClosed()
}

// TestQuotasMaxConnectionsZeroTCP: max.connections=0 serves no connection
// at all, overrides or not: the acceptor waits for a slot that never
// comes, holding the first connection unserved, as Kafka's does.
func TestQuotasMaxConnectionsZeroTCP(t *testing.T) {
	cfg := testServerConfig(echoHandler())
	cfg.Quotas = newQuotas(t, QuotaConfig{
		MaxConnections:               0,
		MaxConnectionsPerIP:          math.MaxInt32,
		MaxConnectionsPerIPOverrides: map[netip.Addr]int{netip.MustParseAddr("127.0.0.1"): 5},
	})
	s := startTCP(t, cfg)
	dialTCPFrom(t, "127.0.0.1", s.Addr()).held(1)
	dialTCPFrom(t, "127.0.0.2", s.Addr()).held(2)
	if st := s.Stats(); st.Accepted != 0 || st.Rejected != 0 || st.SlotWaits != 1 {
		t.Errorf("stats = %+v, want none accepted or rejected and one accept waiting", st)
	}
}

// TestQuotasSharedByListenersTCP: two listeners with one ConnectionQuotas
// count together, for max.connections and per address, as Kafka's node-wide
// ConnectionQuotas does.
func TestQuotasSharedByListenersTCP(t *testing.T) {
	q := newQuotas(t, QuotaConfig{MaxConnections: 3, MaxConnectionsPerIP: 2})
	cfg := testServerConfig(echoHandler())
	cfg.Quotas = q
	s1, s2 := startTCP(t, cfg), startTCP(t, cfg)

	a := dialTCPFrom(t, "127.0.0.1", s1.Addr())
	a.admitted(1)
	dialTCPFrom(t, "127.0.0.1", s2.Addr()).admitted(2)
	dialTCPFrom(t, "127.0.0.1", s2.Addr()).expectClosed() // 2 from 127.0.0.1 over both
	dialTCPFrom(t, "127.0.0.2", s1.Addr()).admitted(3)
	waiting := dialTCPFrom(t, "127.0.0.3", s2.Addr())
	waiting.held(4) // 3 over both: s2's acceptor waits for a slot
	if q.Open() != 3 {
		t.Errorf("Open() = %d, want 3", q.Open())
	}
	// A slot freed on either listener ends the wait.
	_ = a.nc.Close()
	waiting.answered(4)
	if q.Open() != 3 {
		t.Errorf("Open() = %d, want 3", q.Open())
	}
}

func TestNewConnectionQuotasRejectsBadLimits(t *testing.T) {
	_, err := NewConnectionQuotas(QuotaConfig{
		MaxConnections:               -1,
		MaxConnectionsPerIP:          -1,
		MaxConnectionsPerIPOverrides: map[netip.Addr]int{{}: 1, netip.MustParseAddr("10.0.0.1"): -2},
	})
	if err == nil {
		t.Fatal("NewConnectionQuotas accepted negative limits")
	}
	for _, want := range []string{"(max.connections) -1", "(max.connections.per.ip) -1", "invalid address", "limit -2 for 10.0.0.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestAddressKey(t *testing.T) {
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 5}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 5}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 5, Zone: "eth0"}, "fe80::1"},
		{memAddr("10.0.0.2:40001"), "10.0.0.2"},
		{memAddr("[::ffff:10.0.0.3]:40001"), "10.0.0.3"},
		{memAddr("pipe"), "pipe"},
	} {
		if got := addressKey(tt.addr); got != tt.want {
			t.Errorf("addressKey(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
