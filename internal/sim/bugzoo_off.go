//go:build !bugzoo_z1 && !bugzoo_z3

package sim

// zooMutation is the runtime bug of the bug zoo (RELIABILITY.md §6) that a
// bugzoo_<id> build tag re-injects into every simulated node; none in a
// normal build. scripts/bugzoo.sh requires TestSim to catch each one.
const zooMutation mutation = 0
