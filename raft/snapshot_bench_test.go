package raft

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// benchTopics sizes the restart and catch-up benchmarks: that many topics
// of ten partitions each.
var benchTopics = flag.Int("bench-topics", 10_000, "topics of 10 partitions in BenchmarkRestart and BenchmarkFetchSnapshotCatchUp")

// benchSnapshotTopics sizes the image of the snapshot write and load
// benchmarks: 100,000 topics (1,000,000 partitions) unless told.
var benchSnapshotTopics = flag.Int("bench-snapshot-topics", 100_000, "topics of 10 partitions in BenchmarkSnapshotWrite and BenchmarkSnapshotLoad")

// benchTopicRecords returns topic i and its ten partitions (three
// replicas each), as a controller writes them.
func benchTopicRecords(i int) []metadata.Record {
	tr := metadata.NewTopicRecord()
	tr.Name = fmt.Sprintf("topic-%07d", i)
	tr.TopicId = [16]byte{0xbe, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
	recs := []metadata.Record{tr}
	for p := range 10 {
		r := metadata.NewPartitionRecord()
		r.TopicId, r.PartitionId = tr.TopicId, int32(p)
		r.Replicas = []int32{int32(1 + p%5), int32(1 + (p+1)%5), int32(1 + (p+2)%5)}
		r.Isr, r.Leader = r.Replicas, r.Replicas[0]
		r.LeaderEpoch, r.PartitionEpoch = 0, 0
		recs = append(recs, r)
	}
	return recs
}

// benchImage builds the image of topics topics of ten partitions.
func benchImage(tb testing.TB, topics int) *metadata.Image {
	tb.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	off := int64(0)
	if err := d.Replay(metadataVersionRecord(), off, 1); err != nil {
		tb.Fatal(err)
	}
	off++
	for i := range topics {
		for _, r := range benchTopicRecords(i) {
			if err := d.Replay(r, off, 1); err != nil {
				tb.Fatal(err)
			}
			off++
		}
	}
	return d.Apply()
}

// peakHeap samples the heap's live objects every millisecond until the
// returned function is called, which reports the largest sample in MB.
func peakHeap() func() float64 {
	var peak uint64
	stop, done := make(chan struct{}), make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(stop)
		<-done
		return float64(peak) / 1e6
	}
}

// imageRecords counts the records of img's snapshot.
func imageRecords(img *metadata.Image) int {
	n := 0
	for range img.SnapshotRecords() {
		n++
	}
	return n
}

// BenchmarkSnapshotWrite measures the runtime's snapshot writer on an
// image of -bench-snapshot-topics topics × 10 partitions (1,000,000
// partitions by default): every record of the image encoded, batched,
// CRC'd and written to a file on the operating system's file system,
// fsynced and renamed. MB/s is the file's size; peak-heap-MB is the
// largest live heap sampled while writing, the image itself included;
// allocs/record is the heap objects allocated per record written.
func BenchmarkSnapshotWrite(b *testing.B) {
	img := benchImage(b, *benchSnapshotTopics)
	recs := imageRecords(img)
	dir := b.TempDir()
	var size int64
	var unique uint64
	runtime.GC()
	peak := peakHeap()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		unique++
		id := kraft.OffsetAndEpoch{Offset: kraft.Offset(int64(unique)), Epoch: 1}
		n, err := writeSnapshot(b.Context(), vfs.OS(), dir, id, unique, snapshot.Header{LastContainedLogTimestamp: 1}, img, time.Now().UnixMilli())
		if err != nil {
			b.Fatal(err)
		}
		size = n
		b.StopTimer()
		if err := os.Remove(filepath.Join(dir, snapshot.FileName(id))); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	runtime.ReadMemStats(&after)
	b.SetBytes(size)
	b.ReportMetric(float64(recs)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/(float64(recs)*float64(b.N)), "allocs/record")
	b.ReportMetric(peak(), "peak-heap-MB")
}

// BenchmarkSnapshotLoad measures loading that snapshot as start-up and an
// install do: the file verified and read, every record decoded and
// replayed into a new image, the image published. heap-MB is the heap the
// loaded image holds (after a GC, minus the heap before the load);
// peak-heap-MB is the largest live heap sampled while loading, the
// image included (the image written first is freed before).
func BenchmarkSnapshotLoad(b *testing.B) {
	img := benchImage(b, *benchSnapshotTopics)
	recs := imageRecords(img)
	dir := b.TempDir()
	id := kraft.OffsetAndEpoch{Offset: 5_000_000, Epoch: 1}
	size, err := writeSnapshot(b.Context(), vfs.OS(), dir, id, 1, snapshot.Header{LastContainedLogTimestamp: 1}, img, time.Now().UnixMilli())
	if err != nil {
		b.Fatal(err)
	}
	img = nil
	runtime.GC()
	path := filepath.Join(dir, snapshot.FileName(id))
	var heap float64
	peak := peakHeap()
	for b.Loop() {
		b.StopTimer()
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		d, err := readSnapshotImage(vfs.OS(), path, id)
		if err != nil {
			b.Fatal(err)
		}
		loaded := d.Apply()
		b.StopTimer()
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / 1e6
		if loaded.Topics().Len() != *benchSnapshotTopics {
			b.Fatalf("loaded %d topics", loaded.Topics().Len())
		}
		runtime.KeepAlive(d)
		b.StartTimer()
	}
	b.SetBytes(size)
	b.ReportMetric(float64(recs)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(peak(), "peak-heap-MB")
}

// waitLong polls cond every 5 ms until it holds; a benchmark of a large
// image may take minutes on a loaded machine, so the deadline is 10
// minutes.
func waitLong(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fillNode submits *benchTopics topics of ten partitions to n, 100
// topics per change, and returns the offset after the last.
func fillNode(b *testing.B, n *Controller) int64 {
	b.Helper()
	submit(b, n, metadataVersionRecord())
	var last SubmitResult
	for i := 0; i < *benchTopics; i += 100 {
		var recs []metadata.Record
		for j := i; j < min(i+100, *benchTopics); j++ {
			recs = append(recs, benchTopicRecords(j)...)
		}
		last = submit(b, n, recs...)
	}
	return last.LastOffset + 1
}

// BenchmarkRestart measures a lone voter's restart, from Start until its
// image holds the whole log: /log replays the log from offset 0, the
// records of -bench-topics topics of ten partitions (100,000 partitions by
// default); /snapshot loads a snapshot taken at the log end and replays
// nothing after it. Both include the election of the lone voter (100 ms
// election timeout), which a restart from the log needs before it may
// apply anything.
func BenchmarkRestart(b *testing.B) {
	for _, withSnapshot := range []bool{false, true} {
		name := "log"
		if withSnapshot {
			name = "snapshot"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			adjust := func(c *Config) {
				c.MaxRecordBytesBetweenSnapshots = 1 << 40
				c.MaxSnapshotInterval = 0
			}
			n, cfg := startSingle(b, dir, adjust)
			target := fillNode(b, n)
			if withSnapshot {
				if _, err := n.TriggerSnapshot(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			shutdown(b, n)
			for b.Loop() {
				n, err := Start(b.Context(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				waitLong(b, "the restarted node to apply its log", func() bool { return n.QuorumState().AppliedOffset >= target })
				b.StopTimer()
				shutdown(b, n)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkFetchSnapshotCatchUp measures a follower's catch-up through
// FetchSnapshot on a three-voter loopback quorum: the follower's
// partition directory is wiped, and the time runs from its restart until
// it has installed the leader's snapshot (-bench-topics topics of ten
// partitions) and applied up to the leader. MB/s is the snapshot's size;
// chunks are controller.quorum.fetch.snapshot.max.bytes (1 MiB).
func BenchmarkFetchSnapshotCatchUp(b *testing.B) {
	c := newTestClusterWith(b, 3, "", func(cfg *Config) {
		cfg.MaxRecordBytesBetweenSnapshots = 1 << 40
		cfg.MaxSnapshotInterval = 0
	})
	leader := c.leader()
	lead := c.node(leader)
	target := fillNode(b, lead)
	id, err := lead.TriggerSnapshot(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	f := c.follower(leader)
	pdir := filepath.Join(c.cfgs[f-1].MetadataLogDir, PartitionDirName)
	info, err := os.Stat(filepath.Join(c.cfgs[leader-1].MetadataLogDir, PartitionDirName, snapshot.FileName(kraft.OffsetAndEpoch{Offset: kraft.Offset(id.EndOffset), Epoch: kraft.Epoch(id.Epoch)})))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		c.stop(f)
		if err := os.RemoveAll(pdir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c.restart(f)
		n := c.node(f)
		waitLong(b, "the follower to catch up through the snapshot", func() bool {
			s, ok := n.LatestSnapshot()
			return ok && s == id && n.QuorumState().AppliedOffset >= target
		})
	}
	b.SetBytes(info.Size())
}
