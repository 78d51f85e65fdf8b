package kraft_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
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
