package transport

import (
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

func newRate(t *testing.T, perSecond int) *CreationRate {
	t.Helper()
	r, err := NewCreationRate(perSecond)
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

// checkStorm dials k connections at once to a listener whose rate is
// perSecond and checks its counts at each step, in order.
func checkStorm(t *testing.T, perSecond, k int, steps []acceptStep) {
	t.Helper()
	n := NewMemNetwork()
	s := rateServer(t, n, serverAddr, newRate(t, perSecond))
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

// TestCreationRateDelaysAccepts: at max.connection.creation.rate=5, a
// storm of 12 connections gets 5 accepted at once; the sixth waits (the
// accept loop with it) and the rest follow at 5 a second (KIP-612). None
// is refused.
func TestCreationRateDelaysAccepts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Accepts at 0.2, 0.4, … s after the first five.
		checkStorm(t, 5, 12, []acceptStep{{0, 5, 1}, {1100 * time.Millisecond, 10, 6}, {2100 * time.Millisecond, 12, 7}})
	})
}

// TestCreationRateZero: a rate of 0 lets one connection a second through,
// since a delay never exceeds the one-second quota window.
func TestCreationRateZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		checkStorm(t, 0, 3, []acceptStep{{0, 1, 1}, {1100 * time.Millisecond, 2, 2}, {2100 * time.Millisecond, 3, 2}})
	})
}

// TestCreationRateNodeAndListener: the node-wide rate counts the
// connections of every listener sharing it, and a listener's own rate
// applies in addition to it.
func TestCreationRateNodeAndListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		node := newRate(t, 4)
		a := rateServer(t, n, "10.0.0.100:9093", node, newRate(t, 2))
		b := rateServer(t, n, "10.0.0.100:9094", node)
		dialMany(t, n, "10.0.0.100:9093", 3)
		checkAccepts(t, "listener A, own rate 2", a, 2, 1)
		dialMany(t, n, "10.0.0.100:9094", 3)
		// The node's rate of 4 has 3 left after A's connections (A's
		// third is recorded while it waits): B gets 1, then waits.
		checkAccepts(t, "listener B, sharing the node's rate", b, 1, 1)
	})
}

// TestCreationRateCloseWhileThrottled: closing a listener whose accept
// waits on a rate quota ends the wait, closes the held connection and
// leaves no goroutine behind.
func TestCreationRateCloseWhileThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork()
		s := rateServer(t, n, serverAddr, newRate(t, 1))
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

// TestNewCreationRateRefusesNegative: a negative rate is an error.
func TestNewCreationRateRefusesNegative(t *testing.T) {
	if _, err := NewCreationRate(-1); err == nil {
		t.Error("NewCreationRate(-1) succeeded")
	}
}
