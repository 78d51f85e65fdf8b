package logstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// RecoveryReport says what [Open] found and repaired.
type RecoveryReport struct {
	// Segments is the number of segments after recovery.
	Segments int
	// Batches is the number of valid batches scanned.
	Batches int64
	// LogStartOffset and LogEndOffset bound the recovered log.
	LogStartOffset, LogEndOffset int64
	// RecoveryPoint is the recovery point read from disk, or -1 when the
	// directory had no recovery-point file (a directory Kafka wrote).
	RecoveryPoint int64
	// Truncation describes the torn or corrupt tail that was cut, or is nil.
	Truncation *Truncation
	// ZeroTailBytes counts the zero bytes cut after the last batch of the
	// last segment, when everything after that batch was zeros: space
	// preallocated for appends (Options.PreallocateBytes) that a crash
	// left in the file, possibly with the room of appends whose data never
	// reached the disk. That is the log's end, not a Truncation: no byte
	// of a batch was dropped. Zeros where synced data belongs (below the
	// recovery point) are corruption as any other damage there.
	ZeroTailBytes int64
	// RebuiltFiles lists derived files (indexes, leader-epoch-checkpoint,
	// partition.metadata) rewritten because they were missing or differed
	// from what the batches say.
	RebuiltFiles []string
	// RemovedFiles lists leftover files deleted: temporary files of
	// interrupted atomic writes, index files without a segment, segments
	// after a cut tail, and *.deleted / *.cleaned segment files.
	RemovedFiles []string
}

// Truncation describes a cut tail.
type Truncation struct {
	// Segment is the segment file that was truncated.
	Segment string
	// Position is the byte position of the first bad byte, the new size
	// of Segment.
	Position int64
	// Offset is the offset the first dropped batch would have had, the
	// new log end offset.
	Offset int64
	// Reason says why the batch at Position was rejected.
	Reason string
	// BytesDropped counts the bytes removed from Segment and every later
	// segment.
	BytesDropped int64
}

// Log attribute keys.
const (
	attrFile    = "file"
	attrOffset  = "offset"
	attrPos     = "position"
	attrReason  = "reason"
	attrDropped = "bytes_dropped"
)

// ourTmpFiles are the files Krabka rewrites atomically in the partition
// directory; a leftover "<name>.tmp" is an interrupted rewrite whose old
// file is still authoritative.
var ourTmpFiles = []string{QuorumStateFileName, LeaderEpochCheckpointFileName, PartitionMetadataFileName, RecoveryPointFileName}

// diskRecoveryPoint is the recovery point recovery found on disk.
type diskRecoveryPoint struct {
	offset int64
	seq    uint64
	// found is false in a directory without the file (one Kafka wrote).
	found bool
}

// recover brings the partition directory to a consistent log in the steps
// [Open] lists (the lock excepted), setting l's segments, epoch cache, log
// start offset, synced offset and recovery-point file. It returns the
// report on failure too, holding what was found and done until then; the
// caller then closes the files of l.segs and l.rp.
func (l *Log) recover() (*RecoveryReport, error) {
	rep := &RecoveryReport{RecoveryPoint: -1}
	bases, err := l.listSegments(rep)
	if err != nil {
		return rep, err
	}
	var rp diskRecoveryPoint
	rp.offset, rp.seq, rp.found, err = readRecoveryPoint(l.fsys, l.dir)
	if err != nil {
		return rep, err
	}
	if rp.found {
		rep.RecoveryPoint = rp.offset
	}
	cut, zeroTail, err := l.scanSegments(bases, rp, rep)
	if err != nil {
		return rep, err
	}
	if zeroTail {
		if err := l.cutZeroTail(rep.ZeroTailBytes); err != nil {
			return rep, err
		}
	}
	if cut != nil {
		rep.Truncation = cut
		if err := l.cutTail(cut); err != nil {
			return rep, err
		}
	}
	if err := l.settleSegments(); err != nil {
		return rep, err
	}
	end := l.active().next
	if err := l.checkEnd(end, rp); err != nil {
		return rep, err
	}
	if err := l.rebuildIndexes(rep); err != nil {
		return rep, err
	}
	l.startOffset = l.segs[0].base
	if err := l.checkDerivedFiles(rep); err != nil {
		return rep, err
	}
	if err := l.syncRecovered(end, rp, cut != nil); err != nil {
		return rep, err
	}
	if err := l.openRecoveryPoint(end, rp); err != nil {
		return rep, err
	}
	l.synced = end
	rep.Segments = len(l.segs)
	rep.LogStartOffset = l.startOffset
	rep.LogEndOffset = end
	if len(rep.RebuiltFiles) > 0 {
		l.logger.LogAttrs(context.Background(), slog.LevelInfo, "rebuilt derived files of metadata log",
			slog.String(attrFile, l.dir), slog.String("files", strings.Join(rep.RebuiltFiles, ",")))
	}
	return rep, nil
}

// listSegments lists the partition directory and returns the base offsets
// of its segments, ascending. On the way it deletes the leftovers
// isLeftover names and the index files of no segment, adding their names
// to rep.RemovedFiles.
func (l *Log) listSegments(rep *RecoveryReport) ([]int64, error) {
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: list %s: %w", l.dir, err)
	}
	var bases []int64
	indexFiles := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if base, ok := parseSegmentName(name, logSuffix); ok {
			bases = append(bases, base)
			continue
		}
		_, isIdx := parseSegmentName(name, indexSuffix)
		_, isTidx := parseSegmentName(name, timeIndexSuffix)
		if isIdx || isTidx {
			indexFiles[name] = true
			continue
		}
		if l.isLeftover(name) {
			if err := l.fsys.Remove(filepath.Join(l.dir, name)); err != nil && !isNotExist(err) {
				return nil, fmt.Errorf("logstore: delete leftover %s: %w", name, err)
			}
			rep.RemovedFiles = append(rep.RemovedFiles, name)
		}
	}
	slices.Sort(bases)
	if err := l.removeOrphanIndexes(indexFiles, bases, rep); err != nil {
		return nil, err
	}
	return bases, nil
}

// removeOrphanIndexes deletes the index files among indexFiles whose
// segment is not among bases (ascending), adding their names to
// rep.RemovedFiles. It deletes them in name order, so that a recovery is
// deterministic, its report and the file system's operations alike.
func (l *Log) removeOrphanIndexes(indexFiles map[string]bool, bases []int64, rep *RecoveryReport) error {
	for _, name := range slices.Sorted(maps.Keys(indexFiles)) {
		base, ok := parseSegmentName(name, indexSuffix)
		if !ok {
			base, _ = parseSegmentName(name, timeIndexSuffix)
		}
		if _, found := slices.BinarySearch(bases, base); !found {
			if err := l.fsys.Remove(filepath.Join(l.dir, name)); err != nil && !isNotExist(err) {
				return fmt.Errorf("logstore: delete orphan index %s: %w", name, err)
			}
			rep.RemovedFiles = append(rep.RemovedFiles, name)
		}
	}
	return nil
}

// scanSegments opens and validates the segments at bases (ascending) in
// order (openAndScan), adding each one it keeps to l.segs. The first bad
// batch is classified (classifyBadBatch): scanSegments fails on damage to
// durable data, reports zeroTail when the last segment ends in zeros, and
// otherwise returns the tail to cut, deleting every later segment
// (dropSegment). It truncates nothing: cutZeroTail and cutTail do.
func (l *Log) scanSegments(bases []int64, rp diskRecoveryPoint, rep *RecoveryReport) (cut *Truncation, zeroTail bool, err error) {
	lim := scanLimits{maxBatchBytes: l.opts.MaxBatchBytes, interval: l.opts.IndexIntervalBytes, tailCap: l.opts.tailCap()}
	lastEpoch := int32(0)
	for i, base := range bases {
		if cut != nil {
			// Everything after a cut tail goes.
			if err := l.dropSegment(base, cut, rep); err != nil {
				return nil, false, err
			}
			continue
		}
		s, size, bad, err := l.openAndScan(base, lastEpoch, lim, rep)
		if err != nil {
			return nil, false, err
		}
		if e, ok := l.epochs.latest(); ok {
			lastEpoch = e.Epoch
		}
		if bad == nil {
			continue
		}
		cut, zeroTail, err = l.classifyBadBatch(s, size, bad, i == len(bases)-1, rp, rep)
		if err != nil {
			return nil, false, err
		}
	}
	return cut, zeroTail, nil
}

// dropSegment deletes the files of the segment at base, which comes after
// the tail cut describes, adding its size to cut.BytesDropped and its name
// to rep.RemovedFiles.
func (l *Log) dropSegment(base int64, cut *Truncation, rep *RecoveryReport) error {
	s := newSegmentState(l.dir, base)
	n, err := fileSize(l.fsys, s.path(logSuffix))
	if err != nil {
		return err
	}
	cut.BytesDropped += n
	if err := s.removeFiles(l.fsys); err != nil {
		return err
	}
	rep.RemovedFiles = append(rep.RemovedFiles, segmentName(base, logSuffix))
	return nil
}

// openAndScan opens the segment at base, appends it to l.segs and
// validates its batches (scanSegment) from lastEpoch, the epoch of the
// batches before it, adding each valid one to the epoch cache and
// rep.Batches. It fails with a *CorruptionError when base does not
// continue the previous segment. It returns the segment, the size of its
// file, and its first bad batch (nil when every byte is a valid batch).
func (l *Log) openAndScan(base int64, lastEpoch int32, lim scanLimits, rep *RecoveryReport) (*segment, int64, *batchError, error) {
	s := newSegmentState(l.dir, base)
	f, err := l.fsys.OpenFile(s.path(logSuffix), os.O_RDWR, 0)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("logstore: open segment %s: %w", s.path(logSuffix), err)
	}
	s.log = f
	l.segs = append(l.segs, s)
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, nil, fmt.Errorf("logstore: stat segment %s: %w", s.path(logSuffix), err)
	}
	if n := len(l.segs); n > 1 {
		prev := l.segs[n-2]
		if base != prev.next {
			return nil, 0, nil, &CorruptionError{Segment: s.path(logSuffix), Offset: prev.next, Position: 0,
				Reason: fmt.Sprintf("segment base offset %d does not continue the previous segment, which ends at offset %d", base, prev.next)}
		}
	}
	bad, err := scanSegment(s, f, fi.Size(), lastEpoch, lim, func(h *recordbatch.Header) {
		rep.Batches++
		l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	})
	if err != nil {
		return nil, 0, nil, err
	}
	return s, fi.Size(), bad, nil
}

// classifyBadBatch says what bad, the first bad batch of s (whose file is
// size bytes; last when s is the directory's last segment), is, as step 4
// of [Open] does. Damage to durable data (below the recovery point, or,
// without one, in a segment that is not the last) fails with a
// *CorruptionError. Zeros from bad to the end of the last segment are the
// log's end: it reports zeroTail and sets rep.ZeroTailBytes. Anything else
// is a torn tail, returned as the cut to make at bad.
func (l *Log) classifyBadBatch(s *segment, size int64, bad *batchError, last bool, rp diskRecoveryPoint, rep *RecoveryReport) (cut *Truncation, zeroTail bool, err error) {
	// Z18 cuts the log at the first bad batch, even in durable data.
	durable := !bugzoo.Active(bugzoo.Z18) && ((rp.found && bad.offset < rp.offset) || (!rp.found && !last))
	if durable {
		why := "in a segment that is not the last one"
		if rp.found {
			why = fmt.Sprintf("below the recovery point %d", rp.offset)
		}
		return nil, false, &CorruptionError{Segment: s.path(logSuffix), Offset: bad.offset, Position: bad.pos,
			Reason: bad.reason + " (" + why + ": this data was durable)"}
	}
	if last {
		zero, err := allZero(s.log, bad.pos, size)
		if err != nil {
			return nil, false, fmt.Errorf("logstore: read segment %s at byte %d: %w", s.path(logSuffix), bad.pos, err)
		}
		if zero {
			// The log's end: preallocated space a crash left.
			rep.ZeroTailBytes = size - bad.pos
			return nil, true, nil
		}
	}
	return &Truncation{Segment: s.path(logSuffix), Position: bad.pos, Offset: bad.offset, Reason: bad.reason, BytesDropped: size - bad.pos}, false, nil
}

// cutZeroTail truncates the active segment, whose last dropped bytes were
// zeros, at its last batch and fsyncs it.
func (l *Log) cutZeroTail(dropped int64) error {
	// Only the last segment changes. Synced, like a cut, before the
	// recovery point is set at the new end.
	s := l.active()
	if err := s.log.Truncate(s.size); err != nil {
		return fmt.Errorf("logstore: cut the zero tail of segment %s at %d bytes: %w", s.path(logSuffix), s.size, err)
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err)
	}
	l.logger.LogAttrs(context.Background(), slog.LevelInfo, "cut zero-filled tail of metadata log (preallocated space)",
		slog.String(attrFile, s.path(logSuffix)), slog.Int64(attrOffset, s.next), slog.Int64(attrPos, s.size),
		slog.Int64(attrDropped, dropped))
	return nil
}

// cutTail truncates the active segment, the one cut names, at
// cut.Position and fsyncs it, after making the deletion of the later
// segments (dropSegment) durable, and logs the cut at WARN.
func (l *Log) cutTail(cut *Truncation) error {
	// Later segments are deleted (above) and the deletion made durable
	// before the cut segment shrinks, so that a crash in between
	// cannot leave segments that no longer continue the cut one.
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("logstore: sync directory %s: %w", l.dir, err)
	}
	s := l.active()
	if err := s.log.Truncate(cut.Position); err != nil {
		return fmt.Errorf("logstore: truncate segment %s to %d bytes: %w", cut.Segment, cut.Position, err)
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("logstore: sync segment %s: %w", cut.Segment, err)
	}
	l.logger.LogAttrs(context.Background(), slog.LevelWarn, "cut torn or corrupt tail of metadata log",
		slog.String(attrFile, cut.Segment), slog.Int64(attrOffset, cut.Offset), slog.Int64(attrPos, cut.Position),
		slog.String(attrReason, cut.Reason), slog.Int64(attrDropped, cut.BytesDropped))
	return nil
}

// settleSegments leaves the kept segments as appends would have: an empty
// segment at offset 0 when the directory had none, a tail only in the
// active segment, and every file's allocated end at its last batch.
func (l *Log) settleSegments() error {
	if len(l.segs) == 0 {
		s, err := createSegment(l.fsys, l.dir, 0)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
	}
	// The scan built every segment's tail; only the active one keeps it.
	for _, s := range l.segs[:len(l.segs)-1] {
		s.forgetTail()
	}
	// Every file now ends with its last batch: a fully valid file does,
	// and a cut or a zero tail was truncated there.
	for _, s := range l.segs {
		s.alloc = s.size
	}
	return nil
}

// checkEnd fails with a *CorruptionError when the recovered log ends at
// end, below the recovery point rp: synced data is missing (step 5 of
// [Open]).
func (l *Log) checkEnd(end int64, rp diskRecoveryPoint) error {
	if rp.found && end < rp.offset && !bugzoo.Active(bugzoo.Z18) {
		s := l.active()
		return &CorruptionError{Segment: s.path(logSuffix), Offset: end, Position: s.size,
			Reason: fmt.Sprintf("log ends at offset %d, below the recovery point %d: synced data is missing", end, rp.offset)}
	}
	return nil
}

// rebuildIndexes gives every sealed segment its close-time entry, then
// compares each segment's index files with the indexes the scan rebuilt
// (openIndexes), adding the files it rewrites to rep.RebuiltFiles.
func (l *Log) rebuildIndexes(rep *RecoveryReport) error {
	for i, s := range l.segs {
		if i < len(l.segs)-1 {
			s.maybeAppendTime()
			s.closedTimeEntry = true
		}
		rebuilt, err := l.openIndexes(s, i == len(l.segs)-1)
		if err != nil {
			return err
		}
		rep.RebuiltFiles = append(rep.RebuiltFiles, rebuilt...)
	}
	return nil
}

// syncRecovered fsyncs what recovery kept, up to end, unless the recovery
// point rp already covers it and nothing was cut (cut). Segments wholly
// below the old recovery point were synced and are skipped, unless a tail
// was cut.
func (l *Log) syncRecovered(end int64, rp diskRecoveryPoint, cut bool) error {
	if rp.found && end == rp.offset && !cut {
		return nil
	}
	for _, s := range l.segs {
		if rp.found && s.next <= rp.offset && !cut {
			continue
		}
		if err := s.log.Sync(); err != nil {
			return fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err)
		}
	}
	return nil
}

// openRecoveryPoint opens the recovery-point file rp was read from, or
// creates it when there was none, and makes end, which syncRecovered made
// durable, the recovery point.
func (l *Log) openRecoveryPoint(end int64, rp diskRecoveryPoint) error {
	if !rp.found {
		f, err := createRecoveryPoint(l.fsys, l.dir, 1, end)
		if err != nil {
			return err
		}
		l.rp = f
		return nil
	}
	path := filepath.Join(l.dir, RecoveryPointFileName)
	f, err := l.fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("logstore: open recovery point: %w", err)
	}
	l.rp = &recoveryPoint{path: path, f: f, seq: rp.seq, offset: rp.offset}
	if end != rp.offset {
		return l.rp.set(end)
	}
	return nil
}

// isLeftover reports whether name is a file recovery deletes: an
// interrupted atomic rewrite of one of our files, or a segment file Kafka
// marked for deletion or left from cleaning (the metadata log is never
// compacted, so .cleaned files carry nothing).
func (l *Log) isLeftover(name string) bool {
	for _, f := range ourTmpFiles {
		if name == f+tmpSuffix {
			return true
		}
	}
	for _, marker := range []string{".deleted", ".cleaned"} {
		stem, ok := strings.CutSuffix(name, marker)
		if !ok {
			continue
		}
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, ".txnindex"} {
			if _, ok := parseSegmentName(stem, suffix); ok {
				return true
			}
		}
	}
	return false
}

// allZero reports whether the bytes [from, to) of r are all zero.
func allZero(r io.ReaderAt, from, to int64) (bool, error) {
	buf := make([]byte, min(to-from, scanWindow))
	for pos := from; pos < to; {
		b := buf[:min(int64(len(buf)), to-pos)]
		if n, err := r.ReadAt(b, pos); n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
		for _, c := range b {
			if c != 0 {
				return false, nil
			}
		}
		pos += int64(len(b))
	}
	return true, nil
}

func fileSize(fsys vfs.FS, path string) (int64, error) {
	fi, err := fsys.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("logstore: stat %s: %w", path, err)
	}
	return fi.Size(), nil
}
