package metadata_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

// imagesEqual compares two images structurally: every part the printer
// shows (all entities and fields, offset and epoch) and the encoded
// snapshot records.
func imagesEqual(t fatalT, a, b *metadata.Image) error {
	if pa, pb := printImage(a), printImage(b); pa != pb {
		return fmt.Errorf("images differ:\n%s\nvs\n%s", pa, pb)
	}
	va, vb := snapshotValues(t, a), snapshotValues(t, b)
	if !slices.EqualFunc(va, vb, bytes.Equal) {
		return fmt.Errorf("snapshot records differ")
	}
	return nil
}

// replayFrom replays the records after base's offset onto base, skipping
// rejected records, and returns the published image.
func replayFrom(base *metadata.Image, recs []loggedRecord) *metadata.Image {
	d := metadata.NewDelta(base)
	for _, r := range recs {
		if r.offset <= base.Offset() {
			continue
		}
		_ = d.Replay(r.rec, r.offset, r.epoch)
	}
	return d.Apply()
}

// TestReplaySplitEqualsWhole: replaying a log prefix into an image, then
// the records after that image's offset, gives the same image as
// replaying everything at once — also when the prefix ends inside a
// metadata transaction (the published image then ends before the
// transaction, and the rest replays it whole). Real Kafka logs.
func TestReplaySplitEqualsWhole(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-samples")
	logs := map[string][]loggedRecord{}
	for _, p := range []string{"kafka37-single-static", "kafka42-single-static"} {
		logs[p] = readMetadataRecords(t, filepath.Join(root, p, "__cluster_metadata-0", "00000000000000000000.log"))
	}
	whole := map[string]*metadata.Image{}
	for p, recs := range logs {
		whole[p] = replayFrom(metadata.EmptyImage(), recs)
	}
	rapid.Check(t, func(rt *rapid.T) {
		p := rapid.SampledFrom([]string{"kafka37-single-static", "kafka42-single-static"}).Draw(rt, "log")
		recs := logs[p]
		// Up to three cuts, the first ones mostly near the start, where
		// the transactions are.
		img := metadata.EmptyImage()
		n := rapid.IntRange(1, 3).Draw(rt, "cuts")
		for range n {
			cut := rapid.IntRange(0, len(recs)).Draw(rt, "cut")
			if rapid.Bool().Draw(rt, "early") {
				cut = rapid.IntRange(0, min(40, len(recs))).Draw(rt, "early cut")
			}
			img = replayFrom(img, recs[:cut])
		}
		img = replayFrom(img, recs)
		if err := imagesEqual(rt, img, whole[p]); err != nil {
			rt.Fatal(err)
		}
	})
}

// genRecords draws a random stream of records over a small universe
// (3 brokers, 4 topics, 3 partitions each, a few configs, ACLs and
// transactions), valid and invalid alike.
func genRecords(t *rapid.T) []metadata.Record {
	id := func(n int) [16]byte { return testUUID(uint64(100 + n)) }
	ints := func(label string) []int32 {
		return rapid.SliceOfNDistinct(rapid.Int32Range(1, 3), 0, 3, rapid.ID[int32]).Draw(t, label)
	}
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, 21
	out := []metadata.Record{mv}
	n := rapid.IntRange(0, 100).Draw(t, "n")
	for range n {
		var r metadata.Record
		switch rapid.IntRange(0, 13).Draw(t, "kind") {
		case 0:
			b := metadata.NewRegisterBrokerRecord()
			b.BrokerId, b.BrokerEpoch = rapid.Int32Range(1, 3).Draw(t, "broker"), rapid.Int64Range(0, 3).Draw(t, "epoch")
			b.IncarnationId = testUUID(7)
			b.Features = []metadata.RegisterBrokerRecordBrokerFeature{{Name: metadata.FeatureMetadataVersion, MinSupportedVersion: 7, MaxSupportedVersion: 30}}
			r = b
		case 1:
			f := metadata.NewFenceBrokerRecord()
			f.Id, f.Epoch = rapid.Int32Range(1, 3).Draw(t, "broker"), rapid.Int64Range(0, 3).Draw(t, "epoch")
			r = f
		case 2:
			tr := metadata.NewTopicRecord()
			k := rapid.IntRange(0, 1).Draw(t, "topic")
			tr.Name, tr.TopicId = fmt.Sprintf("t%d", rapid.IntRange(0, 2).Draw(t, "name")), id(k)
			r = tr
		case 3, 4:
			p := metadata.NewPartitionRecord()
			p.Version = 1
			p.TopicId, p.PartitionId = id(rapid.IntRange(0, 1).Draw(t, "topic")), rapid.Int32Range(0, 1).Draw(t, "partition")
			p.Replicas = rapid.Permutation([]int32{1, 2, 3}).Draw(t, "replicas")
			if rapid.IntRange(0, 4).Draw(t, "short") == 0 {
				p.Replicas = p.Replicas[:rapid.IntRange(0, 2).Draw(t, "rf")]
			}
			p.Isr = p.Replicas
			p.LeaderEpoch, p.PartitionEpoch = 0, 0
			p.Leader = -1
			if len(p.Isr) > 0 {
				p.Leader = p.Isr[0]
			}
			r = p
		case 5, 6, 7:
			c := metadata.NewPartitionChangeRecord()
			c.Version = 1
			c.TopicId, c.PartitionId = id(rapid.IntRange(0, 1).Draw(t, "topic")), rapid.Int32Range(0, 1).Draw(t, "partition")
			c.Leader = -2
			if rapid.Bool().Draw(t, "set isr") {
				c.Isr = ints("isr")
				c.Leader = -1
				if len(c.Isr) > 0 && rapid.Bool().Draw(t, "elect") {
					c.Leader = c.Isr[0]
				}
			}
			if rapid.IntRange(0, 9).Draw(t, "odd leader") == 0 {
				c.Leader = rapid.Int32Range(-3, 3).Draw(t, "leader")
			}
			r = c
		case 8:
			rt := metadata.NewRemoveTopicRecord()
			rt.TopicId = id(rapid.IntRange(0, 1).Draw(t, "topic"))
			r = rt
		case 9:
			c := metadata.NewConfigRecord()
			c.ResourceType, c.ResourceName = metadata.ConfigResourceTopic, fmt.Sprintf("t%d", rapid.IntRange(0, 4).Draw(t, "name"))
			c.Name = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "key")
			if rapid.Bool().Draw(t, "set") {
				v := fmt.Sprint(rapid.IntRange(0, 9).Draw(t, "value"))
				c.Value = &v
			}
			r = c
		case 10:
			a := metadata.NewAccessControlEntryRecord()
			a.Id = testUUID(uint64(rapid.IntRange(1, 3).Draw(t, "acl")))
			a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.PermissionType = 2, "x", 3, "User:a", "*", 3, 3
			r = a
		case 11:
			a := metadata.NewRemoveAccessControlEntryRecord()
			a.Id = testUUID(uint64(rapid.IntRange(1, 3).Draw(t, "acl")))
			r = a
		case 12:
			r = rapid.SampledFrom([]metadata.Record{metadata.NewBeginTransactionRecord(), metadata.NewEndTransactionRecord(), metadata.NewAbortTransactionRecord()}).Draw(t, "txn")
		case 13:
			r = metadata.NewNoOpRecord()
		}
		out = append(out, r)
	}
	return out
}

// TestReplaySplitEqualsWholeRandom is the split property on random
// record streams, rejections included.
func TestReplaySplitEqualsWholeRandom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := genRecords(t)
		recs := make([]loggedRecord, len(gen))
		for i, r := range gen {
			recs[i] = loggedRecord{rec: r, offset: int64(i), epoch: 1}
		}
		whole := replayFrom(metadata.EmptyImage(), recs)
		cut := rapid.IntRange(0, len(recs)).Draw(t, "cut")
		split := replayFrom(replayFrom(metadata.EmptyImage(), recs[:cut]), recs)
		if err := imagesEqual(t, split, whole); err != nil {
			t.Fatal(err)
		}
		// A snapshot of the image loads back into the same image.
		d := metadata.NewDelta(metadata.EmptyImage())
		for r := range whole.SnapshotRecords() {
			if err := d.Replay(r, max(whole.Offset(), 0), max(whole.Epoch(), 0)); err != nil {
				t.Fatalf("reload: %v", err)
			}
		}
		if whole.Offset() >= 0 {
			if err := imagesEqual(t, d.Apply(), whole); err != nil {
				t.Fatalf("reload: %v", err)
			}
		}
	})
}

// TestPublishedImagesDoNotChange: an image stays as it was published
// while its delta goes on, and readers may use it from other goroutines
// while the delta replays (run with -race).
func TestPublishedImagesDoNotChange(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-samples")
	recs := readMetadataRecords(t, filepath.Join(root, "kafka42-single-static", "__cluster_metadata-0", "00000000000000000000.log"))
	d := metadata.NewDelta(metadata.EmptyImage())
	var published []*metadata.Image
	var printed []string
	var wg sync.WaitGroup
	for i, r := range recs {
		if err := d.Replay(r.rec, r.offset, r.epoch); err != nil {
			t.Fatal(err)
		}
		if i%2000 == 0 {
			img := d.Apply()
			published = append(published, img)
			printed = append(printed, printImage(img))
			wg.Go(func() {
				for range 3 {
					_ = printImage(img)
					for range img.SnapshotRecords() {
					}
				}
			})
		}
	}
	wg.Wait()
	for i, img := range published {
		if got := printImage(img); got != printed[i] {
			t.Fatalf("image %d at offset %d changed after publication", i, img.Offset())
		}
	}
}

// TestPublishedImagesDoNotChangeRandom: images published at random points
// of a random record stream (transactions included) print the same at
// the end as when they were published, although the delta went on
// changing its own nodes in place.
func TestPublishedImagesDoNotChangeRandom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := metadata.NewDelta(metadata.EmptyImage())
		var images []*metadata.Image
		var printed []string
		for i, r := range genRecords(t) {
			_ = d.Replay(r, int64(i), 1)
			if rapid.IntRange(0, 4).Draw(t, "publish") == 0 {
				img := d.Apply()
				images = append(images, img)
				printed = append(printed, printImage(img))
			}
		}
		for i, img := range images {
			if got := printImage(img); got != printed[i] {
				t.Fatalf("image %d changed after publication:\n%s\nwas\n%s", i, got, printed[i])
			}
		}
	})
}

// TestReplayNextMatchesReplay: records replayed one at a time with
// ReplayNext, with images published in between, end in the same image as
// with Replay, and the published images do not change afterwards
// although the delta changes its own nodes in place.
func TestReplayNextMatchesReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, ref := metadata.NewDelta(metadata.EmptyImage()), metadata.NewDelta(metadata.EmptyImage())
		var images []*metadata.Image
		var printed []string
		for i, r := range genRecords(t) {
			err := d.ReplayNext(r, int64(i), 1)
			if refErr := ref.Replay(r, int64(i), 1); (err == nil) != (refErr == nil) {
				t.Fatalf("record %d: ReplayNext: %v, Replay: %v", i, err, refErr)
			}
			if rapid.IntRange(0, 4).Draw(t, "publish") == 0 {
				img := d.Apply()
				images = append(images, img)
				printed = append(printed, printImage(img))
			}
		}
		if err := imagesEqual(t, d.Apply(), ref.Apply()); err != nil {
			t.Fatal(err)
		}
		for i, img := range images {
			if got := printImage(img); got != printed[i] {
				t.Fatalf("image %d changed after publication:\n%s\nwas\n%s", i, got, printed[i])
			}
		}
	})
}

// TestDeltaCopyRollsBack: a copy of a Delta value taken between calls
// (saved := *d) rolls the delta back when assigned back, whatever was
// replayed in between, one record at a time or in batches. A delta that
// never saw the rolled-back records ends the same.
func TestDeltaCopyRollsBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		d, ref := metadata.NewDelta(metadata.EmptyImage()), metadata.NewDelta(metadata.EmptyImage())
		for i := 0; i < len(recs); {
			n := rapid.IntRange(1, 8).Draw(t, "run")
			j := min(i+n, len(recs))
			rollback := rapid.Bool().Draw(t, "rollback")
			saved := *d
			if rapid.Bool().Draw(t, "batch") {
				if k, err := d.ReplayBatch(recs[i:j], int64(i), 1); err != nil {
					// Skip the rejected record, as replaying one by one
					// does.
					j = i + k + 1
				}
			} else if rapid.Bool().Draw(t, "next") {
				// A new run, then the rest of it in place: the copy
				// was taken before the run began.
				_ = d.Replay(recs[i], int64(i), 1)
				for k := i + 1; k < j; k++ {
					_ = d.ReplayNext(recs[k], int64(k), 1)
				}
			} else {
				for k := i; k < j; k++ {
					_ = d.Replay(recs[k], int64(k), 1)
				}
			}
			if rollback {
				*d = saved
			} else {
				for k := i; k < j; k++ {
					_ = ref.Replay(recs[k], int64(k), 1)
				}
			}
			i = j
		}
		// Compare only at the end: Apply would freeze the nodes and
		// hide an in-place change that leaked into a saved copy.
		if err := imagesEqual(t, d.Apply(), ref.Apply()); err != nil {
			t.Fatal(err)
		}
	})
}
