package kraft_test

import (
	"errors"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// electCapturing runs id's campaign like elect, and returns the Ready in
// which id became leader (its quorum state names itself).
func electCapturing(t *testing.T, c *cluster, id kraft.NodeID) kraft.Ready {
	t.Helper()
	c.campaign(id)
	for range 100 {
		for i, n := range c.nodes {
			if !n.HasReady() {
				continue
			}
			rd := c.ready(kraft.NodeID(i + 1))
			if kraft.NodeID(i+1) == id && rd.State != nil && rd.State.LeaderID == id {
				c.stabilize()
				return rd
			}
		}
		for len(c.net) > 0 {
			c.deliver(0)
		}
	}
	t.Fatalf("node %d never became leader", id)
	return kraft.Ready{}
}

// leaderWithProposal elects node 1 of three voters, lets both followers
// catch up and park their fetches, and queues one proposal on it; it
// returns the cluster and the high watermark before the proposal.
func leaderWithProposal(t *testing.T) (*cluster, kraft.Offset) {
	t.Helper()
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	hw := c.node(1).Status().HighWatermark
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 100}); err != nil {
		t.Fatal(err)
	}
	return c, hw
}

// A leader's Ready lets its messages leave before its appends are fsynced,
// from the Ready that makes it leader (State, the LeaderChange batch,
// BeginQuorumEpoch) on; a follower's Ready does not, since its next Fetch
// reports its appends as durable (ready.go).
func TestMessagesBeforeSyncOnlyForLeader(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	rd := electCapturing(t, c, 1)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.BeginQuorumEpochRequest](rd)) == 0 || !rd.MessagesBeforeSync {
		t.Fatalf("becoming leader: Ready %+v, want the LeaderChange append and BeginQuorumEpoch with MessagesBeforeSync", rd)
	}

	// Both followers' fetches are parked; a proposal answers them.
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 100}); err != nil {
		t.Fatal(err)
	}
	rd = c.ready(1)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.FetchResponse](rd)) != 2 || !rd.MessagesBeforeSync {
		t.Fatalf("leader: Ready %+v, want one append and two fetch answers with MessagesBeforeSync", rd)
	}
	c.deliver(0) // the records to node 2
	rd = c.ready(2)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.FetchRequest](rd)) != 1 || rd.MessagesBeforeSync {
		t.Fatalf("follower: Ready %+v, want one append and the next Fetch without MessagesBeforeSync", rd)
	}
}

// A leader that appends and then steps down in the same Ready sends what
// its new role sends (a vote, the parked fetches' errors) only after the
// fsync: a non-leader's messages may report its log as durable.
func TestLeaderSteppingDownKeepsSyncFirst(t *testing.T) {
	c, _ := leaderWithProposal(t)
	leader := c.node(1)
	if err := leader.Step(c.now[0], vote(2, 1, 2, kraft.OffsetAndEpoch{Offset: 2, Epoch: 1}, false)); err != nil {
		t.Fatal(err)
	}
	rd := c.ready(1)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.VoteResponse](rd)) != 1 || rd.MessagesBeforeSync {
		t.Fatalf("Ready %+v, want the append and a vote answer without MessagesBeforeSync", rd)
	}
}

// The leader counts its own end offset toward the high watermark only at
// Advance, after the fsync, even when a follower already reports the
// leader's unsynced entries: with three voters, one follower's ack and a
// leader not yet durable commit nothing (RELIABILITY.md C3).
func TestLeaderOwnUnsyncedAppendsNeverCount(t *testing.T) {
	c, hw := leaderWithProposal(t)
	leader := c.node(1)
	end := leader.Status().LogEndOffset
	ack := func() *kraft.FetchRequest {
		return &kraft.FetchRequest{
			Header: kraft.Header{From: 2, To: 1, RequestID: 99}, Replica: kraft.ReplicaKey{ID: 2},
			CurrentLeaderEpoch: 1, FetchOffset: end, LastFetchedEpoch: 1, MaxBytes: 1 << 20, HighWatermark: hw,
		}
	}

	// Queued, not handed out: node 2 reports the entry, the leader's copy
	// is not durable, node 3 lacks it.
	if err := leader.Step(c.now[0], ack()); err != nil {
		t.Fatal(err)
	}
	if got := leader.Status().HighWatermark; got != hw {
		t.Fatalf("high watermark %d after one follower's ack of the leader's unsynced entry, want %d", got, hw)
	}

	// Handed out: the messages may be out and node 2's ack back, but the
	// leader cannot take it before Advance.
	rd := leader.Ready()
	if !rd.MessagesBeforeSync {
		t.Fatalf("leader Ready %+v without MessagesBeforeSync", rd)
	}
	if err := c.logs[0].ApplyReady(rd); err != nil {
		t.Fatal(err)
	}
	if err := leader.Step(c.now[0], ack()); !errors.Is(err, kraft.ErrReadyOutstanding) {
		t.Fatalf("Step with a Ready outstanding = %v, want ErrReadyOutstanding", err)
	}
	if got := leader.Status().HighWatermark; got != hw {
		t.Fatalf("high watermark %d before Advance, want %d", got, hw)
	}

	// Durable: the leader and node 2 are a majority.
	leader.Advance(rd)
	if got := leader.Status().HighWatermark; got != end {
		t.Fatalf("high watermark %d after Advance, want %d", got, end)
	}
}
