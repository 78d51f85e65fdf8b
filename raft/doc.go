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
// [ErrInvalidChange], [ErrShuttingDown]. Voter changes
// ([Controller.AddVoter], [Controller.RemoveVoter]) fail with
// [ErrDuplicateVoter], [ErrVoterNotFound], [ErrStaticQuorum],
// [ErrInvalidVoter], or [ErrChangeUnavailable] (matched by each condition
// that can pass: [ErrChangeInFlight], [ErrNoCommitInEpoch],
// [ErrVoterNotCaughtUp], ...). [Controller.Shutdown] resigns
// leadership first, then stops every goroutine and releases the port and
// the directory.
//
// Two ways to read the metadata image. [Controller.CurrentImage] is the
// fast local read: it never blocks and returns the image this node has
// applied, which may be stale (a follower lags the leader, and a leader
// cut off from the quorum does not know it has been replaced).
// [Controller.ReadImage] is linearizable: the image it returns holds every
// change committed before the call started, whichever node accepted it.
// The leader confirms with a majority that it still leads (a read
// barrier); a follower or observer asks the leader for the offset to
// reach and waits for its own image to apply it. It fails with
// [*NotLeaderError] or [ErrLeaderUnknown] when leadership moves during
// the barrier, and with [ErrReadTimeout] when its context's deadline
// passes; a deposed leader never answers one with its stale image.
//
// A SubmitChange that a follower forwards and whose forwarding fails (the
// answer timed out, the connection was lost) reports [ErrOutcomeUnknown]:
// the leader may have committed it. The runtime never resends it.
//
// A submission can be made safe to send again, or against a race, by a
// condition the leader checks in log order: [IfUnchangedSince] appends the
// records only to the image the caller read (compare-and-set on the whole
// image; NoOpRecords do not count as changes), [IfNoUncommittedTail] only
// when no uncommitted change is ahead of them, and [IfDelegationToken]
// binds a token mutation to the token its caller read. A refused condition
// appends nothing: [ErrImageChanged] (read again), [ErrUncommittedTail]
// (retry). A follower forwards the condition with the records.
//
// The leader gives every RegisterBrokerRecord the offset it takes for
// broker epoch (KIP-903), and asks [Config.RegistrationAdmission], when
// set, before it appends a registration of a broker anew: the embedder's
// own checks and the records that go with it, in the same batch.
//
// [Controller.Subscribe] delivers every image the node publishes, in
// order; a reader that falls further behind than its buffer is cut off
// with [ErrSlowSubscriber], so the engine never waits for one.
// [Controller.SubscribeLeadership] does the same for the leader and epoch
// the node knows, starting with the current ones, so an embedder learns
// of every change of leadership without polling [Controller.QuorumState].
//
// # Following the quorum without a vote
//
// [StartObserver] runs a node outside the voter set as a KRaft observer,
// as a Kafka broker follows its controllers: it fetches the log with its
// replica id and directory id, installs the leader's snapshots, keeps its
// own image and never votes. The [Observer] it returns offers
// CurrentImage, Subscribe, ReadImage (the leader gives the barrier),
// SubmitChange (forwarded) and SubscribeLeadership. A process that keeps
// no log at all uses package github.com/krabka-go/krabka/client, which
// speaks the private RPCs to the controllers instead
// (docs/architecture.md, "Following the quorum from another process").
//
// Every node takes KIP-630 snapshots of its image and compacts its log
// behind them; a follower that fell behind the leader's log start installs
// the leader's snapshot. An idle leader appends NoOpRecords (KIP-835).
//
// Besides the quorum's own RPCs, the listener answers Kafka's admin
// clients: ApiVersions, DescribeQuorum (on the leader) and DescribeCluster
// with the controller endpoint type (KIP-919: the registered controllers'
// endpoints, or the voters' before any has registered, and the leader as
// controller id). Every controller started with [Start] registers itself
// (ControllerRegistration, RegisterControllerRecord) once it has caught up
// and metadata.version is 3.7-IV0 or later, with a new incarnation id at
// every start. A directory written by a Kafka controller of a static
// quorum (kraft.version 0: its log, snapshots, quorum-state and
// meta.properties) can be started as it is.
//
// # Admin APIs of the embedder
//
// A broker that embeds a controller serves the other admin APIs Kafka's
// controllers serve with --bootstrap-controller (CreateTopics,
// IncrementalAlterConfigs, ...) through [Config.AdminRouter]: an
// [AdminRouter] claims API keys and versions, which every ApiVersions
// answer lists, and gets each claimed request decoded, after the listener
// has authenticated it, with the principal and an [AdminHandle] to
// authorize it on Kafka's resources ([AdminHandle.Authorized]), submit
// records and read the image. A router that fails, panics or does not
// answer within controller.quorum.request.timeout.ms costs only its
// request. [Config.ShardRouter] is the same kind of seam for KRaft RPCs
// of other partitions.
//
// # Static and dynamic quorums
//
// With controller.quorum.voters set the quorum is static (kraft.version
// 0): those voters, until the upgrade below. With it empty the quorum is dynamic
// (KIP-853, kraft.version 1): the voter set in force is the newest
// VotersRecord of the node's snapshot or log, or of the bootstrap
// snapshot 0-0 that krabka storage format --standalone or
// --initial-controllers wrote; a node formatted --no-initial-controllers
// has none. The node's directory id comes from meta.properties, which a
// dynamic node must have. A node outside the voter set is an observer: it
// asks the controller.quorum.bootstrap.servers for the leader, then
// replicates and applies the log like a follower without a vote, and the
// leader lists it among the observers of DescribeQuorum. Connections to
// other nodes open on first use, to the endpoint a voter advertises on the
// first controller listener (or the one an answer named for the leader),
// and close when a node leaves the voter set. The first leader of a
// dynamic quorum copies the bootstrap voter set into its log (a control
// batch of KRaftVersion 1 and Voters, as Kafka writes at the start of its
// epoch, though Kafka puts them in the LeaderChange batch); snapshots
// carry the voter set at their end offset.
//
// The leader of a dynamic quorum changes the voter set one voter at a
// time, with Kafka's checks and error codes: AddRaftVoter (the new voter
// must answer ApiVersions with a kraft.version range that includes 1,
// and must have fetched and caught up as an observer), RemoveRaftVoter (a
// leader that removes itself resigns once that commits) and
// UpdateRaftVoter (a voter whose entry differs from the endpoints it
// advertises sends one every controller.quorum.fetch.timeout.ms; a leader
// rewrites its own entry). [Controller.AddVoter] and
// [Controller.RemoveVoter] make the same changes from Go, on the leader
// or through it. With controller.quorum.auto.join.enable an observer adds
// itself (or first removes its node id's entry with another directory
// id). [Controller.ChangeMembership] takes a target set one voter away
// from the one in force and makes that change with AddVoter or
// RemoveVoter. krabka-raft's add_learner has no method: a learner is an
// observer, which a node formatted --no-initial-controllers is until it
// is added, and it needs no staging. A static quorum answers
// AddRaftVoter and RemoveRaftVoter with UNSUPPORTED_VERSION, as Kafka
// does at kraft.version 0, until it is upgraded to kraft.version 1:
// UpdateFeatures (API 57) on the leader, or
// [Controller.UpgradeKRaftVersion] from Go, appends a KRaftVersion record
// and a VotersRecord naming the static voters with the directory ids,
// endpoints and kraft.version ranges they reported (each voter sends
// UpdateRaftVoter once an epoch while the quorum is static). From then on
// the quorum is dynamic on every node, whether it is restarted with
// controller.quorum.bootstrap.servers or still with
// controller.quorum.voters: the voter set comes from the log
// (docs/operations.md, "Upgrade a static quorum to a dynamic one").
//
// # Operating it
//
// [Config.Metrics] receives the node's measurements under Kafka's metric
// names (package github.com/krabka-go/krabka/metrics/prom exports them to
// Prometheus); [Controller.LiveChecks] and [Controller.ReadyChecks] are the
// health checks; [Controller.Err] says why a node stopped.
package raft
