package transport

import (
	"context"
	"net"
	"testing"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKgoClientInterop points franz-go's client, an independent Kafka
// implementation, at the listener over loopback TCP. The client opens with
// ApiVersions v5 (KIP-1242, newer than Kafka 4.3.1); the listener answers it
// at v0 with UNSUPPORTED_VERSION and our range 0-4 (KIP-511), so the client
// retries at v4, which is the first ApiVersions the handler sees. The client
// then negotiates DescribeQuorum from our answer and reads our response.
func TestKgoClientInterop(t *testing.T) {
	seen := make(chan int16, 4)
	avVersions := make(chan int16, 4)
	inner := withAPIVersions(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		seen <- req.Header.APIVersion
		resp := req.Body.ResponseKind().(*kmsg.DescribeQuorumResponse)
		tp := kmsg.NewDescribeQuorumResponseTopic()
		tp.Topic = "__cluster_metadata"
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.LeaderID, p.LeaderEpoch, p.HighWatermark = 1, 3, 42
		tp.Partitions = append(tp.Partitions, p)
		resp.Topics = append(resp.Topics, tp)
		reply.Send(resp)
	}))
	h := HandlerFunc(func(ctx context.Context, req *Request, reply *Reply) {
		if req.Header.APIKey == wire.KeyAPIVersions {
			avVersions <- req.Header.APIVersion
		}
		inner.Serve(ctx, req, reply)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(t.Context(), ln, testServerConfig(h))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), testDeadline)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	tp := kmsg.NewDescribeQuorumRequestTopic()
	tp.Topic = "__cluster_metadata"
	tp.Partitions = append(tp.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, tp)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("DescribeQuorum through kgo: %v", err)
	}
	dq := resp.(*kmsg.DescribeQuorumResponse)
	if len(dq.Topics) != 1 || dq.Topics[0].Partitions[0].HighWatermark != 42 {
		t.Fatalf("kgo read %+v", dq)
	}
	if v := <-seen; v != 2 {
		t.Errorf("kgo sent DescribeQuorum v%d, want v2 (our maximum)", v)
	}
	if v := <-avVersions; v != 4 {
		t.Errorf("kgo's ApiVersions reached the handler at v%d, want v4", v)
	}
	api, _ := wire.LookupAPI(wire.KeyAPIVersions)
	if st := s.Stats(); st.ClosedInvalid != 0 {
		t.Errorf("the server closed %d connections as invalid (ApiVersions range %d-%d)", st.ClosedInvalid, api.Min, api.Max)
	}
}
