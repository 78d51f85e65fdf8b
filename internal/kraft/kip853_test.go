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

// proposeOwnRemovalAndCrash has leader 1 of c append a Voters record
// without itself, makes it durable on node 1 alone (every message of that
// Ready is lost) and restarts node 1 on what it holds. It returns the
// record's offset.
func proposeOwnRemovalAndCrash(t *testing.T, c *cluster, rest ...kraft.NodeID) kraft.Offset {
	t.Helper()
	b, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Voters: keys(rest...)})
	if err != nil {
		t.Fatal(err)
	}
	c.ready(1)
	c.net = nil
	c.restart(1)
	if st := c.node(1).Status(); st.IsVoter || st.LogEndOffset != b.LastOffset+1 {
		t.Fatalf("restarted node 1: voter=%v log end %d, want no voter holding the record at %d", st.IsVoter, st.LogEndOffset, b.BaseOffset)
	}
	return b.BaseOffset
}

// A leader that removes itself and restarts before any voter holds the
// Voters record is no voter in its own log, while the others still need
// its vote under the previous set. Its vote asks only for its log below
// the record (voteBar), so a voter of the previous set is elected and the
// uncommitted removal is truncated away: the quorum is not stuck.
func TestSelfRemovedLeaderRestartGrantsTheVote(t *testing.T) {
	c := newCluster(t, 2, 0, 1)
	c.elect(1)
	c.stabilize()
	x := proposeOwnRemovalAndCrash(t, c, 2)
	if !c.converge(50) {
		t.Fatal("no leader after the self-removed leader restarted")
	}
	if st := c.node(2).Status(); st.Role != kraft.Leader {
		t.Fatalf("node 2 is %v, want Leader", st.Role)
	}
	st := c.node(1).Status()
	if !st.IsVoter || !st.Voters.Equal(voterSet(t, 1, 2)) {
		t.Errorf("node 1: voter=%v voters %v, want the previous set (1,2) back after the record at %d was truncated", st.IsVoter, st.Voters, x)
	}
}

// The relaxed bar stops at the removal: the self-removed leader still
// refuses a candidate that lacks an entry it holds below the Voters
// record, pre-vote or vote, and grants one that holds everything below it.
func TestSelfRemovedLeaderGuardsItsLogBelowTheRemoval(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	c.stabilize()
	x := proposeOwnRemovalAndCrash(t, c, 2, 3)
	st := c.node(1).Status()
	below := kraft.OffsetAndEpoch{Offset: x, Epoch: st.LastEpoch}
	for _, pre := range []bool{true, false} {
		short := vote(3, 1, st.Epoch+1, kraft.OffsetAndEpoch{Offset: x - 1, Epoch: st.LastEpoch}, pre)
		if granted(t, c, short) {
			t.Errorf("pre=%v: granted a candidate whose log ends at %d, below the record at %d", pre, x-1, x)
		}
	}
	for _, pre := range []bool{true, false} {
		if !granted(t, c, vote(2, 1, st.Epoch+2, below, pre)) {
			t.Errorf("pre=%v: refused a candidate holding the log below the record at %d", pre, x)
		}
	}
}

// When the removal is the first entry of the log, the entry before it is
// the last of the snapshot the log starts at: the bar is that snapshot's
// end, so a voter holding everything up to the snapshot is granted and
// one short of it is not.
func TestSelfRemovedLeaderBarAtItsSnapshot(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	c.stabilize()
	snap, err := c.logs[0].CreateSnapshot(c.logs[0].EndOffset(), 1)
	if err != nil {
		t.Fatal(err)
	}
	x := proposeOwnRemovalAndCrash(t, c, 2, 3)
	if x != snap.Offset || c.logs[0].StartOffset() != x {
		t.Fatalf("removal at %d, log start %d: want both at the snapshot's end %d", x, c.logs[0].StartOffset(), snap.Offset)
	}
	st := c.node(1).Status()
	for _, pre := range []bool{true, false} {
		short := vote(3, 1, st.Epoch+1, kraft.OffsetAndEpoch{Offset: x - 1, Epoch: snap.Epoch}, pre)
		if granted(t, c, short) {
			t.Errorf("pre=%v: granted a candidate whose log ends at %d, below the snapshot at %d", pre, x-1, x)
		}
	}
	for _, pre := range []bool{true, false} {
		if !granted(t, c, vote(2, 1, st.Epoch+2, snap, pre)) {
			t.Errorf("pre=%v: refused a candidate holding everything up to the snapshot %s below the removal", pre, snap)
		}
	}
}

// granted steps m into node 1 of c and reports whether it granted.
func granted(t *testing.T, c *cluster, m *kraft.VoteRequest) bool {
	t.Helper()
	if err := c.node(1).Step(c.now[0], m); err != nil {
		t.Fatal(err)
	}
	rd := c.ready(1)
	c.net = nil
	resp := messagesOf[*kraft.VoteResponse](rd)
	if len(resp) != 1 {
		t.Fatalf("%d vote responses, want 1", len(resp))
	}
	return resp[0].VoteGranted
}
