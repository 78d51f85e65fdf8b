// Package kraft implements the KRaft consensus protocol (KIP-595 with
// KIP-996 pre-vote and the voter-set history of KIP-853) as a
// deterministic state machine. It performs no I/O: the caller feeds it
// messages and time, and carries out the work it returns in a [Ready].
//
// Why this shape: a core that owns no clock, disk, network or goroutine
// can be stepped through any interleaving of events, cloned, and checked
// after every step. The runtime (package raft) turns its decisions into
// fsyncs and sockets; the simulator (internal/sim) turns them into seeded
// faults; the scripted harness (krafttest.InteractionEnv) turns them into
// readable transcripts under testdata/. Behaviour follows Apache Kafka
// 4.3.1; comments cite the KIP, or the class or method of Kafka's raft
// module (org.apache.kafka.raft), that decides each rule.
//
// # The driving loop
//
// One goroutine owns a [Node]. It runs this loop:
//
//  1. Build the node once with [NewNode] from a [Config], the durable
//     [ElectionState] (the quorum-state file) and a [LogView] of the local
//     log. The node picks its starting role as Kafka does (a restarted
//     leader comes back Resigned; a lone voter elects itself).
//  2. Deliver every inbound request and response with [Node.Step], passing
//     the current [Instant] (a monotonic millisecond count). Peer input
//     never yields a Go error; only misuse does.
//  3. When the clock reaches [Node.NextDeadline], call [Node.Tick]. Timers
//     (election, fetch, check-quorum, request timeout, retry backoff,
//     long-poll expiry) all fire from Tick.
//  4. On the leader, hand new records to [Node.Propose]; it reserves their
//     offsets and returns them, or a [*NotLeaderError]. Register a
//     linearizable read with [Node.ReadIndex] (read.go: the leader confirms
//     it with fetches from a majority that arrive after it, KRaft's
//     counterpart of Raft's ReadIndex).
//  5. While [Node.HasReady], take [Node.Ready] and carry it out IN THIS
//     ORDER: persist Ready.State (one atomic, fsynced write); truncate the
//     log to Ready.TruncateTo; append Ready.Appends; write
//     Ready.SnapshotWrites and install Ready.InstallSnapshot; fsync; only
//     then send Ready.Messages; then apply entries below
//     Ready.HighWatermark to the state machine; then answer the reads of
//     Ready.Reads once the state machine has reached their offsets. A
//     Ready with [Ready.SyncLater] (a leader's) skips the fsync: it may
//     run in the background, reported with [Node.LogSynced] when done;
//     any other Ready first waits for such an fsync and fsyncs the whole
//     log.
//  6. Call [Node.Advance] with the same Ready. This is the durability
//     report for a Ready without SyncLater: the whole log is durable, and
//     the leader counts its own log end offset toward the high watermark
//     from here (after a SyncLater Ready, from LogSynced). The log tail
//     the core tracks is re-read from the LogView. No Step or Propose may
//     come between Ready and Advance (they return [ErrReadyOutstanding]);
//     Tick may.
//  7. For graceful shutdown call [Node.Resign]: a leader resigns with
//     EndQuorumEpoch naming its preferred successors; keep running the loop
//     until a new leader is known or a timeout passes.
//
// # Who moves which bytes
//
// The core decides WHAT; the runtime moves BYTES. The core never sees a
// record.
//
//   - Leader, Fetch: the [FetchResponse] the core emits carries the
//     decision (error, high watermark, diverging epoch or snapshot id, and
//     [RecordsRead]: from the fetch offset up to the leader's end offset,
//     within MaxBytes). When sending it the runtime reads those whole
//     batches from its log store.
//   - Follower, Fetch: when delivering a FetchResponse the runtime fills
//     [FetchResponse.Batches] with a [BatchInfo] per whole batch received
//     (offsets, epoch, decoded control records: LeaderChange, Voters,
//     KRaftVersion) and [FetchResponse.Records] with a [RecordsHandle] for
//     the bytes. The core decides which batches to append and returns them
//     as [Append]s carrying that handle.
//   - Leader, Propose: the runtime keeps the encoded batch under its own
//     handle; [Append]s with Handle 0 are control batches the core made
//     (the LeaderChange at the epoch start offset), which the runtime
//     encodes from the BatchInfo.
//   - FetchSnapshot: the leader's [FetchSnapshotResponse] names a byte
//     range of a snapshot; the follower's core turns received chunks into
//     [SnapshotWrite]s and, when complete, [Ready.InstallSnapshot]. A
//     chunk that does not continue the download exactly (another id or
//     position, a changed or too large size, an empty or oversized chunk,
//     POSITION_OUT_OF_RANGE) is never written: the download restarts at
//     position 0, and a write at position 0 tells the runtime to discard
//     its partial file.
//
// # The log view
//
// The node is bound to its [LogView] at construction. The core only reads
// it while no Ready is outstanding, so the view always reflects everything
// the core asked for; between those reads the core tracks the tail it
// queued itself (end offset, last epoch). [Node.Clone] takes the view the
// clone must use, because the simulator copies a node and its log
// separately; no hidden pointer ties a clone to the original's log.
//
// # Determinism
//
// Time and randomness are inputs: the random source (election jitter,
// bootstrap choice) is a math/rand/v2 PCG seeded from [Config.Seed] and
// held by value in the node, so a clone continues the same sequence.
// Every iteration that reaches an output runs over sorted slices; the
// state holds no maps. [Node.Fingerprint] hashes the state so explored
// states can be deduplicated.
//
// # Roles
//
// Unattached, Prospective, Candidate, Leader, Follower and Resigned, each
// with its own per-role state struct and its own poll and handlers.
// Transitions persist exactly what Kafka persists: epoch changes, votes and
// leaders; Prospective and Resigned are memory-only. Observers (replicas
// outside the voter set) are only Unattached or Follower.
//
// # Where this core departs from Kafka 4.3.1, on purpose
//
//   - Leader endpoints are not modelled: a known leader id is assumed
//     reachable, so "leader known" always means Follower (Kafka stays
//     Unattached when it knows the id but not the endpoints).
//   - Only observers fetch from bootstrap servers while Unattached; an
//     Unattached voter finds the leader through BeginQuorumEpoch or the
//     answers to its pre-votes. A Follower whose leader slot is backing off
//     asks a bootstrap server, as Kafka does.
//   - An error answer that teaches nothing (NOT_LEADER_OR_FOLLOWER naming
//     the leader already known) puts the destination in retry backoff;
//     Kafka would ask again at once.
//   - Every role change forgets outstanding requests (Kafka resets its
//     connections on most transitions): an answer that arrives afterwards
//     no longer matches and is ignored, even if it carries news.
//   - The high watermark is not persisted: after a restart it is unknown
//     until the leader reports it.
//   - Linearizable reads ([Node.ReadIndex], read.go) are Krabka's
//     addition: Kafka's controllers read their own image. The barrier is
//     Raft's ReadIndex (Raft thesis §6.4) confirmed by fetches instead of
//     heartbeats.
//   - KRaftVersion control records are carried in [BatchInfo] but not
//     interpreted: kraft.version is 1 exactly when a Voters record is in
//     the voter-set history ([Node.KRaftVersion]). The 0→1 upgrade
//     (upgrade.go: [Node.NoteVoterUpdate], [Node.PlanKRaftUpgrade], then
//     [Node.Propose] with KRaftVersion 1) needs every voter's directory id
//     (from its Fetches or UpdateRaftVoter) and kraft.version range (from
//     its UpdateRaftVoter); Kafka's LeaderState learns the directory ids
//     from UpdateRaftVoter only.
//   - A lost leader is noticed before the fetch timer expires when the
//     runtime reports the connection refused or reset
//     ([Node.ConnectionLost], leaderlost.go); Kafka waits for the timer.
//   - The fetch timer is Kafka's fixed Tf, but the pre-vote after it (or
//     after a lost connection) starts a random delay later, at most
//     [Config.CampaignJitter], so that followers that lost the leader
//     together rarely split the vote. Kafka starts at once.
//   - A follower that receives EndQuorumEpoch from its leader no longer
//     counts it as heard and grants pre-votes at once; Kafka's keeps
//     refusing them until its successor backoff ends, which fails the
//     first successor's pre-vote in clusters of five or more.
//   - A voter Follower that lost its leader does not ask a bootstrap
//     server for the leader while its leader slot backs off: it pre-votes
//     shortly, and the answers name any leader the others know.
//   - A leader that shuts down ([Node.Resign]) first stops taking
//     proposals and keeps serving fetches until another voter holds its
//     whole log, for at most min(RequestTimeout, 500 ms), and only then
//     resigns (handoff.go); Kafka resigns at once and refuses fetches
//     with BROKER_NOT_AVAILABLE.
//
// # What is not here
//
// Cluster ids, topic names and listener endpoints are checked and mapped
// at the wire edge (package wire): the core assumes a known node id is
// reachable. The AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter
// handshakes are the runtime's; it proposes the resulting Voters record
// with [Proposal.Voters], guarded by [Node.PendingVoterChange].
package kraft
