package metadata_test

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

// topicUUID is the id of synthetic topic i.
func topicUUID(i int) [16]byte {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], 0x5eed)
	binary.BigEndian.PutUint64(u[8:], uint64(i))
	return u
}

// buildImage returns an image at metadata.version 4.2-IV1 with three
// brokers and topics × partitions partitions of three replicas each,
// with directories, as Kafka creates them.
func buildImage(tb testing.TB, topics, partitions int) *metadata.Image {
	tb.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	off := int64(0)
	replay := func(r metadata.Record) {
		if err := d.Replay(r, off, 1); err != nil {
			tb.Fatal(err)
		}
		off++
	}
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, 29
	replay(mv)
	for b := int32(1); b <= 3; b++ {
		r := metadata.NewRegisterBrokerRecord()
		r.Version = 3
		r.BrokerId, r.BrokerEpoch, r.IncarnationId = b, off, testUUID(uint64(b))
		r.EndPoints = []metadata.RegisterBrokerRecordBrokerEndpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("b%d", b), Port: 9092}}
		r.Features = []metadata.RegisterBrokerRecordBrokerFeature{{Name: metadata.FeatureMetadataVersion, MinSupportedVersion: 7, MaxSupportedVersion: 29}}
		r.LogDirs = [][16]byte{testUUID(uint64(500 + b))}
		replay(r)
	}
	dirs := [][16]byte{testUUID(501), testUUID(502), testUUID(503)}
	for i := range topics {
		tr := metadata.NewTopicRecord()
		tr.Name, tr.TopicId = fmt.Sprintf("topic-%07d", i), topicUUID(i)
		replay(tr)
		for p := range partitions {
			r := metadata.NewPartitionRecord()
			r.Version = 2
			r.TopicId, r.PartitionId = tr.TopicId, int32(p)
			r.Replicas = []int32{1, 2, 3}
			r.Isr = r.Replicas
			r.Leader = int32(1 + p%3)
			r.Directories = dirs
			r.LeaderEpoch, r.PartitionEpoch = 0, 0
			replay(r)
		}
	}
	return d.Apply()
}

// isrChange returns a PartitionChangeRecord that shrinks the ISR of a
// partition to two replicas.
func isrChange(topic, partition int) *metadata.PartitionChangeRecord {
	r := metadata.NewPartitionChangeRecord()
	r.Version = 2
	r.TopicId, r.PartitionId = topicUUID(topic), int32(partition)
	r.Isr = []int32{1, 2}
	if partition%3 == 2 {
		r.Leader = 1
	}
	return r
}

// publishOne publishes the image after one partition change on img.
func publishOne(tb testing.TB, img *metadata.Image, topic int) *metadata.Image {
	d := metadata.NewDelta(img)
	if err := d.Replay(isrChange(topic, 2), img.Offset()+1, 1); err != nil {
		tb.Fatal(err)
	}
	return d.Apply()
}

// TestPublishCostIsLogarithmic: publishing one partition change
// allocates O(log n): the allocations grow by a small constant when the
// image grows sixteenfold, and stay far below the image size.
func TestPublishCostIsLogarithmic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images of 16,000 topics")
	}
	small, large := buildImage(t, 1000, 10), buildImage(t, 16000, 10)
	a1 := testing.AllocsPerRun(50, func() { publishOne(t, small, 500) })
	a2 := testing.AllocsPerRun(50, func() { publishOne(t, large, 8000) })
	// Four more levels of the topic tree cost at most two nodes each.
	if a2 > a1+8 || a2 > 60 {
		t.Errorf("publish allocates %v times on 10,000 partitions and %v on 160,000", a1, a2)
	}
	t.Logf("allocations per published change: %v (1,000 topics), %v (16,000 topics)", a1, a2)
}

// configWrites returns n ConfigRecords that set the cluster-wide broker
// defaults key-0 ... key-(n-1) to value, the records of a commit round
// of n clients that each write their own key.
func configWrites(n int, value string) []metadata.Record {
	recs := make([]metadata.Record, n)
	for i := range recs {
		r := metadata.NewConfigRecord()
		r.ResourceType, r.Name, r.Value = metadata.ConfigResourceBroker, fmt.Sprintf("key-%d", i), &value
		recs[i] = r
	}
	return recs
}

// commitRound replays recs one at a time with ReplayNext, as the
// committed records of one round are applied, and publishes the image.
func commitRound(tb testing.TB, d *metadata.Delta, recs []metadata.Record) *metadata.Image {
	off := d.Offset()
	for _, r := range recs {
		off++
		if err := d.ReplayNext(r, off, 1); err != nil {
			tb.Fatal(err)
		}
	}
	return d.Apply()
}

// TestCommitRoundAllocatesPerKey: a commit round of 128 config writes,
// one per key, replayed one at a time with ReplayNext, allocates about
// one tree node per key it changes, not a path copy per record (about
// nine nodes each here): the nodes the round copied are changed in place
// by its later records.
func TestCommitRoundAllocatesPerKey(t *testing.T) {
	const keys = 128
	d := metadata.NewDelta(buildImage(t, 10, 1))
	commitRound(t, d, configWrites(keys, "v0"))
	recs := configWrites(keys, "v1")
	allocs := testing.AllocsPerRun(20, func() { commitRound(t, d, recs) })
	// keys nodes of the key tree, the path of the resource tree, the
	// published image.
	if allocs > keys+16 {
		t.Errorf("a round of %d config writes allocates %v times, want at most %d", keys, allocs, keys+16)
	}
	t.Logf("allocations per round of %d writes: %v", keys, allocs)
}

// BenchmarkCommitRound replays rounds of 128 config writes (one per key,
// as 128 clients write) record by record and publishes an image per
// round: with Replay, a path copy per record; with ReplayNext, the
// round's nodes changed in place.
func BenchmarkCommitRound(b *testing.B) {
	const keys = 128
	base := buildImage(b, 10, 1)
	recs := configWrites(keys, "v")
	b.Run("Replay", func(b *testing.B) {
		d := metadata.NewDelta(base)
		b.ReportAllocs()
		for b.Loop() {
			off := d.Offset()
			for _, r := range recs {
				off++
				if err := d.Replay(r, off, 1); err != nil {
					b.Fatal(err)
				}
			}
			_ = d.Apply()
		}
		b.ReportMetric(float64(keys*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("ReplayNext", func(b *testing.B) {
		d := metadata.NewDelta(base)
		b.ReportAllocs()
		for b.Loop() {
			commitRound(b, d, recs)
		}
		b.ReportMetric(float64(keys*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkImagePublish measures publishing one partition change on an
// image of 100,000 topics × 10 partitions: a new Delta, one Replay, one
// Apply. Run with -benchmem: the allocations are O(log n).
func BenchmarkImagePublish(b *testing.B) {
	img := buildImage(b, 100000, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		publishOne(b, img, i%100000)
	}
}

// BenchmarkImageMemory reports the heap held by an image of 100,000
// topics × 10 partitions (3 replicas with directories each), per
// partition.
func BenchmarkImageMemory(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		img := buildImage(b, 100000, 10)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if img.Topics().Len() != 100000 {
			b.Fatal("wrong image")
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "MB/image")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "bytes/partition") // 1e6 partitions
		runtime.KeepAlive(img)
	}
}

// BenchmarkReplayKafkaLog replays the whole kafka42 sample log (16,956
// decoded records: registrations, topics, partitions, partition changes,
// configs, NoOps) into an empty image.
func BenchmarkReplayKafkaLog(b *testing.B) {
	recs := readMetadataRecords(b, filepath.Join(sharedtest.Dir(b, "kafka-samples"), "kafka42-single-static", "__cluster_metadata-0", "00000000000000000000.log"))
	b.ReportAllocs()
	for b.Loop() {
		d := metadata.NewDelta(metadata.EmptyImage())
		for _, r := range recs {
			if err := d.Replay(r.rec, r.offset, r.epoch); err != nil {
				b.Fatal(err)
			}
		}
		_ = d.Apply()
	}
	b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkReplayMix replays a steady-state mix on an image of 10,000
// topics × 10 partitions: 60% ISR and leader changes, 20% NoOps, 10%
// config changes, 5% broker heartbeat changes, 5% topic creations with
// their partitions; one image is published per 100 records. Records go
// one by one through Replay, or by runs of 100 through ReplayBatch.
func BenchmarkReplayMix(b *testing.B) {
	const topics = 10000
	base := buildImage(b, topics, 10)
	mix := replayMix(topics)
	b.Run("Replay", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := metadata.NewDelta(base)
			off := base.Offset()
			for i, r := range mix {
				off++
				if err := d.Replay(r, off, 1); err != nil {
					b.Fatal(err)
				}
				if i%100 == 99 {
					_ = d.Apply()
				}
			}
		}
		b.ReportMetric(float64(len(mix)*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("ReplayBatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := metadata.NewDelta(base)
			for i := 0; i < len(mix); i += 100 {
				run := mix[i:min(i+100, len(mix))]
				if _, err := d.ReplayBatch(run, base.Offset()+1+int64(i), 1); err != nil {
					b.Fatal(err)
				}
				_ = d.Apply()
			}
		}
		b.ReportMetric(float64(len(mix)*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkSnapshotLoad loads the snapshot records of an image of
// 10,000 topics × 10 partitions into an empty image with ReplaySnapshot.
func BenchmarkSnapshotLoad(b *testing.B) {
	var recs []metadata.Record
	for r := range buildImage(b, 10000, 10).SnapshotRecords() {
		recs = append(recs, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		d := metadata.NewDelta(metadata.EmptyImage())
		if err := d.ReplaySnapshot(recs, 1000, 1); err != nil {
			b.Fatal(err)
		}
		_ = d.Apply()
	}
	b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
}

// replayMix builds the records of BenchmarkReplayMix.
func replayMix(topics int) []metadata.Record {
	var mix []metadata.Record
	created := 0
	for i := range 1000 {
		switch k := i % 20; {
		case k < 12:
			mix = append(mix, isrChange(i*7%topics, i%10))
			back := isrChange(i*7%topics, i%10)
			back.Isr, back.Leader = []int32{1, 2, 3}, -2
			mix = append(mix, back)
		case k < 16:
			mix = append(mix, metadata.NewNoOpRecord())
		case k < 18:
			c := metadata.NewConfigRecord()
			v := fmt.Sprint(i)
			c.ResourceType, c.ResourceName, c.Name, c.Value = metadata.ConfigResourceTopic, fmt.Sprintf("topic-%07d", i%topics), "retention.ms", &v
			mix = append(mix, c)
		case k < 19:
			c := metadata.NewBrokerRegistrationChangeRecord()
			c.BrokerId, c.BrokerEpoch, c.InControlledShutdown = 1, 1, 0
			mix = append(mix, c)
		default:
			t := metadata.NewTopicRecord()
			t.Name, t.TopicId = fmt.Sprintf("new-%d", created), topicUUID(topics+created)
			created++
			mix = append(mix, t)
			for p := range 10 {
				r := metadata.NewPartitionRecord()
				r.Version = 2
				r.TopicId, r.PartitionId, r.Replicas, r.Isr, r.Leader = t.TopicId, int32(p), []int32{1, 2, 3}, []int32{1, 2, 3}, 1
				r.Directories = [][16]byte{testUUID(501), testUUID(502), testUUID(503)}
				r.LeaderEpoch, r.PartitionEpoch = 0, 0
				mix = append(mix, r)
			}
		}
	}
	return mix
}

// BenchmarkImageSnapshotWrite writes and encodes the snapshot records of
// an image of 10,000 topics × 10 partitions.
func BenchmarkImageSnapshotWrite(b *testing.B) {
	img := buildImage(b, 10000, 10)
	var buf []byte
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n = 0
		for r := range img.SnapshotRecords() {
			var err error
			if buf, err = metadata.AppendRecord(buf[:0], r); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestDeltaReset: a Delta reset on an image replays as a new one would,
// without allocating, and leaves the images it returned before as they
// were.
func TestDeltaReset(t *testing.T) {
	base := buildImage(t, 10, 1)
	d := metadata.NewDelta(base)
	before := commitRound(t, d, configWrites(4, "old"))
	next := commitRound(t, metadata.NewDelta(before), configWrites(4, "new"))
	if a := testing.AllocsPerRun(100, func() { d.Reset(before) }); a != 0 {
		t.Errorf("Reset allocates %v times, want 0", a)
	}
	got := commitRound(t, d, configWrites(4, "new"))
	if err := imagesEqual(t, got, next); err != nil {
		t.Errorf("after Reset: %v", err)
	}
	for r, img := range map[string]*metadata.Image{"old": before, "new": got} {
		for _, c := range configWrites(4, r) {
			c := c.(*metadata.ConfigRecord)
			if v, _ := img.Configs().Get(metadata.ConfigResource{Type: c.ResourceType, Name: c.ResourceName}, c.Name); v != r {
				t.Errorf("%s image: %s = %q, want %q", r, c.Name, v, r)
			}
		}
	}
}
