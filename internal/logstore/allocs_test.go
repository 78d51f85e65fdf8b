package logstore

import (
	"path/filepath"
	"testing"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// TestNoAllocationsPerBatch locks in that the append, sync and read paths
// allocate nothing per batch or record (on the real file system, whose
// calls allocate nothing themselves): appends as leader and as follower
// and Sync allocate nothing, nor does ReadInto a large enough buffer,
// near the log end (found in the remembered tail) or further back (headers
// scanned from the index entry through the log's scratch); and
// recovery's allocations do not grow with the number of batches.
func TestNoAllocationsPerBatch(t *testing.T) {
	l, _, err := Open(vfs.OS(), filepath.Join(t.TempDir(), "__cluster_metadata-0"), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, n := range []int{1, 16} {
		leader := makeBatch(t, n, 256, n, 10)
		if a := testing.AllocsPerRun(100, func() {
			if _, err := l.AppendAsLeader(leader, 1); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("AppendAsLeader of %d records: %v allocations, want 0", n, a)
		}
		follower := makeBatch(t, n, 256, n, 10)
		if a := testing.AllocsPerRun(100, func() {
			if err := recordbatch.Stamp(follower, l.LogEndOffset(), 1); err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendAsFollower(follower); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("AppendAsFollower of %d records: %v allocations, want 0", n, a)
		}
		if a := testing.AllocsPerRun(10, func() {
			if _, err := l.AppendAsLeader(leader, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("append and Sync of %d records: %v allocations, want 0", n, a)
		}
	}
	// Batches of 1 and 16 records of 256 bytes, an index entry every
	// 4 KiB: the last offsets are in the remembered tail, an older one's
	// read walks headers from the index entry in the log's scratch.
	buf := make([]byte, 0, 1<<20)
	for _, back := range []int64{1, 10, 400, l.LogEndOffset() - 1} {
		off := l.LogEndOffset() - back
		if a := testing.AllocsPerRun(100, func() {
			if _, err := l.ReadInto(off, 1<<20, buf); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("ReadInto a large enough buffer %d offsets before the end: %v allocations, want 0", back, a)
		}
	}

	openAllocs := func(batches int) float64 {
		dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
		l, _, err := Open(vfs.OS(), dir, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		b := makeBatch(t, 4, 100, 1, 10)
		for range batches {
			if _, err := l.AppendAsLeader(b, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(3, func() {
			l, _, err := Open(vfs.OS(), dir, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
		})
	}
	// The in-memory indexes grow by doubling: a few allocations.
	if small, large := openAllocs(200), openAllocs(2000); large-small > 50 {
		t.Errorf("Open of 2000 batches made %v allocations, of 200 batches %v: recovery allocates per batch", large, small)
	}
}
