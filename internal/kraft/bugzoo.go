package kraft

// The bug zoo (RELIABILITY.md §6): bugs that real systems shipped,
// re-injected into this core one at a time so that the tests meant to
// catch them can be shown to do so. Each entry is a constant, bugZ<n>,
// true only in a build with the tag bugzoo_z<n> and false otherwise; the
// hooks in the core read `if bugZ<n>`, so a normal build compiles them
// away and behaves exactly as without them. scripts/bugzoo.sh builds each
// entry and requires its catching tests to fail.
//
//   - Z4 (KAFKA-15489), tag bugzoo_z4: the check-quorum timer is off, so
//     a leader cut off from a majority keeps leading (E6).
//   - Z8 (KAFKA-12460), tag bugzoo_z8: a follower truncates where a
//     diverging epoch says even below its high watermark (C7, C5).
//   - Z13 (etcd-io/raft#456), tag bugzoo_z13: the voter set in force is
//     the latest COMMITTED one instead of the latest appended one (R2,
//     then E1, C3, E6).
//   - Z15 (KIP-996, apache/kafka#17807), tag bugzoo_z15: a follower that
//     fetched from a live leader still grants pre-votes (E5, L4).
//   - Z16 (QuorumState.initialize), tag bugzoo_z16: a replica whose
//     durable state says it led its epoch restarts as Leader of that same
//     epoch instead of Resigned (E4, E1, G1).
//   - Z17 (Raft §5.4.2, figure 8), tag bugzoo_z17: the leader's high
//     watermark may stop at or below its epoch start offset, committing
//     earlier epochs' entries by counting replicas (C4, C5).

// bugZ13CommittedVoters is the voter set Z13 puts in force at high
// watermark hw: the latest one whose record is below the highest high
// watermark this node knows (the static set when none is).
func (n *Node) bugZ13CommittedVoters(hw Offset) VoterSet {
	hw = max(hw, n.s.emittedHW)
	for i := len(n.s.voterSets) - 1; i > 0; i-- {
		if n.s.voterSets[i].Offset < hw {
			return n.s.voterSets[i].Set
		}
	}
	return n.s.voterSets[0].Set
}

// bugZ13Committed runs after the high watermark moved up from old: with
// Z13 the voter set changes when its record commits.
func (n *Node) bugZ13Committed(old Offset) {
	if !n.voters().Equal(n.bugZ13CommittedVoters(old)) {
		n.onVotersChanged()
	}
}

// bugZ16ResumeLeadership is Z16's startup: a replica that led its stored
// epoch takes up leadership of it again.
func (n *Node) bugZ16ResumeLeadership() {
	n.transitionToLeader()
}
