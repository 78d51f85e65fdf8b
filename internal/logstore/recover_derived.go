package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/krabka-go/krabka/internal/vfs"
)

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
