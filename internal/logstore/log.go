package logstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// LockFileName is the lock file [Open] takes in the partition directory.
// Kafka's own lock is "<metadata.log.dir>/.lock"; the runtime can take that
// one with [LockDir].
const LockFileName = ".lock"

// AppendResult is the offset range an append wrote: [FirstOffset,
// NextOffset).
type AppendResult struct {
	// FirstOffset is the base offset of the first batch written.
	FirstOffset int64
	// NextOffset is the log end offset after the append.
	NextOffset int64
}

// ReadResult is what [Log.Read] returns.
type ReadResult struct {
	// Batches holds whole record batches, concatenated, in a slice the
	// caller owns (it is a copy; later appends or truncations do not
	// change it). Empty at the log end offset.
	Batches []byte
	// FirstOffset is the base offset of the first batch (it may be below
	// the offset asked for, when that offset is inside a batch).
	FirstOffset int64
	// NextOffset is the offset after the last batch returned.
	NextOffset int64
}

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

// LockDir takes the exclusive lock dir/.lock, as Kafka does for a log
// directory. It fails with an error wrapping [ErrLocked] when another
// process (or another LockDir or Open in this process) holds it. Close the
// returned Closer to release it.
func LockDir(fsys vfs.FS, dir string) (io.Closer, error) {
	path := filepath.Join(dir, LockFileName)
	c, err := fsys.Lock(path)
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("logstore: lock %s: %w: %w", path, ErrLocked, err)
		}
		return nil, fmt.Errorf("logstore: lock %s: %w", path, err)
	}
	return c, nil
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

// AppendAsLeader appends batches, one or more whole encoded record batches
// back to back, as the leader of epoch: it assigns offsets from the log
// end offset and the epoch by rewriting each batch's BaseOffset and
// PartitionLeaderEpoch in place (both are outside the CRC), so batches is
// modified. It returns the offset range written. Every batch must be valid
// (length, magic, CRC-32C, LastOffsetDelta+1 records) and at most
// Options.MaxBatchBytes; epoch must not be below [Log.LastEpoch].
//
// The data is not durable until [Log.Sync] returns.
func (l *Log) AppendAsLeader(batches []byte, epoch int32) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return AppendResult{}, err
	}
	if epoch < 0 {
		return AppendResult{}, fmt.Errorf("logstore: append as leader: negative epoch %d", epoch)
	}
	if last, ok := l.epochs.latest(); ok && epoch < last.Epoch {
		return AppendResult{}, &EpochRegressionError{LastEpoch: last.Epoch, Epoch: epoch, Offset: l.active().next}
	}
	if _, err := recordbatch.StampAll(batches, l.active().next, epoch); err != nil {
		return AppendResult{}, fmt.Errorf("logstore: append as leader: %w: %w", ErrInvalidBatch, err)
	}
	return l.appendLocked(batches)
}

// AppendAsFollower appends batches exactly as the leader sent them: the
// first must start at the log end offset (else *[OffsetMismatchError]),
// offsets must be contiguous and epochs must not decrease (else
// *[EpochRegressionError]). Every batch must be whole and valid; a caller
// holding a Fetch response that ends in a partial batch (Kafka's Fetch may
// return one) passes only the whole batches before it.
//
// The data is not durable until [Log.Sync] returns.
func (l *Log) AppendAsFollower(batches []byte) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return AppendResult{}, err
	}
	return l.appendLocked(batches)
}

// maxKeptPending bounds the pending-batch scratch a Log keeps between
// appends.
const maxKeptPending = 1024

// pendingBatch is a validated batch of an append.
type pendingBatch struct {
	h   recordbatch.Header
	pos int // in the input
}

func (l *Log) appendLocked(batches []byte) (AppendResult, error) {
	if len(batches) == 0 {
		return AppendResult{}, fmt.Errorf("logstore: append: %w: no batches", ErrInvalidBatch)
	}
	first := l.active().next
	expected := first
	lastEpoch := int32(0)
	if e, ok := l.epochs.latest(); ok {
		lastEpoch = e.Epoch
	}
	pend := l.pend[:0]
	for pos := 0; pos < len(batches); {
		n, err := recordbatch.TotalSize(batches[pos:])
		if err != nil {
			return AppendResult{}, fmt.Errorf("logstore: append: %w: %w", ErrInvalidBatch, err)
		}
		if n > l.opts.MaxBatchBytes {
			return AppendResult{}, fmt.Errorf("logstore: append: %w: batch at offset %d is %d bytes, maximum %d", ErrInvalidBatch, expected, n, l.opts.MaxBatchBytes)
		}
		h, err := recordbatch.Validate(batches[pos:])
		if err != nil {
			return AppendResult{}, fmt.Errorf("logstore: append: %w: %w", ErrInvalidBatch, err)
		}
		if h.BaseOffset != expected {
			return AppendResult{}, &OffsetMismatchError{Expected: expected, Got: h.BaseOffset}
		}
		if h.PartitionLeaderEpoch < lastEpoch {
			return AppendResult{}, &EpochRegressionError{LastEpoch: lastEpoch, Epoch: h.PartitionLeaderEpoch, Offset: h.BaseOffset}
		}
		if reason := checkBatch(&h, expected, lastEpoch, h.BaseOffset); reason != "" {
			return AppendResult{}, fmt.Errorf("logstore: append: %w: %s", ErrInvalidBatch, reason)
		}
		pend = append(pend, pendingBatch{h: h, pos: pos})
		lastEpoch = h.PartitionLeaderEpoch
		expected = h.NextOffset()
		pos += n
	}
	if cap(pend) <= maxKeptPending {
		// Kept for the next append (only this one reads it until then),
		// unless one huge append grew it.
		l.pend = pend[:0]
	}

	segBytes := l.opts.segmentBytes()
	epochChanged := false
	for i := 0; i < len(pend); {
		s := l.active()
		// Find the run of batches that fit the active segment.
		j := i
		size, firstTS := s.size, s.firstTimestamp
		for j < len(pend) {
			h := &pend[j].h
			if size > 0 && l.shouldRoll(s, size, firstTS, h, segBytes) {
				break
			}
			if size == 0 {
				firstTS = h.MaxTimestamp
			}
			size += int64(h.Size())
			j++
		}
		if j == i {
			if err := l.roll(); err != nil {
				return AppendResult{}, err
			}
			continue
		}
		end := len(batches)
		if j < len(pend) {
			end = pend[j].pos
		}
		run := batches[pend[i].pos:end]
		if err := l.preallocate(s, s.size+int64(len(run)), segBytes); err != nil {
			return AppendResult{}, err
		}
		if _, err := s.log.WriteAt(run, s.size); err != nil {
			return AppendResult{}, l.poison(fmt.Errorf("logstore: write segment %s at byte %d: %w", s.path(logSuffix), s.size, err))
		}
		s.alloc = max(s.alloc, s.size+int64(len(run)))
		for k := i; k < j; k++ {
			h := &pend[k].h
			if l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) {
				epochChanged = true
			}
			newIdx, newTidx := s.observe(h, s.size, l.opts.IndexIntervalBytes, l.opts.tailCap())
			if err := l.writeIndexEntries(s, newIdx, newTidx); err != nil {
				return AppendResult{}, err
			}
		}
		i = j
	}
	if epochChanged {
		if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, l.epochs.entries); err != nil {
			return AppendResult{}, l.poison(err)
		}
	}
	return AppendResult{FirstOffset: first, NextOffset: l.active().next}, nil
}

// preallocate extends the active segment's .log file ahead of a write
// that would end at end beyond the allocated end, by writing zeros: from
// there to Options.PreallocateBytes past the larger of the two ends, but
// never past segBytes. The file's size then changes once per chunk rather
// than with every append, and, because the zeros are written (not
// reserved as unwritten extents, which fallocate(2) would leave), the
// blocks an append lands in already exist, so the fsync after an append
// writes data and commits no file system metadata; the zeros themselves
// reach the disk with the next fsync, once per chunk. The bytes beyond
// s.size are zeros that nothing reads: reads, lookups and the logical
// size stop at s.size, sealing cuts them off (sealSegment), and recovery
// cuts what a crash leaves of them. A failure poisons the log, as a failed
// write does.
func (l *Log) preallocate(s *segment, end, segBytes int64) error {
	chunk := l.opts.PreallocateBytes
	if chunk <= 0 || end <= s.alloc {
		return nil
	}
	// The write itself fills [s.size, end); the zeros go after it.
	from := max(s.alloc, end)
	target := max(end, min(from+chunk, segBytes))
	for off := from; off < target; {
		n := int(min(target-off, int64(len(zeroFill))))
		if _, err := s.log.WriteAt(zeroFill[:n], off); err != nil {
			return l.poison(fmt.Errorf("logstore: preallocate segment %s to %d bytes: %w", s.path(logSuffix), target, err))
		}
		off += int64(n)
	}
	s.alloc = target
	return nil
}

// zeroFill is what preallocate writes. Never written to, it stays in the
// zero pages the operating system maps for it.
var zeroFill [1 << 20]byte

// trimPreallocated cuts s's .log file back to its batches when space was
// preallocated beyond them. The cut is durable with the next fsync of the
// file.
func (l *Log) trimPreallocated(s *segment) error {
	if s.alloc <= s.size {
		return nil
	}
	if err := s.log.Truncate(s.size); err != nil {
		return l.poison(fmt.Errorf("logstore: cut preallocated space of segment %s at %d bytes: %w", s.path(logSuffix), s.size, err))
	}
	s.alloc = s.size
	return nil
}

// shouldRoll reports whether h must go to a new segment rather than s,
// which already holds size bytes and whose first batch has MaxTimestamp
// firstTS (LogSegment.shouldRoll): the segment would outgrow
// Options.SegmentBytes, h is more than SegmentTime newer than the segment's
// first batch, or h's offsets or position would not fit a 32-bit
// index entry.
func (l *Log) shouldRoll(s *segment, size, firstTS int64, h *recordbatch.Header, segBytes int64) bool {
	switch {
	case size+int64(h.Size()) > segBytes:
		return true
	case size+int64(h.Size()) > math.MaxInt32:
		return true
	case h.LastOffset()-s.base > math.MaxInt32:
		return true
	case firstTS != noTimestamp && h.MaxTimestamp-firstTS > l.opts.SegmentTime.Milliseconds():
		return true
	}
	return false
}

// writeIndexEntries mirrors the newest in-memory index entries to the
// index files.
func (l *Log) writeIndexEntries(s *segment, idx, tidx bool) error {
	if idx {
		n := len(s.index)
		b := l.entry[:offsetIndexEntrySize]
		putOffsetEntry(b, s.index[n-1])
		if _, err := s.idx.WriteAt(b, int64(n-1)*offsetIndexEntrySize); err != nil {
			return l.poison(fmt.Errorf("logstore: write index %s: %w", s.path(indexSuffix), err))
		}
	}
	if tidx {
		n := len(s.timeIndex)
		b := l.entry[:timeIndexEntrySize]
		putTimeEntry(b, s.timeIndex[n-1])
		if _, err := s.tidx.WriteAt(b, int64(n-1)*timeIndexEntrySize); err != nil {
			return l.poison(fmt.Errorf("logstore: write time index %s: %w", s.path(timeIndexSuffix), err))
		}
	}
	return nil
}

// roll closes the active segment (final time index entry, fsync of its
// three files), checkpoints the recovery point at its end (everything
// below is durable now), and starts a new one at the log end offset,
// fsyncing the directory so the new files exist after a crash. The
// recovery point thus never lags behind the active segment's base by more
// than the appends since the last checkpoint.
func (l *Log) roll() error {
	s := l.active()
	if err := l.sealSegment(s); err != nil {
		return err
	}
	l.synced = max(l.synced, s.next)
	if err := l.checkpointLocked(); err != nil {
		return err
	}
	ns, err := createSegment(l.fsys, l.dir, s.next)
	if err != nil {
		return l.poison(err)
	}
	s.forgetTail()
	l.segs = append(l.segs, ns)
	return nil
}

// sealSegment adds the close-time entry to s's time index (as Kafka does
// when a segment becomes inactive or is closed), cuts the .log file back to
// its batches (preallocated space goes) and fsyncs its files. Recovery
// takes a sealed segment's size from its file, so the cut must be durable
// before a later segment exists: roll creates the next one only after
// this returns.
func (l *Log) sealSegment(s *segment) error {
	if err := l.trimPreallocated(s); err != nil {
		return err
	}
	if !s.closedTimeEntry {
		if s.maybeAppendTime() {
			if err := l.writeIndexEntries(s, false, true); err != nil {
				return err
			}
		}
		s.closedTimeEntry = true
	}
	for _, f := range []vfs.File{s.log, s.idx, s.tidx} {
		if err := f.Sync(); err != nil {
			return l.poison(fmt.Errorf("logstore: sync %s: %w", f.Name(), err))
		}
	}
	return nil
}

// createSegment creates the three empty files of a segment at base and
// fsyncs the directory.
func createSegment(fsys vfs.FS, dir string, base int64) (*segment, error) {
	s := newSegmentState(dir, base)
	files := make([]vfs.File, 0, 3)
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		f, err := fsys.OpenFile(s.path(suffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			for _, g := range files {
				_ = g.Close()
			}
			return nil, fmt.Errorf("logstore: create segment %s: %w", s.path(suffix), err)
		}
		files = append(files, f)
	}
	s.log, s.idx, s.tidx = files[0], files[1], files[2]
	if err := fsys.SyncDir(dir); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("logstore: sync directory %s: %w", dir, err)
	}
	return s, nil
}

func (s *segment) closeFiles() error {
	var errs []error
	for _, f := range []vfs.File{s.log, s.idx, s.tidx} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// removeFiles closes and deletes the segment's files.
func (s *segment) removeFiles(fsys vfs.FS) error {
	_ = s.closeFiles()
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := fsys.Remove(s.path(suffix)); err != nil && !isNotExist(err) {
			return fmt.Errorf("logstore: delete %s: %w", s.path(suffix), err)
		}
	}
	return nil
}

// Sync makes every batch appended so far durable with one fsync, of the
// active segment (rolled segments were fsynced when rolled, and the
// directory when each segment was created). It returns the synced offset,
// which [Log.SyncedOffset] reports from then on. It does not write the
// recovery point: [Log.CheckpointRecoveryPoint] does, off the commit path.
//
// A failed Sync poisons the log: the error wraps the cause, and every later
// write or sync fails with [ErrPoisoned]. The fsync is never retried,
// because after a failed fsync the kernel may have dropped the dirty pages
// and a retry could report success for data that is gone. Reopen the log
// to recover from what is really on disk.
func (l *Log) Sync() (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return l.synced, err
	}
	s := l.active()
	if l.synced == s.next {
		return l.synced, nil
	}
	if err := s.log.Sync(); err != nil {
		if bugzoo.Active(bugzoo.Z20) && s.log.Sync() == nil {
			// Z20: the fsync is retried, and its success taken for the
			// durability of pages the failed one may have dropped.
			l.synced = s.next
			return l.synced, nil
		}
		return l.synced, l.poison(fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err))
	}
	l.synced = s.next
	return l.synced, nil
}

// SyncConcurrent is [Log.Sync] without holding the log's lock during the
// fsync, so that appends and reads go on while it runs: it takes the
// active segment and its end offset under the lock, fsyncs the segment
// unlocked, and then records that end offset (or a higher one a roll
// synced meanwhile) as synced. Batches appended after it started may not
// be covered; the returned offset, the synced offset when it is done, says
// what is. While it runs, nothing truncates, closes or deletes a file:
// truncations, advancing the log start and Close wait for it
// (so the offsets it covers cannot be rewritten under it), and a roll,
// which keeps the sealed segment's files open, fsyncs that segment itself.
// Its failure poisons the log as Sync's does.
func (l *Log) SyncConcurrent() (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return l.synced, err
	}
	s := l.active()
	end := s.next
	if l.synced >= end {
		return l.synced, nil
	}
	l.syncing++
	l.mu.Unlock()
	err := s.log.Sync()
	l.mu.Lock()
	l.syncing--
	if l.syncing == 0 {
		l.syncIdle.Broadcast()
	}
	if err != nil {
		return l.synced, l.poison(fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err))
	}
	if err := l.checkWritable(); err != nil {
		return l.synced, err
	}
	l.synced = max(l.synced, end)
	return l.synced, nil
}

// awaitSyncs waits, with mu held, until no SyncConcurrent fsync runs, so
// that the caller may close or delete files.
func (l *Log) awaitSyncs() {
	for l.syncing > 0 {
		l.syncIdle.Wait()
	}
}

// RecoveryPoint returns the recovery point last written to
// krabka-recovery-point and fsynced: recovery refuses to start when data
// below it is damaged. It never exceeds [Log.SyncedOffset], and lags it
// until the next [Log.CheckpointRecoveryPoint].
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rp.offset
}

// CheckpointRecoveryPoint writes the synced offset (that of the last
// completed [Log.Sync], roll or recovery, never a higher one) as the
// recovery point and fsyncs it, when it moved. It returns the recovery
// point. The runtime calls it periodically and the log itself on roll and
// Close, so that the recovery point trails the synced offset by at most
// one interval; truncations lower it at once.
//
// A failure poisons the log, as a failed Sync does.
func (l *Log) CheckpointRecoveryPoint() (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return l.rp.offset, err
	}
	if err := l.checkpointLocked(); err != nil {
		return l.rp.offset, err
	}
	return l.rp.offset, nil
}

// checkpointLocked writes l.synced as the recovery point when it differs.
func (l *Log) checkpointLocked() error {
	if l.rp.offset == l.synced {
		return nil
	}
	if l.rp.offset > l.synced {
		panic(fmt.Sprintf("logstore: invariant: recovery point %d above the synced offset %d", l.rp.offset, l.synced))
	}
	if err := l.rp.set(l.synced); err != nil {
		return l.poison(err)
	}
	return nil
}

// Read returns whole batches starting with the batch that holds offset, up
// to maxBytes in total but always at least one whole batch (as Kafka's
// Fetch does, so a batch larger than the limit still makes progress). It
// reads from one segment. At the log end offset the result is empty; below
// the log start offset or above the log end offset it fails with
// [ErrOffsetOutOfRange].
//
// Read copies the bytes from the file into a new slice: vfs has no
// memory mapping, and a copy stays valid whatever the log does next
// (truncation, advancing the log start). Unsynced batches are readable.
func (l *Log) Read(offset int64, maxBytes int) (ReadResult, error) {
	return l.ReadInto(offset, maxBytes, nil)
}

// ReadInto is [Log.Read] into buf's memory: the result's Batches start at
// buf[0], or in a new slice when buf's capacity is too small. A reader
// that is done with one result before the next read (the apply loop, which
// decodes records into values of their own) reuses one buffer instead of
// allocating per read.
func (l *Log) ReadInto(offset int64, maxBytes int, buf []byte) (ReadResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ReadResult{}, ErrClosed
	}
	end := l.active().next
	if offset < l.startOffset || offset > end {
		return ReadResult{}, fmt.Errorf("logstore: read offset %d outside [%d, %d]: %w", offset, l.startOffset, end, ErrOffsetOutOfRange)
	}
	if offset == end {
		return ReadResult{FirstOffset: end, NextOffset: end}, nil
	}
	s := l.segmentFor(offset)
	b, err := l.findBatch(s, offset)
	if err != nil {
		return ReadResult{}, err
	}
	pos, base := b.pos, b.base
	want := max(int64(maxBytes), b.size)
	if rest := s.size - pos; want > rest {
		want = rest
	}
	buf = slices.Grow(buf[:0], int(want))[:want]
	if _, err := s.log.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
		return ReadResult{}, fmt.Errorf("logstore: read segment %s at byte %d: %w", s.path(logSuffix), pos, err)
	}
	// Keep whole batches only, at least the first. The bytes were
	// validated when appended or recovered; only lengths are read here.
	n, next := 0, base
	for n < len(buf) {
		h, err := recordbatch.PeekHeader(buf[n:])
		if err != nil || h.Size() > len(buf)-n {
			break
		}
		next = h.NextOffset()
		n += h.Size()
	}
	return ReadResult{Batches: buf[:n], FirstOffset: base, NextOffset: next}, nil
}

// segmentFor returns the segment that holds offset: the last one whose
// base is <= offset (skipping empty segments that end before it).
func (l *Log) segmentFor(offset int64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	for i < len(l.segs)-1 && l.segs[i].next <= offset {
		i++
	}
	return l.segs[i]
}

// batchLoc is where a batch of a segment is.
type batchLoc struct {
	pos  int64 // byte position in the .log
	base int64 // base offset
	size int64 // bytes, LogOverhead included
}

// findBatch returns the batch of s that holds offset, which must be below
// s.next. A batch in the active segment's tail is found in memory, with no
// read. Any other lookup starts at the offset index entry (at most
// index.interval.bytes before the batch) and walks batch headers read in
// chunks (usually one read per lookup) rather than one read per header:
// metadata batches are small, a dozen or more per index interval.
func (l *Log) findBatch(s *segment, offset int64) (batchLoc, error) {
	if b, ok := s.tailLookup(offset); ok {
		return b, nil
	}
	r := headerReader{s: s, buf: l.chunk}
	for pos := s.lookup(offset); pos < s.size; {
		h, err := r.header(pos)
		if err != nil {
			return batchLoc{}, err
		}
		if h.LastOffset() >= offset {
			return batchLoc{pos: pos, base: h.BaseOffset, size: int64(h.Size())}, nil
		}
		pos += int64(h.Size())
	}
	return batchLoc{}, fmt.Errorf("logstore: offset %d not found in segment %s: %w", offset, s.path(logSuffix), ErrOffsetOutOfRange)
}

// chunkSize is the size of the scratch findBatch reads headers into: two
// index intervals (a walk from an index entry crosses at most one interval
// and a batch), within [4 KiB, 64 KiB].
func chunkSize(interval int) int {
	return min(max(2*interval, 4<<10), 64<<10)
}

// headerReader reads the headers of batches of s, which were validated
// when appended or recovered, through buf: a header inside the bytes last
// read is decoded from them, any other one refills buf from its position.
type headerReader struct {
	s      *segment
	buf    []byte
	bufPos int64 // file position of buf[0]
	n      int64 // valid bytes in buf
}

// header returns the header of the batch at pos (< s.size).
func (r *headerReader) header(pos int64) (recordbatch.Header, error) {
	if pos < r.bufPos || pos+recordbatch.HeaderSize > r.bufPos+r.n {
		want := min(int64(len(r.buf)), r.s.size-pos)
		m, err := r.s.log.ReadAt(r.buf[:want], pos)
		if int64(m) < want {
			r.n = 0
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return recordbatch.Header{}, fmt.Errorf("logstore: read segment %s at byte %d: %w", r.s.path(logSuffix), pos, err)
		}
		r.bufPos, r.n = pos, want
	}
	h, err := recordbatch.PeekHeader(r.buf[pos-r.bufPos : r.n])
	if err != nil {
		return recordbatch.Header{}, fmt.Errorf("logstore: read segment %s at byte %d: %w", r.s.path(logSuffix), pos, err)
	}
	return h, nil
}

// fixTail makes the tail of s, after a cut, what appending or recovering
// its remaining batches builds: the batches from the one the next-to-last
// index entry points at (or from the first) to the end. The part the cut
// left is kept when it reaches back that far; otherwise the headers are
// read again. A read that fails leaves the tail empty, which only costs
// lookups a scan.
func (l *Log) fixTail(s *segment) {
	n := len(s.index)
	start := int64(0)
	if n >= 2 {
		start = int64(s.index[n-2].Pos)
	}
	k := len(s.tail)
	for k > 0 && s.tail[k-1].pos >= s.size {
		k--
	}
	s.tail = s.tail[:k]
	if i := s.tailIndexOf(start); i >= 0 {
		s.dropTailBefore(i)
	} else {
		s.tail = s.tail[:0]
		r := headerReader{s: s, buf: l.chunk}
		for pos := start; pos < s.size; {
			h, err := r.header(pos)
			if err != nil {
				s.tail = s.tail[:0]
				break
			}
			s.rememberTail(h.BaseOffset, pos, l.opts.tailCap())
			pos += int64(h.Size())
		}
	}
	s.tailMark = 0
	if n >= 1 {
		s.tailMark = max(0, s.tailIndexOf(int64(s.index[n-1].Pos)))
	}
}

// Truncate removes every batch at or after offset, which is how a follower
// drops a divergent suffix (KafkaRaftLog.truncateTo). When offset falls
// inside a batch, that whole batch goes too, so the new log end offset is
// the start of the batch holding offset. Later segments are deleted, the
// cut segment's files are truncated at the batch boundary, index and epoch
// cache entries beyond it are dropped. The recovery point is lowered
// first, so a crash in the middle never leaves a recovery point above the
// data. Offsets below the log start offset fail with [ErrOffsetOutOfRange];
// it is the caller's job never to truncate below the high watermark.
func (l *Log) Truncate(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaitSyncs()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset < l.startOffset {
		return fmt.Errorf("logstore: truncate to %d below log start offset %d: %w", offset, l.startOffset, ErrOffsetOutOfRange)
	}
	if offset >= l.active().next {
		return nil
	}
	s := l.segmentFor(offset)
	b, err := l.findBatch(s, offset)
	if err != nil {
		return err
	}
	pos, newEnd := b.pos, b.base
	if l.rp.offset > newEnd {
		if err := l.rp.set(newEnd); err != nil {
			return l.poison(err)
		}
	}
	l.synced = min(l.synced, newEnd)
	// Delete the later segments, newest first.
	idx := l.indexOf(s)
	for len(l.segs)-1 > idx {
		last := l.segs[len(l.segs)-1]
		if err := last.removeFiles(l.fsys); err != nil {
			return l.poison(err)
		}
		l.segs = l.segs[:len(l.segs)-1]
	}
	// The deletions are made durable before the cut segment shrinks: if
	// they could be undone by a crash after the cut, the resurrected
	// segments would no longer continue the cut one, which recovery must
	// treat as corruption.
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return l.poison(fmt.Errorf("logstore: sync directory %s: %w", l.dir, err))
	}
	if err := l.cutSegment(s, pos, newEnd); err != nil {
		return err
	}
	if l.epochs.truncateFromEnd(newEnd) {
		if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, l.epochs.entries); err != nil {
			return l.poison(err)
		}
	}
	return nil
}

// cutSegment truncates s to pos bytes (newEnd is the offset of the batch
// that started there), trims its indexes and fsyncs the files.
func (l *Log) cutSegment(s *segment, pos, newEnd int64) error {
	if err := s.log.Truncate(pos); err != nil {
		return l.poison(fmt.Errorf("logstore: truncate segment %s to %d bytes: %w", s.path(logSuffix), pos, err))
	}
	s.size, s.next, s.alloc = pos, newEnd, pos
	s.truncateIndexes(pos, newEnd)
	s.bytesSinceIndex = pos
	if n := len(s.index); n > 0 {
		s.bytesSinceIndex = pos - int64(s.index[n-1].Pos)
	}
	l.fixTail(s)
	s.maxTimestamp, s.offsetOfMaxTS = noTimestamp, s.base
	if n := len(s.timeIndex); n > 0 {
		s.maxTimestamp, s.offsetOfMaxTS = s.timeIndex[n-1].Timestamp, s.base+int64(s.timeIndex[n-1].RelOffset)
	}
	if pos == 0 {
		s.firstTimestamp = noTimestamp
	}
	if err := s.idx.Truncate(int64(len(s.index)) * offsetIndexEntrySize); err != nil {
		return l.poison(fmt.Errorf("logstore: truncate index %s: %w", s.path(indexSuffix), err))
	}
	if err := s.tidx.Truncate(int64(len(s.timeIndex)) * timeIndexEntrySize); err != nil {
		return l.poison(fmt.Errorf("logstore: truncate time index %s: %w", s.path(timeIndexSuffix), err))
	}
	for _, f := range []vfs.File{s.log, s.idx, s.tidx} {
		if err := f.Sync(); err != nil {
			return l.poison(fmt.Errorf("logstore: sync %s: %w", f.Name(), err))
		}
	}
	return nil
}

func (l *Log) indexOf(s *segment) int {
	for i, t := range l.segs {
		if t == s {
			return i
		}
	}
	panic("logstore: invariant: segment not in the log")
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset (KafkaRaftLog.truncateFullyAndStartAt): a follower does this after
// installing a snapshot that ends beyond its log. The epoch cache is
// emptied. The recovery point is lowered to 0 before anything is deleted
// and raised to offset once the new empty segment is durable.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaitSyncs()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("logstore: truncate fully and start at negative offset %d: %w", offset, ErrOffsetOutOfRange)
	}
	if l.rp.offset > 0 {
		if err := l.rp.set(0); err != nil {
			return l.poison(err)
		}
	}
	for len(l.segs) > 0 {
		last := l.segs[len(l.segs)-1]
		if err := last.removeFiles(l.fsys); err != nil {
			return l.poison(err)
		}
		l.segs = l.segs[:len(l.segs)-1]
	}
	s, err := createSegment(l.fsys, l.dir, offset)
	if err != nil {
		// Keep the invariant "at least one segment" for readers; the log
		// is poisoned anyway.
		l.segs = []*segment{newSegmentState(l.dir, offset)}
		return l.poison(err)
	}
	l.segs = []*segment{s}
	l.startOffset = offset
	l.epochs.entries = nil
	if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, nil); err != nil {
		return l.poison(err)
	}
	if err := l.rp.set(offset); err != nil {
		return l.poison(err)
	}
	l.synced = offset
	return nil
}

// AdvanceLogStart moves the log start offset up to offset (after a
// snapshot ending at offset exists) and deletes every segment that lies
// entirely below it; the active segment is never deleted. Epoch cache
// entries below offset are folded into one entry starting at offset
// (LeaderEpochFileCache.truncateFromStart). An offset beyond the log end
// fails with [ErrOffsetOutOfRange]: use [Log.TruncateFullyAndStartAt].
func (l *Log) AdvanceLogStart(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaitSyncs()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset > l.active().next {
		return fmt.Errorf("logstore: advance log start to %d beyond log end offset %d: %w", offset, l.active().next, ErrOffsetOutOfRange)
	}
	if offset <= l.startOffset {
		return nil
	}
	l.startOffset = offset
	return l.deleteSegmentsBelow(offset)
}

// deleteSegmentsBelow deletes the segments that end at or below offset,
// oldest first, never the active one, then fixes the log start offset and
// epoch cache.
func (l *Log) deleteSegmentsBelow(offset int64) error {
	removed := 0
	for len(l.segs) > 1 && l.segs[0].next <= offset {
		if err := l.segs[0].removeFiles(l.fsys); err != nil {
			return l.poison(err)
		}
		l.segs = l.segs[1:]
		removed++
	}
	if removed > 0 {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return l.poison(fmt.Errorf("logstore: sync directory %s: %w", l.dir, err))
		}
	}
	l.startOffset = max(l.startOffset, l.segs[0].base)
	if l.epochs.truncateFromStart(l.startOffset) {
		if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, l.epochs.entries); err != nil {
			return l.poison(err)
		}
	}
	return nil
}

// Close makes everything durable (like [Log.Sync], plus the final time
// index entry and the index files), checkpoints the recovery point at the
// log end offset, closes the files and releases the directory lock. A poisoned log only closes its files and the lock.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaitSyncs()
	if l.closed {
		return ErrClosed
	}
	var errs []error
	if l.poisoned == nil {
		s := l.active()
		if err := l.sealSegment(s); err != nil {
			errs = append(errs, err)
		} else {
			l.synced = s.next
			if err := l.checkpointLocked(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, s := range l.segs {
		if err := s.closeFiles(); err != nil {
			errs = append(errs, fmt.Errorf("logstore: close segment %s: %w", s.path(logSuffix), err))
		}
	}
	if l.rp != nil {
		errs = append(errs, l.rp.close())
	}
	if l.lock != nil {
		errs = append(errs, l.lock.Close())
	}
	l.closed = true
	return errors.Join(errs...)
}
