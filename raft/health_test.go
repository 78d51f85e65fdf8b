package raft

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// healthTurn is the turn bound of the health tests: far above any turn
// of a test quorum.
const healthTurn = 5 * time.Second

// newHealthCluster is a quorum of n whose leader appends NoOpRecords
// every 100 ms, so that the readiness check watches the high watermark.
func newHealthCluster(t *testing.T, n int) *testCluster {
	return newTestClusterWith(t, n, "", func(cfg *Config) { cfg.MaxIdleInterval = 100 * time.Millisecond })
}

// TestReadyQuorum: every node of a working quorum becomes ready; a
// follower reports lagging the leader's high watermark by more than the
// bound; a follower whose leader stopped, and a leader without its
// followers, stop being ready.
func TestReadyQuorum(t *testing.T) {
	c := newHealthCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	for id := NodeID(1); id <= 3; id++ {
		waitFor(t, "every node to be ready", func() bool { return c.node(id).Ready(healthTurn, 0) == nil })
	}
	f := c.follower(leader)
	onEngine(t, c.node(f), func(e *engine) {
		// No Fetch answer can arrive while the engine runs this.
		hw := c.node(f).QuorumState().HighWatermark
		e.pub.health.leaderHW.Store(hw + 5)
		if err := c.node(f).Ready(healthTurn, 4); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "5 behind") {
			t.Errorf("follower 5 offsets behind with a bound of 4: %v, want ErrNotReady saying 5 behind", err)
		}
		if err := c.node(f).Ready(healthTurn, 5); err != nil {
			t.Errorf("follower 5 offsets behind with a bound of 5: %v, want ready", err)
		}
	})

	other := NodeID(6) - leader - f
	c.stop(other)
	c.stop(leader)
	waitFor(t, "the follower of a stopped leader to be not ready", func() bool {
		return errors.Is(c.node(f).Ready(healthTurn, 0), ErrNotReady)
	})
}

// TestReadyLeaderAlone: a leader whose followers are gone stops being
// ready: its high watermark no longer moves, and it loses the
// leadership.
func TestReadyLeaderAlone(t *testing.T) {
	c := newHealthCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	waitFor(t, "the leader to be ready", func() bool { return c.node(leader).Ready(healthTurn, 0) == nil })
	for id := NodeID(1); id <= 3; id++ {
		if id != leader {
			c.stop(id)
		}
	}
	waitFor(t, "the lone leader to be not ready", func() bool {
		return errors.Is(c.node(leader).Ready(healthTurn, 0), ErrNotReady)
	})
}

// TestLiveEngine: the engine is live while it waits for input, not live
// while one turn runs past the bound, and not live once it stopped.
func TestLiveEngine(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.node(c.leader())
	if err := n.Live(time.Second); err != nil {
		t.Fatalf("idle engine: %v", err)
	}
	release := make(chan struct{})
	entered := make(chan struct{})
	if err := n.enqueue(t.Context(), event{call: func(*engine) { close(entered); <-release }}); err != nil {
		t.Fatal(err)
	}
	<-entered
	waitFor(t, "the stuck engine to be not live", func() bool { return errors.Is(n.Live(20*time.Millisecond), ErrNotLive) })
	if err := n.Ready(20*time.Millisecond, 0); !errors.Is(err, ErrNotReady) || !errors.Is(err, ErrNotLive) {
		t.Errorf("Ready of a stuck engine: %v, want ErrNotReady wrapping ErrNotLive", err)
	}
	close(release)
	waitFor(t, "the engine to be live again", func() bool { return n.Live(20*time.Millisecond) == nil })
	c.stop(c.leader())
	if err := n.Live(time.Second); !errors.Is(err, ErrNotLive) {
		t.Errorf("stopped engine: %v, want ErrNotLive", err)
	}
}
