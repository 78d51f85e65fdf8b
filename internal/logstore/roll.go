package logstore

import (
	"errors"
	"fmt"
	"os"

	"github.com/krabka-go/krabka/internal/vfs"
)

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
