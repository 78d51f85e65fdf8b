package logstore

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// SegmentInfo describes one segment, for tools and tests.
type SegmentInfo struct {
	// BaseOffset is the offset of the segment's first batch (its name).
	BaseOffset int64
	// NextOffset is the offset after its last batch.
	NextOffset int64
	// Bytes is the size of its batches: the size of its .log file, except
	// that the active segment's file may be longer, its end preallocated
	// (Options.PreallocateBytes).
	Bytes int64
	// Path is the path of its .log file.
	Path string
}

// Log is the __cluster_metadata-0 partition on disk, in Kafka's layout.
//
// Its methods are safe for concurrent use (a mutex serialises them); the
// design expects one owner goroutine (the runtime's engine) to write, and
// readers anywhere.
type Log struct {
	mu     sync.Mutex
	fsys   vfs.FS
	dir    string
	opts   Options
	logger *slog.Logger
	lock   io.Closer

	segs        []*segment // ascending base offsets; the last is active
	startOffset int64
	epochs      epochCache
	// rp is the recovery-point file; rp.offset <= synced always (the
	// checkpoint trails the synced offset, truncations lower both).
	rp     *recoveryPoint
	synced int64 // log end offset covered by the last successful Sync or roll

	// syncing counts SyncConcurrent fsyncs running without mu; syncIdle
	// (on mu) wakes those waiting for them to end before a file may be
	// truncated, closed or deleted.
	syncing  int
	syncIdle sync.Cond

	poisoned error
	closed   bool

	// chunk is findBatch's scratch (under mu), made at Open: it scans
	// batch headers from an index entry in chunks of the file read with
	// one call each. A local buffer would escape through the file
	// interface, one allocation per lookup.
	chunk []byte
	// pend and entry are the append path's scratch (under mu): the
	// validated batches of an append and one index entry, so that an
	// append allocates nothing per batch.
	pend  []pendingBatch
	entry [timeIndexEntrySize]byte

	latestSnap, earliestSnap         kraft.OffsetAndEpoch
	haveLatestSnap, haveEarliestSnap bool
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// checkWritable returns the error every write or sync returns on a closed
// or poisoned log.
func (l *Log) checkWritable() error {
	if l.closed {
		return ErrClosed
	}
	if l.poisoned != nil {
		return fmt.Errorf("%w: %w", ErrPoisoned, l.poisoned)
	}
	return nil
}

// poison records a failed write or sync. From then on every write and sync
// fails until the log is reopened.
func (l *Log) poison(err error) error {
	if l.poisoned == nil {
		l.poisoned = err
	}
	return err
}

// LogStartOffset returns the first offset the log holds (Kafka's log start
// offset). After [Open] it is the base offset of the first segment, as in
// Kafka, which opens the metadata log with log start 0 and then takes the
// first segment's base; [Log.AdvanceLogStart] moves it up.
func (l *Log) LogStartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.startOffset
}

// LogEndOffset returns the offset the next batch gets (Kafka's LEO). It
// includes batches not yet made durable by [Log.Sync].
func (l *Log) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active().next
}

// SyncedOffset returns the log end offset covered by the last successful
// [Log.Sync] (or by a segment roll, which fsyncs the rolled segment, or by
// recovery at [Open]). Batches at or above it may be lost in a crash:
// callers must not acknowledge them, count them toward the high watermark,
// or report them in a Fetch as replicated.
func (l *Log) SyncedOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.synced
}

// LastEpoch returns the epoch of the last batch in the log, as
// KafkaRaftLog.lastFetchedEpoch does: when the log holds no batch, the
// latest snapshot's epoch (set with [Log.SetLatestSnapshot]), else 0.
// Kafka throws when that snapshot does not end at the log end offset; this
// method leaves that consistency check to the caller.
func (l *Log) LastEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastEpochLocked()
}

func (l *Log) lastEpochLocked() int32 {
	if e, ok := l.epochs.latest(); ok {
		return e.Epoch
	}
	if l.haveLatestSnap {
		return int32(l.latestSnap.Epoch)
	}
	return 0
}

// EndOffsetForEpoch returns the end offset (exclusive) of the largest epoch
// <= epoch and that epoch, with the semantics of KafkaRaftLog.endOffsetForEpoch
// over LeaderEpochFileCache.endOffsetFor:
//
//   - epoch is the latest epoch in the log: (log end offset, epoch);
//   - epoch is between known epochs: the largest known epoch below it and
//     the start offset of the next known epoch;
//   - epoch is below every known epoch: (start offset of the first known
//     epoch, epoch) — and when that offset is the earliest snapshot's end
//     offset, the earliest snapshot's id instead, so that a follower
//     behind the log start is pointed at the snapshot;
//   - the cache cannot answer (empty, or epoch above every known epoch, or
//     negative): (log end offset, [Log.LastEpoch]).
func (l *Log) EndOffsetForEpoch(epoch int32) kraft.OffsetAndEpoch {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, end, found := l.epochs.endOffsetFor(epoch, l.active().next)
	if !found {
		return kraft.OffsetAndEpoch{Offset: kraft.Offset(l.active().next), Epoch: kraft.Epoch(l.lastEpochLocked())}
	}
	if l.haveEarliestSnap && end == int64(l.earliestSnap.Offset) && e == epoch {
		return l.earliestSnap
	}
	return kraft.OffsetAndEpoch{Offset: kraft.Offset(end), Epoch: kraft.Epoch(e)}
}

// SetLatestSnapshot records the id of the newest snapshot, which the
// snapshot store owns. The log uses it only for [Log.LastEpoch] on a log
// with no batches.
func (l *Log) SetLatestSnapshot(id kraft.OffsetAndEpoch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latestSnap, l.haveLatestSnap = id, true
}

// SetEarliestSnapshot records the id of the oldest snapshot (the one at the
// log start offset), used by [Log.EndOffsetForEpoch].
func (l *Log) SetEarliestSnapshot(id kraft.OffsetAndEpoch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.earliestSnap, l.haveEarliestSnap = id, true
}

// LatestSnapshot returns the id given to [Log.SetLatestSnapshot].
func (l *Log) LatestSnapshot() (kraft.OffsetAndEpoch, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latestSnap, l.haveLatestSnap
}

// EarliestSnapshot returns the id given to [Log.SetEarliestSnapshot].
func (l *Log) EarliestSnapshot() (kraft.OffsetAndEpoch, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.earliestSnap, l.haveEarliestSnap
}

// EpochEntries returns a copy of the leader-epoch cache: for each epoch in
// the log, the offset of its first batch.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.snapshot()
}

// Segments describes the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = SegmentInfo{BaseOffset: s.base, NextOffset: s.next, Bytes: s.size, Path: s.path(logSuffix)}
	}
	return out
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }
