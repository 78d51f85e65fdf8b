// Package snapshot reads and writes KRaft snapshot files (KIP-630
// checkpoints): the <end offset>-<epoch>.checkpoint files of the
// __cluster_metadata-0 directory, the 0-0 bootstrap snapshot of a dynamic
// quorum, and the bootstrap.checkpoint that kafka-storage format writes.
// Every byte follows Kafka, so a snapshot written here is one Kafka loads,
// and rewriting a Kafka snapshot with the same inputs gives the same bytes.
package snapshot
