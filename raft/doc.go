// Package raft is Krabka's public runtime: [Start] runs a KRaft controller
// node from a [Config] and returns its [Controller].
//
// A Config mirrors Kafka's properties, with Kafka's names and defaults.
// Build one with [DefaultConfig] or [ForTests], or read a
// server.properties file with [LoadConfig]. [Config.Validate] reports
// every problem at once, each naming the Kafka property it concerns.
// Krabka runs controllers only (process.roles=controller).
//
// # The runtime
//
// [Start] locks <metadata.log.dir>, opens and recovers the metadata log in
// <metadata.log.dir>/__cluster_metadata-0, reads its quorum-state file (a
// fresh directory starts at epoch 0), binds the first controller listener
// and starts one engine goroutine. The engine alone owns the consensus
// core (internal/kraft), the log writer (internal/logstore) and the
// metadata image; listener connections, peer senders and callers reach it
// through one bounded queue. It carries out the core's work in the order
// durability needs: quorum state, truncate, append, one fsync, then
// messages, then apply what is committed. docs/architecture.md draws the
// goroutine map and follows a change through the system.
//
// [Controller.SubmitChange] returns once its records are committed and
// applied; on a follower it forwards them to the leader. Errors a caller
// branches on: [*NotLeaderError] ([ErrNotLeader]), [ErrLeaderUnknown],
// [ErrInvalidChange], [ErrShuttingDown]. [Controller.Shutdown] resigns
// leadership first, then stops every goroutine and releases the port and
// the directory.
//
// [Controller.Subscribe] delivers every image the node publishes, in
// order; a reader that falls further behind than its buffer is cut off
// with [ErrSlowSubscriber], so the engine never waits for one.
//
// Every node takes KIP-630 snapshots of its image and compacts its log
// behind them; a follower that fell behind the leader's log start installs
// the leader's snapshot. An idle leader appends NoOpRecords (KIP-835).
//
// Besides the quorum's own RPCs, the listener answers Kafka's admin
// clients: ApiVersions, DescribeQuorum (on the leader) and DescribeCluster
// with the controller endpoint type (KIP-919: the voters' endpoints and
// the leader as controller id). A directory written by a Kafka controller
// of a static quorum (kraft.version 0: its log, snapshots, quorum-state
// and meta.properties) can be started as it is.
//
// Not yet: dynamic voters (kraft.version 1), observers, metrics.
package raft
