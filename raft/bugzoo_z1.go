//go:build bugzoo_z1

package raft

// zooSkipLogSync re-injects Z1 of the bug zoo (RELIABILITY.md §6,
// KAFKA-10533): the engine hands its Ready's appends to the core as durable
// (a follower's next Fetch reports them, the leader counts its own log end)
// without the fsync that makes them so. The tag is shared with the
// simulator's driver (internal/sim/bugzoo_z1.go), which re-injects the same
// bug there; the binary does not link the simulator. test/faults catches it
// with the writeback build and a power failure (scripts/bugzoo-faults.sh).
const zooSkipLogSync = true
