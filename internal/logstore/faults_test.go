package logstore

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// abandon drops l as a killed process would: files and lock are released,
// nothing is synced or recorded. Unsynced data stays in the MemFS's current
// state (no crash is simulated).
func abandon(l *Log) {
	for _, s := range l.segs {
		_ = s.closeFiles()
	}
	_ = l.rp.close()
	_ = l.lock.Close()
	l.closed = true
}

// flipByte XORs one byte of a file in place.
func flipByte(t *testing.T, fsys vfs.FS, path string, pos int64) {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// corruptionSetup writes 12 batches in one segment, syncs after the first
// 8 and checkpoints the recovery point there; it returns the MemFS, the
// base offsets and byte positions of the batches, and the synced offset.
func corruptionSetup(t *testing.T) (*vfs.MemFS, []int64, []int64, int64) {
	t.Helper()
	mem := vfs.NewMem()
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	l, _ := openLog(t, mem, opts)
	var offs, poss []int64
	var synced int64
	pos := int64(0)
	for i := range 12 {
		b := makeBatch(t, 2, 50, i, 10)
		res, err := l.AppendAsLeader(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, res.FirstOffset)
		poss = append(poss, pos)
		pos += int64(len(b))
		if i == 7 {
			if synced, err = l.Sync(); err != nil {
				t.Fatal(err)
			}
			if rp, err := l.CheckpointRecoveryPoint(); err != nil || rp != synced {
				t.Fatalf("CheckpointRecoveryPoint = %d, %v; want %d", rp, err, synced)
			}
		}
	}
	abandon(l)
	return mem, offs, poss, synced
}

var seg0 = filepath.Join(testDir, "00000000000000000000.log")

func TestBitFlipBelowRecoveryPoint(t *testing.T) {
	mem, offs, poss, synced := corruptionSetup(t)
	if synced != offs[8] {
		t.Fatalf("synced %d, want %d", synced, offs[8])
	}
	flipByte(t, mem, seg0, poss[3]+70) // inside the records of batch 3
	_, _, err := Open(mem, testDir, testOptions())
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("Open error = %v, want *CorruptionError", err)
	}
	if ce.Segment != seg0 || ce.Offset != offs[3] || ce.Position != poss[3] || !strings.Contains(ce.Reason, "crc") {
		t.Errorf("CorruptionError = %+v, want segment %s offset %d position %d with a CRC reason", ce, seg0, offs[3], poss[3])
	}
	// Opening failed without touching the data: the bytes are all there.
	data, _ := mem.ReadDurable(seg0)
	if st, _ := mem.Inspect(seg0); st.Size < poss[11] {
		t.Errorf("segment shrank to %d bytes (durable %d) after a refused open", st.Size, len(data))
	}
	// A header field (epoch going backwards is also caught, outside the CRC).
	mem2, offs2, poss2, _ := corruptionSetup(t)
	flipByte(t, mem2, seg0, poss2[5]+15) // low byte of PartitionLeaderEpoch: 1 -> 0x11
	flipByte(t, mem2, seg0, poss2[6]+15)
	if _, _, err := Open(mem2, testDir, testOptions()); !errors.As(err, &ce) || ce.Offset != offs2[7] || !strings.Contains(ce.Reason, "epoch") {
		t.Fatalf("Open after epoch damage = %v, want a CorruptionError at offset %d about the epoch", err, offs2[7])
	}
}

func TestBitFlipAboveRecoveryPoint(t *testing.T) {
	mem, offs, poss, synced := corruptionSetup(t)
	flipByte(t, mem, seg0, poss[10]+70)
	var logBuf bytes.Buffer
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	l, rep, err := Open(mem, testDir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	tr := rep.Truncation
	if tr == nil || tr.Offset != offs[10] || tr.Position != poss[10] || tr.Segment != seg0 {
		t.Fatalf("truncation = %+v, want a cut at offset %d position %d", tr, offs[10], poss[10])
	}
	if l.LogEndOffset() != offs[10] || rep.RecoveryPoint != synced {
		t.Fatalf("LEO %d, recovery point %d; want %d, %d", l.LogEndOffset(), rep.RecoveryPoint, offs[10], synced)
	}
	out := logBuf.String()
	for _, want := range []string{"level=WARN", "file=" + seg0, "offset=" + itoa(offs[10]), "reason="} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
	if st, _ := mem.Inspect(seg0); st.Size != poss[10] {
		t.Errorf("segment is %d bytes after the cut, want %d", st.Size, poss[10])
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestTornTail cuts the active segment's file in the ways a crash can
// leave it, relative to the end of its batches (the log was abandoned with
// the file's end preallocated, so zeros follow the batches), and checks
// where recovery ends the log: at a torn batch with a Truncation, or at the
// zeros after the last whole batch as the log's end (ZeroTailBytes).
func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		// size returns the new size of the segment, given the end of its
		// batches and the start of the last one; negative appends that
		// many zeros to the file as it is.
		size     func(end, lastPos int64) int64
		wantEnd  int // index into offs of the expected log end; 12 is all
		zeroTail bool
	}{
		{"fewer than 12 header bytes", func(end, last int64) int64 { return last + 9 }, 11, false},
		{"only the zero bytes of a header", func(end, last int64) int64 { return last + 5 }, 11, true},
		{"batch shorter than its length", func(end, last int64) int64 { return end - 3 }, 11, false},
		{"preallocated tail", func(end, last int64) int64 { return 0 }, 12, true},
		{"zero-filled tail beyond the preallocated space", func(end, last int64) int64 { return -4096 }, 12, true},
		{"no tail", func(end, last int64) int64 { return end }, 12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, offs, poss, _ := corruptionSetup(t)
			offs = append(offs, offs[11]+2)
			st, _ := mem.Inspect(seg0)
			f, err := mem.OpenFile(seg0, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			var head [recordbatch.LogOverhead]byte
			if _, err := f.ReadAt(head[:], poss[11]); err != nil {
				t.Fatal(err)
			}
			n, err := recordbatch.TotalSize(head[:])
			if err != nil {
				t.Fatal(err)
			}
			end := poss[11] + int64(n)
			if st.Size <= end {
				t.Fatalf("segment file of %d bytes, batches end at %d: not preallocated", st.Size, end)
			}
			switch size := tc.size(end, poss[11]); {
			case size < 0:
				if _, err := f.WriteAt(make([]byte, -size), st.Size); err != nil {
					t.Fatal(err)
				}
			case size > 0:
				if err := f.Truncate(size); err != nil {
					t.Fatal(err)
				}
			}
			fileSize, _ := mem.Inspect(seg0)
			f.Close()
			l, rep, err := Open(mem, testDir, testOptions())
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer l.Close()
			wantEnd := offs[tc.wantEnd]
			if l.LogEndOffset() != wantEnd {
				t.Fatalf("LEO %d, want %d (truncation %+v, zero tail %d)", l.LogEndOffset(), wantEnd, rep.Truncation, rep.ZeroTailBytes)
			}
			switch {
			case tc.zeroTail:
				if rep.Truncation != nil || rep.ZeroTailBytes != fileSize.Size-l.Segments()[0].Bytes {
					t.Fatalf("truncation %+v, zero tail %d; want a zero tail of %d bytes", rep.Truncation, rep.ZeroTailBytes, fileSize.Size-l.Segments()[0].Bytes)
				}
			case tc.wantEnd < 12:
				if rep.Truncation == nil || rep.Truncation.Offset != wantEnd || rep.ZeroTailBytes != 0 {
					t.Fatalf("truncation %+v, zero tail %d; want a cut at offset %d", rep.Truncation, rep.ZeroTailBytes, wantEnd)
				}
			default:
				if rep.Truncation != nil || rep.ZeroTailBytes != 0 {
					t.Fatalf("truncation %+v, zero tail %d; want neither", rep.Truncation, rep.ZeroTailBytes)
				}
			}
			if st, _ := mem.Inspect(seg0); st.Size != l.Segments()[0].Bytes || st.DurableSize != st.Size {
				t.Errorf("segment file %+v after recovery, want %d durable bytes", st, l.Segments()[0].Bytes)
			}
		})
	}
}

// TestKafkaDirectoryWithoutRecoveryPoint: with no recovery-point file, only
// the last segment's tail may be cut; damage in an earlier segment is
// corruption.
func TestKafkaDirectoryWithoutRecoveryPoint(t *testing.T) {
	build := func() (*vfs.MemFS, []SegmentInfo) {
		mem := vfs.NewMem()
		opts := testOptions()
		l, _ := openLog(t, mem, opts)
		for i := range 30 {
			if _, err := l.AppendAsLeader(makeBatch(t, 1, 120, i, 10), 1); err != nil {
				t.Fatal(err)
			}
		}
		segs := l.Segments()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := mem.Remove(filepath.Join(testDir, RecoveryPointFileName)); err != nil {
			t.Fatal(err)
		}
		if len(segs) < 3 {
			t.Fatalf("%d segments", len(segs))
		}
		return mem, segs
	}
	mem, segs := build()
	flipByte(t, mem, segs[1].Path, 80)
	_, _, err := Open(mem, testDir, testOptions())
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != segs[1].Path || ce.Offset != segs[1].BaseOffset {
		t.Fatalf("damage in segment 1 of %d: Open = %v, want *CorruptionError in %s", len(segs), err, segs[1].Path)
	}
	mem, segs = build()
	last := segs[len(segs)-1]
	flipByte(t, mem, last.Path, 80)
	l, rep, err := Open(mem, testDir, testOptions())
	if err != nil {
		t.Fatalf("damage in the last segment: Open = %v", err)
	}
	defer l.Close()
	if rep.Truncation == nil || rep.Truncation.Offset != last.BaseOffset || l.LogEndOffset() != last.BaseOffset {
		t.Fatalf("truncation %+v, LEO %d; want a cut at %d", rep.Truncation, l.LogEndOffset(), last.BaseOffset)
	}
}

func TestMissingSyncedDataIsCorruption(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions()
	l, _ := openLog(t, mem, opts)
	for i := range 30 {
		if _, err := l.AppendAsLeader(makeBatch(t, 1, 120, i, 10), 1); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// An operator deletes the last segment by mistake.
	last := segs[len(segs)-1]
	if err := mem.Remove(last.Path); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(mem, testDir, opts)
	var ce *CorruptionError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "below the recovery point") {
		t.Fatalf("Open = %v, want *CorruptionError about missing synced data", err)
	}
	// A gap between segments is corruption too.
	mem2 := vfs.NewMem()
	l, _ = openLog(t, mem2, opts)
	for i := range 30 {
		if _, err := l.AppendAsLeader(makeBatch(t, 1, 120, i, 10), 1); err != nil {
			t.Fatal(err)
		}
	}
	segs = l.Segments()
	l.Close()
	if err := mem2.Remove(segs[1].Path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(mem2, testDir, opts); !errors.As(err, &ce) || !strings.Contains(ce.Reason, "does not continue") {
		t.Fatalf("Open with a missing middle segment = %v, want *CorruptionError about the gap", err)
	}
}

func TestWriteFaultsPoison(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault vfs.Fault
		// during says which call hits the fault.
		during string
		errno  syscall.Errno
	}{
		{"ENOSPC on segment write, short", vfs.Fault{Ops: vfs.OpWrite, Match: isSegment, Err: syscall.ENOSPC, Count: 1, ShortWrite: 30}, "append", syscall.ENOSPC},
		{"EIO on segment write", vfs.Fault{Ops: vfs.OpWrite, Match: isSegment, Err: syscall.EIO, Count: 1}, "append", syscall.EIO},
		{"EIO on segment fsync", vfs.Fault{Ops: vfs.OpSync, Match: isSegment, Err: syscall.EIO, Count: 1}, "sync", syscall.EIO},
		{"EIO on recovery point fsync", vfs.Fault{Ops: vfs.OpSync, Match: isRecoveryPoint, Err: syscall.EIO, Count: 1}, "checkpoint", syscall.EIO},
		{"ENOSPC on recovery point write", vfs.Fault{Ops: vfs.OpWrite, Match: isRecoveryPoint, Err: syscall.ENOSPC, Count: 1}, "checkpoint", syscall.ENOSPC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := testOptions()
			opts.InternalSegmentBytes = 1 << 20
			l, _ := openLog(t, mem, opts)
			want := map[int64][]byte{}
			for i := range 5 {
				b := makeBatch(t, 1, 100, i, 10)
				res, _ := l.AppendAsLeader(b, 1)
				want[res.FirstOffset] = b
			}
			synced, err := l.Sync()
			if err != nil || synced != 5 {
				t.Fatalf("Sync = %d, %v", synced, err)
			}
			mem.InjectFault(tc.fault)
			b := makeBatch(t, 1, 100, 9, 10)
			want[5] = b // stamped in place by the append
			_, err = l.AppendAsLeader(b, 1)
			switch tc.during {
			case "sync":
				if err != nil {
					t.Fatalf("append: %v", err)
				}
				_, err = l.Sync()
			case "checkpoint":
				// The fsync of the data needs no recovery-point write.
				if err != nil {
					t.Fatalf("append: %v", err)
				}
				if synced, err = l.Sync(); err != nil || synced != 6 {
					t.Fatalf("Sync = %d, %v; want 6", synced, err)
				}
				_, err = l.CheckpointRecoveryPoint()
			}
			if !errors.Is(err, tc.errno) {
				t.Fatalf("%s error = %v, want %v", tc.during, err, tc.errno)
			}
			// Poisoned: every write and sync fails, even with the fault gone.
			mem.ClearFaults()
			if _, err := l.AppendAsLeader(makeBatch(t, 1, 10, 10, 10), 1); !errors.Is(err, ErrPoisoned) {
				t.Errorf("append after failure = %v, want ErrPoisoned", err)
			}
			if _, err := l.Sync(); !errors.Is(err, ErrPoisoned) || !errors.Is(err, tc.errno) {
				t.Errorf("sync after failure = %v, want ErrPoisoned wrapping %v", err, tc.errno)
			}
			if err := l.Truncate(0); !errors.Is(err, ErrPoisoned) {
				t.Errorf("truncate after failure = %v, want ErrPoisoned", err)
			}
			if l.SyncedOffset() != synced {
				t.Errorf("synced offset moved to %d", l.SyncedOffset())
			}
			// Reads of what is there still work.
			if got := batchAt(t, l, 2); !bytes.Equal(got, want[2]) {
				t.Errorf("read after failure differs")
			}
			if err := l.Close(); err != nil {
				t.Logf("close of a poisoned log: %v", err)
			}
			// A crash and reopen recover a prefix holding every synced batch.
			mem.Crash(rand.New(rand.NewPCG(1, 2)), vfs.CrashTearPrefix)
			l2, _ := openLog(t, mem, opts)
			defer l2.Close()
			if l2.LogEndOffset() < synced {
				t.Fatalf("reopened LEO %d below synced %d", l2.LogEndOffset(), synced)
			}
			for off := range synced {
				if got := batchAt(t, l2, off); !bytes.Equal(got, want[off]) {
					t.Fatalf("batch %d differs after reopen", off)
				}
			}
			if _, err := l2.AppendAsLeader(makeBatch(t, 1, 10, 11, 10), 1); err != nil {
				t.Fatalf("append after reopen: %v", err)
			}
		})
	}
}

func isSegment(p string) bool { return strings.HasSuffix(p, logSuffix) }

func isRecoveryPoint(p string) bool { return strings.HasSuffix(p, RecoveryPointFileName) }

// TestQuorumStateCrash kills the process at every step of rewriting
// quorum-state (create tmp, write, fsync, rename, fsync dir) and crashes
// the MemFS in every mode: the file afterwards holds the old state or the
// new one, never a mix or nothing; once WriteQuorumState returned, the new
// one.
func TestQuorumStateCrash(t *testing.T) {
	old := QuorumStateData{DataVersion: 1, LeaderID: -1, LeaderEpoch: 4, VotedID: 2, VotedDirectoryID: kraft.UUID{1, 2, 3}}
	next := QuorumStateData{DataVersion: 1, LeaderID: 3, LeaderEpoch: 5, VotedID: -1}
	modes := []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix}
	sawOld, sawNew := false, false
	for budget := 0; budget <= 6; budget++ {
		for _, mode := range modes {
			for seed := range uint64(8) {
				mem := vfs.NewMem()
				if err := makeDirDurable(mem, testDir); err != nil {
					t.Fatal(err)
				}
				if err := WriteQuorumState(mem, testDir, old); err != nil {
					t.Fatal(err)
				}
				k := &killFS{FS: mem, budget: budget}
				werr := WriteQuorumState(k, testDir, next)
				mem.Crash(rand.New(rand.NewPCG(seed, uint64(budget))), mode)
				got, err := ReadQuorumState(mem, testDir)
				if err != nil {
					t.Fatalf("budget %d %v seed %d: read: %v", budget, mode, seed, err)
				}
				switch {
				case cmp.Equal(got, next):
					sawNew = true
				case cmp.Equal(got, old) && werr != nil:
					sawOld = true
				default:
					t.Fatalf("budget %d %v seed %d: state %+v (write error %v), want old %+v or new %+v", budget, mode, seed, got, werr, old, next)
				}
			}
		}
	}
	if !sawOld || !sawNew {
		t.Fatalf("saw old %v, new %v: the crash points did not cover both outcomes", sawOld, sawNew)
	}
	// A leftover quorum-state.tmp is deleted by Open and never read.
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	if err := WriteQuorumState(mem, testDir, old); err != nil {
		t.Fatal(err)
	}
	l.Close()
	f, _ := mem.OpenFile(filepath.Join(testDir, QuorumStateFileName+tmpSuffix), os.O_CREATE|os.O_WRONLY, 0o644)
	f.Write([]byte(`{"leaderId":`))
	f.Close()
	l, rep := openLog(t, mem, testOptions())
	defer l.Close()
	if !slices.Contains(rep.RemovedFiles, QuorumStateFileName+tmpSuffix) {
		t.Errorf("removed files %v lack the leftover tmp", rep.RemovedFiles)
	}
	if _, err := mem.Stat(filepath.Join(testDir, QuorumStateFileName+tmpSuffix)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("leftover tmp still there: %v", err)
	}
	if got, err := ReadQuorumState(mem, testDir); err != nil || !cmp.Equal(got, old) {
		t.Errorf("quorum state after open = %+v, %v", got, err)
	}
}

func TestLockExcludesSecondOpen(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	if _, _, err := Open(mem, testDir, testOptions()); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	l.Close()
	l2, _ := openLog(t, mem, testOptions())
	l2.Close()
	// The OS lock (flock) excludes a second open file description too.
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	l3, _, err := Open(vfs.OS(), dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	if _, _, err := Open(vfs.OS(), dir, testOptions()); !errors.Is(err, ErrLocked) {
		t.Fatalf("second OS Open = %v, want ErrLocked", err)
	}
}

// TestRecoveryCutCrashAtEveryPoint: a tail cut inside an early segment
// (above the recovery point) deletes the later segments; a crash at any
// call of that repair must leave a directory the next open accepts.
func TestRecoveryCutCrashAtEveryPoint(t *testing.T) {
	for budget := 0; budget < 25; budget++ {
		mem := vfs.NewMem()
		l, _ := openLog(t, mem, testOptions())
		fillLog(t, l, 3, 10, 100)
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		fillLog(t, l, 40, 10, 200)
		segs := l.Segments()
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		abandon(l)
		// Every roll checkpointed the recovery point, so it is at the base
		// of the last segment. Put it back to offset 3, as a checkpoint
		// that lags a roll would leave it, to cut inside segment 1.
		if err := createRecoveryPointAt(mem, 3); err != nil {
			t.Fatal(err)
		}
		flipByte(t, mem, segs[1].Path, 100)
		if err := mem.SyncDir(testDir); err != nil {
			t.Fatal(err)
		}
		k := &killFS{FS: mem, budget: budget}
		if l, _, err := Open(k, testDir, testOptions()); err == nil {
			l.Close()
		} else if !errors.Is(err, errKilled) {
			t.Fatalf("budget %d: open: %v", budget, err)
		}
		mem.Crash(rand.New(rand.NewPCG(5, uint64(budget))), vfs.CrashTearPrefix)
		l2, _, err := Open(mem, testDir, testOptions())
		if err != nil {
			t.Fatalf("budget %d: reopen after an interrupted repair: %v", budget, err)
		}
		if l2.LogEndOffset() != segs[1].BaseOffset {
			t.Fatalf("budget %d: LEO %d, want the cut at %d", budget, l2.LogEndOffset(), segs[1].BaseOffset)
		}
		l2.Close()
	}
}

// TestReadFaultsAtOpen: an I/O error while recovery reads a segment fails
// Open with the path (nothing is cut), and a transient read corruption of
// synced data is reported as corruption, then opens cleanly once the
// fault is gone, with nothing lost.
func TestReadFaultsAtOpen(t *testing.T) {
	mem, offs, _, synced := corruptionSetup(t)
	mem.InjectFault(vfs.Fault{Ops: vfs.OpRead, Match: isSegment, Err: syscall.EIO, Count: 1})
	_, _, err := Open(mem, testDir, testOptions())
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), seg0) {
		t.Fatalf("Open with EIO on read = %v, want EIO naming %s", err, seg0)
	}
	if err := mem.CorruptReads(seg0, 200, 1, 0x40); err != nil {
		t.Fatal(err)
	}
	_, _, err = Open(mem, testDir, testOptions())
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != offs[1] {
		t.Fatalf("Open with corrupt reads = %v, want *CorruptionError at offset %d", err, offs[1])
	}
	mem.ClearFaults()
	l, rep := openLog(t, mem, testOptions())
	defer l.Close()
	if rep.Truncation != nil || l.LogEndOffset() != offs[11]+2 || rep.RecoveryPoint != synced {
		t.Fatalf("after the fault cleared: report %+v, LEO %d", rep, l.LogEndOffset())
	}
}

// Index files of no segment are deleted at Open in name order, whatever
// order the map that collects them iterates in: recovery is
// deterministic, its report and its file system operations alike.
func TestOrphanIndexesRemovedInNameOrder(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openLog(t, mem, testOptions())
	l.Close()
	var want []string
	for _, base := range []int64{900, 300, 700, 100, 500} {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			name := segmentName(base, suffix)
			want = append(want, name)
			f, err := mem.OpenFile(filepath.Join(testDir, name), os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	slices.Sort(want)
	for range 5 {
		c := mem.Clone()
		l, rep := openLog(t, c, testOptions())
		l.Close()
		if !slices.Equal(rep.RemovedFiles, want) {
			t.Fatalf("removed %v, want %v", rep.RemovedFiles, want)
		}
	}
}
