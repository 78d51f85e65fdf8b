package kraft

// The faulty paths of the bug zoo's core entries that take more than a
// line at their hook (package bugzoo holds the catalogue: each entry's
// shipped bug, its hooks and the tests that must catch it). They run only
// when their entry is selected in a build with the tag bugzoo; a normal
// build compiles their hooks away and links none of them.

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
