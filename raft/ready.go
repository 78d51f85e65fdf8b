package raft

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/latency"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
)

// The Ready executor: it carries out a core's Ready in the contract's
// order (kraft.Ready): quorum state, truncation, appends, snapshot writes
// and install, one fsync, then messages, apply and Advance. It owns the
// records handles the core names batches by, and the leader's background
// fsync (at most one runs; its outcome comes back through the loop).

// heldRecords are bytes the core refers to by a [kraft.RecordsHandle]: the
// encoded batch of a proposal, or the whole batches of a Fetch response
// (fetched; then next is where the batch after the last one appended
// starts, since the core appends them in order).
type heldRecords struct {
	raw     []byte
	fetched bool
	next    int
	size    int64 // a snapshot chunk's total snapshot size
}

// batch returns the whole batch at base offset base from fetched
// records, or nil. It looks first where the last one found ended, so
// that appending every batch of a response reads each header once.
func (h *heldRecords) batch(base kraft.Offset) []byte {
	for _, from := range [2]int{h.next, 0} {
		for pos := from; pos < len(h.raw); {
			hd, err := recordbatch.PeekHeader(h.raw[pos:])
			if err != nil || pos+hd.Size() > len(h.raw) {
				break
			}
			if kraft.Offset(hd.BaseOffset) == base {
				h.next = pos + hd.Size()
				return h.raw[pos:h.next]
			}
			pos += hd.Size()
		}
	}
	return nil
}

// handleTable holds the bytes the core names by a [kraft.RecordsHandle]:
// a proposal's encoded batch, a Fetch answer's batches, a snapshot chunk.
// A handle lives from the input that handed it to the core to the end of
// the Ready that used it.
type handleTable struct {
	last kraft.RecordsHandle
	held map[kraft.RecordsHandle]*heldRecords
}

// hold keeps h under a new handle.
func (t *handleTable) hold(h *heldRecords) kraft.RecordsHandle {
	if t.held == nil {
		t.held = map[kraft.RecordsHandle]*heldRecords{}
	}
	t.last++
	t.held[t.last] = h
	return t.last
}

// get returns the records of handle id, or nil.
func (t *handleTable) get(id kraft.RecordsHandle) *heldRecords { return t.held[id] }

// drop forgets handle id (the core refused what named it).
func (t *handleTable) drop(id kraft.RecordsHandle) { delete(t.held, id) }

// release forgets every handle: the Ready that could use them is done.
func (t *handleTable) release() { clear(t.held) }

// durabilityProbe is told, in the Ready contract's order, what the Ready
// executor changed on disk, each call once the change has returned: a
// checker outside the engine (the simulator's) holds the engine to what it
// claims durable. Its methods must not call back into the engine.
type durabilityProbe interface {
	// persisted: the quorum-state file now holds st.
	persisted(st kraft.ElectionState)
	// truncated: the log was truncated to end at offset to.
	truncated(to kraft.Offset)
}

// syncOutcome is the result of a background fsync: the log's synced
// offset, or the error that poisoned it.
type syncOutcome struct {
	offset int64
	err    error
}

// startSync starts the background fsync of the SyncLater appends written
// so far, unless one runs (it starts again when that one is done: the
// appends written meanwhile are fsynced together).
func (e *engine) startSync() {
	if e.syncing || !e.unsynced {
		return
	}
	e.syncing, e.unsynced = true, false
	e.background(func() {
		start := latency.Now()
		began := time.Now()
		off, err := e.log.SyncConcurrent()
		e.metrics.rec().Synced(time.Since(began))
		latency.Since("leader: fsync", start)
		e.syncDone <- syncOutcome{offset: off, err: err}
	})
}

// synced takes the outcome of the background fsync: the core counts the
// leader's own end offset up to it, and the next fsync starts if more was
// written meanwhile.
func (e *engine) synced(out syncOutcome) error {
	e.syncing = false
	if out.err != nil {
		return fmt.Errorf("raft: fsync log: %w", out.err)
	}
	if bugzoo.Active(bugzoo.Z22) {
		e.bugZ22AckAppended()
	}
	if err := e.node.LogSynced(e.now(), kraft.Offset(out.offset)); err != nil {
		panic(fmt.Sprintf("raft: invariant: LogSynced outside a Ready: %v", err))
	}
	e.startSync()
	return nil
}

// awaitSync waits for the background fsync, if one runs; a Ready without
// SyncLater then fsyncs the whole log itself. Its error is the fsync's.
func (e *engine) awaitSync() error {
	if !e.syncing {
		return nil
	}
	out := <-e.syncDone
	e.syncing = false
	if out.err != nil {
		return fmt.Errorf("raft: fsync log: %w", out.err)
	}
	return nil
}

// processReady carries out one Ready in the contract's order: quorum
// state, truncate, append, one fsync, messages, apply, Advance. A SyncLater
// Ready (a leader's) skips the fsync: its messages leave at once, so that
// the followers write the new entries while this node fsyncs its own copy
// in the background (startSync), and the engine goes on answering Fetches
// meanwhile; the core counts this node's end offset at LogSynced. Any
// other Ready first waits for that fsync and then fsyncs everything
// written, before its messages.
func (e *engine) processReady() error {
	rd := e.node.Ready()
	if !rd.SyncLater {
		if err := e.awaitSync(); err != nil {
			return err
		}
	}
	if rd.State != nil {
		qs := logstore.QuorumStateData{
			DataVersion:   0,
			LeaderID:      rd.State.LeaderID,
			LeaderEpoch:   int32(rd.State.Epoch),
			VotedID:       rd.State.VotedKey.ID,
			CurrentVoters: e.voterIDs,
		}
		if e.kraftVersion() > 0 {
			// kraft.version 1 writes data_version 1: the voted
			// directory id, no voter list (Kafka's FileQuorumStateStore).
			qs.DataVersion, qs.CurrentVoters = 1, nil
			qs.VotedDirectoryID = rd.State.VotedKey.DirectoryID
		}
		if bugzoo.Active(bugzoo.Z3) {
			e.bugZ3PersistLater(qs, *rd.State)
		} else if err := e.persistQuorumState(qs, *rd.State); err != nil {
			return err
		}
	}
	wrote := e.unsynced && !rd.SyncLater
	if rd.TruncateTo >= 0 {
		if err := checkTruncation(rd.TruncateTo, e.applier.applied); err != nil {
			return err
		}
		if err := e.log.Truncate(int64(rd.TruncateTo)); err != nil {
			return fmt.Errorf("raft: truncate log to %d: %w", rd.TruncateTo, err)
		}
		wrote = true
		if e.probe != nil {
			e.probe.truncated(rd.TruncateTo)
		}
		e.voters.truncate(rd.TruncateTo)
	}
	if len(rd.Appends) > 0 {
		if err := e.appendBatches(rd.Appends); err != nil {
			return err
		}
		wrote = true
	}
	if len(rd.SnapshotWrites) > 0 {
		if err := e.writeSnapshotChunks(rd.SnapshotWrites); err != nil {
			return err
		}
	}
	if rd.InstallSnapshot.Valid() {
		if err := e.installSnapshot(rd.InstallSnapshot); err != nil {
			return err
		}
		wrote = true
	}
	switch {
	case rd.SyncLater:
		// Fetch answers read the written, unsynced batches back.
		e.unsynced = e.unsynced || wrote
	case wrote && !bugzoo.Active(bugzoo.Z1):
		start := latency.Now()
		began := time.Now()
		_, err := e.log.Sync()
		e.metrics.rec().Synced(time.Since(began))
		latency.Since("follower: fsync", start)
		if err != nil {
			return fmt.Errorf("raft: fsync log: %w", err)
		}
		e.unsynced = false
		if bugzoo.Active(bugzoo.Z22) {
			e.bugZ22AckAppended()
		}
	default:
		e.unsynced = false
	}
	e.sendAll(rd.Messages)
	if rd.HighWatermark >= 0 {
		e.applier.hw = rd.HighWatermark
		start := latency.Now()
		err := e.applyCommitted()
		latency.Since("apply committed", start)
		if err != nil {
			return err
		}
	}
	for _, res := range rd.Reads {
		e.readResolved(res)
	}
	e.handles.release()
	e.node.Advance(rd)
	if rd.SyncLater && e.unsynced {
		if bugzoo.Active(bugzoo.Z1) {
			// Z1: the appends are reported durable without an fsync.
			e.unsynced = false
			if err := e.node.LogSynced(e.now(), kraft.Offset(e.log.LogEndOffset())); err != nil {
				panic(fmt.Sprintf("raft: invariant: LogSynced outside a Ready: %v", err))
			}
		} else {
			e.startSync()
		}
	}
	e.maybeSnapshot()
	return nil
}

// persistQuorumState writes qs, the core's election state st, to the
// quorum-state file, durably.
func (e *engine) persistQuorumState(qs logstore.QuorumStateData, st kraft.ElectionState) error {
	if err := logstore.WriteQuorumState(e.fsys, e.rc.dir, qs); err != nil {
		return fmt.Errorf("raft: persist quorum state %s: %w", st, err)
	}
	if e.probe != nil {
		e.probe.persisted(st)
	}
	return nil
}

// maxAppendBuf bounds the join buffer an engine keeps between Readys.
const maxAppendBuf = 1 << 20

// appendBatches writes the Ready's appends: runs of the leader's own
// batches through AppendAsLeader, runs of fetched batches through
// AppendAsFollower, each checked to land where the core placed it.
func (e *engine) appendBatches(apps []kraft.Append) error {
	var (
		buf    []byte
		copied bool // buf is e.appendBuf, not a held batch
		leader bool
		epoch  kraft.Epoch
		first  kraft.Offset
		next   kraft.Offset
	)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		var res logstore.AppendResult
		var err error
		if leader {
			res, err = e.log.AppendAsLeader(buf, int32(epoch))
		} else {
			res, err = e.log.AppendAsFollower(buf)
		}
		if err != nil {
			return fmt.Errorf("raft: append [%d, %d) at epoch %d: %w", first, next, epoch, err)
		}
		if err := checkPlacement(kraft.Offset(res.FirstOffset), kraft.Offset(res.NextOffset), first, next); err != nil {
			return err
		}
		e.metrics.rec().Appended(int(next-first), leader)
		buf, copied = nil, false
		if cap(e.appendBuf) > maxAppendBuf {
			e.appendBuf = nil
		}
		return nil
	}
	for _, a := range apps {
		var b []byte
		own := true
		switch held := e.handles.get(a.Handle); {
		case a.Handle == 0:
			enc, err := encodeControlBatch(a.Batch, e.clock.Now().UnixMilli())
			if err != nil {
				return err
			}
			b = enc
		case held == nil:
			panic(fmt.Sprintf("raft: invariant: append %s names unknown records handle %d", a.Batch, a.Handle))
		case held.fetched:
			own = false
			b = held.batch(a.Batch.BaseOffset)
			if b == nil {
				panic(fmt.Sprintf("raft: invariant: append %s is not a batch of records handle %d", a.Batch, a.Handle))
			}
		default:
			b = held.raw
		}
		if len(buf) > 0 && (own != leader || a.Batch.Epoch != epoch) {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(buf) == 0 {
			first, leader, epoch = a.Batch.BaseOffset, own, a.Batch.Epoch
		}
		switch {
		case len(buf) == 0:
			// A run of one batch (the usual Ready) is written from
			// where it is held, without a copy. The log keeps no
			// reference to what it writes.
			buf = b
		case !copied:
			e.appendBuf = append(append(e.appendBuf[:0], buf...), b...)
			buf, copied = e.appendBuf, true
		default:
			e.appendBuf = append(e.appendBuf, b...)
			buf = e.appendBuf
		}
		if a.Batch.Voters != nil {
			e.noteAppendedVoters(a.Batch.BaseOffset, b)
		}
		next = a.Batch.LastOffset + 1
	}
	return flush()
}

// holdFetched summarises the whole batches of a follower's Fetch response
// for the core and keeps their bytes under a new handle. A trailing partial
// or damaged batch ends the summary: the core fetches again from there.
func (e *engine) holdFetched(m *kraft.FetchResponse, records []byte) {
	it := recordbatch.NewIterator(&e.dec, records)
	for it.Next() {
		b := it.Batch()
		info, err := summarize(b)
		if err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelWarn, "undecodable control batch in fetch response",
				slog.Int(logKeyPeer, int(m.From)), slog.Int64(logKeyOffset, b.BaseOffset), slog.String(logKeyError, err.Error()))
			break
		}
		m.Batches = append(m.Batches, info)
	}
	if len(m.Batches) > 0 {
		m.Records = e.handles.hold(&heldRecords{raw: records, fetched: true})
	}
}

// checkTruncation refuses a truncation of the log to the end offset to
// below applied, the next offset the image would apply.
func checkTruncation(to, applied kraft.Offset) error {
	if to < applied {
		return &LogStateError{Op: "truncate", Reason: fmt.Sprintf("the core asks to truncate the log to end at offset %d, below offset %d, the end of what the image has applied (committed records)", to, applied)}
	}
	return nil
}

// checkPlacement refuses an append the log store placed at
// [gotFirst, gotNext) where the core placed it at [first, next).
func checkPlacement(gotFirst, gotNext, first, next kraft.Offset) error {
	if gotFirst != first || gotNext != next {
		return &LogStateError{Op: "append", Reason: fmt.Sprintf("the log store placed the append at [%d, %d), the core at [%d, %d)", gotFirst, gotNext, first, next)}
	}
	return nil
}
