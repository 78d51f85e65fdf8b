package snapshot

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// TestReadRange checks FetchSnapshot's byte ranges
// (KafkaRaftClient.handleFetchSnapshotRequest): the bytes from Position, at
// most MaxBytes, clipped at the end; positions outside [0, size) refused; the
// 0-0 bootstrap snapshot and missing snapshots not found.
func TestReadRange(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	s, data := leaderSnapshot(t, id, 20)
	size := int64(len(data))
	for _, c := range []struct {
		pos  int64
		max  int
		want []byte
	}{
		{0, 10, data[:10]},
		{0, len(data) + 100, data},
		{size - 1, 10, data[size-1:]},
		{17, 1, data[17:18]},
	} {
		got, total, err := s.ReadRange(id, c.pos, c.max)
		if err != nil || total != size || !bytes.Equal(got, c.want) {
			t.Errorf("ReadRange(%d, %d) = %d bytes, %d, %v; want %d bytes, %d", c.pos, c.max, len(got), total, err, len(c.want), size)
		}
	}
	for _, pos := range []int64{-1, size, size + 10} {
		_, total, err := s.ReadRange(id, pos, 10)
		var pe *PositionError
		if !errors.As(err, &pe) || !errors.Is(err, ErrPositionOutOfRange) || pe.Size != size || pe.Position != pos || total != size {
			t.Errorf("ReadRange at %d: %v, total %d", pos, err, total)
		}
	}
	if _, _, err := s.ReadRange(id, 0, 0); err == nil {
		t.Error("ReadRange with maxBytes 0 succeeded")
	}
	if _, _, err := s.ReadRange(kraft.OffsetAndEpoch{Offset: 5, Epoch: 5}, 0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadRange of a missing snapshot: %v", err)
	}
	// The 0-0 bootstrap snapshot exists but is never served.
	m := vfs.NewMem()
	writeSnapshot(t, m, "/d", Bootstrap, Header{KRaftVersion: 1, Voters: testVoters()}, nil, 1, WriterOptions{})
	if _, _, err := NewStore(m, "/d").ReadRange(Bootstrap, 0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadRange of 0-0: %v, want ErrNotFound", err)
	}
	if s.readers(id) != 0 {
		t.Errorf("ReadRange left %d readers", s.readers(id))
	}
	if s.Dir() != "/leader" || s.Path(id) != "/leader/"+FileName(id) {
		t.Errorf("Dir %q Path %q", s.Dir(), s.Path(id))
	}
}

// TestDeleteWaitsForReaders checks the guard documented on Store: a
// snapshot deleted while a RangeReader has it open disappears from the
// directory listing at once, keeps serving the open reader, refuses new
// readers, and its file is removed when the last reader closes.
func TestDeleteWaitsForReaders(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	s, data := leaderSnapshot(t, id, 20)
	r1, err := s.OpenRange(id)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.OpenRange(id)
	if err != nil {
		t.Fatal(err)
	}
	if s.readers(id) != 2 || r1.ID() != id || r1.Size() != int64(len(data)) {
		t.Fatalf("readers %d id %v size %d", s.readers(id), r1.ID(), r1.Size())
	}
	deferred, err := s.Delete(id)
	if err != nil || !deferred {
		t.Fatalf("Delete = %v, %v; want deferred", deferred, err)
	}
	if again, err := s.Delete(id); err != nil || !again {
		t.Errorf("second Delete = %v, %v", again, err)
	}
	l, err := List(s.fs, s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Snapshots) != 0 || !slices.Equal(l.Deleted, []string{DeletedFileName(id)}) {
		t.Fatalf("listing while deleted but open: %+v", l)
	}
	if _, err := s.OpenRange(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("OpenRange of a deleted snapshot: %v", err)
	}
	got, _, err := r1.ReadRange(0, len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("open reader after Delete: %d bytes, %v", len(got), err)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := r1.ReadRange(0, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadRange after Close: %v", err)
	}
	if l, _ := List(s.fs, s.dir); len(l.Deleted) != 1 {
		t.Fatalf("file removed while a reader is still open: %+v", l)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if l, _ := List(s.fs, s.dir); len(l.Deleted) != 0 || len(l.Snapshots) != 0 {
		t.Errorf("after the last Close: %+v", l)
	}
	if s.readers(id) != 0 {
		t.Errorf("Readers = %d", s.readers(id))
	}
	if _, err := s.Delete(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete of a removed snapshot: %v", err)
	}
}

func TestDeleteWithoutReaders(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	s, _ := leaderSnapshot(t, id, 5)
	deferred, err := s.Delete(id)
	if err != nil || deferred {
		t.Fatalf("Delete = %v, %v; want immediate", deferred, err)
	}
	if l, _ := List(s.fs, s.dir); len(l.Deleted) != 0 || len(l.Snapshots) != 0 {
		t.Errorf("after Delete: %+v", l)
	}
}

// TestConcurrentReadsAndDelete runs readers and a deletion concurrently
// (go test -race checks the locking): every read either succeeds with the
// right bytes or fails with ErrNotFound, and the file is gone at the end.
func TestConcurrentReadsAndDelete(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	s, data := leaderSnapshot(t, id, 50)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				pos := int64((g*50 + i) % len(data))
				got, _, err := s.ReadRange(id, pos, 64)
				switch {
				case errors.Is(err, ErrNotFound):
				case err != nil:
					errs <- err
					return
				case !bytes.Equal(got, data[pos:min(int(pos)+64, len(data))]):
					errs <- errors.New("wrong bytes")
					return
				}
			}
		})
	}
	wg.Go(func() {
		if _, err := s.Delete(id); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if l, _ := List(s.fs, s.dir); len(l.Snapshots) != 0 || len(l.Deleted) != 0 {
		t.Errorf("after concurrent reads and delete: %+v", l)
	}
}

func TestReadRangeIsCapped(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 3, Epoch: 1}
	m := vfs.NewMem()
	big := make([]byte, 3<<20)
	big[0] = 1
	data := writeSnapshot(t, m, "/d", id, Header{}, [][]byte{big, big, big}, 3, WriterOptions{})
	s := NewStore(m, "/d")
	got, size, err := s.ReadRange(id, 1, 1<<30)
	if err != nil || size != int64(len(data)) || len(got) != MaxRangeBytes || !bytes.Equal(got, data[1:1+MaxRangeBytes]) {
		t.Errorf("ReadRange with a huge maxBytes: %d bytes of %d, %v", len(got), size, err)
	}
}
