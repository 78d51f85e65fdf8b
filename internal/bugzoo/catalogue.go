package bugzoo

// Packages and flags the checks share.
const (
	pkgKraft = "./internal/kraft"
	pkgSim   = "./internal/sim"
	pkgRaft  = "./raft"
	// pkgLogstore is the log store's package.
	pkgLogstore = "./internal/logstore"
	// pkgSnapshot is the snapshot store's package.
	pkgSnapshot = "./internal/snapshot"
	// simSeeds is the simulator campaign's default length in the gate.
	simSeeds = 200
)

// rapidArgs keep rapid from leaving fail files in testdata, which
// TestInteraction walks.
var rapidArgs = []string{"-rapid.nofailfile"}

// catalogue is the zoo, indexed by ID-1.
var catalogue = []Entry{
	{
		ID:     Z1,
		Bug:    "replicas report or count appends as durable before the fsync that makes them so; the high watermark is not monotonic after a restart",
		Source: "Kafka KAFKA-10533; NATS 2.12.1 (fsync every two minutes); etcd #14370",
		Hooks:  []string{"raft/ready.go", "internal/sim/sim.go"},
		Reinjection: "the runtime hands a Ready's appends to the core as synced without calling Sync; the simulator's driver loses, at a crash, appends it reported durable " +
			"(the append-not-durable mutation on every node)",
		// The simulator fsyncs inside each Ready before it hands out the
		// high watermark, so a core counting its own end offset before
		// Advance shows only through a follower's Fetch (C8) or a crash
		// inside a Ready (C3, C5, C6, K1).
		Checks: []Check{
			{
				Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds,
				Invariant: "C3/C5/C6/G1/K1 appends acknowledged before fsync",
				Pattern:   "(C2 high watermark monotonic|C3 high watermark durable on a majority|C5 committed prefix immutable|C6 leader completeness|C7 no truncation below the high watermark|G1 log matching|K1 acknowledged proposals survive):",
			},
			{
				// The production engines lose power on their own disks.
				Package: pkgRaft, Run: "^TestSimulatedEngines$",
				// Their durability probe sees a follower fetch from beyond
				// what it synced (C8) before any power loss shows it.
				Invariant: "C8/C5/K1/K5 appends reported durable before fsync",
				Pattern:   "(C8 fetch offsets are durable|C5 committed data is immutable|K1 acknowledged writes survive|K5 linearizable read: node [0-9]+ answered)",
			},
		},
		Campaigns: []Campaign{{
			Tags: "writeback", Kinds: "kill-9-all", Duration: "15s",
			Invariant: "K1 acknowledged writes survive a power failure",
			Pattern:   "lost: .* is not in the committed log",
		}},
	},
	{
		ID:          Z2,
		Bug:         "the loss of unsynced writes on one node causes global loss or split brain: writes are treated as durable",
		Source:      "etcd #14143 and #14140; Redpanda's fsync analysis",
		Hooks:       []string{"raft/bugzoo.go"},
		Reinjection: "every File.Sync and FS.SyncDir of the runtime's file system returns nil without syncing",
		// The simulated engines' disks lose everything unsynced at a power
		// loss: a node restarts below the epoch or vote it persisted (its
		// probe saw the quorum-state write), a vote forgotten elects a
		// second leader, a record counted durable is gone from a majority,
		// or recovery finds the log shorter than its recovery point said
		// was durable.
		Checks: []Check{{
			Package: pkgRaft, Run: "^TestSimulatedEngines$",
			Invariant: "E1/E2/E3/C5/K1/K5/D1 a power loss keeps what was synced",
			Pattern:   "(E1 election safety|E2 one durable vote per voter per epoch|E3 durable epoch never goes back|C5 committed data is immutable|K1 acknowledged writes survive|K5 linearizable read|this data was durable\\))",
		}},
		Campaigns: []Campaign{{
			Tags: "writeback", Kinds: "kill-9-all", Duration: "15s",
			Invariant: "K1 acknowledged writes survive a power failure",
			Pattern:   "lost: .* is not in the committed log",
		}},
	},
	{
		ID:          Z3,
		Bug:         "a vote is granted before it is durable, so a crash forgets it and the voter votes again in the epoch",
		Source:      "the Raft persistence rule (Raft figure 2)",
		Hooks:       []string{"raft/ready.go", "internal/sim/sim.go"},
		Reinjection: "the runtime writes the quorum state in the background, after the Ready's messages left; the simulator's driver loses, at a crash, the last quorum-state write although the vote it records was sent (the vote-not-durable mutation on every node)",
		Checks: []Check{{
			// A lost vote shows only when a crash falls between the vote
			// and the next quorum-state write and the node then votes again
			// in that epoch; the first seed to show it is 353.
			Package: pkgSim, Run: "^TestSim$", SimSeeds: 1000,
			Invariant: "E2/E1/E3 vote sent before it is durable",
			Pattern:   "(E1 election safety|E2 one durable vote per voter per epoch|E3 durable epoch never goes back):",
		}, {
			// The production engines' granted votes are checked against
			// the quorum state their probe saw persisted.
			Package: pkgRaft, Run: "^TestSimulatedEngines$",
			Invariant: "E2/E3 a vote or epoch sent before it is durable",
			Pattern:   "(E2 one durable vote per voter per epoch|E3 durable epoch never goes back):",
		}},
	},
	{
		ID:          Z4,
		Bug:         "a leader without contact with a majority keeps leading and serving",
		Source:      "Kafka KAFKA-15489; Consul's lease-based stale reads",
		Hooks:       []string{"internal/kraft/leader.go", "internal/kraft/node.go"},
		Reinjection: "the leader's check-quorum timer is never armed or acted on",
		Checks: []Check{
			{Package: pkgKraft, Run: "^TestCheckQuorumResignsLeader$", Args: rapidArgs, Invariant: "E6 check-quorum", Pattern: "want Resigned"},
			{Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds, Invariant: "E6 check-quorum", Pattern: "E6 check-quorum"},
			{Package: pkgRaft, Run: "^TestSimulatedEngines$", Invariant: "E6 check-quorum", Pattern: "E6 check-quorum: node [0-9]+ has led"},
		},
	},
	{
		ID:          Z5,
		Bug:         "stale reads after a pause or a leader change: a leader serves a linearizable read without confirming that it still leads",
		Source:      "etcd #20418",
		Hooks:       []string{"raft/read.go"},
		Reinjection: "ReadImage on the leader answers from its image at once, without a read barrier in its epoch",
		Checks: []Check{
			{
				Package: pkgRaft, Run: "^TestReadImagePartitionedLeaderNeverStale$",
				Invariant: "K5 linearizable read on a deposed leader",
				Pattern:   "K5: the deposed leader answered",
			},
			{
				Package: pkgRaft, Run: "^TestSimulatedEngines$",
				Invariant: "K5 linearizable reads see every acknowledged write",
				Pattern:   "K5 linearizable read: node [0-9]+ answered a read begun after offset",
			},
		},
		Campaigns: []Campaign{{
			Kinds: "isolate-leader,pause-leader", Duration: "30s",
			Invariant: "K5 linearizable reads after a pause or leader change",
			Pattern:   "porcupine: Illegal",
		}},
	},
	{
		ID:          Z6,
		Bug:         "serving reads during a restart before the log has caught up",
		Source:      "etcd #3879",
		Hooks:       []string{"raft/read.go"},
		Reinjection: "a confirmed read is answered at once from the node's image, without waiting until it has applied the read's offset, so a restarted or lagging node serves what it had before it caught up",
		Checks: []Check{{
			Package: pkgRaft, Run: "^TestSimulatedEngines$",
			Invariant: "K5 linearizable reads see every acknowledged write",
			Pattern:   "K5 linearizable read: node [0-9]+ answered a read begun after offset",
		}},
	},
	{
		ID:          Z7,
		Bug:         "a resigned ex-leader tells the state machine it leads before reaching its log end",
		Source:      "Kafka KAFKA-17333",
		Hooks:       []string{"raft/submit.go"},
		Reinjection: "a new leader validates and proposes submissions before it has applied its log up to its epoch's start, against an image that lags the log",
		Checks: []Check{{
			Package: pkgRaft, Run: "^TestSimulatedEngines$",
			Invariant: "C9 a leader validates against its whole log",
			Pattern:   "C9 a leader validates against its whole log: node [0-9]+ stopped, its image refuses the committed record",
		}},
	},
	{
		ID:          Z8,
		Bug:         "a follower truncates its log below its high watermark",
		Source:      "Kafka KAFKA-12460",
		Hooks:       []string{"internal/kraft/follower.go"},
		Reinjection: "the follower truncates where a Fetch response's diverging epoch says, even below its high watermark",
		// The simulator has no check: a correct leader never names a
		// divergence below a follower's high watermark and the simulator
		// forges no Fetch responses, so the removed guard is unreachable
		// there (2000 seeds and TestExhaustive pass with it removed).
		Checks: []Check{{
			Package: pkgKraft, Run: "^TestFollowerNeverTruncatesBelowHighWatermark$", Args: rapidArgs,
			Invariant: "C7 no truncation below the high watermark",
			Pattern:   "C7: follower with high watermark",
		}},
	},
	{
		ID:          Z9,
		Bug:         "a log start offset without a covering snapshot at startup; snapshot generation bugs",
		Source:      "Kafka KAFKA-14240, KAFKA-13968",
		Hooks:       []string{"internal/snapshot/retention.go"},
		Reinjection: "snapshot retention deletes the snapshot it moves the log start to instead of the one below it, so the log starts where no snapshot ends",
		Checks: []Check{
			{
				Package: pkgSnapshot, Run: "^TestRetentionKeepsSnapshotAtLogStart$", Args: rapidArgs,
				Invariant: "S2 log start at a snapshot",
				Pattern:   "S2: retention (deletes|moves)",
			},
			{
				// The production engines' retention, on the seeds that
				// take snapshots.
				Package: pkgRaft, Run: "^TestSimulatedEngines$",
				Invariant: "S2 log start at a snapshot",
				Pattern:   "S2 log start at a snapshot: node [0-9]+'s log starts at",
			},
		},
	},
	{
		ID:          Z10,
		Bug:         "batches appended from a slow or stale Fetch response after leadership changed; corrupted records in a fetch",
		Source:      "Kafka KAFKA-18723",
		Hooks:       []string{"internal/kraft/follower.go"},
		Reinjection: "a follower appends fetched batches that continue its log whatever their epoch: above its current epoch or below its last one",
		// A correct leader sends no such batch and the simulator corrupts
		// no message, so only the core's forged responses reach it.
		Checks: []Check{{
			Package: pkgKraft, Run: "^TestFollowerAppendsOnlyBatchesWithinItsEpochs$", Args: rapidArgs,
			Invariant: "G2 well-formed log: no batch from an epoch above the node's, epochs non-decreasing",
			Pattern:   "G2: follower in epoch 3",
		}},
	},
	{
		ID: Z11, Bug: "a follower's last fetched epoch is wrong after an empty fetch response, so divergence goes undetected",
		Source:  "Kafka KAFKA-15510 (the broker's replica fetcher; the same hazard applies to a KRaft follower)",
		Pending: "not reachable as shipped: a KRaft leader appends its LeaderChange before it answers a Fetch, so a follower that gets an empty answer already holds the leader's epoch as its last, and resetting it to that epoch changes nothing (200 simulator seeds pass with it)",
	},
	{
		ID:          Z12,
		Bug:         "the check-quorum majority is wrong when the leader is not in the voter set",
		Source:      "Kafka KAFKA-16531",
		Hooks:       []string{"internal/kraft/leader.go"},
		Reinjection: "a leader that removed itself counts itself towards the check-quorum majority of a set it is not in",
		// The simulator never removes the leader, so only the core's test
		// reaches a leader outside its voter set.
		Checks: []Check{{
			Package: pkgKraft, Run: "^TestRemovedLeaderCheckQuorumCountsOnlyVoters$", Args: rapidArgs,
			Invariant: "E6 check-quorum of a leader outside its voter set",
			Pattern:   "E6: leader 1, outside its voter set",
		}},
	},
	{
		ID:          Z13,
		Bug:         "split brain from nodes using differently lagging configurations",
		Source:      "etcd-io/raft#456",
		Hooks:       []string{"internal/kraft/node.go"},
		Reinjection: "the voter set in force is the latest committed one instead of the latest appended one",
		Checks: []Check{
			{Package: pkgKraft, Run: "^TestVoterSetInForceOnAppend$", Args: rapidArgs, Invariant: "R2 latest appended voter set in force", Pattern: `want \(1,2,3,4\)`},
			{Package: pkgKraft, Run: "^TestRandomSchedulesKeepSafety$", Args: rapidArgs, Invariant: "C6 leader completeness", Pattern: "lacks committed offset"},
			{
				Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds, Invariant: "E1/C3/E6/C5/C6 under reconfiguration",
				Pattern: "(E1 election safety|C3 high watermark durable on a majority|E6 check-quorum|C5 committed prefix immutable|C6 leader completeness):",
			},
			{
				// The production engines of a dynamic quorum stop
				// converging once a voter change lags.
				Package: pkgRaft, Run: "^TestSimulatedEngines$", Invariant: "E1/C3/C6/L1 under reconfiguration",
				Pattern: "(E1 election safety|C3 high watermark durable on a majority|C6 leader completeness|L1/L3 liveness):",
			},
		},
	},
	{
		ID:          Z14,
		Bug:         "voters with diverged voter sets never discover the leader",
		Source:      "Kafka KAFKA-17030",
		Hooks:       []string{"internal/kraft/election.go"},
		Reinjection: "a replica looking for the leader asks the voters of its own, possibly stale, set instead of its bootstrap servers",
		// The simulator's replicas name no bootstrap servers (they fetch
		// from the voters), so only the core's test reaches the fallback.
		Checks: []Check{{
			Package: pkgKraft, Run: "^TestObserverFindsLeaderThroughBootstrapServers$", Args: rapidArgs,
			Invariant: "L5 liveness under dynamic voters: the leader found through the bootstrap servers",
			Pattern:   "L5: observer 4",
		}},
	},
	{
		ID:          Z15,
		Bug:         "a partitioned node bumps epochs and disrupts the quorum on its return; pre-vote ping-pong",
		Source:      "KIP-996's motivation; the scenario of apache/kafka#17807",
		Hooks:       []string{"internal/kraft/election.go"},
		Reinjection: "a follower that fetched from a live leader still grants pre-votes",
		Checks: []Check{
			{Package: pkgKraft, Run: "^TestFollowerRefusesPreVoteAfterFetching$", Args: rapidArgs, Invariant: "E5 pre-vote refused by a follower of a live leader", Pattern: "want refused"},
			{Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds, Invariant: "E5 pre-vote is non-binding", Pattern: "E5 pre-vote is non-binding"},
		},
	},
	{
		ID:          Z16,
		Bug:         "a restarted ex-leader reuses an (offset, epoch) pair after losing unflushed data",
		Source:      "Kafka QuorumState.initialize (the invariant its comment protects)",
		Hooks:       []string{"internal/kraft/node.go"},
		Reinjection: "a replica whose durable state says it led its epoch restarts as Leader of that epoch instead of Resigned",
		Checks: []Check{
			{Package: pkgKraft, Run: "^TestRestartedLeaderNeverLeadsItsEpochAgain$", Args: rapidArgs, Invariant: "E4 restarted leader resigns", Pattern: "E4: node 1 restarted"},
			{Package: pkgKraft, Run: "^TestRandomSchedulesKeepSafety$", Args: rapidArgs, Invariant: "C6 leader completeness", Pattern: "lacks committed offset"},
			{Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds, Invariant: "E4/E1/G1 restarted leader", Pattern: "(E4 restarted leader resigns|E1 election safety|G1 log matching):"},
			{Package: pkgRaft, Run: "^TestSimulatedEngines$", Invariant: "E4/E1 restarted leader", Pattern: "(E4 restarted leader resigns|E1 election safety):"},
		},
	},
	{
		ID:          Z17,
		Bug:         "entries of earlier epochs committed by counting replicas (Raft figure 8)",
		Source:      "Raft §5.4.2",
		Hooks:       []string{"internal/kraft/leader.go"},
		Reinjection: "the leader's high watermark may stop at or below its epoch start offset",
		Checks: []Check{
			{Package: pkgKraft, Run: "^TestNewLeaderCommitsOnlyPastEpochStart$", Args: rapidArgs, Invariant: "C4 current-epoch commit rule", Pattern: "C4: leader"},
			{Package: pkgKraft, Run: "^TestRandomSchedulesKeepSafety$", Args: rapidArgs, Invariant: "C2 high watermark monotonic", Pattern: "high watermark -?[0-9]+ < [0-9]+"},
			{Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds, Invariant: "C4/C5 figure 8", Pattern: "(C4 current-epoch commit rule|C5 committed prefix immutable):"},
			{Package: pkgRaft, Run: "^TestSimulatedEngines$", Invariant: "C4 figure 8", Pattern: "(C4 current-epoch commit rule|C3 high watermark durable on a majority|C6 leader completeness):"},
		},
	},
	{
		ID:          Z18,
		Bug:         "single-node disk corruption leads to data loss, split brain or deletion",
		Source:      "NATS 2.12.1 (bit flips, truncation, snapshot corruption); the CORDS study (Kafka, ZooKeeper and others)",
		Hooks:       []string{"internal/logstore/recover.go"},
		Reinjection: "recovery cuts the log at the first bad batch even below the recovery point, and accepts a log that ends below it",
		Checks: []Check{
			{
				Package: pkgLogstore, Run: "^TestBitFlipBelowRecoveryPoint$",
				Invariant: "D2 damage to durable data fails the open",
				Pattern:   `Open error = <nil>, want \*CorruptionError`,
			},
			{
				Package: pkgLogstore, Run: "^TestMissingSyncedDataIsCorruption$",
				Invariant: "D2 synced data missing fails the open",
				Pattern:   "want \\*CorruptionError about",
			},
		},
	},
	{
		ID:          Z19,
		Bug:         "file-system reordering at a crash leaves a node unable to restart",
		Source:      "etcd #6378",
		Hooks:       []string{"internal/logstore/atomicfile.go"},
		Reinjection: "the quorum state and the log's checkpoint files are replaced without barriers: no fsync of the new file before its rename, none of the directory after it",
		Checks: []Check{{
			Package: pkgLogstore, Run: "^TestQuorumStateCrash$",
			Invariant: "the quorum state after a crash at every step is the old one or, once written, the new one",
			Pattern:   "budget [0-9]+ .* (want old .* or new|read: )",
		}, {
			// A node in disk mode whose power fails finds a torn or missing
			// quorum-state file and cannot restart.
			Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds,
			Invariant: "a node restarts from any crash; E2/E3 durable votes and epochs",
			Pattern:   "(read quorum-state after a [a-z-]+ crash|E2 one durable vote per voter per epoch|E3 durable epoch never goes back|D1 synced data survives a crash)",
		}, {
			// A production engine whose disk lost power finds a torn or
			// missing quorum-state file and cannot start.
			Package: pkgRaft, Run: "^TestSimulatedEngines$",
			Invariant: "a node restarts from any crash; E2/E3 durable votes and epochs",
			Pattern:   "(does not start on what its disk held .*quorum.state|E2 one durable vote per voter per epoch|E3 durable epoch never goes back|D1 synced data survives a crash)",
		}},
	},
	{
		ID:          Z20,
		Bug:         "a retry after an fsync error silently loses data",
		Source:      "PostgreSQL's fsync error handling (fsyncgate)",
		Hooks:       []string{"internal/logstore/sync.go"},
		Reinjection: "Log.Sync retries a failed fsync and reports the log synced when the retry succeeds, although the failed fsync dropped the pending writes",
		Checks: []Check{{
			Package: pkgLogstore, Run: "^TestWriteFaultsPoison$",
			Invariant: "B3 a failed fsync poisons the log, never retried",
			Pattern:   "sync error = <nil>, want input/output error",
		}, {
			// In disk mode a node whose fsync fails goes on as if it had
			// succeeded; the next crash finds data below its recovery point
			// gone, which recovery refuses as damage to durable data.
			Package: pkgSim, Run: "^TestSim$", SimSeeds: simSeeds,
			Invariant: "D1 synced data survives a crash",
			Pattern:   "(this data was durable\\)|D1 synced data survives a crash|C3 high watermark durable on a majority|K1 acknowledged proposals survive)",
		}, {
			// The production engines' disks fail writes and fsyncs too; a
			// node that goes on after a failed fsync finds data below its
			// recovery point gone at its next start.
			Package: pkgRaft, Run: "^TestSimulatedEngines$",
			Invariant: "D1 synced data survives a crash",
			Pattern:   "(this data was durable\\)|D1 synced data survives a crash|C3 high watermark durable on a majority|K1 acknowledged writes survive)",
		}},
	},
	{
		ID:          Z21,
		Bug:         "inconsistent offsets, duplicates and lost messages under pause plus kill",
		Source:      "Redpanda 21.10.1",
		Hooks:       []string{"raft/submit.go"},
		Reinjection: "a forwarded SubmitChange whose forwarding failed is sent again, internally, to whichever node leads now, with no idempotence key",
		Checks: []Check{
			{
				Package: pkgRaft, Run: "^TestForwardFailureIsReportedNotResent$",
				Invariant: "K7 a failed forwarding is reported, never resent",
				Pattern:   "K7: ",
			},
			{
				// Resends commit twice only when a forwarding fails after
				// the leader appended it, which a few seeds in a hundred
				// show.
				Package: pkgRaft, Run: "^TestSimulatedEngines$", Args: []string{"-sim-seeds=200"},
				Invariant: "K2 a submission is committed once",
				Pattern:   "K2 each submission is committed once: config value",
			},
		},
		// Over the wire a follower answers NOT_LEADER_OR_FOLLOWER: only the
		// embedded Controller.SubmitChange forwards. embedded-link drops the
		// leader's answers to the campaign's embedded host while its writes
		// commit, so each forwarding times out and the bug sends them again.
		Campaigns: []Campaign{{
			Kinds: "embedded-link", Duration: "15s",
			Invariant: "K7 a forwarded submission is never resent on its own",
			Pattern:   "(duplicated|misplaced): .* in the committed log at",
		}},
	},
	{
		ID:          Z22,
		Bug:         "acknowledged writes lost in a healthy cluster",
		Source:      "Bufstream 0.1.0",
		Hooks:       []string{"raft/ready.go"},
		Reinjection: "SubmitChange is acknowledged once its records are appended and fsynced on the leader instead of once they are committed",
		Checks: []Check{
			{
				Package: pkgRaft, Run: "^TestSubmitNeverAcknowledgedWithoutCommit$",
				Invariant: "K1 acknowledged only once committed",
				Pattern:   "K1: a submission was acknowledged",
			},
			{
				// An acknowledgement before commit shows as a later read
				// that misses it, or as the write lost once a leader
				// change truncates it.
				Package: pkgRaft, Run: "^TestSimulatedEngines$",
				Invariant: "C5/K1/K5 acknowledged writes survive and are read",
				Pattern:   "(C5 committed data is immutable|K1 acknowledged writes survive|K5 linearizable read: node [0-9]+ answered)",
			},
		},
		Campaigns: []Campaign{{
			Kinds: "isolate-leader,pause-leader", Duration: "15s",
			Invariant: "K1 acknowledged means committed",
			Pattern:   "lost: .* is not in the committed log",
		}},
	},
	{
		ID:          Z23,
		Bug:         "a panic on two snapshots received close together; a crash around snapshot apply",
		Source:      "etcd #18055; etcd's raftBeforeApplySnap and raftAfterApplySnap failpoints",
		Hooks:       []string{"internal/kraft/follower.go"},
		Reinjection: "a follower writes any FetchSnapshot chunk into its download, without checking that it is of the snapshot being downloaded and at the position reached",
		// The simulator duplicates and reorders answers, but the core
		// matches each answer to its request, so a chunk of another
		// download never reaches the check there (300 seeds pass); the
		// core's test forges such answers.
		Checks: []Check{{
			Package: pkgKraft, Run: "^TestFollowerRestartsInconsistentSnapshotDownload$", Args: rapidArgs,
			Invariant: "S3/S5 a snapshot download only ever continues exactly",
			Pattern:   "snapshot write at [0-9]+, partial file has [0-9]+ bytes",
		}},
	},
	{
		ID:          Z24,
		Bug:         "reads travel back in time after a partition",
		Source:      "etcd #15271",
		Hooks:       []string{"raft/read.go"},
		Reinjection: "a follower or observer answers ReadImage from its own image at once, without the leader's read barrier: no minimum offset",
		// Each read on a follower races the fetch answer that brings it the
		// write's commit; of the test's twelve such reads, 3 to 8 were
		// stale in each of 20 runs.
		Checks: []Check{{
			Package: pkgRaft, Run: "^TestReadImageSeesEveryCompletedWrite$",
			Invariant: "K6 reads never go back behind a completed write",
			Pattern:   "(ReadImage on node [0-9]+ after a submit through node [0-9]+: no topic|image offset [0-9]+ below the submitted record)",
		}},
		Campaigns: []Campaign{{
			Kinds: "isolate-leader,pause-leader", Duration: "30s",
			Invariant: "K6/K8 the reads of a history stay linearizable",
			Pattern:   "porcupine: Illegal",
		}},
	},
	{
		ID:          Z25,
		Bug:         "a parser allocates from an untrusted length",
		Source:      "CVE-2022-34917 (KAFKA-14063); KAFKA-5062; KAFKA-3169; ydb#50358; redpanda#29208 and #30160",
		Hooks:       []string{"internal/kbin/reader.go"},
		Reinjection: "the count check of every array length (Reader.checkCount) trusts the count, so a decoder allocates what a few bytes claim",
		Checks: []Check{{
			Package: "./metadata", Run: "^TestDecodeAllocatesWithinInput$",
			Invariant: "W14 lengths are checked before anything is allocated from them",
			Pattern:   "W14: decoding a [0-9]+-byte record allocated [0-9]+ bytes",
		}},
	},
	{
		ID:          Z26,
		Bug:         "a forged replica Fetch is accepted (authorization bypass)",
		Source:      "CVE-2018-1288",
		Hooks:       []string{"raft/authz_handler.go"},
		Reinjection: "the controller listener skips the CLUSTER_ACTION check for Fetch, so a principal with DESCRIBE only fetches as a replica",
		Checks: []Check{{
			Package: pkgRaft, Run: "^TestAuthzSSLClusterOperations$",
			Invariant: "W21 a principal without CLUSTER_ACTION changes no replica state",
			Pattern:   "W21: a forged replica Fetch was answered",
		}},
	},
	{
		ID:          Z27,
		Bug:         "the SCRAM server nonce is not verified",
		Source:      "CVE-2024-56128",
		Hooks:       []string{"internal/transport/sasl_scram.go"},
		Reinjection: "the SCRAM exchange skips its own check that the client-final nonce is the server-first nonce, which ends with this exchange's fresh server nonce",
		Checks: []Check{{
			Package: "./internal/transport", Run: "^TestSCRAMNonce$",
			Invariant: "a SCRAM client-final with a nonce the server did not send is refused as one",
			Pattern:   "Z27: a forged final nonce was not refused as one",
		}},
	},
}
