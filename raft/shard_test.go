package raft

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// testRouter answers a routed Vote with epoch 77, panics on a routed
// BeginQuorumEpoch, blocks on a routed EndQuorumEpoch until its context
// ends, and records every request it saw.
type testRouter struct {
	mu   sync.Mutex
	seen []ShardRequest
}

func (r *testRouter) ServeShard(ctx context.Context, req ShardRequest) (kmsg.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, req)
	r.mu.Unlock()
	switch req.Request.(type) {
	case *kmsg.VoteRequest:
		resp := kmsg.NewPtrVoteResponse()
		t := kmsg.NewVoteResponseTopic()
		t.Topic = "group-7"
		p := kmsg.NewVoteResponseTopicPartition()
		p.LeaderEpoch, p.VoteGranted = 77, true
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, nil
	case *kmsg.BeginQuorumEpochRequest:
		panic("a router bug")
	case *kmsg.EndQuorumEpochRequest:
		<-ctx.Done()
		return nil, ctx.Err()
	case *kmsg.FetchRequest:
		return kmsg.NewPtrVoteResponse(), nil // the wrong kind
	}
	return nil, context.Canceled
}

func (r *testRouter) requests() []ShardRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ShardRequest(nil), r.seen...)
}

// voteFor is a Vote v2 for partition 0 of topic.
func voteFor(topic string) *kmsg.VoteRequest {
	req := kmsg.NewPtrVoteRequest()
	req.Version = 2
	t := kmsg.NewVoteRequestTopic()
	t.Topic = topic
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateEpoch, p.CandidateID = 1, 9
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// A node with a ShardRouter hands it the KRaft RPCs for other partitions,
// with the principal, and sends its answer; its own partition stays its
// own. A router that panics, answers with the wrong kind or blocks past
// the request timeout costs only its request: it is answered with
// UNKNOWN_SERVER_ERROR or REQUEST_TIMED_OUT, the connection keeps
// serving, and the node keeps leading.
func TestShardRouterServesOtherPartitions(t *testing.T) {
	router := &testRouter{}
	n := startHostileNode(t, func(c *Config) {
		c.ShardRouter = router
		c.RequestTimeout = 300 * time.Millisecond
	})
	before := n.mark()
	conn := dialRaw(t, n.c.Addr())

	resp := conn.call(1, voteFor("group-7")).(*kmsg.VoteResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].LeaderEpoch != 77 {
		t.Fatalf("routed Vote answered %+v, want the router's answer", resp)
	}
	seen := router.requests()
	if len(seen) != 1 || seen[0].Principal != "User:ANONYMOUS" || seen[0].ClientID != "hostile" || seen[0].RemoteAddr == nil {
		t.Fatalf("the router saw %+v", seen)
	}

	// The node's own partition is not routed.
	own := conn.call(2, voteFor(wire.MetadataTopic)).(*kmsg.VoteResponse)
	if len(router.requests()) != 1 {
		t.Fatalf("a Vote for %s-0 reached the router", wire.MetadataTopic)
	}
	if own.ErrorCode != 0 || len(own.Topics) != 1 || own.Topics[0].Partitions[0].LeaderEpoch == 77 {
		t.Fatalf("the node's own Vote answered %+v", own)
	}

	begin := kmsg.NewPtrBeginQuorumEpochRequest()
	bt := kmsg.NewBeginQuorumEpochRequestTopic()
	bt.Topic = "group-7"
	bt.Partitions = append(bt.Partitions, kmsg.NewBeginQuorumEpochRequestTopicPartition())
	begin.Topics = append(begin.Topics, bt)
	if got := errorCode(conn.call(3, begin)); got != kerr.UnknownServerError.Code {
		t.Errorf("a request the router panicked on answered %d, want UNKNOWN_SERVER_ERROR", got)
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 16
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = [16]byte{1, 2, 3}
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	if got := errorCode(conn.call(4, fetch)); got != kerr.UnknownServerError.Code {
		t.Errorf("a request the router answered with the wrong kind answered %d, want UNKNOWN_SERVER_ERROR", got)
	}

	end := kmsg.NewPtrEndQuorumEpochRequest()
	et := kmsg.NewEndQuorumEpochRequestTopic()
	et.Topic = "group-7"
	et.Partitions = append(et.Partitions, kmsg.NewEndQuorumEpochRequestTopicPartition())
	end.Topics = append(end.Topics, et)
	start := time.Now()
	if got := errorCode(conn.call(5, end)); got != kerr.RequestTimedOut.Code {
		t.Errorf("a request the router blocked on answered %d, want REQUEST_TIMED_OUT", got)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("the blocked request was answered after %v, before the request timeout", d)
	}

	// The same connection still serves, and the node is as it was.
	if av := conn.call(6, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); av.ErrorCode != 0 {
		t.Errorf("ApiVersions after the routed requests: %d", av.ErrorCode)
	}
	n.unchanged(before)
}

// Without a router, a KRaft RPC for another partition gets the node's
// own refusal, as Kafka's KafkaRaftClient gives it.
func TestNoShardRouterRefusesOtherPartitions(t *testing.T) {
	n := startHostileNode(t, nil)
	conn := dialRaw(t, n.c.Addr())
	if got := errorCode(conn.call(1, voteFor("group-7"))); got != kerr.InvalidRequest.Code {
		t.Errorf("Vote for another partition answered %d, want INVALID_REQUEST", got)
	}
}

// denyAll grants nothing.
type denyAll struct{}

func (denyAll) Allowed(string, string, ClusterOperation) bool { return false }

// A routed request is authorized first: one the grants refuse never
// reaches the router.
func TestShardRouterAfterAuthorization(t *testing.T) {
	router := &testRouter{}
	n := startHostileNode(t, func(c *Config) {
		c.ShardRouter = router
		c.ClusterGrants = denyAll{}
	})
	conn := dialRaw(t, n.c.Addr())
	if got := errorCode(conn.call(1, voteFor("group-7"))); got != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("an unauthorized routed Vote answered %d, want CLUSTER_AUTHORIZATION_FAILED", got)
	}
	if seen := router.requests(); len(seen) != 0 {
		t.Errorf("the router saw an unauthorized request: %+v", seen)
	}
}
