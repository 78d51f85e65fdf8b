package kraft_test

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Invariant B1 in docs/reliability.md: peer input never panics and never
// yields a Go error. Arbitrary requests, and responses with arbitrary fields
// that answer real outstanding requests (so they get past request matching),
// are stepped into a cluster in every role, with linearizable reads
// registered now and then; every Ready the core then emits must be one the
// log can carry out (appends that continue the log, truncations above the
// high watermark), which MemLog checks.
func TestPeerInputNeverPanics(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := newCluster(t, 3, 1, rapid.Uint64().Draw(rt, "seed"))
		c.elect(1)
		epoch := func(name string) kraft.Epoch { return kraft.Epoch(rapid.Int32Range(-2, 4).Draw(rt, name)) }
		offset := func(name string) kraft.Offset { return kraft.Offset(rapid.Int64Range(-2, 12).Draw(rt, name)) }
		node := func(name string) kraft.NodeID { return kraft.NodeID(rapid.Int32Range(-1, 4).Draw(rt, name)) }
		code := func() kraft.ErrorCode {
			return rapid.SampledFrom([]kraft.ErrorCode{
				kraft.CodeNone, kraft.CodeNone, kraft.CodeFencedLeaderEpoch, kraft.CodeUnknownLeaderEpoch,
				kraft.CodeNotLeaderOrFollower, kraft.CodeBrokerNotAvailable, kraft.CodeInvalidRequest,
				kraft.CodeSnapshotNotFound, kraft.CodePositionOutOfRange, kraft.CodeInvalidVoterKey,
				kraft.CodeUnsupportedVersion, kraft.CodeInconsistentVoterSet,
			}).Draw(rt, "code")
		}
		leader := func() kraft.LeaderAndEpoch {
			return kraft.LeaderAndEpoch{LeaderID: node("leader"), Epoch: epoch("leader epoch")}
		}
		oe := func(name string) kraft.OffsetAndEpoch {
			return kraft.OffsetAndEpoch{Offset: offset(name + " offset"), Epoch: epoch(name + " epoch")}
		}
		batches := func() []kraft.BatchInfo {
			var bs []kraft.BatchInfo
			for range rapid.IntRange(0, 3).Draw(rt, "batches") {
				base := offset("base")
				b := kraft.BatchInfo{BaseOffset: base, LastOffset: base + kraft.Offset(rapid.Int64Range(-1, 3).Draw(rt, "len")),
					Epoch: epoch("batch epoch"), KRaftVersion: -1, LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}}
				if rapid.IntRange(0, 4).Draw(rt, "voters?") == 0 {
					b.Control = true
					for range rapid.IntRange(0, 3).Draw(rt, "voter count") {
						b.Voters = append(b.Voters, kraft.ReplicaKey{ID: node("voter")})
					}
				}
				bs = append(bs, b)
			}
			return bs
		}
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			var m kraft.Message
			if len(c.net) > 0 && rapid.Bool().Draw(rt, "answer a real request") {
				req := c.net[rapid.IntRange(0, len(c.net)-1).Draw(rt, "request")]
				if !kraft.IsRequest(req) {
					continue
				}
				h := kraft.HeaderOf(req)
				rh := kraft.Header{From: h.To, To: h.From, RequestID: h.RequestID}
				switch req.(type) {
				case *kraft.VoteRequest:
					m = &kraft.VoteResponse{Header: rh, Error: code(), Leader: leader(), VoteGranted: rapid.Bool().Draw(rt, "granted")}
				case *kraft.BeginQuorumEpochRequest:
					m = &kraft.BeginQuorumEpochResponse{Header: rh, Error: code(), Leader: leader()}
				case *kraft.EndQuorumEpochRequest:
					m = &kraft.EndQuorumEpochResponse{Header: rh, Error: code(), Leader: leader()}
				case *kraft.FetchRequest:
					m = &kraft.FetchResponse{Header: rh, Error: code(), Leader: leader(), HighWatermark: offset("hw"),
						LogStartOffset: offset("start"), DivergingEpoch: oe("diverging"), SnapshotID: oe("snapshot"),
						Batches: batches(), Records: 7}
				case *kraft.FetchSnapshotRequest:
					m = &kraft.FetchSnapshotResponse{Header: rh, Error: code(), Leader: leader(), SnapshotID: oe("snapshot"),
						Size: rapid.Int64Range(-1, 100).Draw(rt, "size"), Position: rapid.Int64Range(-1, 100).Draw(rt, "position"),
						Length: rapid.Int64Range(-1, 100).Draw(rt, "length"), Chunk: 9}
				}
			} else {
				to := kraft.NodeID(rapid.IntRange(1, 4).Draw(rt, "to"))
				h := kraft.Header{From: node("from"), To: to, RequestID: rapid.Uint64Range(0, 50).Draw(rt, "id")}
				switch rapid.IntRange(0, 4).Draw(rt, "kind") {
				case 0:
					m = &kraft.VoteRequest{Header: h, ReplicaEpoch: epoch("epoch"), Replica: kraft.ReplicaKey{ID: node("replica")},
						Voter: kraft.ReplicaKey{ID: node("voter")}, LastOffsetEpoch: epoch("last epoch"), LastOffset: offset("last"),
						PreVote: rapid.Bool().Draw(rt, "pre")}
				case 1:
					m = &kraft.BeginQuorumEpochRequest{Header: h, Voter: kraft.ReplicaKey{ID: node("voter")}, LeaderID: node("leader"), LeaderEpoch: epoch("epoch")}
				case 2:
					m = &kraft.EndQuorumEpochRequest{Header: h, LeaderID: node("leader"), LeaderEpoch: epoch("epoch"),
						PreferredCandidates: []kraft.ReplicaKey{{ID: node("preferred")}}}
				case 3:
					m = &kraft.FetchRequest{Header: h, Replica: kraft.ReplicaKey{ID: node("replica")}, CurrentLeaderEpoch: epoch("epoch"),
						FetchOffset: offset("offset"), LastFetchedEpoch: epoch("last epoch"),
						MaxWait:  time.Duration(rapid.IntRange(-1, 500).Draw(rt, "wait")) * time.Millisecond,
						MaxBytes: rapid.Int32Range(-1, 100).Draw(rt, "max bytes"), HighWatermark: offset("hw")}
				default:
					m = &kraft.FetchSnapshotRequest{Header: h, Replica: kraft.ReplicaKey{ID: node("replica")}, CurrentLeaderEpoch: epoch("epoch"),
						SnapshotID: oe("snapshot"), Position: rapid.Int64Range(-1, 100).Draw(rt, "position"), MaxBytes: rapid.Int32Range(-1, 100).Draw(rt, "max bytes")}
				}
			}
			if rapid.IntRange(0, 5).Draw(rt, "register a read?") == 0 {
				// Reads pending on a leader while peer input arrives.
				id := kraft.NodeID(rapid.IntRange(1, 4).Draw(rt, "reader"))
				err := c.node(id).ReadIndex(c.now[id-1], kraft.ReadID(rapid.Uint64().Draw(rt, "read id")))
				if err != nil && !errors.Is(err, kraft.ErrNotLeader) {
					rt.Fatalf("ReadIndex on node %d: %v", id, err)
				}
				c.readyAll()
			}
			if m == nil {
				continue
			}
			to := kraft.HeaderOf(m).To
			if err := c.node(to).Step(c.now[to-1], m); err != nil {
				rt.Fatalf("Step(%s) = %v: peer input must not produce an error", m, err)
			}
			c.readyAll()
			if rapid.Bool().Draw(rt, "deliver") && len(c.net) > 0 {
				c.deliver(0)
				c.readyAll()
			}
		}
	})
}
