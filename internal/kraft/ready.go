package kraft

import "slices"

// Ready is a batch of work the core hands to the runtime. The runtime
// carries it out in the order of the fields below (except that, when
// [Ready.SyncLater] says so, the fsync of Appends runs in the background
// and is reported with [Node.LogSynced]), then calls [Node.Advance] with
// the same value. Between [Node.Ready] and
// [Node.Advance] the runtime must not call Step or Propose (they return
// [ErrReadyOutstanding]); Tick and the read-only methods are allowed.
//
// The slices belong to the runtime once returned.
type Ready struct {
	// State, if non-nil, is the quorum state to persist (epoch, leader,
	// vote) as one atomic, fsynced write. It must be durable BEFORE any of
	// Messages leaves the node: a vote granted in Messages is only valid
	// once the vote is on disk (KIP-595; invariant E2 in docs/reliability.md).
	State *ElectionState

	// TruncateTo, if ≥ 0, is the offset to truncate the log to (the new
	// log end offset), done BEFORE Appends. A follower truncates after a
	// diverging-epoch answer; the core never truncates below its high
	// watermark. A store that truncates whole batches (as Kafka's does) may
	// end below TruncateTo when it falls inside a batch: the core re-reads
	// the log tail at Advance and fetches from there.
	TruncateTo Offset

	// Appends are the batches to append, in offset order, each starting at
	// the log end offset left by the previous one. For a follower they are
	// the batches of a Fetch response (Handle = the response's Records
	// handle; the runtime writes those batches' bytes). For the leader they
	// are its proposals (Handle = the proposal's handle) and its control
	// batches (Handle 0: the runtime encodes the batch from its
	// [BatchInfo], e.g. the LeaderChange record at the start of an epoch).
	// Appends must be written AND fsynced before Messages are sent and
	// Advance is called, unless SyncLater is set: a follower's next Fetch
	// reports the new end offset as durable.
	Appends []Append

	// SnapshotWrites are chunks of a snapshot being downloaded with
	// FetchSnapshot (KIP-630), to be written to the snapshot's partial file
	// at Position, in order, before Messages are sent.
	SnapshotWrites []SnapshotWrite

	// InstallSnapshot, if valid, names a completely downloaded snapshot:
	// the runtime fsyncs and freezes it (atomic rename), then resets the log
	// so that it starts at the snapshot's end offset (dropping older
	// snapshots and entries), loads the snapshot into its state machine,
	// and does all this BEFORE Messages are sent.
	InstallSnapshot OffsetAndEpoch

	// SyncLater, if set, lets the runtime carry out this Ready without
	// fsyncing the log first: it writes Appends, sends Messages, and may
	// call Advance before the fsync, which it runs in the background and
	// reports with [Node.LogSynced]. Advance of such a Ready reports
	// nothing durable; the leader counts its own end offset toward the
	// high watermark only up to the offset LogSynced reports. So the
	// followers write the leader's new entries while it fsyncs its own
	// copy (Raft thesis §10.2.1), and the leader keeps answering their
	// Fetches meanwhile: a commit waits for one fsync, not two in series.
	// State is still persisted first, and the HighWatermark the core hands
	// out on the leader never passes the offset LogSynced reported, so
	// the state machine applies only locally durable entries. Records a
	// Fetch answer names may be read back from the written, not yet
	// synced, log.
	//
	// Every Ready without SyncLater is carried out as before and marks the
	// whole log durable at Advance: the runtime first waits for a
	// background fsync still running, then fsyncs everything written (this
	// Ready's appends and any earlier SyncLater Ready's) before Messages.
	//
	// The core sets it only on a node that is leader when [Node.Ready] is
	// called, for a Ready whose Appends are all the leader's own (its
	// proposals and control batches) and whose Messages were all queued
	// either while the node led its epoch or before the first of those
	// Appends; it is never set with
	// TruncateTo, SnapshotWrites or InstallSnapshot. So a Ready that
	// becomes leader (State, the LeaderChange batch, BeginQuorumEpoch) has
	// it, and one in which a leader steps down (a Fetch, Vote answer or
	// EndQuorumEpoch of the new role) has not. This is safe because:
	//
	//   - The leader counts its own end offset toward the high watermark
	//     only from LogSynced, after the fsync; a high watermark in a
	//     message is never computed from a non-durable offset of the
	//     leader, and followers count only offsets their own Fetches
	//     report, which they send only after their own fsync.
	//   - A crash before the fsync may lose the leader's unsynced entries
	//     although followers already hold them. Those entries were never
	//     counted on the leader, so if they were committed, a majority
	//     holds them durably without the leader; if not, nothing was
	//     promised. The restarted leader (Resigned, by
	//     QuorumState.initialize) has a shorter log, like a follower that
	//     missed them: the next leader, if it has them, replicates them
	//     back; if it has not, they were not committed and followers
	//     truncate them.
	//   - Nothing else a leader sends depends on its unsynced entries:
	//     BeginQuorumEpoch, Vote and BeginQuorumEpoch answers, FetchSnapshot
	//     answers (frozen, durable snapshots) and Fetch answers' high
	//     watermarks. A message a non-leader sends (a Fetch's offset, a
	//     Vote's last offset) could claim unsynced entries as durable,
	//     which is why a Ready of a node that stepped down is never
	//     SyncLater, and why a non-leader's message queued after an
	//     append keeps the old order.
	SyncLater bool

	// Messages are the requests and responses to send, after everything
	// above is durable (see SyncLater for the one exception).
	// Order between different destinations is free; per destination it
	// must be kept.
	Messages []Message

	// HighWatermark, if ≥ 0, is the new high watermark: the state machine
	// may apply entries below it, once they are durable in the local log
	// (they are by the time the rest of this Ready is done). It is set only
	// when it advanced since the previous Ready and never moves backwards
	// within the node's lifetime; a restarted node starts without one and
	// may report a value below what the previous process applied.
	HighWatermark Offset

	// Reads are the outcomes of reads registered with [Node.ReadIndex], in
	// registration order (read.go): a confirmed read is answered once the
	// state machine has applied every entry below its Offset, a failed one
	// with [ReadResult.Err]. Nothing in them needs to be durable.
	Reads []ReadResult
}

// Append is one batch to write to the log; see [Ready.Appends].
type Append struct {
	Batch  BatchInfo
	Handle RecordsHandle
}

// SnapshotWrite is one chunk of a snapshot download; see
// [Ready.SnapshotWrites]. The bytes are those of the FetchSnapshot
// response named by Handle. A write at Position 0 starts the partial file
// afresh (a download abandoned earlier, e.g. on a leader change, leaves a
// stale partial file behind); other writes continue it exactly at its end.
type SnapshotWrite struct {
	SnapshotID OffsetAndEpoch
	Position   int64
	Length     int64
	Handle     RecordsHandle
}

// IsEmpty reports whether rd asks for nothing.
func (rd Ready) IsEmpty() bool {
	return rd.State == nil && rd.TruncateTo < 0 && len(rd.Appends) == 0 && len(rd.SnapshotWrites) == 0 &&
		!rd.InstallSnapshot.Valid() && len(rd.Messages) == 0 && rd.HighWatermark < 0 && len(rd.Reads) == 0
}

// readyBuf accumulates work until the runtime asks for it. Only plain
// values: it is part of the node state that Clone copies.
type readyBuf struct {
	persist    bool
	truncateTo Offset
	appends    []Append
	snapWrites []SnapshotWrite
	install    OffsetAndEpoch
	msgs       []Message
	hw         Offset
	reads      []ReadResult
	// syncFirst: the Messages must wait for the fsync of the log (an
	// append not by a leader, or a message queued by a non-leader after
	// an append); see [Ready.SyncLater].
	syncFirst bool
}

func emptyBuf() readyBuf {
	return readyBuf{truncateTo: -1, install: NoOffsetAndEpoch, hw: -1}
}

func (b *readyBuf) empty() bool {
	return !b.persist && b.truncateTo < 0 && len(b.appends) == 0 && len(b.snapWrites) == 0 &&
		!b.install.Valid() && len(b.msgs) == 0 && b.hw < 0 && len(b.reads) == 0
}

// clone returns a copy whose slices share no writable backing array with b.
func (b readyBuf) clone() readyBuf {
	b.appends = slices.Clip(b.appends)
	b.snapWrites = slices.Clip(b.snapWrites)
	b.msgs = slices.Clip(b.msgs)
	b.reads = slices.Clip(b.reads)
	return b
}

// noteMessage records that a message is being queued in the node's current
// role: one queued by a non-leader after an append must wait for the
// fsync. Unsynced entries of an earlier SyncLater Ready need no check
// here: a node that stops leading hands out no SyncLater Ready until it
// leads again, and it cannot lead again without an election whose
// requests leave in such a Ready, which makes the whole log durable.
func (n *Node) noteMessage() {
	if n.s.role != Leader && len(n.s.out.appends) > 0 {
		n.s.out.syncFirst = true
	}
}

// syncLater is [Ready.SyncLater] for the buffered work of a node in role.
func (b *readyBuf) syncLater(role Role) bool {
	return role == Leader && !b.syncFirst && b.truncateTo < 0 && len(b.snapWrites) == 0 && !b.install.Valid()
}
