package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// preallocModes are the Options.PreallocateBytes the crash tests run
// with: the default (capped by the tests' small segments, so one
// extension per segment), a tiny chunk (an extension every batch or two)
// and none.
var preallocModes = []int64{DefaultPreallocateBytes, 100, 0}

// checkSealedSegments checks, on a crashed (freshly mounted) mem, that
// every segment but the newest holds whole batches up to its last byte:
// a sealed segment's file is cut back to its batches and fsynced before
// the next segment is created, and recovery takes a sealed segment's size
// from its file, so a zero tail there must never survive a crash.
func checkSealedSegments(t fataler, name string, mem *vfs.MemFS) {
	t.Helper()
	var logs []string
	for _, p := range mem.List() {
		if filepath.Dir(p) == testDir && strings.HasSuffix(p, logSuffix) {
			logs = append(logs, p)
		}
	}
	for i, p := range logs {
		if i == len(logs)-1 {
			break
		}
		b, err := mem.ReadDurable(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for pos := 0; pos < len(b); {
			n, err := recordbatch.TotalSize(b[pos:])
			if err != nil || n > len(b)-pos {
				t.Fatalf("%s: sealed segment %s has a tail at byte %d of %d that is not a whole batch (%v)", name, filepath.Base(p), pos, len(b), err)
			}
			pos += n
		}
	}
}

// TestCrashAtEveryPointPreallocated is TestCrashAtEveryPoint with every
// preallocation setting, crashing also in reorder mode, and checking
// that no sealed segment has a tail after any crash point: crashes land
// around extensions, rolls and the Close that ends the workload.
func TestCrashAtEveryPointPreallocated(t *testing.T) {
	const n = 24
	for _, chunk := range preallocModes {
		opts := testOptions()
		opts.InternalSegmentBytes = 900
		opts.PreallocateBytes = chunk
		work := func(l *Log) (map[int64][]byte, int64, int64) {
			batches, synced, checkpoint := crashWorkload(t, l, n)
			if err := l.Close(); err == nil {
				synced = l.SyncedOffset()
			}
			return batches, synced, checkpoint
		}
		full := &killFS{FS: vfs.NewMem(), budget: -1}
		l, _ := openLog(t, full, opts)
		openCalls := full.calls
		work(l)
		total := full.calls
		modes := []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix, vfs.CrashReorder}
		for budget := openCalls; budget <= total; budget++ {
			for _, mode := range modes {
				for seed := range uint64(2) {
					if mode == vfs.CrashDropUnsynced && seed > 0 {
						continue
					}
					name := fmt.Sprintf("preallocate %d, kill after %d calls, %v, seed %d", chunk, budget, mode, seed)
					mem := vfs.NewMem()
					k := &killFS{FS: mem, budget: budget}
					l, _, err := Open(k, testDir, opts)
					if err != nil {
						t.Fatalf("%s: open: %v", name, err)
					}
					batches, synced, checkpoint := work(l)
					mem.Crash(rand.New(rand.NewPCG(seed, uint64(budget))), mode)
					checkSealedSegments(t, name, mem)
					rp := checkRecovered(t, name, mem, opts, batches, synced)
					if rp < checkpoint {
						t.Fatalf("%s: recovery point %d below the checkpoint %d that returned", name, rp, checkpoint)
					}
					checkSealedSegments(t, name+", after recovery", mem)
				}
			}
		}
	}
}

// growCountFS counts the writes that grow a .log file (preallocation's
// zeros) and fails the test when a write of data grows it.
type growCountFS struct {
	logFilesFS
	t      *testing.T
	grows  int
	writes int
}

func newGrowCountFS(t *testing.T, fsys vfs.FS) *growCountFS {
	c := &growCountFS{t: t}
	c.logFilesFS = logFilesFS{FS: fsys, wrap: func(f vfs.File) vfs.File { return &growCountFile{File: f, c: c} }}
	return c
}

type growCountFile struct {
	vfs.File
	c *growCountFS
}

func (f *growCountFile) WriteAt(p []byte, off int64) (int, error) {
	before, err := f.Stat()
	if err != nil {
		return 0, err
	}
	n, err := f.File.WriteAt(p, off)
	after, serr := f.Stat()
	if serr == nil && after.Size() != before.Size() {
		if !isZeros(p) {
			f.c.t.Errorf("write of %d bytes of data at %d changed the size of %s from %d to %d", len(p), off, f.Name(), before.Size(), after.Size())
		}
		f.c.grows++
	}
	f.c.writes++
	return n, err
}

func isZeros(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}

// TestAppendsDoNotChangeTheSize: with preallocation, no append changes the
// .log file's size; the size changes only by the zeros of preallocation,
// once per chunk, and never beyond the segment size unless a batch is
// larger than that.
func TestAppendsDoNotChangeTheSize(t *testing.T) {
	const chunk = 1000
	c := newGrowCountFS(t, vfs.NewMem())
	opts := testOptions()
	opts.InternalSegmentBytes = 1 << 20
	opts.PreallocateBytes = chunk
	l, _ := openLog(t, c, opts)
	total, largest := 0, 0
	for i := range 200 {
		b := makeBatch(t, 1, 50+i%100, i, 10)
		total += len(b)
		largest = max(largest, len(b))
		if _, err := l.AppendAsLeader(b, 1); err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		seg := l.Segments()[0]
		fi, err := c.Stat(seg.Path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() < seg.Bytes || fi.Size() > seg.Bytes+chunk {
			t.Fatalf("after %d appends the file has %d bytes for %d of batches; want at most one chunk (%d) more", i+1, fi.Size(), seg.Bytes, chunk)
		}
	}
	// Each fill reaches a chunk past the append that needed it, so the
	// file grows once per chunk and one batch at most.
	if most, least := (total+chunk-1)/chunk, total/(chunk+largest); c.grows > most || c.grows < least {
		t.Errorf("%d writes of zeros grew the file for %d bytes in %d writes, want %d to %d (one per %d-byte chunk)", c.grows, total, c.writes, least, most, chunk)
	}

	// A segment never grows past its size by preallocation, and a batch
	// larger than the chunk gets room for itself.
	c2 := newGrowCountFS(t, vfs.NewMem())
	opts.InternalSegmentBytes = 1500
	opts.PreallocateBytes = 64
	l2, _ := openLog(t, c2, opts)
	for i := range 20 {
		if _, err := l2.AppendAsLeader(makeBatch(t, 2, 200, i, 10), 1); err != nil {
			t.Fatal(err)
		}
		for _, s := range l2.Segments() {
			fi, err := c2.Stat(s.Path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() > opts.InternalSegmentBytes || fi.Size() < s.Bytes {
				t.Fatalf("segment %d: file of %d bytes for %d of batches, segment size %d", s.BaseOffset, fi.Size(), s.Bytes, opts.InternalSegmentBytes)
			}
		}
	}
	if len(l2.Segments()) < 3 {
		t.Fatalf("only %d segments", len(l2.Segments()))
	}
	// Sealed segments were cut back to their batches.
	for _, s := range l2.Segments()[:len(l2.Segments())-1] {
		if fi, err := c2.Stat(s.Path); err != nil || fi.Size() != s.Bytes {
			t.Fatalf("sealed segment %d: %v, %v; want %d bytes", s.BaseOffset, fi, err, s.Bytes)
		}
	}
	l.Close()
	l2.Close()
}

// preallocWorkload appends, syncs, rolls, truncates and advances the log
// start, the same way whatever the options.
func preallocWorkload(t *testing.T, l *Log) {
	t.Helper()
	for i := range 40 {
		if _, err := l.AppendAsLeader(makeBatch(t, 1+i%3, 40+(i*53)%170, i, int64(100+i)), int32(1+i/9)); err != nil {
			t.Fatal(err)
		}
		if i%4 == 3 {
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		switch i {
		case 17:
			if err := l.Truncate(l.LogEndOffset() - 5); err != nil {
				t.Fatal(err)
			}
		case 25:
			if err := l.AdvanceLogStart(l.Segments()[1].BaseOffset); err != nil {
				t.Fatal(err)
			}
		case 31:
			// Back into a sealed segment: it becomes the active one.
			if err := l.Truncate(l.Segments()[len(l.Segments())-1].BaseOffset - 1); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCloseLeavesFilesAsWithoutPreallocation: a log closed cleanly leaves
// every file byte-identical to the same log written without preallocation.
func TestCloseLeavesFilesAsWithoutPreallocation(t *testing.T) {
	files := func(chunk int64) map[string][]byte {
		mem := vfs.NewMem()
		opts := testOptions()
		opts.InternalSegmentBytes = 1200
		opts.PreallocateBytes = chunk
		l, _ := openLog(t, mem, opts)
		preallocWorkload(t, l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, p := range mem.List() {
			if st, err := mem.Inspect(p); err == nil && !st.Dir {
				b, err := mem.ReadDurable(p)
				if err != nil {
					t.Fatal(err)
				}
				out[p] = b
			}
		}
		return out
	}
	want := files(0)
	for _, chunk := range []int64{1, 100, 1000, DefaultPreallocateBytes} {
		got := files(chunk)
		if len(got) != len(want) {
			t.Fatalf("preallocate %d: %d files, without preallocation %d", chunk, len(got), len(want))
		}
		for p, b := range want {
			if !bytes.Equal(got[p], b) {
				t.Errorf("preallocate %d: %s has %d bytes, without preallocation %d (or differs)", chunk, p, len(got[p]), len(b))
			}
		}
	}
}

// TestZeroTailBelowRecoveryPointIsCorruption: zeros where synced data
// belongs (below the recovery point) are refused like any other damage
// there, not taken for preallocated space.
func TestZeroTailBelowRecoveryPointIsCorruption(t *testing.T) {
	mem, offs, poss, synced := corruptionSetup(t)
	f, err := mem.OpenFile(seg0, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := mem.Inspect(seg0)
	if _, err := f.WriteAt(make([]byte, st.Size-poss[3]), poss[3]); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, _, err = Open(mem, testDir, testOptions())
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != offs[3] {
		t.Fatalf("Open = %v; want a CorruptionError at offset %d (below the recovery point %d)", err, offs[3], synced)
	}
}

// TestPreallocateOption: the option is validated, and 0 writes the file
// exactly as long as its batches.
func TestPreallocateOption(t *testing.T) {
	opts := testOptions()
	opts.PreallocateBytes = -1
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "PreallocateBytes") {
		t.Errorf("Validate with PreallocateBytes -1 = %v", err)
	}
	if DefaultOptions().PreallocateBytes != DefaultPreallocateBytes {
		t.Errorf("default PreallocateBytes %d", DefaultOptions().PreallocateBytes)
	}
	mem := vfs.NewMem()
	opts.PreallocateBytes = 0
	l, _ := openLog(t, mem, opts)
	defer l.Close()
	if _, err := l.AppendAsLeader(makeBatch(t, 1, 100, 1, 1), 1); err != nil {
		t.Fatal(err)
	}
	s := l.Segments()[0]
	if st, _ := mem.Inspect(s.Path); st.Size != s.Bytes {
		t.Errorf("without preallocation the file has %d bytes for %d of batches", st.Size, s.Bytes)
	}
}
