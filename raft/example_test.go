package raft_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// A single-node controller: start it on a fresh directory, create a topic
// with three partitions, read it back from the image and shut down.
func Example() {
	dir, err := os.MkdirTemp("", "krabka-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	controller, err := raft.Start(ctx, raft.ForTests(1, dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer controller.Shutdown(ctx)

	// A new cluster's first change sets metadata.version, as the first
	// active controller writes the bootstrap features; every other record
	// needs it.
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	if err := submit(ctx, controller, mv); err != nil {
		fmt.Println(err)
		return
	}

	// A topic is a TopicRecord and one PartitionRecord per partition,
	// committed together.
	topic := metadata.NewTopicRecord()
	topic.Name = "my-topic"
	_, _ = rand.Read(topic.TopicId[:])
	records := []metadata.Record{topic}
	for id := range int32(3) {
		p := metadata.NewPartitionRecord()
		p.Version = 1 // with directories (metadata.version 3.7-IV2 and later)
		p.TopicId, p.PartitionId = topic.TopicId, id
		p.Replicas, p.Isr, p.Leader = []int32{1}, []int32{1}, 1
		p.LeaderEpoch, p.PartitionEpoch = 0, 0
		p.Directories = [][16]byte{{}} // not yet assigned to a log directory
		records = append(records, p)
	}
	if err := submit(ctx, controller, records...); err != nil {
		fmt.Println(err)
		return
	}

	t, ok := controller.CurrentImage().Topics().ByName("my-topic")
	fmt.Println("found:", ok)
	for id, p := range t.Partitions() {
		fmt.Printf("%s-%d leader %d replicas %v\n", t.Name, id, p.Leader, p.Replicas())
	}
	if err := controller.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// found: true
	// my-topic-0 leader 1 replicas [1]
	// my-topic-1 leader 1 replicas [1]
	// my-topic-2 leader 1 replicas [1]
}

// A subscription sees every image the controller publishes, in order,
// starting with the current one.
func ExampleController_Subscribe() {
	dir, err := os.MkdirTemp("", "krabka-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	controller, err := raft.Start(ctx, raft.ForTests(1, dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer controller.Shutdown(ctx)

	sub, err := controller.Subscribe(ctx, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()

	// The first leader appends the bootstrap records (here, without
	// bootstrap.checkpoint, metadata.version at the latest level), so a
	// TopicRecord is accepted at once.
	topic := metadata.NewTopicRecord()
	topic.Name = "orders"
	_, _ = rand.Read(topic.TopicId[:])
	if err := submit(ctx, controller, topic); err != nil {
		fmt.Println(err)
		return
	}
	for img := range sub.Images() {
		var names []string
		for name := range img.Topics().Names() {
			names = append(names, name)
		}
		if img.Offset() < 0 || len(names) > 0 {
			fmt.Printf("metadata.version %d, topics %v\n", img.Features().MetadataVersion(), names)
		}
		if len(names) > 0 {
			break
		}
	}
	// Output:
	// metadata.version 0, topics []
	// metadata.version 30, topics [orders]
}

// submit commits records, retrying while the node has not yet elected
// itself (a fresh node starts without a leader).
func submit(ctx context.Context, c *raft.Controller, records ...metadata.Record) error {
	retry := time.NewTicker(10 * time.Millisecond)
	defer retry.Stop()
	for {
		_, err := c.SubmitChange(ctx, records)
		if !errors.Is(err, raft.ErrLeaderUnknown) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-retry.C:
		}
	}
}
