package kraft_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/kraft/krafttest"
)

// followerWithLeaderChange is voter 2 of the static quorum (1,2,3),
// following leader 1 in epoch 1, after it appended that epoch's
// LeaderChange naming voters: the Ready of the append is carried out.
func followerWithLeaderChange(t *testing.T, voters ...kraft.NodeID) *kraft.Node {
	t.Helper()
	st := kraft.ElectionState{Epoch: 1, LeaderID: 1, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	log := logWith()
	n := newVoter(t, 2, st, log)
	resp := &kraft.FetchResponse{
		Header: kraft.Header{From: 1, To: 2, RequestID: 1}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 1},
		HighWatermark: 1, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
		Batches: []kraft.BatchInfo{{BaseOffset: 0, LastOffset: 0, Epoch: 1, Control: true, KRaftVersion: -1,
			LeaderChange: kraft.LeaderChange{LeaderID: 1, Voters: keys(voters...), Granting: keys(1)}}},
	}
	step(t, n, log, 10, resp)
	if st := n.Status(); st.LogEndOffset != 1 {
		t.Fatalf("the LeaderChange was not appended: log end %d", st.LogEndOffset)
	}
	return n
}

// A static voter that appended its leader's current-epoch LeaderChange
// leaving it out grants no vote and no pre-vote, even to a candidate
// whose log is ahead of its own, in a later epoch, once its leader is
// gone; the same request is granted by a voter the LeaderChange names.
func TestExcludedStaticVoterGrantsNoVote(t *testing.T) {
	up := kraft.OffsetAndEpoch{Offset: 5, Epoch: 1} // ahead of the follower's 1@1
	for _, c := range []struct {
		name    string
		voters  []kraft.NodeID
		granted bool
	}{
		{"left out", []kraft.NodeID{1}, false},
		{"named", []kraft.NodeID{1, 2, 3}, true},
	} {
		for _, pre := range []bool{true, false} {
			n := followerWithLeaderChange(t, c.voters...)
			if got := n.Status().IsVoter; got != c.granted {
				t.Fatalf("%s: IsVoter = %v", c.name, got)
			}
			// A later epoch: the follower no longer hears a leader.
			rd := step(t, n, nil, 20, vote(3, 2, 2, up, pre))
			resp := messagesOf[*kraft.VoteResponse](rd)
			if len(resp) != 1 {
				t.Fatalf("%s pre=%v: %d vote responses", c.name, pre, len(resp))
			}
			if resp[0].VoteGranted != c.granted {
				t.Errorf("%s pre=%v: granted = %v, want %v", c.name, pre, resp[0].VoteGranted, c.granted)
			}
		}
	}
}

// A static voter restarted on a log whose latest LeaderChange leaves it
// out starts excluded, as it was before the restart: it is no voter,
// grants no vote nor pre-vote, and never campaigns. One whose latest
// LeaderChange names it starts a voter. A LeaderChange of the epoch it
// follows that names it clears the exclusion.
func TestRestartedExcludedStaticVoterStaysExcluded(t *testing.T) {
	restart := func(t *testing.T, voters ...kraft.NodeID) (*kraft.Node, *krafttest.MemLog) {
		t.Helper()
		log := &krafttest.MemLog{}
		for _, b := range []kraft.BatchInfo{
			{BaseOffset: 0, LastOffset: 0, Epoch: 1, Control: true, KRaftVersion: -1,
				LeaderChange: kraft.LeaderChange{LeaderID: 1, Voters: keys(voters...), Granting: keys(1)}},
			{BaseOffset: 1, LastOffset: 3, Epoch: 1, KRaftVersion: -1, LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}},
		} {
			if err := log.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		st := kraft.ElectionState{Epoch: 1, LeaderID: 1, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
		return newVoter(t, 2, st, log), log
	}
	up := kraft.OffsetAndEpoch{Offset: 9, Epoch: 1} // ahead of the node's 4@1
	for _, c := range []struct {
		name   string
		voters []kraft.NodeID
		voter  bool
	}{
		{"left out", []kraft.NodeID{1}, false},
		{"named", []kraft.NodeID{1, 2, 3}, true},
	} {
		for _, pre := range []bool{true, false} {
			n, _ := restart(t, c.voters...)
			if got := n.Status().IsVoter; got != c.voter {
				t.Fatalf("%s: IsVoter = %v after the restart", c.name, got)
			}
			resp := onlyVoteResponse(t, step(t, n, nil, 20, vote(3, 2, 2, up, pre)))
			if resp.VoteGranted != c.voter {
				t.Errorf("%s pre=%v: granted = %v, want %v", c.name, pre, resp.VoteGranted, c.voter)
			}
		}
	}

	// Left out, it never campaigns, however long no leader is heard.
	n, _ := restart(t, 1)
	for now := kraft.Instant(0); now < 60_000; now += 100 {
		n.Tick(now)
		if n.HasReady() {
			rd := n.Ready()
			if vs := messagesOf[*kraft.VoteRequest](rd); len(vs) > 0 {
				t.Fatalf("the excluded node campaigns at %dms: %v", now, vs[0])
			}
			advance(n, rd)
		}
	}

	// The LeaderChange of the epoch it follows names it again.
	n, log := restart(t, 1)
	resp := &kraft.FetchResponse{
		Header: kraft.Header{From: 1, To: 2, RequestID: 1}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 1},
		HighWatermark: 4, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
		Batches: []kraft.BatchInfo{{BaseOffset: 4, LastOffset: 4, Epoch: 1, Control: true, KRaftVersion: -1,
			LeaderChange: kraft.LeaderChange{LeaderID: 1, Voters: keys(1, 2, 3), Granting: keys(1)}}},
	}
	step(t, n, log, 10, resp)
	if !n.Status().IsVoter {
		t.Errorf("a LeaderChange naming the node did not make it a voter again: %+v", n.Status())
	}
}
