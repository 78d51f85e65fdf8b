package raft

import (
	"context"
	"testing"
	"time"
)

// A crashed leader's port refuses and its connections reset: the
// followers notice at once (kraft.Node.ConnectionLost) and elect a new
// leader long before their fetch timer, set to 10 s here, could fire. The
// timers were last restarted at most one fetch wait (500 ms) before the
// crash, so a leader within 9 s of it was found by the resets.
func TestLeaderCrashFailsOverBeforeFetchTimeout(t *testing.T) {
	const fetchTimeout = 10 * time.Second
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		cfg.FetchTimeout = fetchTimeout
		cfg.RequestTimeout = fetchTimeout
	})
	first := c.leader()
	submit(t, c.node(first), metadataVersionRecord(), topicRecord("before"))
	oldEpoch := c.node(first).QuorumState().Epoch

	crashed := time.Now()
	c.crash(first)
	limit := crashed.Add(fetchTimeout - time.Second)
	for {
		if l := c.newLeaderAfter(oldEpoch); l != 0 {
			t.Logf("node %d leads epoch %d %v after the crash", l, c.node(l).QuorumState().Epoch, time.Since(crashed).Round(time.Millisecond))
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("no new leader %v after the crash of leader %d: the fetch timer, not the reset, would elect one", time.Since(crashed).Round(time.Millisecond), first)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.submitRetrying(topicRecord("after"))
}

// newLeaderAfter returns a running node that leads an epoch above epoch,
// or 0.
func (c *testCluster) newLeaderAfter(epoch int32) NodeID {
	for i, n := range c.nodes {
		if n == nil {
			continue
		}
		if st := n.QuorumState(); st.Role == RoleLeader && st.Epoch > epoch {
			return NodeID(i + 1)
		}
	}
	return 0
}

// A leader that shuts down hands off: it waits (briefly) until a follower
// has its last records, then resigns, and that successor wins its
// pre-vote at once: the other followers heard the resignation and grant
// it. Without that, the election would wait for a later successor's
// backoff (5 s here, the fetch timer 10 s), so a leader within 4 s of the
// shutdown came from the handoff.
func TestShutdownHandsOffLeadership(t *testing.T) {
	c := newTestClusterWith(t, 5, "", func(cfg *Config) {
		cfg.FetchTimeout = 10 * time.Second
		cfg.RequestTimeout = 10 * time.Second
		// Successor backoffs: 0, 5 s, 10 s, 20 s (capped at 40 s).
		cfg.ElectionBackoffMax = 40 * time.Second
	})
	first := c.leader()
	last := submit(t, c.node(first), metadataVersionRecord(), topicRecord("before"))
	oldEpoch := c.node(first).QuorumState().Epoch
	stopped := time.Now()
	done := make(chan error, 1)
	leader := c.node(first)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- leader.Shutdown(ctx)
	}()
	limit := stopped.Add(4 * time.Second)
	var next NodeID
	for next == 0 {
		if next = c.newLeaderAfter(oldEpoch); next == 0 {
			if time.Now().After(limit) {
				t.Fatalf("no successor %v after leader %d began to shut down", time.Since(stopped).Round(time.Millisecond), first)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	t.Logf("node %d leads epoch %d %v after the shutdown began", next, c.node(next).QuorumState().Epoch, time.Since(stopped).Round(time.Millisecond))
	if err := <-done; err != nil {
		t.Errorf("shutdown of node %d: %v", first, err)
	}
	c.nodes[first-1] = nil
	if got := c.node(next).QuorumState().Epoch; got != oldEpoch+1 {
		t.Errorf("successor leads epoch %d, want %d (one election)", got, oldEpoch+1)
	}
	after := c.submitRetrying(topicRecord("after"))
	if after.Offset <= last.LastOffset {
		t.Errorf("write after the handoff at offset %d, want after %d", after.Offset, last.LastOffset)
	}
}
