package metadata_test

import (
	"fmt"

	"github.com/krabka-go/krabka/metadata"
)

// A node loads its latest snapshot (every record at the snapshot's last
// contained offset and epoch), replays the committed log after it,
// publishes an image, and writes the image back as snapshot records.
func ExampleDelta() {
	// The snapshot 3-1.checkpoint holds offsets 0..2 of epoch 1.
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, 21
	topic := metadata.NewTopicRecord()
	topic.Name, topic.TopicId = "orders", [16]byte{15: 100}
	d := metadata.NewDelta(metadata.EmptyImage())
	if err := d.ReplaySnapshot([]metadata.Record{mv, topic}, 2, 1); err != nil {
		fmt.Println(err)
	}
	img := d.Apply()

	// The log from offset 3 on: a partition, then an invalid record.
	d = metadata.NewDelta(img)
	p := metadata.NewPartitionRecord()
	p.Version = 1
	p.TopicId, p.PartitionId, p.Replicas, p.Isr, p.Leader = topic.TopicId, 0, []int32{1}, []int32{1}, 1
	p.LeaderEpoch, p.PartitionEpoch = 0, 0
	if err := d.Replay(p, 3, 2); err != nil {
		fmt.Println(err)
	}
	dup := metadata.NewTopicRecord()
	dup.Name, dup.TopicId = "orders", [16]byte{15: 101}
	fmt.Println(d.Replay(dup, 4, 2))
	img = d.Apply()

	t, _ := img.Topics().ByName("orders")
	fmt.Println("offset", img.Offset(), "epoch", img.Epoch(), "partitions", t.NumPartitions())
	for rec := range img.SnapshotRecords() {
		fmt.Printf("%s v%d\n", rec.APIKey(), rec.GetVersion())
	}
	// Output:
	// metadata: replay TopicRecord at offset 4: topic orders already exists
	// offset 3 epoch 2 partitions 1
	// FeatureLevelRecord v0
	// ZkMigrationStateRecord v0
	// TopicRecord v0
	// PartitionRecord v1
}
