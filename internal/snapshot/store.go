package snapshot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// Store serves byte ranges of the snapshots in one directory to
// FetchSnapshot and deletes snapshots without pulling a file from under
// a reader.
//
// # Deleting while reading
//
// Kafka renames a deleted snapshot to .checkpoint.deleted at once and
// removes the file file.delete.delay.ms (60 s) later, hoping that readers
// are done by then. The Store counts readers instead: [Store.Delete]
// renames the snapshot to its .deleted name at once (from then on it is
// not listed, not loaded and not served: new reads get [ErrNotFound]),
// and removes the file when the last [RangeReader] open on it closes,
// or at once when none is. Open readers keep reading through their open
// file, which a rename does not disturb. If the process dies first, the
// .deleted file is removed by [Recover] at the next start.
//
// A Store is safe for concurrent use. Its mutex is held while a file is
// opened, renamed or removed, never during a read.
type Store struct {
	fs  vfs.FS
	dir string

	mu     sync.Mutex
	refs   map[kraft.OffsetAndEpoch]int
	doomed map[kraft.OffsetAndEpoch]bool // renamed to .deleted, removal waiting for readers
}

// NewStore returns a Store for the snapshots in directory dir.
func NewStore(fsys vfs.FS, dir string) *Store {
	return &Store{fs: fsys, dir: dir, refs: map[kraft.OffsetAndEpoch]int{}, doomed: map[kraft.OffsetAndEpoch]bool{}}
}

// Dir returns the directory.
func (s *Store) Dir() string { return s.dir }

// Path returns the path of snapshot id.
func (s *Store) Path(id kraft.OffsetAndEpoch) string { return filepath.Join(s.dir, FileName(id)) }

// RangeReader is an open snapshot being served in chunks. It holds the
// file open and keeps [Store.Delete] from removing it until Close.
// Its methods may be called from several goroutines.
type RangeReader struct {
	s    *Store
	id   kraft.OffsetAndEpoch
	f    vfs.File
	size int64

	mu     sync.Mutex
	closed bool
}

// OpenRange opens snapshot id for range reads. The 0-0 bootstrap snapshot is
// never served (KafkaRaftClient.handleFetchSnapshotRequest answers
// SNAPSHOT_NOT_FOUND for it), so it and missing or deleted snapshots fail
// with [ErrNotFound].
func (s *Store) OpenRange(id kraft.OffsetAndEpoch) (*RangeReader, error) {
	if !id.Valid() || id == Bootstrap {
		return nil, fmt.Errorf("snapshot: open %s for reading: %w", idString(id), ErrNotFound)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doomed[id] {
		return nil, fmt.Errorf("snapshot: open %s for reading: deleted: %w", idString(id), ErrNotFound)
	}
	f, err := s.fs.OpenFile(s.Path(id), os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("snapshot: open %s for reading: %w: %w", idString(id), ErrNotFound, err)
		}
		return nil, fmt.Errorf("snapshot: open %s for reading: %w", idString(id), err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close() // the Stat error is the one to report
		return nil, fmt.Errorf("snapshot: open %s for reading: %w", idString(id), err)
	}
	s.refs[id]++
	return &RangeReader{s: s, id: id, f: f, size: fi.Size()}, nil
}

// ReadRange returns the bytes [position, position+maxBytes) of snapshot
// id, clipped at the end of the file and at [MaxRangeBytes], and the
// file's total size: one
// FetchSnapshot response's UnalignedRecords and Size. It opens the file,
// reads and closes it; a leader serving many chunks of one snapshot may
// keep a [RangeReader] open instead.
func (s *Store) ReadRange(id kraft.OffsetAndEpoch, position int64, maxBytes int) ([]byte, int64, error) {
	r, err := s.OpenRange(id)
	if err != nil {
		return nil, 0, err
	}
	b, size, err := r.ReadRange(position, maxBytes)
	return b, size, errors.Join(err, r.Close())
}

// ID returns the snapshot being read.
func (r *RangeReader) ID() kraft.OffsetAndEpoch { return r.id }

// Size returns the snapshot's size in bytes.
func (r *RangeReader) Size() int64 { return r.size }

// MaxRangeBytes caps the bytes one range read returns, whatever maxBytes
// the request carries: 8 MiB, what Kafka used as the fixed
// FetchSnapshot size before 4.3 (its default is now 1 MiB). Kafka sends a
// zero-copy slice of the file; a range read here allocates, so the cap
// bounds the allocation. The follower simply asks for the next chunk.
const MaxRangeBytes = 8 << 20

// ReadRange returns the bytes [position, position+min(maxBytes,
// MaxRangeBytes)) of the snapshot, clipped at its end, and its total
// size. A position outside [0, size) is a *PositionError
// (ErrPositionOutOfRange); maxBytes must be positive. The returned slice
// is newly allocated.
func (r *RangeReader) ReadRange(position int64, maxBytes int) ([]byte, int64, error) {
	if position < 0 || position >= r.size {
		return nil, r.size, &PositionError{ID: r.id, Position: position, Size: r.size}
	}
	if maxBytes <= 0 {
		return nil, r.size, fmt.Errorf("snapshot: read %s: max bytes %d is not positive", idString(r.id), maxBytes)
	}
	n := min(int64(maxBytes), MaxRangeBytes, r.size-position)
	buf := make([]byte, n)
	r.mu.Lock()
	closed := r.closed
	var got int
	var err error
	if !closed {
		got, err = r.f.ReadAt(buf, position)
	}
	r.mu.Unlock()
	if closed {
		return nil, r.size, fmt.Errorf("snapshot: read %s: %w", idString(r.id), ErrClosed)
	}
	if int64(got) != n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, r.size, fmt.Errorf("snapshot: read %s at %d: %w", idString(r.id), position, err)
	}
	return buf, r.size, nil
}

// Close releases the reader. When it was the last reader of a snapshot
// that [Store.Delete] marked meanwhile, Close removes the file and
// returns the error of that removal. Close is idempotent.
func (r *RangeReader) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	err := r.f.Close()
	if err != nil {
		err = fmt.Errorf("snapshot: close %s: %w", idString(r.id), err)
	}
	return errors.Join(err, r.s.release(r.id))
}

func (s *Store) release(id kraft.OffsetAndEpoch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs[id]--
	if s.refs[id] > 0 {
		return nil
	}
	delete(s.refs, id)
	if !s.doomed[id] {
		return nil
	}
	delete(s.doomed, id)
	return RemoveDeleted(s.fs, s.dir, id)
}

// Delete deletes snapshot id: it renames the file to its .deleted name
// and syncs the directory ([MarkDeleted]), then removes the file at once
// if no RangeReader has it open, or else when the last one closes. It
// reports whether the removal was deferred. A missing snapshot is
// [ErrNotFound].
func (s *Store) Delete(id kraft.OffsetAndEpoch) (deferred bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doomed[id] {
		return true, nil
	}
	if err := MarkDeleted(s.fs, s.dir, id); err != nil {
		return false, err
	}
	if s.refs[id] > 0 {
		s.doomed[id] = true
		return true, nil
	}
	return false, RemoveDeleted(s.fs, s.dir, id)
}
