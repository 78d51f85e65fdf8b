package sim

import (
	"errors"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Each invariant check fires on a state that breaks it. The states are
// built by hand on a fresh cluster: what matters is that the check can
// fail, and with the right name.
func TestInvariantsFire(t *testing.T) {
	entry := func(base, last kraft.Offset, epoch kraft.Epoch, p Payload) Entry {
		return Entry{Batch: kraft.BatchInfo{BaseOffset: base, LastOffset: last, Epoch: epoch, KRaftVersion: -1,
			LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}}, Payload: p}
	}
	noVote := kraft.ReplicaKey{ID: kraft.NoNode}
	for _, tc := range []struct {
		want string
		do   func(c *cluster) error
	}{
		{invElectionSafety, func(c *cluster) error {
			c.chk.leaderOf[0] = leaderRec{id: 2, lives: 1}
			return c.chk.onLeader(c.node(1))
		}},
		{invElectionSafety, func(c *cluster) error { // the same node, a later incarnation
			c.chk.leaderOf[0] = leaderRec{id: 1, lives: 0}
			return c.chk.onLeader(c.node(1))
		}},
		{invLeaderComplete, func(c *cluster) error {
			c.chk.committed = []Entry{entry(0, 0, 0, 7)}
			return c.chk.onLeader(c.node(1))
		}},
		{invDurableVote, func(c *cluster) error {
			c.chk.votes[voteKey{1, 3}] = 2
			return c.chk.onPersist(c.node(1), kraft.ElectionState{Epoch: 3, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 3}})
		}},
		{invDurableVote, func(c *cluster) error { // a granted vote not yet durable
			n := c.node(1)
			c.chk.preVotes[reqKey{from: 1, to: 2, id: 9}] = false
			return c.chk.onSend(n, &kraft.VoteResponse{Header: kraft.Header{From: 1, To: 2, RequestID: 9}, VoteGranted: true,
				Leader: kraft.LeaderAndEpoch{LeaderID: kraft.NoNode, Epoch: 0}}, n.log.EndOffset())
		}},
		{invEpochMonotonic, func(c *cluster) error {
			c.node(1).qs = kraft.ElectionState{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: noVote}
			return c.chk.onPersist(c.node(1), kraft.ElectionState{Epoch: 3, LeaderID: kraft.NoNode, VotedKey: noVote})
		}},
		{invEpochMonotonic, func(c *cluster) error { // a message from an epoch not yet durable
			return c.chk.onSend(c.node(1), &kraft.FetchRequest{Header: kraft.Header{From: 1, To: 2}, CurrentLeaderEpoch: 1}, 0)
		}},
		{invLogMatching, func(c *cluster) error {
			c.chk.keys[epochKey{0, 0}] = logKey{last: 0, payload: 7, prev: epochKey{base: -1}}
			return c.chk.onAppend(c.node(1), entry(0, 0, 0, 8))
		}},
		{invWellFormed, func(c *cluster) error {
			return c.chk.onAppend(c.node(1), entry(0, 0, 5, 8)) // epoch above the node's
		}},
		{invNoTruncateCommit, func(c *cluster) error {
			n := c.node(1)
			n.hw = 5
			return c.chk.onTruncate(n, 3)
		}},
		{invNoTruncateCommit, func(c *cluster) error { // through a committed batch
			n := c.node(1)
			e := entry(0, 0, 0, 7)
			n.log.entries = []Entry{e}
			c.chk.committed = []Entry{e}
			return c.chk.onTruncate(n, 0)
		}},
		{invHWMonotonic, func(c *cluster) error {
			n := c.node(1)
			n.hw = 5
			return c.chk.onHighWatermark(n, 4)
		}},
		{invHWBounds, func(c *cluster) error { return c.chk.onHighWatermark(c.node(1), 3) }},
		{invCommitted, func(c *cluster) error {
			n := c.node(1)
			n.log.entries = []Entry{entry(0, 0, 0, 8)}
			c.chk.committed = []Entry{entry(0, 0, 0, 7)}
			return c.chk.onHighWatermark(n, 1)
		}},
		{invFetchDurable, func(c *cluster) error {
			n := c.node(1)
			n.qs.Epoch = 1
			return c.chk.onSend(n, &kraft.FetchRequest{Header: kraft.Header{From: 1, To: 2}, CurrentLeaderEpoch: 1, FetchOffset: 5}, n.log.EndOffset())
		}},
		{invFetchDurable, func(c *cluster) error { // a fetch sent before the fsync of the entries it reports
			n := c.node(1)
			n.qs.Epoch = 1
			n.log.entries = []Entry{entry(0, 0, 1, 8)}
			return c.chk.onSend(n, &kraft.FetchRequest{Header: kraft.Header{From: 1, To: 2}, CurrentLeaderEpoch: 1, FetchOffset: 1, LastFetchedEpoch: 1}, 0)
		}},
		{invOneVoterChange, func(c *cluster) error {
			e := entry(0, 0, 0, 9)
			e.Batch.Control, e.Batch.Voters = true, []kraft.ReplicaKey{{ID: 1}, {ID: 4}, {ID: 5}}
			return c.chk.onAppend(c.node(1), e) // two voters differ from (1, 2, 3)
		}},
		{invCheckQuorum, func(c *cluster) error {
			n := c.node(1)
			n.role, n.roleSince = kraft.Leader, 0
			if err := c.chk.checkQuorum(1); err != nil {
				return err
			}
			return c.chk.checkQuorum(10_000) // no Fetch in 10 s
		}},
		{invAcked, func(c *cluster) error {
			c.node(2).log.entries = []Entry{entry(0, 0, 0, 8)}
			c.chk.acked[7] = 0
			return c.chk.checkAcked()
		}},
		{invLogStartCovered, func(c *cluster) error {
			c.node(1).log.start = 3 // no snapshot ends there
			return c.chk.checkSnapshots()
		}},
		{invSnapshotContent, func(c *cluster) error { // a snapshot that appeared unchecked
			c.chk.committed = []Entry{entry(0, 0, 0, 7)}
			s := &simSnapshot{id: kraft.OffsetAndEpoch{Offset: 1, Epoch: 0}, entries: []Entry{entry(0, 0, 0, 8)}}
			c.node(1).log.snaps = []*simSnapshot{s}
			return c.chk.checkSnapshots()
		}},
		{invSnapshotValid, func(c *cluster) error { // beyond the committed prefix
			s := &simSnapshot{id: kraft.OffsetAndEpoch{Offset: 1, Epoch: 0}, entries: []Entry{entry(0, 0, 0, 8)}}
			return c.chk.onInstall(c.node(1), s)
		}},
		{invSnapshotMonotonic, func(c *cluster) error {
			e := entry(0, 0, 0, 7)
			c.chk.committed = []Entry{e, entry(1, 1, 0, 8)}
			newer := &simSnapshot{id: kraft.OffsetAndEpoch{Offset: 2, Epoch: 0}, entries: c.chk.committed}
			older := &simSnapshot{id: kraft.OffsetAndEpoch{Offset: 1, Epoch: 0}, entries: []Entry{e}}
			c.node(1).log.snaps = []*simSnapshot{newer}
			if err := c.chk.checkSnapshots(); err != nil {
				return err
			}
			c.node(1).log.snaps = []*simSnapshot{older} // as if a crash lost the newer one
			return c.chk.checkSnapshots()
		}},
	} {
		c, err := newCluster(3, 0, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = tc.do(c)
		var v *Violation
		if !errors.As(err, &v) || v.Invariant != tc.want {
			t.Errorf("want a %s violation, got %v", tc.want, err)
		}
	}
}
