package kraft_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/kraft/krafttest"
)

// KIP-996 (ProspectiveState; invariant E5 in docs/reliability.md): a
// Prospective replica runs its pre-vote round at the current epoch and
// writes no quorum state. Entering Prospective and sending pre-votes
// persists nothing and keeps the epoch.
func TestProspectiveDoesNotBumpEpoch(t *testing.T) {
	n := newVoter(t, 1, emptyState(), &krafttest.MemLog{})
	n.Tick(n.NextDeadline())
	if st := n.Status(); st.Role != kraft.Prospective || st.Epoch != 0 {
		t.Fatalf("after the election timeout: %v in epoch %d, want Prospective in 0", st.Role, st.Epoch)
	}
	rd := n.Ready()
	advance(n, rd)
	if rd.State != nil {
		t.Errorf("Prospective persisted %v", *rd.State)
	}
	votes := messagesOf[*kraft.VoteRequest](rd)
	if len(votes) != 2 {
		t.Fatalf("%d pre-votes sent, want 2", len(votes))
	}
	for _, v := range votes {
		if !v.PreVote || v.ReplicaEpoch != 0 {
			t.Errorf("%s: want a pre-vote at epoch 0", v)
		}
	}
}

// KIP-996 (EpochState.canGrantVote): a pre-vote is granted iff the log is up to
// date, even by a replica that already voted or knows a leader, and it is
// never persisted.
func TestPreVoteGrantedWithoutPersisting(t *testing.T) {
	st := kraft.ElectionState{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 2}}
	n := newVoter(t, 3, st, logWith(1, 2))
	rd := step(t, n, nil, 10, vote(1, 3, 2, kraft.OffsetAndEpoch{Offset: 2, Epoch: 2}, true))
	if r := onlyVoteResponse(t, rd); !r.VoteGranted {
		t.Errorf("pre-vote from an up-to-date replica after voting for 2: %s, want granted", r)
	}
	if rd.State != nil {
		t.Errorf("a pre-vote grant persisted %v", *rd.State)
	}
	rd = step(t, n, nil, 11, vote(1, 3, 2, kraft.OffsetAndEpoch{Offset: 1, Epoch: 2}, true))
	if r := onlyVoteResponse(t, rd); r.VoteGranted {
		t.Errorf("pre-vote from a shorter log: %s, want rejected", r)
	}
}

// KIP-996 (FollowerState.canGrantVote, apache/kafka#17807): a Follower grants
// a pre-vote only if it has not yet fetched successfully from its leader in
// this epoch; after that it refuses, so a partitioned replica cannot disrupt
// a live leader.
func TestFollowerRefusesPreVoteAfterFetching(t *testing.T) {
	st := kraft.ElectionState{Epoch: 1, LeaderID: 1, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	log := &krafttest.MemLog{}
	n := newVoter(t, 2, st, log)
	pre := vote(3, 2, 1, kraft.OffsetAndEpoch{Offset: 0, Epoch: 0}, true)
	if r := onlyVoteResponse(t, step(t, n, nil, 10, pre)); !r.VoteGranted {
		t.Fatalf("before any fetch: %s, want granted", r)
	}
	resp := &kraft.FetchResponse{
		Header: kraft.Header{From: 1, To: 2, RequestID: 1}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 1},
		HighWatermark: -1, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
	}
	step(t, n, log, 20, resp)
	if r := onlyVoteResponse(t, step(t, n, nil, 30, pre)); r.VoteGranted {
		t.Errorf("after a successful fetch: %s, want refused", r)
	}
}

// KIP-996 (LeaderState.canGrantVote): a Leader refuses pre-votes and
// votes in its epoch.
func TestLeaderRefusesPreVote(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	if err := leader.Step(c.now[0], vote(3, 1, 1, kraft.OffsetAndEpoch{Offset: 9, Epoch: 1}, true)); err != nil {
		t.Fatal(err)
	}
	r := onlyVoteResponse(t, c.ready(1))
	if r.VoteGranted || r.Leader != (kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 1}) {
		t.Errorf("leader answered %s, want refusal naming leader 1 epoch 1", r)
	}
	if st := leader.Status(); st.Role != kraft.Leader {
		t.Errorf("leader became %v", st.Role)
	}
}

// KafkaRaftClient.handleVoteRequest: a Vote request with a higher epoch
// makes the receiver move to Unattached in that epoch before deciding the
// vote, PreVote requests too. The epoch is durable; no vote is recorded.
func TestPreVoteWithHigherEpochBumpsReceiver(t *testing.T) {
	n := newVoter(t, 3, emptyState(), &krafttest.MemLog{})
	rd := step(t, n, nil, 10, vote(1, 3, 4, kraft.OffsetAndEpoch{Offset: 0, Epoch: 0}, true))
	want := kraft.ElectionState{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	if rd.State == nil || *rd.State != want {
		t.Errorf("State = %v, want %v", rd.State, want)
	}
	if r := onlyVoteResponse(t, rd); !r.VoteGranted {
		t.Errorf("%s, want granted", r)
	}
}

// KIP-996 (ProspectiveState, KafkaRaftClient.handleVoteResponse): a
// Prospective replica whose pre-vote round is lost returns to following the
// leader it knew, in the same epoch; a majority of pre-votes makes it a
// Candidate in epoch+1.
func TestPreVoteRoundOutcome(t *testing.T) {
	for _, granted := range []bool{false, true} {
		t.Run(map[bool]string{false: "lost", true: "won"}[granted], func(t *testing.T) {
			st := kraft.ElectionState{Epoch: 1, LeaderID: 2, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
			n := newVoter(t, 1, st, &krafttest.MemLog{})
			for n.Status().Role != kraft.Prospective {
				n.Tick(n.NextDeadline())
			}
			// The timed-out fetch puts the leader's slot in retry backoff, so the
			// pre-votes may leave in two Readys.
			var votes []*kraft.VoteRequest
			for len(votes) < 2 {
				if !n.HasReady() {
					n.Tick(n.NextDeadline())
					continue
				}
				rd := n.Ready()
				advance(n, rd)
				votes = append(votes, messagesOf[*kraft.VoteRequest](rd)...)
			}
			for _, v := range votes {
				resp := &kraft.VoteResponse{Header: kraft.Header{From: v.To, To: 1, RequestID: v.RequestID},
					Leader: kraft.LeaderAndEpoch{LeaderID: 2, Epoch: 1}, VoteGranted: granted}
				if err := n.Step(n.NextDeadline()-1, resp); err != nil {
					t.Fatal(err)
				}
				if granted {
					break // one grant plus its own is a majority of 3
				}
			}
			st2 := n.Status()
			want := kraft.Follower
			wantEpoch := kraft.Epoch(1)
			if granted {
				want, wantEpoch = kraft.Candidate, 2
			}
			if st2.Role != want || st2.Epoch != wantEpoch {
				t.Errorf("after the round: %v in %d, want %v in %d", st2.Role, st2.Epoch, want, wantEpoch)
			}
		})
	}
}

// KafkaRaftClient.handleVoteResponse (KIP-996): a peer that cannot carry
// PreVote answers UNSUPPORTED_VERSION and the Prospective replica becomes a
// Candidate at once.
func TestUnsupportedPreVoteSkipsToCandidate(t *testing.T) {
	n := newVoter(t, 1, emptyState(), &krafttest.MemLog{})
	n.Tick(n.NextDeadline())
	rd := n.Ready()
	advance(n, rd)
	v := messagesOf[*kraft.VoteRequest](rd)[0]
	resp := &kraft.VoteResponse{Header: kraft.Header{From: v.To, To: 1, RequestID: v.RequestID}, Error: kraft.CodeUnsupportedVersion,
		Leader: kraft.LeaderAndEpoch{LeaderID: kraft.NoNode, Epoch: -1}}
	if err := n.Step(n.NextDeadline()-1, resp); err != nil {
		t.Fatal(err)
	}
	if st := n.Status(); st.Role != kraft.Candidate || st.Epoch != 1 {
		t.Errorf("%v in %d, want Candidate in 1", st.Role, st.Epoch)
	}
}
