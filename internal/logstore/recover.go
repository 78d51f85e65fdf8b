package logstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

func (l *Log) recover() (*RecoveryReport, error) {
	rep := &RecoveryReport{RecoveryPoint: -1}
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return rep, fmt.Errorf("logstore: list %s: %w", l.dir, err)
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
				return rep, fmt.Errorf("logstore: delete leftover %s: %w", name, err)
			}
			rep.RemovedFiles = append(rep.RemovedFiles, name)
		}
	}
	slices.Sort(bases)
	for name := range indexFiles {
		base, ok := parseSegmentName(name, indexSuffix)
		if !ok {
			base, _ = parseSegmentName(name, timeIndexSuffix)
		}
		if _, found := slices.BinarySearch(bases, base); !found {
			if err := l.fsys.Remove(filepath.Join(l.dir, name)); err != nil && !isNotExist(err) {
				return rep, fmt.Errorf("logstore: delete orphan index %s: %w", name, err)
			}
			rep.RemovedFiles = append(rep.RemovedFiles, name)
		}
	}

	rpOffset, rpSeq, rpFound, err := readRecoveryPoint(l.fsys, l.dir)
	if err != nil {
		return rep, err
	}
	if rpFound {
		rep.RecoveryPoint = rpOffset
	}

	lim := scanLimits{maxBatchBytes: l.opts.MaxBatchBytes, interval: l.opts.IndexIntervalBytes, tailCap: l.opts.tailCap()}
	var cut *Truncation
	zeroTail := false
	lastEpoch := int32(0)
	for i, base := range bases {
		s := newSegmentState(l.dir, base)
		if cut != nil {
			// Everything after a cut tail goes.
			n, err := fileSize(l.fsys, s.path(logSuffix))
			if err != nil {
				return rep, err
			}
			cut.BytesDropped += n
			if err := s.removeFiles(l.fsys); err != nil {
				return rep, err
			}
			rep.RemovedFiles = append(rep.RemovedFiles, segmentName(base, logSuffix))
			continue
		}
		f, err := l.fsys.OpenFile(s.path(logSuffix), os.O_RDWR, 0)
		if err != nil {
			return rep, fmt.Errorf("logstore: open segment %s: %w", s.path(logSuffix), err)
		}
		s.log = f
		l.segs = append(l.segs, s)
		fi, err := f.Stat()
		if err != nil {
			return rep, fmt.Errorf("logstore: stat segment %s: %w", s.path(logSuffix), err)
		}
		if i > 0 {
			prev := l.segs[i-1]
			if base != prev.next {
				return rep, &CorruptionError{Segment: s.path(logSuffix), Offset: prev.next, Position: 0,
					Reason: fmt.Sprintf("segment base offset %d does not continue the previous segment, which ends at offset %d", base, prev.next)}
			}
		}
		bad, err := scanSegment(s, f, fi.Size(), lastEpoch, lim, func(h *recordbatch.Header) {
			rep.Batches++
			l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		})
		if err != nil {
			return rep, err
		}
		if e, ok := l.epochs.latest(); ok {
			lastEpoch = e.Epoch
		}
		if bad == nil {
			continue
		}
		last := i == len(bases)-1
		// Z18 cuts the log at the first bad batch, even in durable data.
		durable := !bugzoo.Active(bugzoo.Z18) && ((rpFound && bad.offset < rpOffset) || (!rpFound && !last))
		if durable {
			why := "in a segment that is not the last one"
			if rpFound {
				why = fmt.Sprintf("below the recovery point %d", rpOffset)
			}
			return rep, &CorruptionError{Segment: s.path(logSuffix), Offset: bad.offset, Position: bad.pos,
				Reason: bad.reason + " (" + why + ": this data was durable)"}
		}
		if last {
			zero, err := allZero(f, bad.pos, fi.Size())
			if err != nil {
				return rep, fmt.Errorf("logstore: read segment %s at byte %d: %w", s.path(logSuffix), bad.pos, err)
			}
			if zero {
				// The log's end: preallocated space a crash left.
				zeroTail = true
				rep.ZeroTailBytes = fi.Size() - bad.pos
				continue
			}
		}
		cut = &Truncation{Segment: s.path(logSuffix), Position: bad.pos, Offset: bad.offset, Reason: bad.reason, BytesDropped: fi.Size() - bad.pos}
	}
	if zeroTail {
		// Only the last segment changes. Synced, like a cut, before the
		// recovery point is set at the new end.
		s := l.active()
		if err := s.log.Truncate(s.size); err != nil {
			return rep, fmt.Errorf("logstore: cut the zero tail of segment %s at %d bytes: %w", s.path(logSuffix), s.size, err)
		}
		if err := s.log.Sync(); err != nil {
			return rep, fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err)
		}
		l.logger.LogAttrs(context.Background(), slog.LevelInfo, "cut zero-filled tail of metadata log (preallocated space)",
			slog.String(attrFile, s.path(logSuffix)), slog.Int64(attrOffset, s.next), slog.Int64(attrPos, s.size),
			slog.Int64(attrDropped, rep.ZeroTailBytes))
	}
	if cut != nil {
		rep.Truncation = cut
		// Later segments are deleted (above) and the deletion made durable
		// before the cut segment shrinks, so that a crash in between
		// cannot leave segments that no longer continue the cut one.
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return rep, fmt.Errorf("logstore: sync directory %s: %w", l.dir, err)
		}
		s := l.active()
		if err := s.log.Truncate(cut.Position); err != nil {
			return rep, fmt.Errorf("logstore: truncate segment %s to %d bytes: %w", cut.Segment, cut.Position, err)
		}
		if err := s.log.Sync(); err != nil {
			return rep, fmt.Errorf("logstore: sync segment %s: %w", cut.Segment, err)
		}
		l.logger.LogAttrs(context.Background(), slog.LevelWarn, "cut torn or corrupt tail of metadata log",
			slog.String(attrFile, cut.Segment), slog.Int64(attrOffset, cut.Offset), slog.Int64(attrPos, cut.Position),
			slog.String(attrReason, cut.Reason), slog.Int64(attrDropped, cut.BytesDropped))
	}
	if len(l.segs) == 0 {
		s, err := createSegment(l.fsys, l.dir, 0)
		if err != nil {
			return rep, err
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
	end := l.active().next
	if rpFound && end < rpOffset && !bugzoo.Active(bugzoo.Z18) {
		s := l.active()
		return rep, &CorruptionError{Segment: s.path(logSuffix), Offset: end, Position: s.size,
			Reason: fmt.Sprintf("log ends at offset %d, below the recovery point %d: synced data is missing", end, rpOffset)}
	}

	// Indexes: the close-time entry of every sealed segment, then compare
	// with the files.
	for i, s := range l.segs {
		if i < len(l.segs)-1 {
			s.maybeAppendTime()
			s.closedTimeEntry = true
		}
		rebuilt, err := l.openIndexes(s, i == len(l.segs)-1)
		if err != nil {
			return rep, err
		}
		rep.RebuiltFiles = append(rep.RebuiltFiles, rebuilt...)
	}

	l.startOffset = l.segs[0].base
	if err := l.checkDerivedFiles(rep); err != nil {
		return rep, err
	}

	// Make what recovery kept durable and protect it with the recovery
	// point. Segments wholly below the old recovery point were synced.
	if !rpFound || end != rpOffset || cut != nil {
		for _, s := range l.segs {
			if rpFound && s.next <= rpOffset && cut == nil {
				continue
			}
			if err := s.log.Sync(); err != nil {
				return rep, fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err)
			}
		}
	}
	if rpFound {
		f, err := l.fsys.OpenFile(filepath.Join(l.dir, RecoveryPointFileName), os.O_RDWR, 0)
		if err != nil {
			return rep, fmt.Errorf("logstore: open recovery point: %w", err)
		}
		l.rp = &recoveryPoint{path: filepath.Join(l.dir, RecoveryPointFileName), f: f, seq: rpSeq, offset: rpOffset}
		if end != rpOffset {
			if err := l.rp.set(end); err != nil {
				return rep, err
			}
		}
	} else {
		rp, err := createRecoveryPoint(l.fsys, l.dir, 1, end)
		if err != nil {
			return rep, err
		}
		l.rp = rp
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
