package logstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
	"pgregory.net/rapid"
)

// modelBatch is a batch the model expects at its offset.
type modelBatch struct {
	off   int64
	next  int64
	epoch int32
	data  []byte
}

// TestRandomOperationsAgainstModel drives a log with random appends (as
// leader and as follower), syncs, recovery-point checkpoints, truncations,
// log start advances, full truncations, crashes (every mode)
// and reopens, and checks it against a simple model after every step: the
// batches in [log start, LEO) are exactly the model's, and after a crash
// the log keeps at least everything synced and nothing that was never
// appended. After every step a copy of the disk is also crashed and
// recovered (crashAndRecoverCopy): the recovery point never exceeds what
// is durable, and never falls below the last checkpoint.
func TestRandomOperationsAgainstModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		mem := vfs.NewMem()
		opts := testOptions()
		opts.InternalSegmentBytes = int64(rapid.IntRange(300, 3000).Draw(rt, "segment bytes"))
		opts.PreallocateBytes = rapid.SampledFrom(preallocModes).Draw(rt, "preallocate bytes")
		l, _, err := Open(mem, testDir, opts)
		if err != nil {
			rt.Fatal(err)
		}
		var model []modelBatch // batches from offset 0 (or the full-truncation point)
		var synced int64
		var checkpoint int64 // the recovery point the log must have on disk at least
		start := int64(0)
		epoch := int32(1)
		seq := 0
		leo := func() int64 {
			if len(model) == 0 {
				return start
			}
			return model[len(model)-1].next
		}
		check := func(what string) {
			if got := l.LogEndOffset(); got != leo() {
				rt.Fatalf("%s: LEO %d, model %d", what, got, leo())
			}
			for _, b := range model {
				if b.off < l.LogStartOffset() {
					continue
				}
				if got := batchAt(rt, l, b.off); !bytes.Equal(got, b.data) {
					rt.Fatalf("%s: batch %d differs", what, b.off)
				}
			}
		}
		for step := range rapid.IntRange(5, 40).Draw(rt, "steps") {
			switch op := rapid.IntRange(0, 10).Draw(rt, "op"); op {
			case 0, 1, 2: // leader append of 1-3 batches
				if rapid.IntRange(0, 4).Draw(rt, "new epoch") == 0 {
					epoch++
				}
				var all []byte
				var parts [][]byte
				for range rapid.IntRange(1, 3).Draw(rt, "batches") {
					seq++
					b := makeBatch(rt, rapid.IntRange(1, 4).Draw(rt, "records"), rapid.IntRange(1, 200).Draw(rt, "size"), seq, int64(seq))
					parts = append(parts, b)
					all = append(all, b...)
				}
				res, err := l.AppendAsLeader(all, epoch)
				if err != nil {
					rt.Fatalf("step %d: append: %v", step, err)
				}
				pos := 0
				for _, p := range parts {
					h, _ := recordbatch.PeekHeader(all[pos:])
					model = append(model, modelBatch{off: h.BaseOffset, next: h.NextOffset(), epoch: epoch, data: bytes.Clone(all[pos : pos+len(p)])})
					pos += len(p)
				}
				if res.NextOffset != leo() {
					rt.Fatalf("step %d: append returned %+v, model LEO %d", step, res, leo())
				}
			case 3: // follower append
				seq++
				b := makeBatch(rt, 1, 50, seq, int64(seq))
				if err := recordbatch.Stamp(b, leo(), epoch); err != nil {
					rt.Fatal(err)
				}
				if _, err := l.AppendAsFollower(b); err != nil {
					rt.Fatalf("step %d: follower append: %v", step, err)
				}
				h, _ := recordbatch.PeekHeader(b)
				model = append(model, modelBatch{off: h.BaseOffset, next: h.NextOffset(), epoch: epoch, data: b})
			case 4: // sync
				off, err := l.Sync()
				if err != nil || off != leo() {
					rt.Fatalf("step %d: Sync = %d, %v; want %d", step, off, err, leo())
				}
				synced = off
			case 5: // truncate to a random batch boundary at or above the log start
				var cands []int64
				for _, b := range model {
					if b.off >= l.LogStartOffset() {
						cands = append(cands, b.off)
					}
				}
				if len(cands) == 0 {
					continue
				}
				to := rapid.SampledFrom(cands).Draw(rt, "truncate to")
				if err := l.Truncate(to); err != nil {
					rt.Fatalf("step %d: truncate %d: %v", step, to, err)
				}
				for len(model) > 0 && model[len(model)-1].off >= to {
					model = model[:len(model)-1]
				}
				synced = min(synced, to)
				checkpoint = min(checkpoint, to)
				if len(model) > 0 {
					epoch = max(epoch, model[len(model)-1].epoch)
				}
			case 6: // advance the log start to a batch boundary
				if len(model) == 0 {
					continue
				}
				b := rapid.SampledFrom(model).Draw(rt, "advance to")
				if b.off > l.LogStartOffset() {
					if err := l.AdvanceLogStart(b.off); err != nil {
						rt.Fatalf("step %d: advance: %v", step, err)
					}
				}
			case 7: // advance the log start to the active segment's base
				segs := l.Segments()
				if active := segs[len(segs)-1].BaseOffset; active > l.LogStartOffset() {
					if err := l.AdvanceLogStart(active); err != nil {
						rt.Fatalf("step %d: advance to the active segment: %v", step, err)
					}
				}
			case 8: // crash and reopen
				mode := rapid.SampledFrom([]vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix}).Draw(rt, "mode")
				abandon(l)
				mem.Crash(rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 0)), mode)
				checkSealedSegments(rt, fmt.Sprintf("step %d: crash (%v)", step, mode), mem)
				l, _, err = Open(mem, testDir, opts)
				if err != nil {
					rt.Fatalf("step %d: reopen after %v: %v", step, mode, err)
				}
				got := l.LogEndOffset()
				if got < synced || got > leo() {
					rt.Fatalf("step %d: recovered LEO %d outside [synced %d, LEO %d]", step, got, synced, leo())
				}
				for len(model) > 0 && model[len(model)-1].off >= got {
					model = model[:len(model)-1]
				}
				if leo() != got {
					rt.Fatalf("step %d: recovered LEO %d is not a batch boundary of the model (%d)", step, got, leo())
				}
				synced, checkpoint = got, got
				if len(model) == 0 {
					start = got
				}
			case 9: // full truncation ahead of the log
				to := leo() + int64(rapid.IntRange(0, 50).Draw(rt, "ahead"))
				if err := l.TruncateFullyAndStartAt(to); err != nil {
					rt.Fatalf("step %d: full truncation: %v", step, err)
				}
				model, start, synced, checkpoint = nil, to, to, to
			case 10: // periodic checkpoint of the recovery point
				rp, err := l.CheckpointRecoveryPoint()
				if err != nil || rp != l.SyncedOffset() {
					rt.Fatalf("step %d: CheckpointRecoveryPoint = %d, %v; want the synced offset %d", step, rp, err, l.SyncedOffset())
				}
				checkpoint = rp
			}
			check("after step")
			checkpoint = max(checkpoint, crashAndRecoverCopy(rt, mem, opts, l, model, synced, checkpoint))
		}
		if err := l.Close(); err != nil {
			rt.Fatal(err)
		}
	})
}

// crashAndRecoverCopy crashes a copy of mem (every mode, drawn) while l is
// open on mem, recovers it and checks: recovery accepts the directory (a
// recovery point above the durable data would be refused as missing
// synced data), keeps every synced batch of the model and only model
// batches, and read a recovery point that is at least checkpoint (a
// checkpoint is durable once it returned) and at most l's synced offset.
// It returns the recovery point read, which the live log also reports.
func crashAndRecoverCopy(rt *rapid.T, mem *vfs.MemFS, opts Options, l *Log, model []modelBatch, synced, checkpoint int64) int64 {
	rp := l.RecoveryPoint()
	if rp > l.SyncedOffset() {
		rt.Fatalf("recovery point %d above the synced offset %d", rp, l.SyncedOffset())
	}
	c := mem.Clone()
	mode := rapid.SampledFrom([]vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix, vfs.CrashReorder}).Draw(rt, "copy crash mode")
	c.Crash(rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "copy seed"), 1)), mode)
	checkSealedSegments(rt, fmt.Sprintf("crashed copy (%v)", mode), c)
	cl, rep, err := Open(c, testDir, opts)
	if err != nil {
		rt.Fatalf("recovery of a crashed copy (%v) refused: %v (recovery point %d, synced %d)", mode, err, rp, l.SyncedOffset())
	}
	defer cl.Close()
	if rep.RecoveryPoint < checkpoint || rep.RecoveryPoint != rp {
		rt.Fatalf("crashed copy (%v): recovery point on disk %d, want %d (the live log's), at least the last checkpoint %d", mode, rep.RecoveryPoint, rp, checkpoint)
	}
	if cl.LogEndOffset() < synced {
		rt.Fatalf("crashed copy (%v): LEO %d below the synced offset %d", mode, cl.LogEndOffset(), synced)
	}
	for _, b := range model {
		if b.off < cl.LogStartOffset() || b.off >= cl.LogEndOffset() {
			continue
		}
		if got := batchAt(rt, cl, b.off); !bytes.Equal(got, b.data) {
			rt.Fatalf("crashed copy (%v): batch %d differs", mode, b.off)
		}
	}
	return rep.RecoveryPoint
}
