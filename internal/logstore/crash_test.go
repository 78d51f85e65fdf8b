package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// crashWorkload appends n batches as leader (epoch changing every 7
// batches, so the epoch checkpoint is rewritten), syncing every third
// append and checkpointing the recovery point every other Sync, until the
// first error (the "process" dies). It returns the bytes of every batch
// appended, by base offset, the highest offset a successful Sync returned
// and the highest recovery point a successful checkpoint returned.
func crashWorkload(t *testing.T, l *Log, n int) (batches map[int64][]byte, synced, checkpoint int64) {
	t.Helper()
	batches = map[int64][]byte{}
	for i := range n {
		b := makeBatch(t, 1+i%2, 60+(i*37)%90, i, int64(100+i))
		// A failed append may still have written the (stamped) batch.
		batches[l.LogEndOffset()] = b
		if _, err := l.AppendAsLeader(b, int32(1+i/7)); err != nil {
			return batches, synced, checkpoint
		}
		if i%3 == 2 {
			off, err := l.Sync()
			if err != nil {
				return batches, synced, checkpoint
			}
			synced = off
		}
		if i%6 == 5 {
			rp, err := l.CheckpointRecoveryPoint()
			if err != nil {
				return batches, synced, checkpoint
			}
			if rp != synced {
				t.Fatalf("checkpoint %d right after Sync returned %d", rp, synced)
			}
			checkpoint = rp
		}
	}
	return batches, synced, checkpoint
}

// TestCrashAtEveryPoint kills the process at every mutating system call of
// a workload that appends, syncs and rolls segments, then crashes the
// MemFS (dropping, keeping a prefix of, or tearing unsynced writes) and
// reopens. The recovered log must be a byte-identical prefix of what was
// appended that contains every synced batch, with a matching epoch cache.
func TestCrashAtEveryPoint(t *testing.T) {
	const n = 24
	opts := testOptions()
	opts.InternalSegmentBytes = 900 // a roll every few batches
	// Count the calls of a full run.
	full := &killFS{FS: vfs.NewMem(), budget: -1}
	l, _ := openLog(t, full, opts)
	openCalls := full.calls
	crashWorkload(t, l, n)
	total := full.calls
	l.Close()
	if total-openCalls < 100 {
		t.Fatalf("workload made only %d mutating calls", total-openCalls)
	}
	modes := []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix}
	for budget := openCalls; budget <= total; budget++ {
		for _, mode := range modes {
			for seed := range uint64(2) {
				if mode == vfs.CrashDropUnsynced && seed > 0 {
					continue
				}
				name := fmt.Sprintf("kill after %d calls, %v, seed %d", budget, mode, seed)
				mem := vfs.NewMem()
				k := &killFS{FS: mem, budget: budget}
				l, _, err := Open(k, testDir, opts)
				if err != nil {
					t.Fatalf("%s: open: %v", name, err)
				}
				batches, synced, checkpoint := crashWorkload(t, l, n)
				mem.Crash(rand.New(rand.NewPCG(seed, uint64(budget))), mode)
				rp := checkRecovered(t, name, mem, opts, batches, synced)
				if rp < checkpoint {
					t.Fatalf("%s: recovery point %d below the checkpoint %d that returned", name, rp, checkpoint)
				}
			}
		}
	}
}

// checkRecovered reopens mem and checks the recovered log against what was
// appended and synced before the crash. It returns the recovery point
// recovery read.
func checkRecovered(t *testing.T, name string, fsys vfs.FS, opts Options, batches map[int64][]byte, synced int64) int64 {
	t.Helper()
	l, rep, err := Open(fsys, testDir, opts)
	if err != nil {
		t.Fatalf("%s: reopen: %v", name, err)
	}
	defer l.Close()
	leo := l.LogEndOffset()
	if leo < synced {
		t.Fatalf("%s: recovered LEO %d below synced offset %d (report %+v)", name, leo, synced, rep)
	}
	got := allBatches(t, l)
	var wantEpochs []EpochEntry
	for off := int64(0); off < leo; {
		b, ok := got[off]
		if !ok {
			t.Fatalf("%s: no batch at offset %d below LEO %d", name, off, leo)
		}
		if !bytes.Equal(b, batches[off]) {
			t.Fatalf("%s: batch at %d differs from the one appended", name, off)
		}
		h, _ := recordbatch.PeekHeader(b)
		if len(wantEpochs) == 0 || wantEpochs[len(wantEpochs)-1].Epoch != h.PartitionLeaderEpoch {
			wantEpochs = append(wantEpochs, EpochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: off})
		}
		off = h.NextOffset()
	}
	if !equalEntries(wantEpochs, l.EpochEntries()) {
		t.Fatalf("%s: epoch cache %v, want %v", name, l.EpochEntries(), wantEpochs)
	}
	if l.SyncedOffset() != leo {
		t.Fatalf("%s: synced offset after open %d, want LEO %d", name, l.SyncedOffset(), leo)
	}
	return rep.RecoveryPoint
}

func equalEntries(a, b []EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCrashDuringRecoveryKeepsSyncedData crashes again while Open repairs a
// torn tail: a second recovery must still hold every synced batch.
func TestCrashDuringRecovery(t *testing.T) {
	opts := testOptions()
	opts.InternalSegmentBytes = 900
	for budget := 0; budget < 40; budget++ {
		mem := vfs.NewMem()
		l, _ := openLog(t, mem, opts)
		batches, _, _ := crashWorkload(t, l, 10)
		synced, err := l.Sync()
		if err != nil {
			t.Fatal(err)
		}
		// Unsynced tail, torn by the crash.
		for i := range 3 {
			b := makeBatch(t, 1, 100, 50+i, 500)
			res, err := l.AppendAsLeader(b, 9)
			if err != nil {
				t.Fatal(err)
			}
			batches[res.FirstOffset] = b
		}
		mem.Crash(rand.New(rand.NewPCG(7, uint64(budget))), vfs.CrashTearPrefix)
		k := &killFS{FS: mem, budget: budget}
		if l, _, err := Open(k, testDir, opts); err == nil {
			l.Close()
		} else if !errors.Is(err, errKilled) {
			t.Fatalf("budget %d: open: %v", budget, err)
		}
		mem.Crash(rand.New(rand.NewPCG(8, uint64(budget))), vfs.CrashTearPrefix)
		checkRecovered(t, fmt.Sprintf("recovery killed after %d calls", budget), mem, opts, batches, synced)
	}
}
