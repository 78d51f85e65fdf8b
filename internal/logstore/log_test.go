package logstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

func TestAppendReadReopen(t *testing.T) {
	fsys := vfs.NewMem()
	l, rep := openLog(t, fsys, testOptions())
	if rep.LogEndOffset != 0 || rep.Truncation != nil {
		t.Fatalf("fresh open report = %+v", rep)
	}
	want := map[int64][]byte{}
	var wantEpochs []EpochEntry
	for i := range 120 {
		epoch := int32(1 + i/40)
		b := makeBatch(t, 1+i%3, 40+i%50, i, int64(1000+i))
		res, err := l.AppendAsLeader(b, epoch)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if i%40 == 0 {
			wantEpochs = append(wantEpochs, EpochEntry{Epoch: epoch, StartOffset: res.FirstOffset})
		}
		if res.NextOffset-res.FirstOffset != int64(1+i%3) {
			t.Fatalf("append %d: range %+v for %d records", i, res, 1+i%3)
		}
		want[res.FirstOffset] = b
		if i%7 == 0 {
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(l.Segments()) < 5 {
		t.Fatalf("only %d segments with 2 KiB segments", len(l.Segments()))
	}
	if diff := cmp.Diff(want, allBatches(t, l)); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	for off, b := range want {
		if got := batchAt(t, l, off); !bytes.Equal(got, b) {
			t.Fatalf("batchAt(%d) differs", off)
		}
	}
	if diff := cmp.Diff(wantEpochs, l.EpochEntries()); diff != "" {
		t.Fatalf("epoch cache (-want +got):\n%s", diff)
	}
	leo := l.LogEndOffset()
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen: nothing cut, nothing rebuilt, the same batches and epochs.
	l2, rep := openLog(t, fsys, testOptions())
	defer l2.Close()
	if rep.Truncation != nil || len(rep.RebuiltFiles) != 0 || len(rep.RemovedFiles) != 0 {
		t.Fatalf("clean reopen report = %+v", rep)
	}
	if rep.RecoveryPoint != leo || l2.LogEndOffset() != leo || l2.SyncedOffset() != leo {
		t.Fatalf("reopen: recovery point %d, LEO %d, synced %d; want %d", rep.RecoveryPoint, l2.LogEndOffset(), l2.SyncedOffset(), leo)
	}
	if diff := cmp.Diff(segs, l2.Segments()); diff != "" {
		t.Fatalf("segments (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, allBatches(t, l2)); diff != "" {
		t.Fatalf("after reopen (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantEpochs, l2.EpochEntries()); diff != "" {
		t.Fatalf("epoch cache after reopen (-want +got):\n%s", diff)
	}
	got, err := readLeaderEpochCheckpoint(fsys, testDir)
	if err != nil || !cmp.Equal(got, wantEpochs) {
		t.Fatalf("leader-epoch-checkpoint = %v, %v; want %v", got, err, wantEpochs)
	}
}

func TestReadLimits(t *testing.T) {
	fsys := vfs.NewMem()
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	l, _ := openLog(t, fsys, opts)
	defer l.Close()
	var sizes []int
	for i := range 10 {
		b := makeBatch(t, 2, 100, i, 5)
		sizes = append(sizes, len(b))
		if _, err := l.AppendAsLeader(b, 1); err != nil {
			t.Fatal(err)
		}
	}
	// A limit below one batch still returns one whole batch.
	r, err := l.Read(0, 10)
	if err != nil || len(r.Batches) != sizes[0] || r.FirstOffset != 0 || r.NextOffset != 2 {
		t.Fatalf("Read(0, 10) = %d bytes [%d, %d), %v; want one batch", len(r.Batches), r.FirstOffset, r.NextOffset, err)
	}
	// An offset inside a batch returns that batch.
	r, err = l.Read(3, sizes[1]+sizes[2]+5)
	if err != nil || r.FirstOffset != 2 || r.NextOffset != 6 || len(r.Batches) != sizes[1]+sizes[2] {
		t.Fatalf("Read(3) = [%d, %d) %d bytes, %v; want two whole batches from 2", r.FirstOffset, r.NextOffset, len(r.Batches), err)
	}
	if r, err := l.Read(20, 100); err != nil || len(r.Batches) != 0 || r.NextOffset != 20 {
		t.Fatalf("Read(LEO) = %+v, %v; want empty", r, err)
	}
	if _, err := l.Read(21, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(LEO+1) error = %v, want ErrOffsetOutOfRange", err)
	}
	if _, err := l.Read(-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(-1) error = %v, want ErrOffsetOutOfRange", err)
	}
}

// TestReadIntoReusesBuffer: ReadInto returns what Read returns, in the
// caller's buffer when it is large enough, and then allocates nothing
// (Read's header walk reads each header once into the stack).
func TestReadIntoReusesBuffer(t *testing.T) {
	l, _ := openLog(t, vfs.NewMem(), testOptions())
	defer l.Close()
	for i := range 6 {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 100, i, 5), 1); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 0, 64<<10)
	for _, off := range []int64{0, 5, 11} {
		want, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.ReadInto(off, 1<<20, buf)
		if err != nil || got.FirstOffset != want.FirstOffset || got.NextOffset != want.NextOffset || !bytes.Equal(got.Batches, want.Batches) {
			t.Fatalf("ReadInto(%d) = [%d, %d) %d bytes, %v; Read = [%d, %d) %d bytes", off, got.FirstOffset, got.NextOffset, len(got.Batches), err, want.FirstOffset, want.NextOffset, len(want.Batches))
		}
		if &got.Batches[:1][0] != &buf[:1][0] {
			t.Errorf("ReadInto(%d) did not read into the buffer", off)
		}
	}
	small, err := l.ReadInto(0, 1<<20, make([]byte, 0, 8))
	if err != nil || small.NextOffset != 12 {
		t.Fatalf("ReadInto with a small buffer = [%d, %d), %v", small.FirstOffset, small.NextOffset, err)
	}
	if allocs := testing.AllocsPerRun(20, func() { _, _ = l.ReadInto(5, 1<<20, buf) }); allocs > 0 {
		t.Errorf("ReadInto into a large enough buffer allocates %v times, want 0", allocs)
	}
}

func TestAppendAsFollower(t *testing.T) {
	fsys := vfs.NewMem()
	l, _ := openLog(t, fsys, testOptions())
	defer l.Close()
	stamp := func(b []byte, off int64, epoch int32) []byte {
		if err := recordbatch.Stamp(b, off, epoch); err != nil {
			t.Fatal(err)
		}
		return b
	}
	two := append(stamp(makeBatch(t, 2, 10, 1, 1), 0, 3), stamp(makeBatch(t, 1, 10, 2, 1), 2, 3)...)
	res, err := l.AppendAsFollower(two)
	if err != nil || res != (AppendResult{FirstOffset: 0, NextOffset: 3}) {
		t.Fatalf("AppendAsFollower = %+v, %v", res, err)
	}
	_, err = l.AppendAsFollower(stamp(makeBatch(t, 1, 10, 3, 1), 4, 3))
	var om *OffsetMismatchError
	if !errors.As(err, &om) || om.Expected != 3 || om.Got != 4 {
		t.Fatalf("gap: error = %v, want *OffsetMismatchError{3, 4}", err)
	}
	_, err = l.AppendAsFollower(stamp(makeBatch(t, 1, 10, 3, 1), 3, 2))
	var er *EpochRegressionError
	if !errors.As(err, &er) || er.LastEpoch != 3 || er.Epoch != 2 {
		t.Fatalf("epoch regression: error = %v, want *EpochRegressionError", err)
	}
	_, err = l.AppendAsLeader(makeBatch(t, 1, 10, 3, 1), 2)
	if !errors.As(err, &er) {
		t.Fatalf("leader epoch regression: error = %v, want *EpochRegressionError", err)
	}
	bad := stamp(makeBatch(t, 1, 10, 3, 1), 3, 4)
	bad[len(bad)-1] ^= 1
	if _, err := l.AppendAsFollower(bad); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("bad CRC: error = %v, want ErrInvalidBatch", err)
	}
	ok := stamp(makeBatch(t, 1, 10, 3, 1), 3, 4)
	if _, err := l.AppendAsFollower(append(bytes.Clone(ok), ok[:20]...)); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("partial batch: error = %v, want ErrInvalidBatch", err)
	}
	if l.LogEndOffset() != 3 {
		t.Fatalf("rejected appends changed the LEO to %d", l.LogEndOffset())
	}
	if res, err := l.AppendAsFollower(ok); err != nil || res.NextOffset != 4 {
		t.Fatalf("AppendAsFollower = %+v, %v", res, err)
	}
	if diff := cmp.Diff([]EpochEntry{{3, 0}, {4, 3}}, l.EpochEntries()); diff != "" {
		t.Fatalf("epochs (-want +got):\n%s", diff)
	}
}

// TestConcurrentReaders reads from other goroutines while the owner
// appends, syncs and truncates; run with -race.
func TestConcurrentReaders(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	defer l.Close()
	done := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				start, end := l.LogStartOffset(), l.LogEndOffset()
				for off := start; off < end; {
					r, err := l.Read(off, 4096)
					if err != nil {
						// A concurrent truncation may have moved the end.
						if errors.Is(err, ErrOffsetOutOfRange) {
							break
						}
						errs <- err
						return
					}
					if r.NextOffset <= off {
						break
					}
					off = r.NextOffset
				}
				_ = l.EndOffsetForEpoch(2)
			}
		}()
	}
	for i := range 200 {
		if _, err := l.AppendAsLeader(makeBatch(t, 1, 64, i, int64(i)), int32(1+i/50)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if i%60 == 59 {
			if err := l.Truncate(l.LogEndOffset() - 5); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("reader: %v", err)
		}
	}
}
