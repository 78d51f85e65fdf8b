package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/vfs"
)

// TestSyncIsOneFsync: Log.Sync makes exactly one mutating system call, the
// fsync of the active segment's .log, also after a roll (the rolled
// segment was fsynced by the append that rolled it). The recovery point is
// written by CheckpointRecoveryPoint only: one write and one fsync of its
// file, and nothing when it has not moved.
func TestSyncIsOneFsync(t *testing.T) {
	k := &killFS{FS: vfs.NewMem(), budget: -1}
	opts := testOptions()
	opts.InternalSegmentBytes = 1000
	l, _ := openLog(t, k, opts)
	defer l.Close()
	rpPath := filepath.Join(testDir, RecoveryPointFileName)
	syncOnce := func(what string) {
		t.Helper()
		calls, syncs := k.calls, len(k.syncs)
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		active := l.Segments()[len(l.Segments())-1].Path
		if got := k.syncs[syncs:]; k.calls-calls != 1 || !slices.Equal(got, []string{active}) {
			t.Fatalf("%s: Sync made %d mutating calls, fsynced %q; want one fsync of %s", what, k.calls-calls, got, active)
		}
	}
	for i := range 3 {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 100, i, 10), 1); err != nil {
			t.Fatal(err)
		}
		syncOnce("in the first segment")
	}
	segs := len(l.Segments())
	for i := range 4 {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 100, 10+i, 10), 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.Segments()) == segs {
		t.Fatalf("no roll with %d-byte segments", opts.InternalSegmentBytes)
	}
	syncOnce("after a roll")
	// A Sync with nothing new makes no call at all.
	calls := k.calls
	if _, err := l.Sync(); err != nil || k.calls != calls {
		t.Fatalf("idle Sync: %v, %d mutating calls", err, k.calls-calls)
	}

	calls, syncs := k.calls, len(k.syncs)
	rp, err := l.CheckpointRecoveryPoint()
	if err != nil || rp != l.SyncedOffset() || l.RecoveryPoint() != rp {
		t.Fatalf("CheckpointRecoveryPoint = %d, %v; RecoveryPoint %d; want the synced offset %d", rp, err, l.RecoveryPoint(), l.SyncedOffset())
	}
	if got := k.syncs[syncs:]; k.calls-calls != 2 || !slices.Equal(got, []string{rpPath}) {
		t.Fatalf("checkpoint made %d mutating calls, fsynced %q; want a write and an fsync of %s", k.calls-calls, got, rpPath)
	}
	calls = k.calls
	if _, err := l.CheckpointRecoveryPoint(); err != nil || k.calls != calls {
		t.Fatalf("checkpoint that did not move: %v, %d mutating calls", err, k.calls-calls)
	}
}

// TestCheckpointLagsSync: Sync does not move the recovery point; the
// checkpoint writes the synced offset, never the log end offset of
// appends that were not synced; a roll and Close checkpoint.
func TestCheckpointLagsSync(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	l, _ := openLog(t, mem, opts)
	fillLog(t, l, 4, 100, 10)
	synced, err := l.Sync()
	if err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point %d after Sync, want it still at 0", l.RecoveryPoint())
	}
	fillLog(t, l, 3, 100, 10) // not synced
	if rp, err := l.CheckpointRecoveryPoint(); err != nil || rp != synced {
		t.Fatalf("CheckpointRecoveryPoint = %d, %v; want the synced offset %d, not the LEO %d", rp, err, synced, l.LogEndOffset())
	}
	if got, _, _, err := readRecoveryPoint(mem, testDir); err != nil || got != synced {
		t.Fatalf("recovery point on disk %d, %v; want %d", got, err, synced)
	}
	// Rolling makes the rolled segment durable and checkpoints its end.
	l.opts.InternalSegmentBytes = 1
	fillLog(t, l, 1, 100, 10)
	if segs := l.Segments(); len(segs) != 2 || l.RecoveryPoint() != segs[1].BaseOffset || l.SyncedOffset() != segs[1].BaseOffset {
		t.Fatalf("after a roll: segments %+v, recovery point %d, synced %d; want both at the new base", segs, l.RecoveryPoint(), l.SyncedOffset())
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _, _, err := readRecoveryPoint(mem, testDir); err != nil || got != leo {
		t.Fatalf("recovery point after Close %d, %v; want the LEO %d", got, err, leo)
	}
}

// TestCrashAfterSyncBeforeCheckpoint: a crash after Sync, while the
// checkpoint still holds an older offset, loses nothing synced, and
// recovery cuts only bytes that were never synced.
func TestCrashAfterSyncBeforeCheckpoint(t *testing.T) {
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	modes := []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix, vfs.CrashReorder}
	cuts := 0
	for _, mode := range modes {
		for seed := range uint64(8) {
			name := fmt.Sprintf("%v seed %d", mode, seed)
			mem := vfs.NewMem()
			l, _ := openLog(t, mem, opts)
			want := fillLog(t, l, 4, 100, 10)
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			checkpoint, err := l.CheckpointRecoveryPoint()
			if err != nil {
				t.Fatal(err)
			}
			appendAtEpoch1(t, l, want, 6, 20)
			synced, err := l.Sync()
			if err != nil {
				t.Fatal(err)
			}
			appendAtEpoch1(t, l, want, 3, 40)
			abandon(l)
			mem.Crash(rand.New(rand.NewPCG(seed, 11)), mode)
			l2, rep, err := Open(mem, testDir, opts)
			if err != nil {
				t.Fatalf("%s: reopen: %v", name, err)
			}
			if rep.RecoveryPoint != checkpoint {
				t.Fatalf("%s: recovery point on disk %d, want the checkpoint %d (Sync must not move it)", name, rep.RecoveryPoint, checkpoint)
			}
			if l2.LogEndOffset() < synced {
				t.Fatalf("%s: LEO %d below the synced offset %d", name, l2.LogEndOffset(), synced)
			}
			if tr := rep.Truncation; tr != nil {
				cuts++
				if tr.Offset < synced {
					t.Fatalf("%s: cut at offset %d, below the synced offset %d", name, tr.Offset, synced)
				}
			}
			for off, b := range allBatches(t, l2) {
				if !bytes.Equal(b, want[off]) {
					t.Fatalf("%s: batch %d differs", name, off)
				}
			}
			if l2.RecoveryPoint() != l2.LogEndOffset() {
				t.Fatalf("%s: recovery point %d after recovery, want the LEO %d", name, l2.RecoveryPoint(), l2.LogEndOffset())
			}
			l2.Close()
		}
	}
	if cuts == 0 {
		t.Fatalf("no crash left a torn tail to cut")
	}
}

// TestCorruptionAroundTheCheckpoint: damage below the checkpointed
// recovery point refuses to start; damage to data synced after the last
// checkpoint is cut as a torn tail (the accepted cost of a lagging
// checkpoint, docs/storage.md).
func TestCorruptionAroundTheCheckpoint(t *testing.T) {
	// corruptionSetup checkpoints at offs[8] and appends up to offs[11].
	build := func() (*vfs.MemFS, []int64, []int64, int64) {
		mem, offs, poss, checkpoint := corruptionSetup(t)
		// Sync everything without checkpointing, as between two periodic
		// checkpoints.
		l, _ := openLog(t, mem, testOptions())
		synced := l.SyncedOffset()
		abandon(l)
		if err := createRecoveryPointAt(mem, checkpoint); err != nil {
			t.Fatal(err)
		}
		if synced <= offs[10] {
			t.Fatalf("synced %d, want the whole log", synced)
		}
		return mem, offs, poss, checkpoint
	}
	mem, offs, poss, checkpoint := build()
	flipByte(t, mem, seg0, poss[7]+70)
	_, _, err := Open(mem, testDir, testOptions())
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != offs[7] || !strings.Contains(ce.Reason, fmt.Sprintf("below the recovery point %d", checkpoint)) {
		t.Fatalf("damage at offset %d below the checkpoint %d: Open = %v, want *CorruptionError", offs[7], checkpoint, err)
	}
	mem, offs, poss, _ = build()
	flipByte(t, mem, seg0, poss[9]+70)
	l, rep, err := Open(mem, testDir, testOptions())
	if err != nil {
		t.Fatalf("damage above the checkpoint: Open = %v", err)
	}
	defer l.Close()
	if rep.Truncation == nil || rep.Truncation.Offset != offs[9] || l.LogEndOffset() != offs[9] {
		t.Fatalf("damage above the checkpoint: truncation %+v, LEO %d; want a cut at %d", rep.Truncation, l.LogEndOffset(), offs[9])
	}
}

// createRecoveryPointAt rewrites the recovery-point file to hold offset.
func createRecoveryPointAt(fsys vfs.FS, offset int64) error {
	_, seq, _, err := readRecoveryPoint(fsys, testDir)
	if err != nil {
		return err
	}
	rp, err := createRecoveryPoint(fsys, testDir, seq+1, offset)
	if err != nil {
		return err
	}
	return rp.close()
}

// appendAtEpoch1 appends n batches of one 120-byte record (seeds seed0 on)
// at epoch 1 and records each in want by its first offset.
func appendAtEpoch1(t *testing.T, l *Log, want map[int64][]byte, n, seed0 int) {
	t.Helper()
	for i := range n {
		b := makeBatch(t, 1, 120, seed0+i, 10)
		res, err := l.AppendAsLeader(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		want[res.FirstOffset] = b
	}
}
