package logstore

import (
	"errors"
	"runtime"
	"syscall"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/vfs"
)

// newSyncHold is a memory file system whose segment fsyncs can be held.
func newSyncHold() *sharedtest.SyncHold { return sharedtest.NewSyncHold(vfs.NewMem(), isSegment) }

// syncInBackground starts SyncConcurrent with the next segment fsync held
// and returns once that fsync has begun; the result arrives on the channel
// after g.Release.
func syncInBackground(t *testing.T, g *sharedtest.SyncHold, l *Log) <-chan syncResult {
	t.Helper()
	g.Arm()
	done := make(chan syncResult, 1)
	go func() {
		off, err := l.SyncConcurrent()
		done <- syncResult{off, err}
	}()
	<-g.Entered()
	return done
}

type syncResult struct {
	off int64
	err error
}

// While SyncConcurrent's fsync runs, appends and reads go on (Sync would
// hold them behind its lock); the sync covers only what was written when
// it started, and a later sync covers the rest.
func TestSyncConcurrentLetsAppendsRun(t *testing.T) {
	g := newSyncHold()
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	l, _ := openLog(t, g, opts)
	defer l.Close()
	if _, err := l.AppendAsLeader(makeBatch(t, 2, 50, 1, 10), 1); err != nil {
		t.Fatal(err)
	}
	first := l.LogEndOffset()
	done := syncInBackground(t, g, l)

	b := makeBatch(t, 3, 50, 2, 11)
	if _, err := l.AppendAsLeader(b, 1); err != nil {
		t.Fatal(err)
	}
	if got := batchAt(t, l, first); len(got) != len(b) {
		t.Fatalf("read back %d bytes at %d during the fsync, want %d", len(got), first, len(b))
	}
	if got := l.SyncedOffset(); got != 0 {
		t.Fatalf("synced offset %d while the first fsync runs, want 0", got)
	}
	g.Release()
	res := <-done
	if res.err != nil || res.off != first {
		t.Fatalf("SyncConcurrent = %d, %v; want %d (the end when it started)", res.off, res.err, first)
	}
	if got := l.SyncedOffset(); got != first {
		t.Fatalf("synced offset %d, want %d", got, first)
	}
	end := l.LogEndOffset()
	if off, err := l.SyncConcurrent(); err != nil || off != end {
		t.Fatalf("second SyncConcurrent = %d, %v; want %d", off, err, end)
	}
}

// Truncations and Close wait for a running SyncConcurrent: no segment
// file is truncated, closed or deleted under its fsync.
func TestSyncConcurrentHoldsOffFileRemoval(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(l *Log) error
	}{
		{"truncate", func(l *Log) error { return l.Truncate(1) }},
		{"truncate fully", func(l *Log) error { return l.TruncateFullyAndStartAt(100) }},
		{"close", func(l *Log) error { return l.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newSyncHold()
			l, _ := openLog(t, g, testOptions())
			for i := range 40 {
				if _, err := l.AppendAsLeader(makeBatch(t, 1, 100, i, 10), 1); err != nil {
					t.Fatal(err)
				}
			}
			if len(l.Segments()) < 2 {
				t.Fatalf("%d segments, want a roll", len(l.Segments()))
			}
			done := syncInBackground(t, g, l)
			opDone := make(chan error, 1)
			go func() { opDone <- tc.op(l) }()
			for range 100 {
				runtime.Gosched()
			}
			g.Release()
			if res := <-done; res.err != nil {
				t.Fatalf("SyncConcurrent: %v", res.err)
			}
			if err := <-opDone; err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if v := g.ClosedDuringSync(); len(v) > 0 {
				t.Fatalf("files closed under a running fsync: %v", v)
			}
			if tc.name != "close" {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A failed SyncConcurrent poisons the log like a failed Sync: the synced
// offset stays, and every later write or sync fails.
func TestSyncConcurrentFailurePoisons(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	defer l.Close()
	if _, err := l.AppendAsLeader(makeBatch(t, 1, 50, 1, 10), 1); err != nil {
		t.Fatal(err)
	}
	mem.InjectFault(vfs.Fault{Ops: vfs.OpSync, Match: isSegment, Err: syscall.EIO, Count: 1})
	off, err := l.SyncConcurrent()
	if !errors.Is(err, syscall.EIO) || off != 0 {
		t.Fatalf("SyncConcurrent = %d, %v; want 0 and EIO", off, err)
	}
	if _, err := l.SyncConcurrent(); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("second SyncConcurrent = %v, want ErrPoisoned", err)
	}
	if _, err := l.AppendAsLeader(makeBatch(t, 1, 50, 2, 10), 1); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append after a failed sync = %v, want ErrPoisoned", err)
	}
}
