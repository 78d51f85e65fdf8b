package raft_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/krabka-go/krabka/client"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// A broker process follows the quorum in one of two ways: a KRaft
// observer (StartObserver) keeps its own copy of the log and the whole
// image, as a Kafka broker does; a client (package client) keeps
// nothing and asks the controllers. Here a one-node quorum stands in for
// the controllers, the client creates a topic, and the observer sees it.
func ExampleStartObserver() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	controllerDir, _ := os.MkdirTemp("", "krabka-controller-")
	defer os.RemoveAll(controllerDir)
	observerDir, _ := os.MkdirTemp("", "krabka-observer-")
	defer os.RemoveAll(observerDir)

	controller, err := raft.Start(ctx, raft.ForTests(1, controllerDir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer controller.Shutdown(ctx)
	addr := controller.Addr().(*net.TCPAddr)

	// The observer is node 100, outside the voter set: it fetches from
	// voter 1 with its replica id and never votes.
	cfg := raft.ForTests(100, observerDir)
	cfg.QuorumVoters = []raft.QuorumVoter{{ID: 1, Host: "127.0.0.1", Port: uint16(addr.Port)}}
	observer, err := raft.StartObserver(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer observer.Shutdown(ctx)
	images, err := observer.Subscribe(ctx, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer images.Close()

	// The client starts from the controllers' listeners and follows
	// the leader.
	ccfg := client.DefaultConfig()
	ccfg.Controllers = []string{addr.String()}
	cl, err := client.Dial(ctx, ccfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	// Offset 0 holds the first leader's LeaderChange control record and
	// offsets 1 to 3 the bootstrap records it wrote (metadata.version in
	// a metadata transaction), so the topic lands at offset 4.
	topic := metadata.NewTopicRecord()
	topic.Name, topic.TopicId = "orders", [16]byte{1}
	res, err := cl.SubmitChange(ctx, []metadata.Record{topic})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("committed at offsets", res.Offset, "to", res.LastOffset)

	// The observer's subscription delivers every image it applies.
	for img := range images.Images() {
		if _, ok := img.Topics().ByName("orders"); ok {
			fmt.Println("observer sees orders at offset", img.Offset())
			break
		}
	}
	// A linearizable read through the client answers from the leader.
	req := client.NewReadImageRequest()
	req.Linearizable, req.TopicNames = true, []string{"orders"}
	read, err := cl.ReadImage(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("client reads orders:", read.Topics[0].TopicID == topic.TopicId, "at offset", read.Offset)
	// Output:
	// committed at offsets 4 to 4
	// observer sees orders at offset 4
	// client reads orders: true at offset 4
}
