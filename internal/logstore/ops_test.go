package logstore

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// fillLog appends n single-record batches of 120-byte values, epoch
// 1+i/epochEvery, timestamps ts0+i.
func fillLog(t *testing.T, l *Log, n, epochEvery int, ts0 int64) map[int64][]byte {
	t.Helper()
	out := map[int64][]byte{}
	for i := range n {
		b := makeBatch(t, 1, 120, i, ts0+int64(i))
		res, err := l.AppendAsLeader(b, int32(1+i/epochEvery))
		if err != nil {
			t.Fatal(err)
		}
		out[res.FirstOffset] = b
	}
	return out
}

func TestTruncate(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	want := fillLog(t, l, 40, 10, 100)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	segsBefore := len(l.Segments())
	if err := l.Truncate(25); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 25 || l.SyncedOffset() != 25 {
		t.Fatalf("after Truncate(25): LEO %d, synced %d", l.LogEndOffset(), l.SyncedOffset())
	}
	if len(l.Segments()) >= segsBefore {
		t.Fatalf("truncation kept all %d segments", segsBefore)
	}
	if diff := cmp.Diff([]EpochEntry{{1, 0}, {2, 10}, {3, 20}}, l.EpochEntries()); diff != "" {
		t.Fatalf("epochs (-want +got):\n%s", diff)
	}
	for off := range int64(25) {
		delete(want, off+25) // keep only [0, 25) for comparison below
	}
	for off := int64(25); off < 40; off++ {
		delete(want, off)
	}
	if diff := cmp.Diff(want, allBatches(t, l)); diff != "" {
		t.Fatalf("batches after truncate (-want +got):\n%s", diff)
	}
	// Truncating to an epoch boundary drops the epoch entry.
	if err := l.Truncate(20); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]EpochEntry{{1, 0}, {2, 10}}, l.EpochEntries()); diff != "" {
		t.Fatalf("epochs (-want +got):\n%s", diff)
	}
	// Appending continues at the cut, in a new epoch.
	res, err := l.AppendAsLeader(makeBatch(t, 1, 10, 99, 500), 7)
	if err != nil || res.FirstOffset != 20 {
		t.Fatalf("append after truncate = %+v, %v", res, err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate(-1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Truncate(-1) = %v", err)
	}
	if err := l.Truncate(100); err != nil || l.LogEndOffset() != 21 {
		t.Fatalf("Truncate beyond LEO = %v, LEO %d", err, l.LogEndOffset())
	}
	// After a crash the truncation holds, and nothing is reported corrupt
	// (the recovery point was lowered first).
	mem.Crash(nil, vfs.CrashDropUnsynced)
	l2, rep := openLog(t, mem, testOptions())
	defer l2.Close()
	if l2.LogEndOffset() != 21 || rep.Truncation != nil || len(rep.RebuiltFiles) != 0 {
		t.Fatalf("reopen after truncations: LEO %d, report %+v", l2.LogEndOffset(), rep)
	}
	if diff := cmp.Diff([]EpochEntry{{1, 0}, {2, 10}, {7, 20}}, l2.EpochEntries()); diff != "" {
		t.Fatalf("epochs after reopen (-want +got):\n%s", diff)
	}
}

// TestTruncateCrashAtEveryPoint kills a truncation at every system call,
// with the recovery point checkpointed above the cut: recovery must
// succeed (never report corruption, which it would if a crash could leave
// the recovery point above the shortened log) and hold a prefix of the old
// log at least as long as the truncation point. The first mutating call of
// the truncation must be the write of the lowered recovery point.
func TestTruncateCrashAtEveryPoint(t *testing.T) {
	rpPath := testDir + "/" + RecoveryPointFileName
	for budget := 0; ; budget++ {
		done := false
		for _, mode := range []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashTearPrefix, vfs.CrashReorder} {
			mem := vfs.NewMem()
			k := &killFS{FS: mem, budget: -1}
			l, _ := openLog(t, k, testOptions())
			want := fillLog(t, l, 30, 10, 100)
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if rp, err := l.CheckpointRecoveryPoint(); err != nil || rp != 30 {
				t.Fatalf("CheckpointRecoveryPoint = %d, %v; want 30", rp, err)
			}
			k.budget = budget
			syncs := len(k.syncs)
			terr := l.Truncate(12)
			if budget >= 2 && (len(k.syncs) == syncs || k.syncs[syncs] != rpPath) {
				t.Fatalf("budget %d: the truncation fsynced %q first, want the recovery point", budget, k.syncs[syncs:])
			}
			mem.Crash(rand.New(rand.NewPCG(3, uint64(budget))), mode)
			l2, _, err := Open(mem, testDir, testOptions())
			if err != nil {
				t.Fatalf("budget %d %v: reopen: %v", budget, mode, err)
			}
			if l2.LogEndOffset() < 12 || (terr == nil && l2.LogEndOffset() != 12) {
				t.Fatalf("budget %d %v: LEO %d after a truncation to 12 that returned %v", budget, mode, l2.LogEndOffset(), terr)
			}
			got := allBatches(t, l2)
			for off, b := range got {
				if !cmp.Equal(b, want[off]) {
					t.Fatalf("budget %d %v: batch %d differs", budget, mode, off)
				}
			}
			l2.Close()
			done = terr == nil
		}
		if done {
			if budget < 5 {
				t.Fatalf("the truncation made only %d mutating calls", budget)
			}
			return
		}
	}
}

func TestAdvanceLogStart(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	defer l.Close()
	fillLog(t, l, 60, 20, 1000)
	segs := l.Segments()
	if len(segs) < 6 {
		t.Fatalf("%d segments", len(segs))
	}
	// Advancing inside segment 2 deletes segments 0 and 1 only.
	mid := segs[2].BaseOffset + 1
	if err := l.AdvanceLogStart(mid); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != mid || l.Segments()[0].BaseOffset != segs[2].BaseOffset {
		t.Fatalf("log start %d, first segment %d; want %d, %d", l.LogStartOffset(), l.Segments()[0].BaseOffset, mid, segs[2].BaseOffset)
	}
	if e := l.EpochEntries(); e[0].StartOffset != mid {
		t.Fatalf("epochs %v do not start at the log start", e)
	}
	if _, err := l.Read(mid-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start = %v", err)
	}
	if err := l.AdvanceLogStart(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("advance beyond LEO = %v", err)
	}
	// Advancing to the active segment's base deletes every older segment
	// and keeps the active one.
	active := segs[len(segs)-1]
	if err := l.AdvanceLogStart(active.BaseOffset); err != nil {
		t.Fatal(err)
	}
	if got := l.Segments(); len(got) != 1 || got[0].BaseOffset != active.BaseOffset || l.LogStartOffset() != active.BaseOffset {
		t.Fatalf("after advancing to the active base %d: log start %d, segments %v", active.BaseOffset, l.LogStartOffset(), got)
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	fillLog(t, l, 30, 10, 100)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || len(l.EpochEntries()) != 0 || len(l.Segments()) != 1 {
		t.Fatalf("after full truncation: start %d end %d epochs %v segments %v", l.LogStartOffset(), l.LogEndOffset(), l.EpochEntries(), l.Segments())
	}
	l.SetLatestSnapshot(kraft.OffsetAndEpoch{Offset: 1000, Epoch: 4})
	if l.LastEpoch() != 4 {
		t.Fatalf("LastEpoch on an empty log = %d, want the snapshot's 4", l.LastEpoch())
	}
	if _, err := l.AppendAsLeader(makeBatch(t, 1, 10, 1, 1), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	mem.Crash(nil, vfs.CrashDropUnsynced)
	l2, rep := openLog(t, mem, testOptions())
	defer l2.Close()
	if l2.LogStartOffset() != 1000 || l2.LogEndOffset() != 1001 || rep.Truncation != nil {
		t.Fatalf("reopen: start %d end %d report %+v", l2.LogStartOffset(), l2.LogEndOffset(), rep)
	}
	// A crash at every point of a full truncation never reports corruption.
	for budget := 0; budget < 20; budget++ {
		mem := vfs.NewMem()
		l, _ := openLog(t, mem, testOptions())
		fillLog(t, l, 30, 10, 100)
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		abandon(l)
		k := &killFS{FS: mem, budget: budget}
		if l, _, err := Open(k, testDir, testOptions()); err == nil {
			_ = l.TruncateFullyAndStartAt(1000)
		}
		mem.Crash(nil, vfs.CrashDropUnsynced)
		l2, _, err := Open(mem, testDir, testOptions())
		if err != nil {
			t.Fatalf("budget %d: reopen after an interrupted full truncation: %v", budget, err)
		}
		if e := l2.LogEndOffset(); e != 30 && e != 1000 && e != 0 {
			t.Fatalf("budget %d: LEO %d, want 30 (old log), 1000 (new) or 0 (emptied)", budget, e)
		}
		l2.Close()
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	defer l.Close()
	if got := l.EndOffsetForEpoch(3); got != (kraft.OffsetAndEpoch{Offset: 0, Epoch: 0}) {
		t.Fatalf("empty log: EndOffsetForEpoch(3) = %+v, want (LEO 0, epoch 0)", got)
	}
	fillLog(t, l, 30, 10, 100) // epochs 1@0, 2@10, 3@20, LEO 30
	tests := []struct {
		epoch int32
		want  kraft.OffsetAndEpoch
	}{
		{3, kraft.OffsetAndEpoch{Offset: 30, Epoch: 3}},
		{2, kraft.OffsetAndEpoch{Offset: 20, Epoch: 2}},
		{1, kraft.OffsetAndEpoch{Offset: 10, Epoch: 1}},
		{0, kraft.OffsetAndEpoch{Offset: 0, Epoch: 0}},
		{9, kraft.OffsetAndEpoch{Offset: 30, Epoch: 3}},
	}
	for _, tt := range tests {
		if got := l.EndOffsetForEpoch(tt.epoch); got != tt.want {
			t.Errorf("EndOffsetForEpoch(%d) = %+v, want %+v", tt.epoch, got, tt.want)
		}
	}
	// After a snapshot at 10 and the log start moved there, an epoch below
	// the log is answered with the oldest snapshot's id.
	if err := l.AdvanceLogStart(10); err != nil {
		t.Fatal(err)
	}
	l.SetEarliestSnapshot(kraft.OffsetAndEpoch{Offset: 10, Epoch: 1})
	if got := l.EndOffsetForEpoch(1); got != (kraft.OffsetAndEpoch{Offset: 10, Epoch: 1}) {
		t.Errorf("EndOffsetForEpoch(1) below the log = %+v, want the snapshot id (10, 1)", got)
	}
}

func TestRollBySegmentTime(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	opts.SegmentTime = time.Second
	l, _ := openLog(t, mem, opts)
	defer l.Close()
	for _, ts := range []int64{1000, 1500, 2000, 2001, 3500} {
		if _, err := l.AppendAsLeader(makeBatch(t, 1, 10, 1, ts), 1); err != nil {
			t.Fatal(err)
		}
	}
	// 2001 is more than 1 s after 1000: roll; 3500 is more than 1 s after 2001: roll.
	var bases []int64
	for _, s := range l.Segments() {
		bases = append(bases, s.BaseOffset)
	}
	if diff := cmp.Diff([]int64{0, 3, 4}, bases); diff != "" {
		t.Fatalf("segment bases (-want +got):\n%s", diff)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	o := Options{SegmentBytes: 1024, MaxBatchBytes: 10, IndexIntervalBytes: -1}
	err := o.Validate()
	for _, want := range []string{"SegmentBytes", "SegmentTime", "MaxBatchBytes", "IndexIntervalBytes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a problem about %s", err, want)
		}
	}
	o = DefaultOptions()
	o.SegmentBytes = 1024
	o.InternalSegmentBytes = 1024
	if err := o.Validate(); err != nil {
		t.Errorf("InternalSegmentBytes should allow small segments: %v", err)
	}
	if _, _, err := Open(vfs.NewMem(), testDir, Options{}); err == nil {
		t.Errorf("Open with zero options succeeded")
	}
}

// TestRollBySegmentTimeWithinOneAppend: the time rule also applies between
// batches of one append call.
func TestRollBySegmentTimeWithinOneAppend(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	opts.SegmentTime = time.Second
	l, _ := openLog(t, mem, opts)
	defer l.Close()
	var all []byte
	for _, ts := range []int64{1000, 1500, 2001, 2500} {
		all = append(all, makeBatch(t, 1, 10, 1, ts)...)
	}
	if _, err := l.AppendAsLeader(all, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Segments()); n != 2 || l.Segments()[1].BaseOffset != 2 {
		t.Fatalf("segments %+v, want a roll before offset 2", l.Segments())
	}
}
