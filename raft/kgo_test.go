package raft

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// TestKgoDescribeQuorum: franz-go's client, an independent Kafka
// implementation, negotiates versions with a controller and reads the
// quorum with DescribeQuorum, as kafka-metadata-quorum does.
func TestKgoDescribeQuorum(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(leader).Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = wire.MetadataTopic
	topic.Partitions = append(topic.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(t.Context(), cl.SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum = %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || NodeID(p.LeaderID) != leader || len(p.CurrentVoters) != 3 || p.HighWatermark <= res.LastOffset {
		t.Errorf("DescribeQuorum partition = %+v (version %d)", p, resp.Version)
	}
}
