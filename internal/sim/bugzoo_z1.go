//go:build bugzoo_z1

package sim

// zooMutation re-injects Z1 (KAFKA-10533 and kin): appends are reported
// durable without the fsync that makes them so, and a crash loses them.
const zooMutation = mutAppendNotDurable
