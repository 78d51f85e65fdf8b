package logstore

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// refBatch is one batch as a plain scan of the segment files finds it.
type refBatch struct {
	seg   int64 // base offset of its segment
	pos   int64
	base  int64
	next  int64
	bytes []byte
}

// scanFiles reads every segment file of l whole and splits it into
// batches, the reference the lookups are checked against.
func scanFiles(t *testing.T, fsys vfs.FS, l *Log) []refBatch {
	t.Helper()
	var out []refBatch
	for _, si := range l.Segments() {
		f, err := fsys.OpenFile(si.Path, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, si.Bytes)
		if _, err := f.ReadAt(b, 0); err != nil && si.Bytes > 0 {
			t.Fatal(err)
		}
		f.Close()
		for pos := 0; pos < len(b); {
			h, err := recordbatch.Validate(b[pos:])
			if err != nil {
				t.Fatalf("segment %s at %d: %v", si.Path, pos, err)
			}
			out = append(out, refBatch{seg: si.BaseOffset, pos: int64(pos), base: h.BaseOffset, next: h.NextOffset(), bytes: b[pos : pos+h.Size()]})
			pos += h.Size()
		}
	}
	return out
}

// checkLookups looks up every offset of l and compares the batch found
// (segment, position, base offset, size, bytes read) with a scan of the
// files. With canonical, the active segment's tail must also be exactly
// the one appending or recovering its batches builds.
func checkLookups(t *testing.T, fsys vfs.FS, l *Log, canonical bool) {
	t.Helper()
	ref := scanFiles(t, fsys, l)
	if start, end := l.LogStartOffset(), l.LogEndOffset(); len(ref) > 0 && (ref[len(ref)-1].next != end || ref[0].base > start) {
		t.Fatalf("files hold [%d, %d), log [%d, %d)", ref[0].base, ref[len(ref)-1].next, start, end)
	}
	for _, rb := range ref {
		for off := max(rb.base, l.LogStartOffset()); off < rb.next; off++ {
			l.mu.Lock()
			s := l.segmentFor(off)
			b, err := l.findBatch(s, off)
			l.mu.Unlock()
			if err != nil {
				t.Fatalf("findBatch(%d): %v", off, err)
			}
			want := batchLoc{pos: rb.pos, base: rb.base, size: int64(len(rb.bytes))}
			if s.base != rb.seg || b != want {
				t.Fatalf("findBatch(%d) = segment %d %+v, want segment %d %+v", off, s.base, b, rb.seg, want)
			}
			r, err := l.Read(off, 1)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			if r.FirstOffset != rb.base || r.NextOffset != rb.next || !bytes.Equal(r.Batches, rb.bytes) {
				t.Fatalf("Read(%d) = [%d, %d) %d bytes, want [%d, %d) %d bytes", off, r.FirstOffset, r.NextOffset, len(r.Batches), rb.base, rb.next, len(rb.bytes))
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.tail != nil {
			t.Fatalf("sealed segment %d keeps a tail of %d batches", s.base, len(s.tail))
		}
	}
	s := l.active()
	var want []tailEntry
	for _, rb := range ref {
		if rb.seg == s.base {
			want = append(want, tailEntry{base: rb.base, pos: rb.pos})
		}
	}
	if canonical {
		start, mark := int64(0), int64(-1)
		if n := len(s.index); n >= 2 {
			start = int64(s.index[n-2].Pos)
		}
		if n := len(s.index); n >= 1 {
			mark = int64(s.index[n-1].Pos)
		}
		want = slices.DeleteFunc(want, func(e tailEntry) bool { return e.pos < start })
		if !slices.Equal(want, s.tail) {
			t.Fatalf("tail of segment %d:\n%v\nwant:\n%v", s.base, s.tail, want)
		}
		wantMark := 0
		for i, e := range s.tail {
			if e.pos == mark {
				wantMark = i
			}
		}
		if s.tailMark != wantMark {
			t.Fatalf("tail mark %d, want %d", s.tailMark, wantMark)
		}
		return
	}
	if len(s.tail) > l.opts.maxTailEntries || (len(s.tail) == 0 && len(want) > 0) {
		t.Fatalf("tail of %d batches, segment of %d, at most %d", len(s.tail), len(want), l.opts.maxTailEntries)
	}
	// The tail is a run of the segment's batches that ends with its last.
	if len(s.tail) > len(want) || !slices.Equal(s.tail, want[len(want)-len(s.tail):]) {
		t.Fatalf("tail of segment %d is not a run of its last batches:\n%v\nbatches:\n%v", s.base, s.tail, want)
	}
}

// reopenLog closes l and opens its directory again, and checks that the
// recovered active segment remembers the same tail.
func reopenLog(t *testing.T, fsys vfs.FS, l *Log, opts Options) *Log {
	t.Helper()
	l.mu.Lock()
	tail, mark := slices.Clone(l.active().tail), l.active().tailMark
	l.mu.Unlock()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = openLog(t, fsys, opts)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Equal(tail, l.active().tail) || mark != l.active().tailMark {
		t.Fatalf("recovered tail %v mark %d, before reopening %v mark %d", l.active().tail, l.active().tailMark, tail, mark)
	}
	return l
}

// TestLookupsMatchScan looks up every offset of logs of many small batches
// across several segments, after appends, truncations (into the
// remembered tail, before it, into an older segment), reopening and
// advancing the log start, and compares each result with a plain scan of
// the files.
func TestLookupsMatchScan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interval  int
		segBytes  int64
		batches   int
		maxTail   int
		canonical bool
	}{
		{"interval=1024", 1024, 16 << 10, 400, defaultMaxTailEntries, true},
		{"interval=256", 256, 8 << 10, 300, defaultMaxTailEntries, true},
		{"interval=0", 0, 8 << 10, 200, defaultMaxTailEntries, true},
		// More batches per interval than a tail holds: it drops its older
		// half when full.
		{"interval=1MiB", 1 << 20, 16 << 10, 400, 16, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.IndexIntervalBytes = tc.interval
			opts.InternalSegmentBytes = tc.segBytes
			opts.maxTailEntries = tc.maxTail
			fsys := vfs.NewMem()
			l, _ := openLog(t, fsys, opts)
			defer func() { l.Close() }()
			rng := rand.New(rand.NewPCG(uint64(tc.interval), 7))
			n := 0
			appendN := func(k int) {
				t.Helper()
				for range k {
					b := makeBatch(t, 1+rng.IntN(3), 10+rng.IntN(60), n, int64(1000+n))
					n++
					if _, err := l.AppendAsLeader(b, 1); err != nil {
						t.Fatal(err)
					}
				}
			}
			truncate := func(off int64) {
				t.Helper()
				if err := l.Truncate(off); err != nil {
					t.Fatalf("Truncate(%d): %v", off, err)
				}
			}
			check := func(what string) {
				t.Helper()
				t.Logf("%s: %d segments, log [%d, %d)", what, len(l.Segments()), l.LogStartOffset(), l.LogEndOffset())
				checkLookups(t, fsys, l, tc.canonical)
			}

			// truncateReopenAppend truncates to off, checks, reopens
			// (which must recover the same tail), appends k batches and
			// checks again.
			truncateReopenAppend := func(off int64, where string, k int) {
				t.Helper()
				truncate(off)
				check("truncated " + where)
				l = reopenLog(t, fsys, l, opts)
				appendN(k)
				check("appended after truncating " + where)
			}

			appendN(tc.batches)
			if len(l.Segments()) < 3 {
				t.Fatalf("only %d segments", len(l.Segments()))
			}
			check("appended")

			// Into the middle of the remembered tail, inside a batch.
			l.mu.Lock()
			tail := l.active().tail
			i := (len(tail) - 1) / 2
			next := l.active().next
			if i+1 < len(tail) {
				next = tail[i+1].base
			}
			off := (tail[i].base + next) / 2
			l.mu.Unlock()
			truncateReopenAppend(off, "into the tail", tc.batches/8)

			// Before the tail, in the active segment: the tail is read
			// again from the file.
			l.mu.Lock()
			s := l.active()
			off = s.base + (s.tail[0].base-s.base)/3
			l.mu.Unlock()
			truncateReopenAppend(off, "before the tail", tc.batches/8)

			// Into the segment before the active one, which becomes
			// active again.
			segs := l.Segments()
			prev := segs[len(segs)-2]
			truncateReopenAppend((prev.BaseOffset+prev.NextOffset)/2, "into the previous segment", tc.batches/4)

			// Rolls while appending, then reopen.
			appendN(tc.batches / 2)
			l = reopenLog(t, fsys, l, opts)
			check("reopened")

			// Advancing the log start deletes the oldest segments.
			segs = l.Segments()
			if err := l.AdvanceLogStart(segs[1].BaseOffset + 1); err != nil {
				t.Fatal(err)
			}
			check("log start advanced")
			if err := l.AdvanceLogStart(l.active().base); err != nil {
				t.Fatal(err)
			}
			if len(l.Segments()) != 1 {
				t.Fatalf("%d segments after advancing to the active segment, want 1", len(l.Segments()))
			}
			check("log start advanced to the active segment")
			appendN(tc.batches / 4)
			l = reopenLog(t, fsys, l, opts)
			check("appended and reopened after deleting the older segments")

			// Down to nothing in the active segment, then up again.
			truncate(l.active().base)
			check("truncated to the segment base")
			appendN(10)
			check("appended after truncating to the segment base")
		})
	}
}

// TestLookupReads counts the reads of the segment files: a lookup of any
// batch in the last index.interval.bytes of the active segment reads
// nothing, any other at most two chunks, also after reopening and
// truncating.
func TestLookupReads(t *testing.T) {
	fsys := newReadCountFS(vfs.NewMem())
	opts := DefaultOptions()
	opts.InternalSegmentBytes = 256 << 10
	l, _ := openLog(t, fsys, opts)
	defer func() { l.Close() }()
	// Single-record batches of about 330 bytes, a dozen per index entry.
	for i := range 1500 {
		if _, err := l.AppendAsLeader(makeBatch(t, 1, 256, i, 1000), 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.Segments()) < 2 {
		t.Fatalf("only %d segments", len(l.Segments()))
	}
	check := func(what string) {
		t.Helper()
		ref := scanFiles(t, fsys, l)
		segs := l.Segments()
		active := segs[len(segs)-1]
		tailLookups := 0
		for _, rb := range ref {
			l.mu.Lock()
			s := l.segmentFor(rb.base)
			before := fsys.reads.Load()
			if _, err := l.findBatch(s, rb.base); err != nil {
				t.Fatal(err)
			}
			reads := fsys.reads.Load() - before
			l.mu.Unlock()
			inTail := rb.seg == active.BaseOffset && rb.pos >= active.Bytes-int64(opts.IndexIntervalBytes)
			if inTail {
				tailLookups++
			}
			if inTail && reads != 0 {
				t.Fatalf("%s: lookup of offset %d, %d bytes before the end: %d reads, want 0", what, rb.base, active.Bytes-rb.pos, reads)
			}
			if reads > 2 {
				t.Fatalf("%s: lookup of offset %d: %d reads, want at most 2", what, rb.base, reads)
			}
			// Read adds one read, of the batches.
			before = fsys.reads.Load()
			if _, err := l.Read(rb.base, 1); err != nil {
				t.Fatal(err)
			}
			if got := fsys.reads.Load() - before; got != reads+1 {
				t.Fatalf("%s: Read(%d): %d reads, want %d", what, rb.base, got, reads+1)
			}
		}
		if tailLookups < opts.IndexIntervalBytes/400 {
			t.Fatalf("%s: only %d lookups in the tail", what, tailLookups)
		}
	}
	check("appended")
	l = reopenLog(t, fsys, l, opts)
	check("reopened")
	if err := l.Truncate(l.LogEndOffset() - 5); err != nil {
		t.Fatal(err)
	}
	check("truncated into the tail")
	if err := l.Truncate(l.LogEndOffset() - 200); err != nil {
		t.Fatal(err)
	}
	check("truncated before the tail")
}
