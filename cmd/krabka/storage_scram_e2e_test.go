package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestFormatAddScramQuorumElects: three controllers that authenticate to
// each other with SCRAM-SHA-512 over SASL_PLAINTEXT, formatted with
// storage format --add-scram (KIP-900), elect their first leader: before
// anything is committed each listener takes the credentials from its
// bootstrap.checkpoint. The quorum then commits, and a client with a
// credential from the bootstrap authenticates against the committed
// image.
func TestFormatAddScramQuorumElects(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="controller" password="controller-secret";`
	var ports []int
	var voters []string
	for i := range 3 {
		ports = append(ports, freePort(t))
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[i]))
	}
	var ctls []*raft.Controller
	for i := range 3 {
		tn := newTestNode(t, i+1, fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", ports[i]),
			"controller.quorum.voters="+strings.Join(voters, ","), "controller.quorum.election.timeout.ms=300",
			"listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT",
			"sasl.enabled.mechanisms=SCRAM-SHA-512", "sasl.mechanism.controller.protocol=SCRAM-SHA-512",
			"listener.name.controller.scram-sha-512.sasl.jaas.config="+jaas)
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", tn.props,
			"--add-scram", "SCRAM-SHA-512=[name=controller,password=controller-secret]",
			"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]")
		ctls = append(ctls, launchNode(t, tn.props))
	}
	leader := waitLeader(t, ctls)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := metadata.NewTopicRecord()
	topic.Name, topic.TopicId[0] = "scram-topic", 7
	// A follower learns of the new leader by replicating from it, over
	// SCRAM too; until then its write fails with the leader unknown.
	var res raft.SubmitResult
	var err error
	for res, err = ctls[(leader+1)%3].SubmitChange(ctx, []metadata.Record{topic}); errors.Is(err, raft.ErrLeaderUnknown); {
		time.Sleep(10 * time.Millisecond)
		res, err = ctls[(leader+1)%3].SubmitChange(ctx, []metadata.Record{topic})
	}
	if err != nil {
		t.Fatalf("a forwarded write over SCRAM: %v", err)
	}
	for _, c := range ctls {
		for c.QuorumState().HighWatermark <= res.LastOffset {
			if ctx.Err() != nil {
				t.Fatalf("node %d did not replicate offset %d", c.QuorumState().NodeID, res.LastOffset)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, ok := c.CurrentImage().Scram().Get(metadata.ScramSHA512, "alice"); !ok {
			t.Errorf("node %d: the committed image has no credential for alice", c.QuorumState().NodeID)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(ctls[leader].Addr().String()), kgo.RequestRetries(0),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	if _, err := req.RequestWith(ctx, cl.SeedBrokers()[0]); err != nil {
		t.Fatalf("DescribeQuorum as alice over SCRAM: %v", err)
	}
}
