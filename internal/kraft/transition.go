package kraft

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/krabka-go/krabka/internal/kraft/quorum"
)

// This file holds the role transitions of QuorumState (its transitionTo*
// methods). Each transition clears the per-role state of the role left,
// frees the request slots (a late answer to a request of the old role no
// longer matches and is ignored), persists what must be durable, and logs
// at Info.

// electionState is the per-role state of Prospective and Candidate: the
// votes heard in the current round, sorted by voter id (Kafka's
// EpochElection). The nominee's own grant is implicit.
type electionState struct {
	Votes []voteRecord
}

type voteRecord struct {
	ID      NodeID
	Granted bool
}

// resignedState is the per-role state of Resigned (ResignedState).
type resignedState struct {
	Preferred []ReplicaKey // successors, best first
	Unacked   []NodeID     // voters that have not acknowledged EndQuorumEpoch, sorted
}

func (n *Node) hasElectionTimer() bool {
	switch n.s.role {
	case Prospective, Candidate, Resigned:
		return true
	case Unattached:
		return n.isVoter()
	}
	return false
}

// leaveRole resets per-role state and returns the fetches a leader had
// parked, to be answered once the new role is in place.
func (n *Node) leaveRole() []parkedFetch {
	var parked []parkedFetch
	if n.s.role == Leader {
		n.failReads()
		parked = n.s.leader.Parked
		// Outside leadership the node's high watermark is the highest one
		// it handed out; a leader that never committed in its epoch had
		// none of its own.
		n.s.hw = max(n.s.hw, n.s.emittedHW)
	}
	n.s.leader = leaderState{}
	n.s.election = electionState{}
	n.s.follower = followerState{}
	n.s.resigned = resignedState{}
	for i := range n.s.peers {
		n.s.peers[i].InFlight = 0
	}
	return parked
}

func (n *Node) logTransition() {
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "became "+n.s.role.String(),
		slog.Int(keyEpoch, int(n.s.epoch)), slog.Int(keyLeaderID, int(n.s.leaderID)),
		slog.String(keyVoted, votedString(n.s.votedKey)))
}

func votedString(k ReplicaKey) string {
	if !k.IsSet() {
		return "none"
	}
	return k.String()
}

// transitionToUnattached moves to Unattached in epoch (> current, or equal
// from Prospective, keeping the vote). keepTimer carries over the remaining
// election time of a role that had one.
func (n *Node) transitionToUnattached(epoch Epoch, keepTimer bool) {
	prev, had := n.s.electionDeadline, n.hasElectionTimer()
	if epoch != n.s.epoch {
		n.s.votedKey = quorum.NoReplica
	}
	n.s.epoch = epoch
	n.s.leaderID = NoNode
	parked := n.leaveRole()
	n.s.role = Unattached
	n.s.electionDeadline = n.s.now + n.randomElectionTimeout()
	if keepTimer && had {
		n.s.electionDeadline = prev
	}
	n.markPersist()
	n.logTransition()
	n.answerParked(parked)
}

// enterUnattached sets up Unattached at startup.
func (n *Node) enterUnattached() {
	n.s.role = Unattached
	n.s.electionDeadline = n.s.now + n.randomElectionTimeout()
}

// transitionToFollower moves to Follower of leader in epoch (≥ current).
// A same-epoch transition keeps the vote.
func (n *Node) transitionToFollower(epoch Epoch, leader NodeID) {
	if epoch != n.s.epoch {
		n.s.votedKey = quorum.NoReplica
	}
	n.s.epoch = epoch
	n.s.leaderID = leader
	parked := n.leaveRole()
	// Whatever failed with this node before, it is the leader now: fetch at
	// once.
	n.s.peers[n.peerIndex(leader)].BackoffUntil = 0
	n.enterFollower()
	n.markPersist()
	n.logTransition()
	n.answerParked(parked)
}

func (n *Node) enterFollower() {
	n.s.role = Follower
	n.s.follower = followerState{}
	n.restartFetchTimer()
}

// transitionToProspective starts a pre-vote round at the current epoch
// (KIP-996). Nothing is persisted: a pre-vote changes no durable state.
func (n *Node) transitionToProspective() {
	parked := n.leaveRole()
	n.s.role = Prospective
	n.s.electionDeadline = n.s.now + n.randomElectionTimeout()
	n.logTransition()
	n.answerParked(parked)
	n.checkElection()
}

// transitionToCandidate starts an election in epoch+1, voting for itself
// durably.
func (n *Node) transitionToCandidate() {
	n.s.epoch++
	n.s.leaderID = NoNode
	n.s.votedKey = n.me
	n.leaveRole()
	n.s.role = Candidate
	n.s.electionDeadline = n.s.now + n.randomElectionTimeout()
	n.markPersist()
	n.logTransition()
	n.checkElection()
}

// enterCandidateResume resumes, at startup, an election this node had
// started in the stored epoch.
func (n *Node) enterCandidateResume() {
	n.s.role = Candidate
	n.s.electionDeadline = n.s.now + n.randomElectionTimeout()
}

// transitionToLeader makes this node the leader of its epoch: it writes
// the LeaderChange control batch at the epoch start offset and starts
// sending BeginQuorumEpoch.
func (n *Node) transitionToLeader() {
	var granting []ReplicaKey
	granting = append(granting, n.me)
	for _, v := range n.s.election.Votes {
		if v.Granted {
			if k, ok := n.voters().Lookup(v.ID); ok {
				granting = append(granting, k)
			}
		}
	}
	sortKeys(granting)
	n.leaveRole()
	n.s.role = Leader
	n.s.leaderID = n.me.ID
	// A new leader starts without a high watermark (LeaderState), though
	// it never hands out a smaller one than before.
	n.s.hw = -1
	n.initLeaderState(granting)
	n.markPersist()
	n.logTransition()
	lc := BatchInfo{
		BaseOffset: n.s.leo, LastOffset: n.s.leo, Epoch: n.s.epoch, Control: true,
		LeaderChange: LeaderChange{LeaderID: n.me.ID, Voters: n.voters().Keys(), Granting: granting},
		KRaftVersion: -1,
	}
	n.appendLocal(lc, 0)
}

// resign moves a leader to Resigned (check-quorum expiry or shutdown) and
// queues EndQuorumEpoch to every other voter with the preferred successors
// ordered by descending fetch offset (LeaderState.nonLeaderVotersByDescendingFetchOffset).
func (n *Node) resign(reason string) {
	rs := slices.Clone(n.s.leader.Voters)
	slices.SortStableFunc(rs, func(a, b replicaState) int {
		if c := cmp.Compare(b.EndOffset, a.EndOffset); c != 0 {
			return c
		}
		return cmp.Compare(a.Key.ID, b.Key.ID)
	})
	var preferred []ReplicaKey
	for _, r := range rs {
		if r.Key.ID != n.me.ID {
			preferred = append(preferred, r.Key)
		}
	}
	parked := n.leaveRole()
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "resigning",
		slog.String(keyReason, reason), slog.Int(keyEpoch, int(n.s.epoch)))
	n.enterResigned(preferred)
	n.logTransition()
	n.answerParked(parked)
}

func (n *Node) enterResigned(preferred []ReplicaKey) {
	n.s.role = Resigned
	n.s.resigned = resignedState{Preferred: preferred}
	for _, k := range n.voters().Keys() {
		if k.ID != n.me.ID {
			n.s.resigned.Unacked = append(n.s.resigned.Unacked, k.ID)
		}
	}
	n.s.electionDeadline = n.s.now + n.randomElectionTimeout()
}

// maybeTransition applies leader information learned from a request or
// response whose epoch is at least ours (Kafka's maybeTransition): a higher
// epoch makes us Follower of its leader (Unattached if none is named); the
// same epoch with a leader we did not know makes us its Follower.
func (n *Node) maybeTransition(leader NodeID, epoch Epoch) {
	switch {
	case epoch > n.s.epoch:
		if leader >= 0 && leader != n.me.ID {
			n.transitionToFollower(epoch, leader)
		} else {
			n.transitionToUnattached(epoch, true)
		}
	case epoch == n.s.epoch && leader >= 0 && leader != n.me.ID && n.s.leaderID == NoNode:
		n.transitionToFollower(epoch, leader)
	case epoch == n.s.epoch && leader >= 0 && leader != n.s.leaderID && n.s.leaderID != NoNode:
		// Two leaders in one epoch cannot happen with correct peers
		// (hasConsistentLeader); keep ours and say so loudly.
		n.logger.LogAttrs(context.Background(), slog.LevelError, "inconsistent leader for epoch",
			slog.Int(keyEpoch, int(epoch)), slog.Int(keyLeaderID, int(n.s.leaderID)), slog.Int(keyClaimedLeader, int(leader)))
	}
}

// maybeSingleVoterElection makes the only voter leader at once, as
// KafkaRaftClient.initialize does.
func (n *Node) maybeSingleVoterElection() {
	if n.s.shuttingDown || !n.voters().IsOnlyVoter(n.me) {
		return
	}
	switch n.s.role {
	case Unattached, Follower, Resigned:
		n.transitionToProspective()
	case Candidate:
		n.checkElection()
	}
}
