package kraft_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

func voterSet(t *testing.T, ids ...kraft.NodeID) kraft.VoterSet {
	t.Helper()
	vs, err := kraft.NewVoterSetFromKeys(keys(ids...))
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// KIP-853 (KRaftControlRecordStateMachine.updateState): as soon as it is
// appended to the local log (by the leader, or by a follower after a
// Fetch) the new voter set is in force, committed or not; the leader counts the new majority at once and
// allows no second change until the first commits.
func TestVoterSetInForceOnAppend(t *testing.T) {
	c := newCluster(t, 3, 1, 1)
	c.elect(1)
	c.stabilize() // the observer finds the leader
	leader := c.node(1)
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Voters: keys(1, 2, 3, 4)}); err != nil {
		t.Fatal(err)
	}
	if got, want := leader.Status().Voters, voterSet(t, 1, 2, 3, 4); !got.Equal(want) {
		t.Fatalf("leader voters %v right after the append, want %v", got, want)
	}
	if !leader.PendingVoterChange() {
		t.Error("PendingVoterChange() = false before the Voters record commits")
	}
	if c.node(4).Status().IsVoter {
		t.Fatal("node 4 is a voter before it appended the record")
	}
	c.stabilize()
	if !c.node(4).Status().IsVoter {
		t.Error("node 4 is not a voter after appending the record")
	}
	if leader.PendingVoterChange() {
		t.Error("PendingVoterChange() = true after the record committed")
	}
	var voters int
	for _, r := range leader.Status().Replicas {
		if r.Voter {
			voters++
		}
	}
	if voters != 4 {
		t.Errorf("leader tracks %d voters, want 4", voters)
	}
}

// KIP-853 (VoterSetHistory.truncateNewEntries): if the entry is truncated
// away (a diverging log), the previous set is restored.
func TestVoterSetRevertedOnTruncation(t *testing.T) {
	st := kraft.ElectionState{Epoch: 2, LeaderID: 1, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	log := logWith(1)
	n := newVoter(t, 3, st, log)
	resp := &kraft.FetchResponse{
		Header: kraft.Header{From: 1, To: 3, RequestID: 1}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 2},
		HighWatermark: 1, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
		Batches: []kraft.BatchInfo{{BaseOffset: 1, LastOffset: 1, Epoch: 1, Control: true, KRaftVersion: -1,
			LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}, Voters: keys(1, 2, 3, 4)}},
	}
	rd := step(t, n, log, 10, resp)
	if got, want := n.Status().Voters, voterSet(t, 1, 2, 3, 4); !got.Equal(want) {
		t.Fatalf("voters after appending the record = %v, want %v", got, want)
	}
	fetch := messagesOf[*kraft.FetchRequest](rd)
	if len(fetch) != 1 {
		t.Fatalf("%d fetches after the append, want 1", len(fetch))
	}
	// The leader of epoch 2 never had offset 1 in epoch 1.
	div := &kraft.FetchResponse{
		Header: kraft.Header{From: 1, To: 3, RequestID: fetch[0].RequestID}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 2},
		HighWatermark: 1, DivergingEpoch: kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, SnapshotID: kraft.NoOffsetAndEpoch,
	}
	rd = step(t, n, log, 20, div)
	if rd.TruncateTo != 1 {
		t.Fatalf("TruncateTo = %d, want 1", rd.TruncateTo)
	}
	if got, want := n.Status().Voters, voterSet(t, 1, 2, 3); !got.Equal(want) {
		t.Errorf("voters after truncating the record = %v, want the static %v", got, want)
	}
}

// KIP-853 (RemoveVoterHandler; invariant R5 in docs/reliability.md): a
// leader that removed itself resigns after the record commits — not before:
// until then it keeps replicating, without counting itself.
func TestRemovedLeaderResignsAfterCommit(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	b, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Voters: keys(2, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if st := leader.Status(); st.Role != kraft.Leader || st.IsVoter {
		t.Fatalf("right after proposing its removal: %v voter=%v, want a Leader that is no voter", st.Role, st.IsVoter)
	}
	c.ready(1)
	if st := leader.Status(); st.Role != kraft.Leader {
		t.Fatalf("resigned before the removal committed: %v", st.Role)
	}
	// Node 2 alone is not a majority of (2,3): deliver only to node 2.
	for range 6 {
		for i := 0; i < len(c.net); {
			if kraft.HeaderOf(c.net[i]).To == 3 {
				i++
				continue
			}
			c.deliver(i)
		}
		c.readyAll()
	}
	if st := leader.Status(); st.Role != kraft.Leader || st.HighWatermark > b.BaseOffset {
		t.Fatalf("with one of two voters caught up: %v hw=%d, want Leader with the record uncommitted", st.Role, st.HighWatermark)
	}
	c.stabilize()
	st := leader.Status()
	if st.Role != kraft.Resigned || st.Epoch != 1 {
		t.Errorf("after the removal committed the leader is %v in epoch %d, want Resigned", st.Role, st.Epoch)
	}
	if st.HighWatermark <= b.BaseOffset {
		t.Errorf("high watermark %d does not cover the Voters record at %d", st.HighWatermark, b.BaseOffset)
	}
}

// Proposal validation: a Voters batch holds one record and a well-formed
// set; a data batch has records and a handle for its bytes.
func TestProposeVotersValidation(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 2, Voters: keys(1, 2)}); err == nil {
		t.Error("a two-record Voters batch was accepted")
	}
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Voters: keys(1, 1)}); err == nil {
		t.Error("a voter set with a duplicate id was accepted")
	}
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 0, Handle: 1}); err == nil {
		t.Error("an empty batch was accepted")
	}
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1}); err == nil {
		t.Error("a data batch without a handle was accepted")
	}
}

// Kafka's first leader of a dynamic quorum writes the bootstrap voter set
// after a KRaftVersion record in one control batch: Proposal.KRaftVersion
// makes a two-record batch, and needs the Voters record. (The cluster
// here starts static, so the batch is the kraft.version upgrade, which
// needs the voters' reports first; upgrade_test.go.)
func TestProposeKRaftVersionWithVoters(t *testing.T) {
	c := dirCluster(t, 3)
	c.elect(1)
	leader := c.node(1)
	reportVoters(t, c, 1, 2, 3)
	voters := []kraft.ReplicaKey{dirKey(1), dirKey(2), dirKey(3)}
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, KRaftVersion: 1}); err == nil {
		t.Error("a KRaftVersion record without a Voters record was accepted")
	}
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Voters: voters, KRaftVersion: 1}); err == nil {
		t.Error("a KRaftVersion+Voters batch of 1 record was accepted")
	}
	b, err := leader.Propose(c.now[0], kraft.Proposal{Records: 2, Voters: voters, KRaftVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b.Records() != 2 || b.KRaftVersion != 1 || len(b.Voters) != 3 || !b.Control {
		t.Fatalf("batch %s, want a 2-record control batch with KRaftVersion 1 and 3 voters", b)
	}
	c.stabilize()
	if leader.PendingVoterChange() {
		t.Error("the voter set is still pending after the batch committed")
	}
}

// Kafka's LeaderState resets the check-quorum timer on every poll while
// the leader is the only voter: a lone leader that gains a voter long
// after its election gets a whole check-quorum timeout to hear from it.
func TestCheckQuorumStartsWhenTheSetGrows(t *testing.T) {
	c := newCluster(t, 1, 1, 1)
	c.stabilize() // a lone voter elects itself at once
	leader := c.node(1)
	if leader.Status().Role != kraft.Leader {
		t.Fatalf("lone voter is %s", leader.Status().Role)
	}
	c.now[0] += 10_000 // long past a check-quorum timeout (3 s)
	leader.Tick(c.now[0])
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Voters: keys(1, 2)}); err != nil {
		t.Fatal(err)
	}
	leader.Tick(c.now[0])
	if st := leader.Status(); st.Role != kraft.Leader {
		t.Fatalf("leader is %s right after the set grew, want Leader", st.Role)
	}
}
