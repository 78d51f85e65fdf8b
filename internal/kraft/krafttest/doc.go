// Package krafttest drives the KRaft core ([kraft.Node]) in tests: an
// in-memory log ([MemLog]) that implements [kraft.LogView], and a scripted
// multi-node environment ([InteractionEnv]) for datadriven transcripts, in
// the style of etcd-io/raft's interaction tests.
//
// Why: a transcript shows, line by line, every message, every durable
// write and every log line of the core for a scenario (an election, a
// partition, a truncation), so a reviewer can check it against Kafka's
// KafkaRaftClient and a change in behaviour shows up as a diff. Everything is
// deterministic: each node has its own clock that moves only on command,
// the network is one ordered queue, and the core's randomness is seeded.
//
// # The environment's runtime
//
// process-ready plays the runtime's part of the Ready contract for one
// node: it persists Ready.State, applies truncation, appends, snapshot
// writes and installs to the node's MemLog (durable at once: a crash loses
// only what the node had not yet handed out), then "sends" the messages:
// a Fetch response gets the batch summaries its RecordsRead names, read
// from the sender's log (capped by fetch-limit), exactly as a real runtime
// reads bytes at send time. It prints the Ready's read outcomes, then calls
// Advance.
//
// # Commands
//
// Node ids are bare numbers; arguments in brackets are optional.
//
//	add-nodes N voters=(1,2,3) [seed=S] [dirs]
//	                                         add N nodes with the next ids (a node outside voters is an observer);
//	                                         with dirs each gets a directory id ending in its id (DirectoryID)
//	tick [ids...] ms=N                       advance the nodes' clocks (all by default) and Tick
//	campaign ID                              fire ID's timers, deadline after deadline, until its role or epoch changes
//	next-deadline ID                         advance ID's clock to its next deadline and Tick once
//	deliver-msgs [ids...] [type=T] [from=ID] [drop=(ids)]
//	                                         deliver queued messages addressed to ids (all by default),
//	                                         optionally only of one RPC type (Vote, FetchResponse, ...) or sender;
//	                                         messages to drop=(...) are discarded instead
//	process-ready [ids...]                   carry out each node's Ready and Advance
//	stabilize [ids...]                       process-ready and deliver-msgs until nothing moves (no time passes)
//	partition ids...                         cut ids off from the other nodes (messages across are dropped on delivery)
//	heal                                     remove the partition
//	crash ID / restart ID                    stop a node, losing its unprocessed work / start it from its disk
//	propose ID [n=1] [records=1]             propose n batches on ID
//	propose-voters ID voters=(...)           propose a Voters control batch (KIP-853)
//	update-voter ID from=V min=A max=B [dir=D]
//	                                         leader ID notes voter V's UpdateRaftVoter: its directory id
//	                                         (DirectoryID(V), or DirectoryID(D)) and kraft.version range [A, B]
//	upgrade-kraft ID [level=1] [validate=true]
//	                                         plan the kraft.version upgrade on ID and propose its control batch
//	                                         (Node.PlanKRaftUpgrade); validate stops after the plan
//	resign ID                                graceful shutdown of ID (a leader hands off, then resigns)
//	connection-lost ID peer=P                tell ID that its connection to P was refused or reset (Node.ConnectionLost)
//	read ID id=N                             register linearizable read N on ID (Node.ReadIndex); its
//	                                         outcome shows in a later Ready as "read N confirmed offset=O"
//	                                         or "read N failed leader=L epoch=E"
//	compact ID offset=N [size=S]             snapshot ID's log at N (a batch boundary) and drop the prefix
//	fetch-limit ID batches=N                 cap the batches per Fetch response ID sends
//	log [ids...] / status [ids...]           print logs / states
//	log-level debug|info                     the core's log level in the transcript
package krafttest
