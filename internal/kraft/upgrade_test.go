package kraft_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/kraft/krafttest"
)

// dirCluster is newCluster whose nodes have directory ids
// (krafttest.DirectoryID), except those listed in without.
func dirCluster(t *testing.T, n int, without ...kraft.NodeID) *cluster {
	t.Helper()
	c := newCluster(t, n, 0, 1)
	for i := range c.cfgs {
		id := kraft.NodeID(i + 1)
		if !slices.Contains(without, id) {
			c.cfgs[i].DirectoryID = krafttest.DirectoryID(id)
		}
		node, err := kraft.NewNode(0, c.cfgs[i], emptyState(), c.logs[i])
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[i] = node
	}
	return c
}

// reportVoters notes on leader an UpdateRaftVoter with the range [0, 1]
// from each of ids.
func reportVoters(t *testing.T, c *cluster, leader kraft.NodeID, ids ...kraft.NodeID) {
	t.Helper()
	for _, id := range ids {
		if err := c.node(leader).NoteVoterUpdate(c.now[leader-1], dirKey(id), 0, 1); err != nil {
			t.Fatal(err)
		}
	}
}

func dirKey(id kraft.NodeID) kraft.ReplicaKey {
	return kraft.ReplicaKey{ID: id, DirectoryID: krafttest.DirectoryID(id)}
}

func upgradeRefusal(t *testing.T, err error) *kraft.KRaftUpgradeError {
	t.Helper()
	if !errors.Is(err, kraft.ErrKRaftUpgrade) {
		t.Fatalf("PlanKRaftUpgrade error %v, want one matching ErrKRaftUpgrade", err)
	}
	refusal, ok := errors.AsType[*kraft.KRaftUpgradeError](err)
	if !ok {
		t.Fatalf("PlanKRaftUpgrade error %T, want *KRaftUpgradeError", err)
	}
	return refusal
}

// Kafka's LeaderState.maybeAppendUpgradedKRaftVersion: "Directory id must
// be known for all of the voters". A leader whose own directory is
// unknown (a log directory formatted without directory.id) cannot name
// itself in the Voters record.
func TestUpgradeRefusedWithoutTheLeadersDirectoryID(t *testing.T) {
	c := dirCluster(t, 3, 1)
	c.elect(1)
	leader := c.node(1)
	reportVoters(t, c, 1, 2, 3)
	_, err := leader.PlanKRaftUpgrade(1)
	if r := upgradeRefusal(t, err); !slices.Equal(r.NoDirectory, []kraft.NodeID{1}) || len(r.Unsupported) != 0 {
		t.Errorf("refusal %+v, want NoDirectory [1] only", r)
	}
}

// A Fetch from another directory than the one a voter reported means a
// new disk: the support the old one reported no longer counts, and the
// new directory id is the one the upgrade would name.
func TestFetchFromANewDirectoryForgetsTheReportedSupport(t *testing.T) {
	c := dirCluster(t, 3)
	c.elect(1)
	leader := c.node(1)
	reportVoters(t, c, 1, 2, 3)
	if _, err := leader.PlanKRaftUpgrade(1); err != nil {
		t.Fatalf("PlanKRaftUpgrade(1) = %v with every voter reported", err)
	}
	f := followerFetch(3, leader.Status().Epoch)
	f.FetchOffset, f.MaxWait = leader.Status().LogEndOffset, 0
	f.Replica.DirectoryID = krafttest.DirectoryID(9)
	if err := leader.Step(c.now[0], f); err != nil {
		t.Fatal(err)
	}
	_, err := leader.PlanKRaftUpgrade(1)
	if r := upgradeRefusal(t, err); !slices.Equal(r.Unsupported, []kraft.NodeID{3}) {
		t.Fatalf("refusal %+v, want Unsupported [3]", r)
	}
	if err := leader.NoteVoterUpdate(c.now[0], kraft.ReplicaKey{ID: 3, DirectoryID: krafttest.DirectoryID(9)}, 0, 1); err != nil {
		t.Fatal(err)
	}
	voters, err := leader.PlanKRaftUpgrade(1)
	want := []kraft.ReplicaKey{dirKey(1), dirKey(2), {ID: 3, DirectoryID: krafttest.DirectoryID(9)}}
	if err != nil || !slices.Equal(voters, want) {
		t.Errorf("PlanKRaftUpgrade(1) = %v, %v, want %v", voters, err, want)
	}
}

// What a leader learned for the upgrade belongs to its epoch (Kafka's
// LeaderState): a new leader waits for the voters' UpdateRaftVoter again.
func TestUpgradeReportsBelongToTheLeadersEpoch(t *testing.T) {
	c := dirCluster(t, 3)
	c.elect(1)
	for _, id := range []kraft.NodeID{1, 3} {
		if err := c.node(2).NoteVoterUpdate(c.now[1], dirKey(id), 0, 1); err == nil {
			t.Errorf("follower 2 noted voter %d's update", id)
		}
	}
	if err := c.node(1).NoteVoterUpdate(c.now[0], dirKey(1), 0, 1); err == nil {
		t.Error("leader 1 noted an update of itself")
	}
	if err := c.node(1).NoteVoterUpdate(c.now[0], kraft.ReplicaKey{ID: 3}, 0, 1); err == nil {
		t.Error("leader 1 noted an update without a directory id")
	}
	if err := c.node(1).NoteVoterUpdate(c.now[0], dirKey(3), 1, 0); err == nil {
		t.Error("leader 1 noted an update with the range [1, 0]")
	}
	reportVoters(t, c, 1, 2, 3)
	// Node 1 hands leadership over and steps down.
	c.node(1).Resign(c.now[0])
	c.stabilize()
	next := kraft.NodeID(kraft.NoNode)
	for i := 0; i < 20 && next == kraft.NoNode; i++ {
		for _, id := range []kraft.NodeID{2, 3} {
			if c.node(id).Status().Role == kraft.Leader {
				next = id
			}
		}
		if next == kraft.NoNode {
			c.campaign(2)
			c.stabilize()
		}
	}
	if next == kraft.NoNode {
		t.Fatal("no new leader")
	}
	_, err := c.node(next).PlanKRaftUpgrade(1)
	want := []kraft.NodeID{1, 5 - next}
	slices.Sort(want)
	if r := upgradeRefusal(t, err); !slices.Equal(r.Unsupported, want) {
		t.Errorf("new leader %d: refusal %+v, want Unsupported %v", next, r, want)
	}
	if _, err := c.node(1).PlanKRaftUpgrade(1); !errors.Is(err, kraft.ErrNotLeader) {
		t.Errorf("former leader: PlanKRaftUpgrade(1) = %v, want ErrNotLeader", err)
	}
}

// Propose carries a KRaftVersion record on a static quorum only as the
// upgrade PlanKRaftUpgrade admits, with exactly its voters.
func TestProposeChecksTheUpgrade(t *testing.T) {
	c := dirCluster(t, 3)
	c.elect(1)
	leader := c.node(1)
	all := []kraft.ReplicaKey{dirKey(1), dirKey(2), dirKey(3)}
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 2, Voters: all, KRaftVersion: 1}); !errors.Is(err, kraft.ErrKRaftUpgrade) {
		t.Fatalf("Propose before the voters reported = %v, want ErrKRaftUpgrade", err)
	}
	reportVoters(t, c, 1, 2, 3)
	wrong := [][]kraft.ReplicaKey{
		{dirKey(1), dirKey(2)},
		{dirKey(1), dirKey(2), {ID: 3, DirectoryID: krafttest.DirectoryID(7)}},
		{dirKey(1), dirKey(2), dirKey(3), dirKey(4)},
	}
	for _, voters := range wrong {
		if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 2, Voters: voters, KRaftVersion: 1}); err == nil {
			t.Errorf("Propose of the upgrade with voters %v succeeded", voters)
		}
	}
	if v := leader.KRaftVersion(); v != 0 {
		t.Fatalf("KRaftVersion() = %d after refused proposals, want 0", v)
	}
	// The proposal's voters may come in any order.
	shuffled := []kraft.ReplicaKey{dirKey(3), dirKey(1), dirKey(2)}
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 2, Voters: shuffled, KRaftVersion: 1}); err != nil {
		t.Fatalf("Propose of the planned upgrade: %v", err)
	}
	if v := leader.KRaftVersion(); v != 1 {
		t.Errorf("KRaftVersion() = %d after the upgrade's append, want 1", v)
	}
	c.stabilize()
	for id := kraft.NodeID(1); id <= 3; id++ {
		st := c.node(id).Status()
		if got := st.Voters.Keys(); !slices.Equal(got, all) || !st.IsVoter {
			t.Errorf("node %d: voters %v (voter %v), want %v", id, got, st.IsVoter, all)
		}
		if st.HighWatermark != st.LogEndOffset {
			t.Errorf("node %d: high watermark %d, log end %d: the upgrade did not commit", id, st.HighWatermark, st.LogEndOffset)
		}
	}
}
