package logstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/vfs"
)

// LockFileName is the lock file [Open] takes in the partition directory.
// Kafka's own lock is "<metadata.log.dir>/.lock"; the runtime can take that
// one with [LockDir].
const LockFileName = ".lock"

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
