package wire

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

var (
	dirA = kraft.UUID{1, 2, 3}
	dirB = kraft.UUID{4, 5, 6}
)

// viaBytes encodes req at version v and decodes it into a fresh request of
// the same key, as the listener would.
func requestViaBytes(t *testing.T, req kmsg.Request, v int16) kmsg.Request {
	t.Helper()
	req.SetVersion(v)
	b := req.AppendTo(nil)
	out := kmsg.RequestForKey(req.Key())
	out.SetVersion(v)
	if err := out.ReadFrom(b); err != nil {
		t.Fatalf("decode %T v%d: %v", req, v, err)
	}
	return out
}

func responseViaBytes(t *testing.T, resp kmsg.Response, v int16) kmsg.Response {
	t.Helper()
	resp.SetVersion(v)
	b := resp.AppendTo(nil)
	out := kmsg.ResponseForKey(resp.Key())
	out.SetVersion(v)
	if err := out.ReadFrom(b); err != nil {
		t.Fatalf("decode %T v%d: %v", resp, v, err)
	}
	return out
}

// TestKRaftRequestRoundTrip sends every KRaft request through kmsg and
// bytes at every supported version and back; what a version cannot carry
// comes back as the receiver's default.
func TestKRaftRequestRoundTrip(t *testing.T) {
	const local = kraft.NodeID(2)
	h := kraft.Header{From: 1, To: local}
	tests := []struct {
		name   string
		msg    kraft.Message
		min    int16
		max    int16
		expect func(v int16) kraft.Message
	}{
		{
			name: "Vote", min: 0, max: 2,
			msg: &kraft.VoteRequest{Header: h, ReplicaEpoch: 5, Replica: kraft.ReplicaKey{ID: 1, DirectoryID: dirA},
				Voter: kraft.ReplicaKey{ID: 2, DirectoryID: dirB}, LastOffsetEpoch: 4, LastOffset: 17, PreVote: true},
			expect: func(v int16) kraft.Message {
				m := &kraft.VoteRequest{Header: h, ReplicaEpoch: 5, Replica: kraft.ReplicaKey{ID: 1, DirectoryID: dirA},
					Voter: kraft.ReplicaKey{ID: 2, DirectoryID: dirB}, LastOffsetEpoch: 4, LastOffset: 17, PreVote: true}
				if v < 2 {
					m.PreVote = false
				}
				if v < 1 {
					m.Replica.DirectoryID = kraft.UUID{}
					m.Voter = kraft.ReplicaKey{ID: kraft.NoNode}
				}
				return m
			},
		},
		{
			name: "BeginQuorumEpoch", min: 0, max: 1,
			msg: &kraft.BeginQuorumEpochRequest{Header: h, Voter: kraft.ReplicaKey{ID: 2, DirectoryID: dirB}, LeaderID: 1, LeaderEpoch: 9},
			expect: func(v int16) kraft.Message {
				m := &kraft.BeginQuorumEpochRequest{Header: h, Voter: kraft.ReplicaKey{ID: 2, DirectoryID: dirB}, LeaderID: 1, LeaderEpoch: 9}
				if v < 1 {
					m.Voter = kraft.ReplicaKey{ID: kraft.NoNode}
				}
				return m
			},
		},
		{
			name: "EndQuorumEpoch", min: 0, max: 1,
			msg: &kraft.EndQuorumEpochRequest{Header: h, LeaderID: 1, LeaderEpoch: 9,
				PreferredCandidates: []kraft.ReplicaKey{{ID: 3, DirectoryID: dirA}, {ID: 2, DirectoryID: dirB}}},
			expect: func(v int16) kraft.Message {
				m := &kraft.EndQuorumEpochRequest{Header: h, LeaderID: 1, LeaderEpoch: 9,
					PreferredCandidates: []kraft.ReplicaKey{{ID: 3, DirectoryID: dirA}, {ID: 2, DirectoryID: dirB}}}
				if v < 1 {
					m.PreferredCandidates = []kraft.ReplicaKey{{ID: 3}, {ID: 2}}
				}
				return m
			},
		},
		{
			name: "Fetch", min: 13, max: 18,
			msg: &kraft.FetchRequest{Header: h, Replica: kraft.ReplicaKey{ID: 1, DirectoryID: dirA}, CurrentLeaderEpoch: 7,
				FetchOffset: 100, LastFetchedEpoch: 6, MaxWait: 500 * time.Millisecond, MaxBytes: 1 << 20, HighWatermark: 90},
			expect: func(v int16) kraft.Message {
				m := &kraft.FetchRequest{Header: h, Replica: kraft.ReplicaKey{ID: 1, DirectoryID: dirA}, CurrentLeaderEpoch: 7,
					FetchOffset: 100, LastFetchedEpoch: 6, MaxWait: 500 * time.Millisecond, MaxBytes: 1 << 20, HighWatermark: 90}
				if v < 18 {
					m.HighWatermark = math.MaxInt64
				}
				if v < 17 {
					m.Replica.DirectoryID = kraft.UUID{}
				}
				return m
			},
		},
		{
			name: "FetchSnapshot", min: 0, max: 1,
			msg: &kraft.FetchSnapshotRequest{Header: h, Replica: kraft.ReplicaKey{ID: 1, DirectoryID: dirA}, CurrentLeaderEpoch: 7,
				SnapshotID: kraft.OffsetAndEpoch{Offset: 50, Epoch: 3}, Position: 4096, MaxBytes: 1 << 20},
			expect: func(v int16) kraft.Message {
				m := &kraft.FetchSnapshotRequest{Header: h, Replica: kraft.ReplicaKey{ID: 1, DirectoryID: dirA}, CurrentLeaderEpoch: 7,
					SnapshotID: kraft.OffsetAndEpoch{Offset: 50, Epoch: 3}, Position: 4096, MaxBytes: 1 << 20}
				if v < 1 {
					m.Replica.DirectoryID = kraft.UUID{}
				}
				return m
			},
		},
	}
	for _, tt := range tests {
		for v := tt.min; v <= tt.max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", tt.name, v), func(t *testing.T) {
				req, err := KmsgRequest(tt.msg, "cluster-1")
				if err != nil {
					t.Fatal(err)
				}
				back := requestViaBytes(t, req, v)
				got, answer, err := KRaftRequest(back, "cluster-1", local)
				if err != nil || answer != nil {
					t.Fatalf("KRaftRequest = answer %v, err %v; want a message", answer, err)
				}
				if diff := cmp.Diff(tt.expect(v), got); diff != "" {
					t.Errorf("round trip at v%d (-want +got):\n%s", v, diff)
				}
			})
		}
	}
}

// TestKRaftResponseRoundTrip sends every KRaft response through kmsg and
// bytes at every supported version and back.
func TestKRaftResponseRoundTrip(t *testing.T) {
	h := kraft.Header{From: 2, To: 1, RequestID: 42}
	leader := kraft.LeaderAndEpoch{LeaderID: 3, Epoch: 8}
	records := []byte("batches")
	tests := []struct {
		name     string
		msg      kraft.Message
		min, max int16
		records  []byte
	}{
		{name: "Vote", min: 0, max: 2, msg: &kraft.VoteResponse{Header: h, Error: kraft.CodeFencedLeaderEpoch, Leader: leader, VoteGranted: true}},
		{name: "BeginQuorumEpoch", min: 0, max: 1, msg: &kraft.BeginQuorumEpochResponse{Header: h, Error: kraft.CodeInvalidVoterKey, Leader: leader}},
		{name: "EndQuorumEpoch", min: 0, max: 1, msg: &kraft.EndQuorumEpochResponse{Header: h, Error: kraft.CodeNone, Leader: leader}},
		{name: "Fetch", min: 13, max: 18, records: records, msg: &kraft.FetchResponse{Header: h, Error: kraft.CodeNone, Leader: leader,
			HighWatermark: 77, LogStartOffset: 10, DivergingEpoch: kraft.OffsetAndEpoch{Offset: 60, Epoch: 5}, SnapshotID: kraft.NoOffsetAndEpoch}},
		{name: "FetchDivergingSnapshot", min: 13, max: 18, msg: &kraft.FetchResponse{Header: h, Error: kraft.CodeNone, Leader: leader,
			HighWatermark: -1, LogStartOffset: 0, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.OffsetAndEpoch{Offset: 50, Epoch: 4}}},
		{name: "FetchSnapshot", min: 0, max: 1, records: records, msg: &kraft.FetchSnapshotResponse{Header: h, Error: kraft.CodeNone, Leader: leader,
			SnapshotID: kraft.OffsetAndEpoch{Offset: 50, Epoch: 4}, Size: 1000, Position: 100, Length: int64(len(records))}},
	}
	for _, tt := range tests {
		for v := tt.min; v <= tt.max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", tt.name, v), func(t *testing.T) {
				resp, err := KmsgResponse(tt.msg, v, tt.records)
				if err != nil {
					t.Fatal(err)
				}
				back := responseViaBytes(t, resp, v)
				got, recs, err := KRaftResponse(back, h)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.msg, got); diff != "" {
					t.Errorf("round trip at v%d (-want +got):\n%s", v, diff)
				}
				if string(recs) != string(tt.records) {
					t.Errorf("records at v%d = %q, want %q", v, recs, tt.records)
				}
			})
		}
	}
}

// TestKRaftRequestChecks covers the checks made at the wire edge
// (KafkaRaftClient's handlers and RaftUtil.hasValidTopicPartition): cluster
// id and topic shape.
func TestKRaftRequestChecks(t *testing.T) {
	vote := func(mut func(*kmsg.VoteRequest)) kmsg.Request {
		req, _ := KmsgRequest(&kraft.VoteRequest{Replica: kraft.ReplicaKey{ID: 1}, Voter: kraft.ReplicaKey{ID: 2}}, "")
		mut(req.(*kmsg.VoteRequest))
		return req
	}
	fetch := func(mut func(*kmsg.FetchRequest)) kmsg.Request {
		req, _ := KmsgRequest(&kraft.FetchRequest{Replica: kraft.ReplicaKey{ID: 1}}, "")
		mut(req.(*kmsg.FetchRequest))
		return req
	}
	snap := func(mut func(*kmsg.FetchSnapshotRequest)) kmsg.Request {
		req, _ := KmsgRequest(&kraft.FetchSnapshotRequest{Replica: kraft.ReplicaKey{ID: 1}}, "")
		mut(req.(*kmsg.FetchSnapshotRequest))
		return req
	}
	other := "other"
	ours := "ours"
	tests := []struct {
		name      string
		req       kmsg.Request
		clusterID string
		topCode   int16 // -2: handled by the core (a message, no answer)
		partCode  int16
	}{
		{"vote null cluster id accepted", vote(func(*kmsg.VoteRequest) {}), "ours", -2, 0},
		{"vote same cluster id", vote(func(r *kmsg.VoteRequest) { r.ClusterID = &ours }), "ours", -2, 0},
		{"vote other cluster id", vote(func(r *kmsg.VoteRequest) { r.ClusterID = &other }), "ours", kerr.InconsistentClusterID.Code, 0},
		{"vote any cluster id on unformatted node", vote(func(r *kmsg.VoteRequest) { r.ClusterID = &other }), "", -2, 0},
		{"vote wrong topic", vote(func(r *kmsg.VoteRequest) { r.Topics[0].Topic = "x" }), "ours", kerr.InvalidRequest.Code, 0},
		{"vote two partitions", vote(func(r *kmsg.VoteRequest) {
			r.Topics[0].Partitions = append(r.Topics[0].Partitions, r.Topics[0].Partitions[0])
		}), "ours", kerr.InvalidRequest.Code, 0},
		{"vote partition 1", vote(func(r *kmsg.VoteRequest) { r.Topics[0].Partitions[0].Partition = 1 }), "ours", kerr.InvalidRequest.Code, 0},
		{"fetch other cluster id", fetch(func(r *kmsg.FetchRequest) { r.ClusterID = &other }), "ours", kerr.InconsistentClusterID.Code, 0},
		{"fetch wrong topic id", fetch(func(r *kmsg.FetchRequest) { r.Topics[0].TopicID = [16]byte{15: 2} }), "ours", kerr.InvalidRequest.Code, 0},
		{"fetch no topics", fetch(func(r *kmsg.FetchRequest) { r.Topics = nil }), "ours", kerr.InvalidRequest.Code, 0},
		{"fetch v12", fetch(func(r *kmsg.FetchRequest) { r.Version = 12 }), "ours", kerr.InvalidRequest.Code, 0},
		{"fetch snapshot other cluster", snap(func(r *kmsg.FetchSnapshotRequest) { r.ClusterID = &other }), "ours", kerr.InconsistentClusterID.Code, 0},
		{"fetch snapshot other partition", snap(func(r *kmsg.FetchSnapshotRequest) { r.Topics[0].Partitions[0].Partition = 3 }), "ours", 0, kerr.UnknownTopicOrPartition.Code},
		{"fetch snapshot two topics", snap(func(r *kmsg.FetchSnapshotRequest) { r.Topics = append(r.Topics, r.Topics[0]) }), "ours", kerr.InvalidRequest.Code, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.GetVersion() == 0 {
				tt.req.SetVersion(tt.req.MaxVersion())
			}
			msg, answer, err := KRaftRequest(tt.req, tt.clusterID, 2)
			if err != nil {
				t.Fatal(err)
			}
			if tt.topCode == -2 {
				if msg == nil || answer != nil {
					t.Fatalf("KRaftRequest = %v, %v; want a message for the core", msg, answer)
				}
				return
			}
			if msg != nil || answer == nil {
				t.Fatalf("KRaftRequest = %v, %v; want an answer", msg, answer)
			}
			if answer.GetVersion() != tt.req.GetVersion() {
				t.Errorf("answer version %d, want %d", answer.GetVersion(), tt.req.GetVersion())
			}
			var top, part int16
			switch a := answer.(type) {
			case *kmsg.VoteResponse:
				top = a.ErrorCode
			case *kmsg.FetchResponse:
				top = a.ErrorCode
			case *kmsg.FetchSnapshotResponse:
				top = a.ErrorCode
				if len(a.Topics) == 1 && len(a.Topics[0].Partitions) == 1 {
					part = a.Topics[0].Partitions[0].ErrorCode
				}
			}
			if top != tt.topCode || part != tt.partCode {
				t.Errorf("codes = top %d partition %d, want %d %d", top, part, tt.topCode, tt.partCode)
			}
		})
	}
}

// TestKRaftTopLevelErrorResponse: a peer's top-level error (no partition
// data) reaches the core as that error with no leader.
func TestKRaftTopLevelErrorResponse(t *testing.T) {
	h := kraft.Header{From: 3, To: 1, RequestID: 7}
	for _, resp := range []kmsg.Response{
		&kmsg.VoteResponse{ErrorCode: kerr.InconsistentClusterID.Code},
		&kmsg.BeginQuorumEpochResponse{ErrorCode: kerr.InconsistentClusterID.Code},
		&kmsg.EndQuorumEpochResponse{ErrorCode: kerr.InconsistentClusterID.Code},
		&kmsg.FetchResponse{Version: 16, ErrorCode: kerr.InconsistentClusterID.Code},
		&kmsg.FetchSnapshotResponse{ErrorCode: kerr.InconsistentClusterID.Code},
	} {
		m, _, err := KRaftResponse(resp, h)
		if err != nil {
			t.Fatalf("%T: %v", resp, err)
		}
		want, _ := KRaftFailure(requestFor(m), kraft.CodeInconsistentClusterID)
		if diff := cmp.Diff(want, m); diff != "" {
			t.Errorf("%T (-want +got):\n%s", resp, diff)
		}
	}
	if _, _, err := KRaftResponse(&kmsg.VoteResponse{}, h); err == nil {
		t.Error("KRaftResponse(vote without topics) = nil error, want one")
	}
	if _, _, err := KRaftResponse(&kmsg.MetadataResponse{}, h); !errors.Is(err, ErrNotKRaft) {
		t.Errorf("KRaftResponse(metadata) = %v, want ErrNotKRaft", err)
	}
}

// requestFor returns a request whose failure answer has the type of m
// and m's header.
func requestFor(m kraft.Message) kraft.Message {
	h := kraft.HeaderOf(m)
	rh := kraft.Header{From: h.To, To: h.From, RequestID: h.RequestID}
	switch m.(type) {
	case *kraft.VoteResponse:
		return &kraft.VoteRequest{Header: rh}
	case *kraft.BeginQuorumEpochResponse:
		return &kraft.BeginQuorumEpochRequest{Header: rh}
	case *kraft.EndQuorumEpochResponse:
		return &kraft.EndQuorumEpochRequest{Header: rh}
	case *kraft.FetchResponse:
		return &kraft.FetchRequest{Header: rh}
	case *kraft.FetchSnapshotResponse:
		return &kraft.FetchSnapshotRequest{Header: rh}
	}
	return nil
}

// TestKRaftCodes checks that every code the core names is Kafka's code of
// the same name.
func TestKRaftCodes(t *testing.T) {
	for _, tt := range []struct {
		code kraft.ErrorCode
		want *kerr.Error
	}{
		{kraft.CodeUnknownServerError, kerr.UnknownServerError},
		{kraft.CodeOffsetOutOfRange, kerr.OffsetOutOfRange},
		{kraft.CodeNotLeaderOrFollower, kerr.NotLeaderForPartition},
		{kraft.CodeRequestTimedOut, kerr.RequestTimedOut},
		{kraft.CodeBrokerNotAvailable, kerr.BrokerNotAvailable},
		{kraft.CodeUnsupportedVersion, kerr.UnsupportedVersion},
		{kraft.CodeInvalidRequest, kerr.InvalidRequest},
		{kraft.CodeFencedLeaderEpoch, kerr.FencedLeaderEpoch},
		{kraft.CodeUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
		{kraft.CodeInconsistentVoterSet, kerr.InconsistentVoterSet},
		{kraft.CodeSnapshotNotFound, kerr.SnapshotNotFound},
		{kraft.CodePositionOutOfRange, kerr.PositionOutOfRange},
		{kraft.CodeInconsistentClusterID, kerr.InconsistentClusterID},
		{kraft.CodeInvalidVoterKey, kerr.InvalidVoterKey},
	} {
		if got := KafkaCode(tt.code); got != tt.want.Code {
			t.Errorf("KafkaCode(%s) = %d, want %d (%s)", tt.code, got, tt.want.Code, tt.want.Message)
		}
		if got := KRaftCode(tt.want.Code); got != tt.code {
			t.Errorf("KRaftCode(%d) = %s, want %s", tt.want.Code, got, tt.code)
		}
	}
	if got := KafkaCode(kraft.CodeNone); got != 0 {
		t.Errorf("KafkaCode(NONE) = %d, want 0", got)
	}
}
