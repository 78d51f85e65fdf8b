package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNodeViewRoundTrip: a view set into a DescribeQuorum answer comes
// back from its encoded bytes; an answer without one says so; a view no
// node sends is refused.
func TestNodeViewRoundTrip(t *testing.T) {
	want := NodeView{NodeID: 2, Role: "Prospective", Epoch: 5, LeaderID: -1, LogEndOffset: 123, HighWatermark: 120}
	resp := kmsg.NewPtrDescribeQuorumResponse()
	resp.Version = 2
	topic := kmsg.NewDescribeQuorumResponseTopic()
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	if err := SetNodeView(&p, want); err != nil {
		t.Fatal(err)
	}
	topic.Partitions = append(topic.Partitions, p)
	resp.Topics = append(resp.Topics, topic)
	got := kmsg.NewPtrDescribeQuorumResponse()
	got.Version = 2
	if err := got.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	v, err := NodeViewOf(&got.Topics[0].Partitions[0])
	if err != nil || v != want {
		t.Fatalf("NodeViewOf = %+v, %v; want %+v", v, err, want)
	}
	empty := kmsg.NewDescribeQuorumResponseTopicPartition()
	if _, err := NodeViewOf(&empty); err != ErrNoNodeView {
		t.Errorf("NodeViewOf without a view: %v, want ErrNoNodeView", err)
	}
	for _, bad := range []NodeView{
		{NodeID: -1, Role: "Leader"}, {NodeID: 1}, {NodeID: 1, Role: "Leader\n"}, {NodeID: 1, Role: "Leader", Epoch: -1},
		{NodeID: 1, Role: "Leader", LeaderID: -2}, {NodeID: 1, Role: "Leader", LogEndOffset: -1}, {NodeID: 1, Role: "Leader", HighWatermark: -2},
	} {
		if err := SetNodeView(&p, bad); err == nil {
			t.Errorf("SetNodeView(%+v) accepted it", bad)
		}
	}
	for _, raw := range []string{"", "{", `{"nodeId":1}`, `{"nodeId":1,"role":"` + string(make([]byte, 40)) + `"}`, `[]`} {
		if _, err := DecodeNodeView([]byte(raw)); err == nil {
			t.Errorf("DecodeNodeView(%q) accepted it", raw)
		}
	}
}

// FuzzNodeView: no bytes make DecodeNodeView panic, and a view it
// accepts encodes and decodes to itself.
func FuzzNodeView(f *testing.F) {
	f.Add([]byte(`{"nodeId":2,"role":"Follower","epoch":5,"leaderId":1,"logEndOffset":12,"highWatermark":10}`))
	f.Add([]byte(`{"nodeId":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeNodeView(b)
		if err != nil {
			return
		}
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		if err := SetNodeView(&p, v); err != nil {
			t.Fatalf("SetNodeView of an accepted view %+v: %v", v, err)
		}
		again, err := NodeViewOf(&p)
		if err != nil || again != v {
			t.Fatalf("round trip of %+v: %+v, %v", v, again, err)
		}
	})
}
