package snapshot

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// The benchmark snapshot: 100,000 TopicRecords, each followed by ten
// PartitionRecords (1,000,000 in all) with three replicas, as framed
// metadata record values.
var benchValues = sync.OnceValue(func() [][]byte {
	const topics, perTopic = 100_000, 10
	vals := make([][]byte, 0, topics*(perTopic+1))
	buf := make([]byte, 0, topics*(perTopic*70+40))
	for i := range topics {
		var id [16]byte
		binary.BigEndian.PutUint64(id[8:], uint64(i+1))
		start := len(buf)
		buf = topicValue(buf, fmt.Sprintf("topic-%06d", i), id)
		vals = append(vals, buf[start:len(buf):len(buf)])
		for p := range perTopic {
			start := len(buf)
			buf = partitionValue(buf, id, int32(p), []int32{int32(p%5 + 1), int32((p+1)%5 + 1), int32((p+2)%5 + 1)})
			vals = append(vals, buf[start:len(buf):len(buf)])
		}
	}
	return vals
})

var benchID = kraft.OffsetAndEpoch{Offset: 5_000_000, Epoch: 12}

// kafkaAppendGroup is how many records Kafka's snapshot generator hands to
// one append (SnapshotEmitter's default batch size). It does not change
// the batches, only the calls.
const kafkaAppendGroup = 1024

// writeBench writes the benchmark snapshot into dir, appending groups of
// kafkaAppendGroup records as Kafka's snapshot generator does.
func writeBench(b *testing.B, fsys vfs.FS, dir string, unique uint64) *Writer {
	vals := benchValues()
	w, err := Create(fsys, dir, benchID, unique, Header{LastContainedLogTimestamp: 1}, 1, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(vals); i += kafkaAppendGroup {
		if err := w.Append(2, vals[i:min(i+kafkaAppendGroup, len(vals))]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Freeze(3); err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkWrite measures writing the 1.1M-record snapshot: batching,
// CRCs, writes, fsync, rename and directory sync.
func BenchmarkWrite(b *testing.B) {
	vals := benchValues()
	for _, c := range []struct {
		name string
		fs   func(b *testing.B) (vfs.FS, string)
	}{
		{"MemFS", func(b *testing.B) (vfs.FS, string) { return vfs.NewMem(), "/d" }},
		{"OS", func(b *testing.B) (vfs.FS, string) { return vfs.OS(), b.TempDir() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			fsys, dir := c.fs(b)
			if err := fsys.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			var size int64
			n := uint64(0)
			for b.Loop() {
				n++
				w := writeBench(b, fsys, dir, n)
				size = w.Size()
				b.StopTimer()
				if err := fsys.Remove(w.Path()); err != nil {
					b.Fatal(err)
				}
				if m, ok := fsys.(*vfs.MemFS); ok {
					// Drop the removed file's pending history.
					if err := m.SyncDir(dir); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			b.SetBytes(size)
			b.ReportMetric(float64(len(vals))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkRead measures Open (the verifying pass) plus one iteration over
// every record of the 1.1M-record snapshot. Decoding the metadata records
// themselves is the caller's and not included.
func BenchmarkRead(b *testing.B) {
	vals := benchValues()
	for _, c := range []struct {
		name string
		fs   func(b *testing.B) (vfs.FS, string)
	}{
		{"MemFS", func(b *testing.B) (vfs.FS, string) { return vfs.NewMem(), "/d" }},
		{"OS", func(b *testing.B) (vfs.FS, string) { return vfs.OS(), b.TempDir() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			fsys, dir := c.fs(b)
			if err := fsys.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			w := writeBench(b, fsys, dir, 1)
			path := filepath.Join(dir, FileName(benchID))
			b.ResetTimer()
			for b.Loop() {
				r, err := Open(fsys, path, ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for r.Next() {
					n += len(r.Batch().Records)
				}
				if r.Err() != nil || n != len(vals) {
					b.Fatalf("read %d records, %v", n, r.Err())
				}
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(w.Size())
			b.ReportMetric(float64(len(vals))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
