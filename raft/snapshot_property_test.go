package raft

import (
	"fmt"
	"path"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// genLog draws a metadata log: topics created and removed, partitions
// with their leader and ISR changes, topic configs set and deleted. Some
// records are invalid where they land (a partition of a removed topic):
// replay rejects them, the same way on every path.
func genLog(t *rapid.T) []metadata.Record {
	topicID := func(k int) [16]byte { return [16]byte{0xab, byte(k + 1)} }
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	out := []metadata.Record{mv}
	for range rapid.IntRange(1, 150).Draw(t, "records") {
		k := rapid.IntRange(0, 3).Draw(t, "topic")
		switch rapid.IntRange(0, 5).Draw(t, "kind") {
		case 0:
			r := metadata.NewTopicRecord()
			r.Name, r.TopicId = fmt.Sprintf("t%d", k), topicID(k)
			out = append(out, r)
		case 1, 2:
			r := metadata.NewPartitionRecord()
			r.TopicId, r.PartitionId = topicID(k), rapid.Int32Range(0, 2).Draw(t, "partition")
			r.Replicas = rapid.Permutation([]int32{1, 2, 3}).Draw(t, "replicas")
			r.Isr, r.Leader = r.Replicas, r.Replicas[0]
			out = append(out, r)
		case 3:
			r := metadata.NewPartitionChangeRecord()
			r.TopicId, r.PartitionId = topicID(k), rapid.Int32Range(0, 2).Draw(t, "partition")
			r.Leader = rapid.Int32Range(1, 3).Draw(t, "leader")
			r.Isr = []int32{r.Leader}
			out = append(out, r)
		case 4:
			r := metadata.NewConfigRecord()
			r.ResourceType, r.ResourceName = metadata.ConfigResourceTopic, fmt.Sprintf("t%d", k)
			r.Name = rapid.SampledFrom([]string{"retention.ms", "cleanup.policy"}).Draw(t, "key")
			if rapid.Bool().Draw(t, "set") {
				v := fmt.Sprint(rapid.IntRange(0, 9).Draw(t, "value"))
				r.Value = &v
			}
			out = append(out, r)
		case 5:
			r := metadata.NewRemoveTopicRecord()
			r.TopicId = topicID(k)
			out = append(out, r)
		}
	}
	return out
}

// replayOnto replays recs, the log's records from offset first on, onto
// d, skipping the records replay rejects.
func replayOnto(d *metadata.Delta, recs []metadata.Record, first int64) *metadata.Image {
	for i, r := range recs {
		_ = d.Replay(r, first+int64(i), 1)
	}
	return d.Apply()
}

// TestSnapshotLoadThenReplayEqualsWholeLog (invariant S3 in docs/reliability.md): for any
// log and any cut, writing the image at the cut as a snapshot (the
// runtime's writer), loading it back (the runtime's loader, as start-up
// and an install do) and replaying the rest of the log gives the image a
// replay of the whole log gives, record for record.
func TestSnapshotLoadThenReplayEqualsWholeLog(t *testing.T) {
	const dir = "/snapshots"
	withTopics := 0
	rapid.Check(t, func(rt *rapid.T) {
		log := genLog(rt)
		whole := replayOnto(metadata.NewDelta(metadata.EmptyImage()), log, 0)
		if whole.Topics().Len() > 0 {
			withTopics++
		}
		cut := rapid.IntRange(1, len(log)).Draw(rt, "cut")
		prefix := replayOnto(metadata.NewDelta(metadata.EmptyImage()), log[:cut], 0)

		fsys := vfs.NewMem()
		if err := fsys.MkdirAll(dir, 0o755); err != nil {
			rt.Fatal(err)
		}
		id := kraft.OffsetAndEpoch{Offset: kraft.Offset(int64(cut)), Epoch: 1}
		if _, err := writeSnapshot(t.Context(), fsys, dir, id, 1, snapshot.Header{LastContainedLogTimestamp: 1}, prefix, time.Now().UnixMilli()); err != nil {
			rt.Fatal(err)
		}
		d, err := readSnapshotImage(fsys, path.Join(dir, snapshot.FileName(id)), id)
		if err != nil {
			rt.Fatal(err)
		}
		loaded := d.Apply()
		if !sameImage(t, loaded, prefix) {
			rt.Fatalf("the snapshot at %d loads into another image than the one written", cut)
		}
		split := replayOnto(d, log[cut:], int64(cut))
		if !sameImage(t, split, whole) {
			rt.Fatalf("snapshot at %d + replay of %d records differs from replaying all %d", cut, len(log)-cut, len(log))
		}
	})
	if withTopics == 0 {
		t.Error("no generated log left a topic in the image: the property compared empty images only")
	}
}
