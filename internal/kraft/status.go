package kraft

import "slices"

// Status is a snapshot of a node's state for DescribeQuorum, metrics and
// tests. It shares nothing with the node.
type Status struct {
	ID            NodeID
	Role          Role
	Epoch         Epoch
	Leader        LeaderAndEpoch
	VotedKey      ReplicaKey // ID NoNode if none
	IsVoter       bool
	HighWatermark Offset // -1 if unknown
	LogEndOffset  Offset
	LastEpoch     Epoch // epoch of the last log entry
	Voters        VoterSet
	ShuttingDown  bool
	// Replicas is filled on the leader only: the voters of the latest set
	// (this node included) and then the observers, each with its fetch
	// progress (RaftUtil.singletonDescribeQuorumResponse).
	Replicas []ReplicaStatus
}

// ReplicaStatus is the leader's view of one replica, as DescribeQuorum
// reports it.
type ReplicaStatus struct {
	Key          ReplicaKey
	Voter        bool
	LogEndOffset Offset  // last fetch position; -1 if it never fetched
	LastFetch    Instant // -1 if never
	LastCaughtUp Instant // -1 if never
}

// Status returns the node's current state.
func (n *Node) Status() Status {
	st := n.Brief()
	if s := &n.s; s.role == Leader {
		st.Replicas = make([]ReplicaStatus, 0, len(s.leader.Voters)+len(s.leader.Observers))
		for _, r := range s.leader.Voters {
			st.Replicas = append(st.Replicas, replicaStatus(r, true))
		}
		for _, r := range s.leader.Observers {
			st.Replicas = append(st.Replicas, replicaStatus(r, false))
		}
	}
	return st
}

// Brief returns the node's current state as [Node.Status] does, but
// without Replicas (always nil), and allocates nothing: the runtime calls
// it after every input, where only the scalars and the voter set matter.
func (n *Node) Brief() Status {
	s := &n.s
	return Status{
		ID: n.me.ID, Role: s.role, Epoch: s.epoch, Leader: n.leaderAndEpoch(), VotedKey: s.votedKey,
		IsVoter: n.isVoter(), HighWatermark: s.hw, LogEndOffset: s.leo, LastEpoch: s.lastEpoch,
		Voters: n.voters(), ShuttingDown: s.shuttingDown,
	}
}

func replicaStatus(r replicaState, voter bool) ReplicaStatus {
	return ReplicaStatus{Key: r.Key, Voter: voter, LogEndOffset: r.EndOffset, LastFetch: r.LastFetch, LastCaughtUp: r.LastCaughtUp}
}

// ExpireObservers drops observers that have not fetched for the observer
// session timeout (5 minutes, OBSERVER_SESSION_TIMEOUT_MS); call it before
// reporting DescribeQuorum, as Kafka does when it reads the list.
func (n *Node) ExpireObservers(now Instant) {
	n.advanceClock(now)
	if n.s.role != Leader {
		return
	}
	const sessionTimeoutMs = 300_000
	n.s.leader.Observers = slices.DeleteFunc(slices.Clone(n.s.leader.Observers), func(r replicaState) bool {
		return r.LastFetch < 0 || n.s.now-r.LastFetch >= sessionTimeoutMs
	})
}
