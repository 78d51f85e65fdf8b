package transport

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// rateServer serves on n at addr with the creation rate quotas rates.
func rateServer(t *testing.T, n *MemNetwork, addr string, rates ...*CreationRate) *Server {
	t.Helper()
	cfg := testServerConfig(echoHandler())
	cfg.CreationRates = rates
	return memServerAt(t, n, addr, cfg)
}

// dialMany starts k dials to addr, each from its own host; a dial
// returns once the listener has accepted it.
func dialMany(t *testing.T, n *MemNetwork, addr string, k int) {
	t.Helper()
	for i := range k {
		go func() {
			nc, err := n.DialFrom(t.Context(), fmt.Sprintf("10.1.0.%d", i+1), addr)
			if err == nil {
				t.Cleanup(func() { _ = nc.Close() })
			}
		}()
	}
}

// newRate is a quota of perSecond measured over samples windows of a
// second each.
func newRate(t *testing.T, perSecond, samples int) *CreationRate {
	t.Helper()
	r, err := NewCreationRate(perSecond, samples, DefaultQuotaWindowSize)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkAccepts checks, once the bubble has settled, how many connections
// s has accepted and how many accepts it has delayed.
func checkAccepts(t *testing.T, when string, s *Server, accepted, throttled uint64) {
	t.Helper()
	synctest.Wait()
	if st := s.Stats(); st.Accepted != accepted || st.Throttled != throttled {
		t.Errorf("%s: accepted %d, throttled %d; want %d, %d", when, st.Accepted, st.Throttled, accepted, throttled)
	}
}

// acceptStep is what a listener has accepted, and how many accepts it
// has delayed, at a point of fake time.
type acceptStep struct {
	at                  time.Duration
	accepted, throttled uint64
}

// checkStorm dials k connections at once to a listener with the quota
// r and checks its counts at each step, in order.
func checkStorm(t *testing.T, r *CreationRate, k int, steps []acceptStep) {
	t.Helper()
	n := NewMemNetwork()
	s := rateServer(t, n, serverAddr, r)
	dialMany(t, n, serverAddr, k)
	var now time.Duration
	for _, st := range steps {
		time.Sleep(st.at - now)
		now = st.at
		checkAccepts(t, fmt.Sprintf("after %v", st.at), s, st.accepted, st.throttled)
	}
	if st := s.Stats(); st.Rejected != 0 {
		t.Errorf("rejected %d, want none: a rate quota delays, never refuses", st.Rejected)
	}
}

// TestCreationRateDelaysAccepts: at max.connection.creation.rate=5 with
// Kafka's quota window (11 samples of a second), a storm of 60
// connections on a quiet listener gets 50 accepted at once, the rate
// being measured over at least 10 seconds; the 51st waits (the accept
// loop with it) 200 ms, the time that brings the rate back to 5, and so
// do the next, until the first second's sample is complete: from then on
// the storm has used the budget of the coming seconds, and each accept
// waits the longest delay, one window (KIP-612). None is refused.
func TestCreationRateDelaysAccepts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		checkStorm(t, newRate(t, 5, DefaultQuotaWindowNum), 60, []acceptStep{
			{0, 50, 1},
			{1100 * time.Millisecond, 55, 6}, // accepts at 0.2, 0.4, … 1.0 s
			{2100 * time.Millisecond, 56, 7},
			{3100 * time.Millisecond, 57, 8},
		})
	})
}

// TestCreationRateWindow: quota.window.num and quota.window.size.seconds
// set how long a burst may be: over 2 samples of 2 seconds a rate of 1
// lets 2 connections through at once, and the third waits a second.
func TestCreationRateWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := NewCreationRate(1, 2, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		checkStorm(t, r, 3, []acceptStep{{0, 2, 1}, {900 * time.Millisecond, 2, 1}, {1100 * time.Millisecond, 3, 1}})
	})
}

// TestCreationRateZero: a rate of 0 delays every connection, the first
// included, by one window (Kafka's cap on the delay): one a second.
func TestCreationRateZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		checkStorm(t, newRate(t, 0, DefaultQuotaWindowNum), 3, []acceptStep{
			{0, 0, 1}, {1100 * time.Millisecond, 1, 2}, {2100 * time.Millisecond, 2, 3}, {3100 * time.Millisecond, 3, 3},
		})
	})
}

// TestCreationRateNodeAndListener: the node-wide rate counts the
// connections of every listener sharing it, and a listener's own rate
// applies in addition to it.
func TestCreationRateNodeAndListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		// Two samples: a rate measured over one second from the start.
		node := newRate(t, 4, 2)
		a := rateServer(t, n, "10.0.0.100:9093", node, newRate(t, 2, 2))
		b := rateServer(t, n, "10.0.0.100:9094", node)
		dialMany(t, n, "10.0.0.100:9093", 3)
		checkAccepts(t, "listener A, own rate 2", a, 2, 1)
		dialMany(t, n, "10.0.0.100:9094", 3)
		// The node's rate of 4 has counted A's three connections (the
		// third was recorded before it waited): B gets 1, then waits.
		checkAccepts(t, "listener B, sharing the node's rate", b, 1, 1)
	})
}

// TestCreationRateCloseWhileThrottled: closing a listener whose accept
// waits on a rate quota ends the wait, closes the held connection and
// leaves no goroutine behind.
func TestCreationRateCloseWhileThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		s := rateServer(t, n, serverAddr, newRate(t, 1, 2))
		dialMany(t, n, serverAddr, 2)
		checkAccepts(t, "at once", s, 1, 1)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Accepted != 1 || st.Active != 0 {
			t.Errorf("after Close: %+v, want the held connection never served", st)
		}
	})
}

// TestNewCreationRateRefusesBadSettings: a negative rate, no sample and
// a window below a second are errors.
func TestNewCreationRateRefusesBadSettings(t *testing.T) {
	for _, c := range []struct {
		rate, samples int
		window        time.Duration
	}{{-1, 11, time.Second}, {5, 0, time.Second}, {5, 11, time.Second / 2}} {
		if _, err := NewCreationRate(c.rate, c.samples, c.window); err == nil {
			t.Errorf("NewCreationRate(%d, %d, %v) succeeded", c.rate, c.samples, c.window)
		}
	}
}

// TestIPCreationRateHoldsThenCloses: an address over its
// connection_creation_rate has its connection accepted, held unserved
// and closed after the delay (at most a window), while the listener goes
// on accepting others; the held connection counts toward no rate, so the
// node's rate still has room for another address's connections.
func TestIPCreationRateHoldsThenCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		ips, err := NewIPCreationRates(func(ip string) (int, bool) { return 1, ip == "10.1.0.1" }, 2, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cfg := testServerConfig(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) { reply.Send(nameEcho(req)) }))
		cfg.CreationRates = []*CreationRate{newRate(t, 3, 2)}
		cfg.IPCreationRates = ips
		s := memServer(t, n, cfg)
		dial := func(host string) *client { return memDial(t, n, host) }
		first, held := dial("10.1.0.1"), dial("10.1.0.1")
		others := []*client{dial("10.1.0.2"), dial("10.1.0.2")}
		checkAccepts(t, "at once", s, 3, 0)
		if st := s.Stats(); st.IPThrottled != 1 {
			t.Errorf("IPThrottled %d, want 1", st.IPThrottled)
		}
		first.describe(1, "served")
		for _, c := range others {
			c.describe(1, "served") // the node's rate of 3 counted only the 3 served
		}
		if !held.isOpen() {
			t.Fatal("the throttled connection was closed at once; Kafka holds it for the delay")
		}
		time.Sleep(time.Second + time.Millisecond)
		if held.isOpen() {
			t.Error("the throttled connection is still open after the longest delay")
		}
		if st := s.Stats(); st.Active != 3 {
			t.Errorf("active %d, want the 3 served connections", st.Active)
		}
	})
}

// TestIPCreationRatesForgetQuietAddresses: the state of an address is
// dropped once all its samples have expired, so a storm from many
// addresses leaves nothing behind.
func TestIPCreationRatesForgetQuietAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ips, err := NewIPCreationRates(func(string) (int, bool) { return 5, true }, DefaultQuotaWindowNum, DefaultQuotaWindowSize)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			ips.record(fmt.Sprintf("10.2.%d.%d", i/250, i%250), time.Now())
		}
		if got := ips.tracked(); got != 100 {
			t.Fatalf("tracked %d addresses, want 100", got)
		}
		time.Sleep(time.Duration(DefaultQuotaWindowNum) * DefaultQuotaWindowSize)
		ips.record("10.3.0.1", time.Now())
		if got := ips.tracked(); got != 1 {
			t.Errorf("tracked %d addresses after the window, want only the new one", got)
		}
	})
}
