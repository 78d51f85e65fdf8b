package logstore

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/krabka-go/krabka/internal/vfs"
)

// benchBatch encodes one batch of n records with 256-byte values.
func benchBatch(b *testing.B, n int) []byte {
	return makeBatch(b, n, 256, 1, 1)
}

// benchAppendLog opens a log on the real disk under b.TempDir() and
// returns it with a batch of n records, the benchmark's bytes per
// operation set to the batch's size.
func benchAppendLog(b *testing.B, opts Options, n int) (*Log, []byte) {
	l, _, err := Open(vfs.OS(), filepath.Join(b.TempDir(), "__cluster_metadata-0"), opts)
	if err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(b, n)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	return l, batch
}

// BenchmarkAppendSync measures a leader append followed by Sync (one
// fsync, of the segment; the recovery point is checkpointed off this
// path) on the real disk under
// b.TempDir(), for batches of 1, 16 and 256 records of 256 bytes. Compare
// with BenchmarkRawWriteFdatasync, the same write size with one fdatasync.
//
// It runs with the active segment preallocated (the default, 8 MiB
// chunks) and without (preallocate=0), where every append grows the file
// and so every fsync also commits a new size.
func BenchmarkAppendSync(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		for _, pre := range []int64{DefaultPreallocateBytes, 0} {
			b.Run(fmt.Sprintf("records=%d/preallocate=%d", n, pre), func(b *testing.B) {
				opts := DefaultOptions()
				opts.PreallocateBytes = pre
				l, batch := benchAppendLog(b, opts, n)
				defer l.Close()
				for b.Loop() {
					if _, err := l.AppendAsLeader(batch, 1); err != nil {
						b.Fatal(err)
					}
					if _, err := l.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkAppendNoSync measures the append path alone (page cache).
func BenchmarkAppendNoSync(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			l, batch := benchAppendLog(b, DefaultOptions(), n)
			defer l.Close()
			for b.Loop() {
				if _, err := l.AppendAsLeader(batch, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSequentialRead reads a 64 MiB log from start to end in 1 MiB
// fetches (Kafka's default controller.quorum.fetch.max.bytes).
func BenchmarkSequentialRead(b *testing.B) {
	l, _, err := Open(vfs.OS(), filepath.Join(b.TempDir(), "__cluster_metadata-0"), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := benchBatch(b, 16)
	var total int64
	for total < 64<<20 {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
		total += int64(len(batch))
	}
	if _, err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		var n int64
		for off := int64(0); off < l.LogEndOffset(); {
			r, err := l.Read(off, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			n += int64(len(r.Batches))
			off = r.NextOffset
		}
		if n != total {
			b.Fatalf("read %d bytes, want %d", n, total)
		}
	}
}

// BenchmarkOpenRecover measures Open of a closed log of 64 MiB and of
// 1 GiB: every batch is read and its CRC-32C checked, and the indexes are
// rebuilt and compared with the files.
func BenchmarkOpenRecover(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int64
	}{{"64MiB", 64 << 20}, {"1GiB", 1 << 30}} {
		b.Run(size.name, func(b *testing.B) { benchOpenRecover(b, size.bytes) })
	}
}

func benchOpenRecover(b *testing.B, size int64) {
	dir := filepath.Join(b.TempDir(), "__cluster_metadata-0")
	opts := DefaultOptions()
	opts.InternalSegmentBytes = 16 << 20
	l, _, err := Open(vfs.OS(), dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(b, 16)
	var total int64
	for total < size {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
		total += int64(len(batch))
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		l, rep, err := Open(vfs.OS(), dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.RebuiltFiles) != 0 || rep.Truncation != nil {
			b.Fatalf("clean log repaired: %+v", rep)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchReadLog returns a log on the real disk holding n single-record
// batches of 256-byte values (about 330 bytes each, a dozen per offset
// index entry), the shape of the metadata log at low load.
func benchReadLog(b *testing.B, n int) (*Log, *readCountFS) {
	fsys := newReadCountFS(vfs.OS())
	l, _, err := Open(fsys, filepath.Join(b.TempDir(), "__cluster_metadata-0"), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	batch := benchBatch(b, 1)
	for range n {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	return l, fsys
}

// benchReads reads from each offset of offs in turn with ReadInto a
// reused buffer, up to 4 KiB per read, and reports the reads of the
// segment file per call (preads/op; one of them reads the batches).
func benchReads(b *testing.B, l *Log, fsys *readCountFS, offs []int64) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	reads := fsys.reads.Load()
	i := 0
	for b.Loop() {
		if _, err := l.ReadInto(offs[i], 4<<10, buf); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(offs)
	}
	b.ReportMetric(float64(fsys.reads.Load()-reads)/float64(b.N), "preads/op")
}

// BenchmarkReadTail reads one of the last 16 offsets of the log, as the
// leader answering a Fetch and the apply loops reading committed batches
// do.
func BenchmarkReadTail(b *testing.B) {
	l, fsys := benchReadLog(b, 10_000)
	end := l.LogEndOffset()
	var offs []int64
	for k := int64(1); k <= 16; k++ {
		offs = append(offs, end-k)
	}
	benchReads(b, l, fsys, offs)
}

// BenchmarkReadOld reads offsets spread over the older half of the log,
// as a follower catching up does.
func BenchmarkReadOld(b *testing.B) {
	l, fsys := benchReadLog(b, 10_000)
	var offs []int64
	for off := int64(0); off < l.LogEndOffset()/2; off += 97 {
		offs = append(offs, off)
	}
	benchReads(b, l, fsys, offs)
}
