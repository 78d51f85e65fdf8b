package logstore

import (
	"bytes"
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

// Open opens (creating when needed) the partition directory dir, for
// example "<metadata.log.dir>/__cluster_metadata-0", and recovers it:
//
//  1. takes the exclusive lock dir/.lock ([ErrLocked] when held);
//  2. deletes leftovers of interrupted writes (*.tmp of our atomic files,
//     *.deleted and *.cleaned segment files, index files with no .log);
//  3. validates every batch of every segment, as Kafka does for the
//     metadata log on every start: length bounds, magic, CRC-32C, offsets
//     contiguous from each segment's base, epochs never decreasing,
//     LastOffsetDelta+1 records;
//  4. classifies the first bad batch: below the recovery point (or, in a
//     directory without one, in a segment that is not the last) it is
//     damage to data that was durable, and Open fails with a
//     *[CorruptionError]; otherwise, when only zeros follow in the last
//     segment, it is the log's end (preallocated space a crash left),
//     which is cut and counted in RecoveryReport.ZeroTailBytes; otherwise
//     it is a torn tail, which is cut at the first bad byte (with every
//     later segment), reported in the [RecoveryReport] and logged at WARN;
//  5. fails with a *[CorruptionError] when the log ends below the recovery
//     point (synced data is missing);
//  6. rebuilds the offset and time indexes and the leader-epoch cache from
//     the batches, rewriting files that are missing or differ;
//  7. fsyncs what recovery kept and records it as the new recovery point,
//     so that everything the log holds after Open is protected.
//
// The log start offset is the first segment's base offset.
func Open(fsys vfs.FS, dir string, opts Options) (*Log, *RecoveryReport, error) {
	if err := opts.Validate(); err != nil {
		return nil, nil, fmt.Errorf("logstore: open %s: invalid options: %w", dir, err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := makeDirDurable(fsys, dir); err != nil {
		return nil, nil, err
	}
	lock, err := LockDir(fsys, dir)
	if err != nil {
		return nil, nil, err
	}
	l := &Log{fsys: fsys, dir: dir, opts: opts, logger: logger, lock: lock, chunk: make([]byte, chunkSize(opts.IndexIntervalBytes))}
	l.syncIdle.L = &l.mu
	rep, err := l.recover()
	if err != nil {
		for _, s := range l.segs {
			_ = s.closeFiles()
		}
		if l.rp != nil {
			_ = l.rp.close()
		}
		_ = lock.Close()
		return nil, rep, err
	}
	logger.LogAttrs(context.Background(), slog.LevelInfo, "metadata log opened",
		slog.String(attrFile, dir),
		slog.Int64("log_start_offset", rep.LogStartOffset),
		slog.Int64("log_end_offset", rep.LogEndOffset),
		slog.Int64("recovery_point", rep.RecoveryPoint),
		slog.Int("segments", rep.Segments))
	return l, rep, nil
}

// MkdirAllDurable creates dir and its missing parents durably, as
// [Open] creates the partition directory: each created directory's parent
// is fsynced, so that a power loss does not take the new directories (and
// everything later written in them) away.
func MkdirAllDurable(fsys vfs.FS, dir string) error { return makeDirDurable(fsys, dir) }

// makeDirDurable creates dir and its missing parents, and fsyncs the parent
// of every directory it created, so that the new directories survive a
// crash: a file's fsync does not make its directory's own entry durable.
func makeDirDurable(fsys vfs.FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !isNotExist(err) {
			return fmt.Errorf("logstore: stat %s: %w", d, err)
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("logstore: create directory %s: %w", dir, err)
	}
	for i := len(created) - 1; i >= 0; i-- {
		parent := filepath.Dir(created[i])
		if err := fsys.SyncDir(parent); err != nil {
			return fmt.Errorf("logstore: sync directory %s: %w", parent, err)
		}
	}
	return nil
}

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

// openIndexes opens s's index files, compares them with the rebuilt
// in-memory indexes and rewrites them when they differ. For the active
// segment a time index holding one extra close-time entry (Kafka appends
// one when it closes a segment) is accepted and adopted.
func (l *Log) openIndexes(s *segment, active bool) ([]string, error) {
	var rebuilt []string
	want := encodeOffsetIndex(s.index)
	f, changed, err := l.syncIndexFile(s.path(indexSuffix), want, nil)
	if err != nil {
		return nil, err
	}
	s.idx = f
	if changed {
		rebuilt = append(rebuilt, filepath.Base(s.path(indexSuffix)))
	}
	wantT := encodeTimeIndex(s.timeIndex)
	var alt []byte
	if active {
		c := *s
		c.timeIndex = slices.Clone(s.timeIndex)
		if c.maybeAppendTime() {
			alt = encodeTimeIndex(c.timeIndex)
		}
	}
	f, changed, err = l.syncIndexFile(s.path(timeIndexSuffix), wantT, alt)
	if err != nil {
		return nil, err
	}
	s.tidx = f
	if changed {
		rebuilt = append(rebuilt, filepath.Base(s.path(timeIndexSuffix)))
	} else if alt != nil {
		if fi, err := f.Stat(); err == nil && fi.Size() == int64(len(alt)) {
			s.maybeAppendTime()
			s.closedTimeEntry = true
		}
	}
	return rebuilt, nil
}

// syncIndexFile opens path and makes its content want (or alt, when it
// already holds alt), rewriting it in place when it differs. It reports
// whether the file was rewritten.
func (l *Log) syncIndexFile(path string, want, alt []byte) (vfs.File, bool, error) {
	f, err := l.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("logstore: open index %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("logstore: stat index %s: %w", path, err)
	}
	size := fi.Size()
	if size == int64(len(want)) || (alt != nil && size == int64(len(alt))) {
		got := make([]byte, size)
		if _, err := f.ReadAt(got, 0); err != nil && !errors.Is(err, io.EOF) {
			_ = f.Close()
			return nil, false, fmt.Errorf("logstore: read index %s: %w", path, err)
		}
		if bytes.Equal(got, want) || (alt != nil && bytes.Equal(got, alt)) {
			return f, false, nil
		}
	}
	if err := f.Truncate(0); err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("logstore: rebuild index %s: %w", path, err)
	}
	if _, err := f.WriteAt(want, 0); err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("logstore: rebuild index %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("logstore: sync index %s: %w", path, err)
	}
	return f, true, nil
}

// checkDerivedFiles rewrites leader-epoch-checkpoint and partition.metadata
// when they are missing or differ from what the log says.
func (l *Log) checkDerivedFiles(rep *RecoveryReport) error {
	want := EncodeLeaderEpochCheckpoint(l.epochs.entries)
	got, err := readSmallFile(l.fsys, filepath.Join(l.dir, LeaderEpochCheckpointFileName), maxEpochCheckpointBytes)
	if err != nil || !bytes.Equal(got, want) {
		if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, l.epochs.entries); err != nil {
			return err
		}
		rep.RebuiltFiles = append(rep.RebuiltFiles, LeaderEpochCheckpointFileName)
	}
	id, err := ReadPartitionMetadata(l.fsys, l.dir)
	if err != nil || id != MetadataTopicID {
		if err == nil {
			return fmt.Errorf("logstore: %s names topic id %v, not the metadata topic %v", filepath.Join(l.dir, PartitionMetadataFileName), id, MetadataTopicID)
		}
		if err := WritePartitionMetadata(l.fsys, l.dir, MetadataTopicID); err != nil {
			return err
		}
		rep.RebuiltFiles = append(rep.RebuiltFiles, PartitionMetadataFileName)
	}
	return nil
}
