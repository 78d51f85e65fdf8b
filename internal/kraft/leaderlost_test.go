package kraft_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// stabilizeWithout delivers everything until quiet, losing every message
// to or from the crashed nodes.
func (c *cluster) stabilizeWithout(crashed ...kraft.NodeID) {
	for range 10000 {
		progressed := false
		for i, n := range c.nodes {
			if n.HasReady() && !slices.Contains(crashed, kraft.NodeID(i+1)) {
				c.ready(kraft.NodeID(i + 1))
				progressed = true
			}
		}
		for len(c.net) > 0 {
			h := kraft.HeaderOf(c.net[0])
			if slices.Contains(crashed, h.From) || slices.Contains(crashed, h.To) {
				c.net = c.net[1:]
			} else {
				c.deliver(0)
			}
			progressed = true
		}
		if !progressed {
			return
		}
	}
	c.t.Fatal("cluster does not stabilize")
}

// tickTogether advances the clocks of ids to the earliest deadline among
// them and ticks each; it returns that instant.
func (c *cluster) tickTogether(ids ...kraft.NodeID) kraft.Instant {
	t := kraft.Never
	for _, id := range ids {
		t = min(t, c.node(id).NextDeadline())
	}
	for _, id := range ids {
		c.now[id-1] = max(c.now[id-1], t)
		c.node(id).Tick(c.now[id-1])
	}
	return t
}

// leaderOf returns the voter that leads epoch, or NoNode.
func (c *cluster) leaderOf(epoch kraft.Epoch) kraft.NodeID {
	for i, n := range c.nodes {
		if st := n.Status(); st.Role == kraft.Leader && st.Epoch == epoch {
			return kraft.NodeID(i + 1)
		}
	}
	return kraft.NoNode
}

// A crashed leader whose connections the followers see reset is replaced
// well within the fetch timeout: each follower grants pre-votes at once
// and starts its own after a random delay of at most CampaignJitter
// (250 ms by default), so the first one wins epoch 2 without a split vote.
func TestConnectionLostFailsOverBeforeFetchTimeout(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		c := newCluster(t, 3, 0, seed)
		c.elect(1)
		c.stabilize()
		reported := max(c.now[1], c.now[2])
		for _, id := range []kraft.NodeID{2, 3} {
			c.now[id-1] = reported
			c.node(id).ConnectionLost(reported, 1)
		}
		cfg := kraft.DefaultConfig()
		limit := reported + kraft.Instant(cfg.CampaignJitter.Milliseconds())
		for c.leaderOf(2) == kraft.NoNode {
			if now := c.tickTogether(2, 3); now > limit {
				t.Fatalf("seed %d: no leader of epoch 2 by %d ms after the reset (limit %d)", seed, now-reported, limit-reported)
			}
			c.stabilizeWithout(1)
		}
		for _, id := range []kraft.NodeID{2, 3} {
			if st := c.node(id).Status(); st.Epoch != 2 {
				t.Errorf("seed %d: node %d in epoch %d, want 2 (no split vote)", seed, id, st.Epoch)
			}
		}
	}
}

// A spurious report on one follower cannot disrupt a healthy leader: the
// follower pre-votes, the leader and the follower that still fetches
// refuse, and it goes back to fetching. A successful fetch then clears the
// mark: it refuses pre-votes again and its fetch timer is the full Tf.
func TestSpuriousConnectionLostKeepsLeader(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	c.stabilize()
	n2 := c.node(2)
	c.now[1] += 10
	n2.ConnectionLost(c.now[1], 1)
	pre := vote(3, 2, 1, kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, true)
	if err := n2.Step(c.now[1], pre); err != nil {
		t.Fatal(err)
	}
	if r := onlyVoteResponse(t, c.ready(2)); !r.VoteGranted {
		t.Errorf("follower that lost its leader's connection: %s, want the pre-vote granted", r)
	}
	c.net = nil // the answer to the test's own pre-vote
	c.campaign(2)
	if st := n2.Status(); st.Role != kraft.Prospective {
		t.Fatalf("node 2 is %v after its campaign delay, want Prospective", st.Role)
	}
	c.stabilize()
	if st := c.node(1).Status(); st.Role != kraft.Leader || st.Epoch != 1 {
		t.Fatalf("leader is %v in epoch %d, want Leader in 1", st.Role, st.Epoch)
	}
	if st := n2.Status(); st.Role != kraft.Follower || st.Leader.LeaderID != 1 || st.Epoch != 1 {
		t.Fatalf("node 2 is %v of %d in epoch %d, want Follower of 1 in 1", st.Role, st.Leader.LeaderID, st.Epoch)
	}
	// Reconnected: new data reaches node 2 through a successful fetch.
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 99}); err != nil {
		t.Fatal(err)
	}
	c.stabilize()
	for n2.Status().LogEndOffset < 2 {
		c.tickTogether(1, 2)
		c.stabilize()
	}
	if err := n2.Step(c.now[1], vote(3, 2, 1, kraft.OffsetAndEpoch{Offset: 2, Epoch: 1}, true)); err != nil {
		t.Fatal(err)
	}
	if r := onlyVoteResponse(t, c.ready(2)); r.VoteGranted {
		t.Errorf("after a successful fetch: %s, want the pre-vote refused", r)
	}
	cfg := kraft.DefaultConfig()
	if d := n2.NextDeadline(); d-c.now[1] < kraft.Instant(cfg.FetchTimeout.Milliseconds()/2) {
		t.Errorf("after a successful fetch the next deadline is %d ms away, want the fetch timer (%v)", d-c.now[1], cfg.FetchTimeout)
	}
}

// An observer that loses its leader's connection does not campaign: it
// asks another replica for the leader at once.
func TestConnectionLostObserverAsksBootstrap(t *testing.T) {
	c := newCluster(t, 3, 1, 1)
	c.elect(1)
	for c.node(4).Status().Leader.LeaderID != 1 {
		c.tickTogether(4)
		c.stabilize()
	}
	c.stabilize()
	c.now[3] += 10
	c.node(4).ConnectionLost(c.now[3], 1)
	rd := c.ready(4)
	fetches := messagesOf[*kraft.FetchRequest](rd)
	if len(fetches) != 1 || fetches[0].To == 1 {
		t.Fatalf("observer sent %v, want one Fetch to a replica other than the lost leader", rd.Messages)
	}
	if st := c.node(4).Status(); st.Role != kraft.Follower {
		t.Errorf("observer is %v, want Follower", st.Role)
	}
}

// Kafka's fetch timer is fixed, so followers that last heard the leader
// together time out together. From the timer's expiry a follower grants
// pre-votes, as Kafka's does, but its own pre-vote waits a random delay in
// [0, CampaignJitter], drawn per node, so one usually pre-votes well
// before the others.
func TestFetchTimeoutCampaignDelayIsRandom(t *testing.T) {
	cfg := kraft.DefaultConfig()
	spread := kraft.Instant(cfg.CampaignJitter.Milliseconds())
	delays := map[kraft.Instant]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		c := newCluster(t, 3, 0, seed)
		c.elect(1)
		c.stabilize()
		n := c.node(2)
		// The last successful fetch answer arrived at the node's clock.
		expiry := c.now[1] + kraft.Instant(cfg.FetchTimeout.Milliseconds())
		c.now[1] = expiry
		n.Tick(expiry)
		if n.Status().Role == kraft.Follower {
			pre := vote(3, 2, 1, kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, true)
			if err := n.Step(expiry, pre); err != nil {
				t.Fatal(err)
			}
			if r := onlyVoteResponse(t, c.ready(2)); !r.VoteGranted {
				t.Errorf("seed %d: at the fetch timeout: %s, want the pre-vote granted", seed, r)
			}
			c.net = nil
			c.campaign(2) // ticks from deadline to deadline until the role changes
		}
		if st := n.Status(); st.Role != kraft.Prospective {
			t.Fatalf("seed %d: %v, want Prospective", seed, st.Role)
		}
		d := c.now[1] - expiry
		if d < 0 || d > spread {
			t.Fatalf("seed %d: campaign %d ms after the fetch timeout, want within [0, %d]", seed, d, spread)
		}
		delays[d] = true
	}
	if len(delays) < 5 {
		t.Errorf("campaign delays over 20 seeds: %v, want them spread", delays)
	}
}

// A leader that shuts down stops taking proposals at once but resigns
// only when a voter has fetched its whole log; the first successor then
// wins at once, with every record the leader held.
func TestShutdownHandsOffToCaughtUpSuccessor(t *testing.T) {
	c := newCluster(t, 5, 0, 1)
	c.elect(1)
	c.stabilize()
	leader := c.node(1)
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 3, Handle: 77}); err != nil {
		t.Fatal(err)
	}
	leo := leader.Status().LogEndOffset
	leader.Resign(c.now[0])
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 78}); !errors.Is(err, kraft.ErrNotLeader) {
		t.Errorf("propose while handing off: %v, want ErrNotLeader", err)
	}
	if st := leader.Status(); st.Role != kraft.Leader || !st.ShuttingDown {
		t.Fatalf("leader is %v (shutting down %v), want a Leader handing off", st.Role, st.ShuttingDown)
	}
	if rd := c.ready(1); len(messagesOf[*kraft.EndQuorumEpochRequest](rd)) != 0 {
		t.Fatalf("EndQuorumEpoch before any voter fetched offset %d: %v", leo, rd.Messages)
	}
	c.stabilize()
	successor := c.leaderOf(2)
	if successor == kraft.NoNode {
		for i, n := range c.nodes {
			t.Logf("node %d: %+v", i+1, n.Status())
		}
		t.Fatal("no leader of epoch 2 after the handoff")
	}
	if got := c.logs[successor-1].EndOffset(); got < leo {
		t.Errorf("successor %d holds up to %d, want at least the old leader's %d", successor, got, leo)
	}
	for i, n := range c.nodes {
		if st := n.Status(); st.Epoch != 2 && kraft.NodeID(i+1) != 1 {
			t.Errorf("node %d in epoch %d, want 2 (one election)", i+1, st.Epoch)
		}
	}
}

// The handoff wait is bounded: with no voter fetching, the leader resigns
// when min(RequestTimeout, 500 ms) has passed, not before.
func TestShutdownHandoffBudget(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	c.stabilize()
	leader := c.node(1)
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 77}); err != nil {
		t.Fatal(err)
	}
	start := c.now[0]
	leader.Resign(start)
	for {
		if leader.HasReady() {
			rd := c.ready(1)
			c.net = nil // the followers are cut off
			if eqe := messagesOf[*kraft.EndQuorumEpochRequest](rd); len(eqe) > 0 {
				if waited := c.now[0] - start; waited != 500 {
					t.Errorf("resigned after %d ms, want the 500 ms budget", waited)
				}
				return
			}
		}
		if c.now[0]-start > 500 {
			t.Fatalf("still %v after %d ms", leader.Status().Role, c.now[0]-start)
		}
		c.tickTogether(1)
	}
}
