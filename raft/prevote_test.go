package raft

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// TestPreVoteToOldPeer: a voter that speaks Vote v0–v1 only (Kafka before
// 4.0) never receives a pre-vote disguised as a real vote: the pre-vote
// fails locally with UNSUPPORTED_VERSION and the candidate then asks for a
// real vote in a new epoch (KIP-996).
func TestPreVoteToOldPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var votes []kmsg.VoteRequestTopicPartition
	old := transport.HandlerFunc(func(_ context.Context, req *transport.Request, reply *transport.Reply) {
		switch r := req.Body.(type) {
		case *kmsg.ApiVersionsRequest:
			resp := wire.AnswerAPIVersions(r, wire.FeatureState{MetadataVersion: wire.SupportedFeature{Min: metadata.MinMetadataVersion, Max: metadata.MaxMetadataVersion}})
			for i := range resp.ApiKeys {
				if resp.ApiKeys[i].ApiKey == wire.KeyVote {
					resp.ApiKeys[i].MaxVersion = 1
				}
			}
			reply.Send(resp)
		case *kmsg.VoteRequest:
			mu.Lock()
			votes = append(votes, r.Topics[0].Partitions[0])
			mu.Unlock()
			resp := r.ResponseKind().(*kmsg.VoteResponse)
			topic := kmsg.NewVoteResponseTopic()
			topic.Topic = wire.MetadataTopic
			p := kmsg.NewVoteResponseTopicPartition()
			p.LeaderID, p.LeaderEpoch = -1, r.Topics[0].Partitions[0].CandidateEpoch
			topic.Partitions = append(topic.Partitions, p)
			resp.Topics = append(resp.Topics, topic)
			reply.Send(resp)
		default:
			reply.Close()
		}
	})
	srvCfg := transport.DefaultServerConfig()
	srvCfg.Handler = old
	srv, err := transport.Serve(t.Context(), ln, srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()

	cfg := ForTests(1, t.TempDir())
	cfg.QuorumVoters = []QuorumVoter{cfg.QuorumVoters[0], {ID: 2, Host: "127.0.0.1", Port: uint16(ln.Addr().(*net.TCPAddr).Port)}}
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Shutdown(context.Background()) }()
	waitFor(t, "a real vote request", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(votes) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, v := range votes {
		if v.CandidateEpoch < 1 {
			t.Errorf("the old peer received a vote at epoch %d: a pre-vote sent without its flag", v.CandidateEpoch)
		}
	}
	if st := n.QuorumState(); st.Role != RoleCandidate || st.Epoch < 1 {
		t.Errorf("node 1 is %+v, want a Candidate in epoch 1 or later", st)
	}
}
