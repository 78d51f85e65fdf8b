// Package sim is a deterministic simulator of a KRaft quorum built from
// the sans-IO consensus core (package kraft).
//
// Why: the bugs that lose committed data in consensus systems live in
// rare interleavings of crashes, lost fsyncs, partitions and late
// messages. Tests that script one scenario find the bugs their author
// thought of; a simulator that draws millions of schedules from seeds,
// and checks the safety invariants of docs/reliability.md after every
// event, finds the others, and every failure it finds replays exactly
// from its seed.
//
// # Random runs
//
// [Run] and [Simulate] take [Options]. One math/rand/v2 PCG seeded from
// Options.Seed decides everything: the nodes' own seeds, the virtual
// clock (a priority queue of events ordered by virtual time, never the
// wall clock), each message's delay (which also reorders messages), its
// loss or duplication, partitions (full, one-way, isolating the leader),
// reports of a reset connection to the leader (genuine after a crash,
// spurious while the leader lives) and heals, crashes and restarts, crashes in the middle of a Ready
// (before the fsync, losing unsynced log writes in one of three modes, or
// after it, losing unsent messages), client proposals sent to whoever
// leads, and voter-set changes (KIP-853). With Options.Faults nil the
// seed also picks which fault kinds are on and how often they fire
// ([SwarmFaults], swarm testing).
//
// Each node runs the Ready contract of package kraft. In memory mode its
// log is a list of batch summaries, each with a payload id standing for
// the batch bytes; it is the durable image between Readys, and a crash
// inside a Ready rebuilds the image from the state before it plus what the
// crash mode lets survive. In disk mode (Options.Disk) each node has its
// own vfs.MemFS holding the real log store (package logstore) and
// quorum-state file, with batches built by package recordbatch; a crash is
// a power loss of that file system (drop-unsynced, keep-prefix,
// tear-prefix or reorder) followed by the log store's own recovery, and
// the core reads the log store as its LogView. The memory log then
// mirrors the store, and the two are compared after every fsync.
//
// With Options.Snapshots (a quarter of the CI seeds, both modes) every
// node also takes snapshots of its committed prefix and applies
// retention, which moves its log start up (in disk mode through the log
// store's AdvanceLogStart, and an install through its
// TruncateFullyAndStartAt, both under power loss); a follower or observer behind
// the leader's log start (lagging, restarted, or an observer whose disk
// a nemesis action wiped) downloads the leader's snapshot in
// FetchSnapshot chunks over the same faulty network and installs it.
// snapshot.go describes the model.
//
// A run has two phases: Options.Steps events with faults, then a liveness
// phase that heals the network, restarts every crashed node and requires
// a leader, a newly committed proposal and every node caught up within 30
// s of virtual time.
//
// # Invariants
//
// The checker keeps ghost state no node has: the leader of every epoch, every
// durable vote, an oracle of what each (offset, epoch) names, the committed
// prefix and the acknowledged proposals. Each invariant is a separate check
// named after its identifier in docs/reliability.md (E1–E6, G1–G2, C1–C8, R1,
// K1, D1 for disk mode, and S1–S3 plus "a node's newest snapshot never goes
// back" for snapshot runs, checked on every snapshot taken or installed and
// after every event); the first one to fail ends the run with a [Violation],
// the command that replays the seed and the last trace events.
//
// # Exhaustive search
//
// [Explore] enumerates every interleaving of a small cluster depth-first
// (message deliveries and losses, timer firings, proposals, one crash and
// its restart), cloning the cluster with kraft.Node.Clone at every branch
// and deduplicating states by the nodes' fingerprints plus the logs, the
// durable states and the network. It checks the same invariants in every
// state, reports which "sometimes" properties were reached, and says
// whether its bounds cut the search.
//
// # Not modelled
//
// Snapshot files themselves are not on the simulated disks: a snapshot is
// durable once taken or installed (the files' own crash safety is tested
// in package snapshot and in the runtime, package raft); clock faults are
// not injected. docs/reliability.md lists the rest.
package sim
