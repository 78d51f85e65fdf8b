//go:build bugzoo_z3 && !bugzoo_z1

package sim

// zooMutation re-injects Z3: a vote goes out before the quorum-state write
// that records it is durable, and a crash forgets it.
const zooMutation = mutVoteNotDurable
