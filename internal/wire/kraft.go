package wire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// MetadataTopic is the name of the replicated metadata topic. Vote,
// BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum and FetchSnapshot name it
// by this name; Fetch v13+ names it by [MetadataTopicID].
const MetadataTopic = "__cluster_metadata"

// MetadataPartition is the only partition of [MetadataTopic].
const MetadataPartition int32 = 0

// MetadataTopicID is the fixed topic id of [MetadataTopic],
// "AAAAAAAAAAAAAAAAAAAAAQ" in Kafka's base64 form.
var MetadataTopicID = [16]byte{15: 1}

// ErrNotKRaft is wrapped by the mapping functions when they are given a
// message that is not one of the KRaft RPCs they translate.
var ErrNotKRaft = errors.New("wire: not a KRaft message")

// KafkaCode returns the Kafka error code for a core error code. The core
// uses Kafka's numbers, so the mapping is one to one; it exists so that the
// translation has one place and a test.
func KafkaCode(c kraft.ErrorCode) int16 { return int16(c) }

// KRaftCode returns the core's error code for a Kafka error code received
// from a peer. Codes the core names map to themselves; a code it does not
// name is kept as is, which the core handles like any other error answer
// (it backs off from that peer).
func KRaftCode(code int16) kraft.ErrorCode { return kraft.ErrorCode(code) }

// clusterIDMatches applies Kafka's rule: a request without a cluster id is
// accepted; one with a cluster id must carry ours. A node without a cluster
// id (an unformatted directory) accepts every request.
func clusterIDMatches(got *string, ours string) bool {
	return got == nil || ours == "" || *got == ours
}

func clusterIDField(ours string) *string {
	if ours == "" {
		return nil
	}
	s := ours
	return &s
}

// onlyPartition returns the one topic of topics and its one partition,
// the shape of every KRaft RPC (the metadata topic's partition 0); ok is
// false for any other number of topics or partitions. partitions returns
// a topic's partitions.
func onlyPartition[T, P any](topics []T, partitions func(*T) []P) (t *T, p *P, ok bool) {
	if len(topics) != 1 {
		return nil, nil, false
	}
	ps := partitions(&topics[0])
	if len(ps) != 1 {
		return nil, nil, false
	}
	return &topics[0], &ps[0], true
}

// responseShapeError reports a response of the named RPC from h.From whose
// topics are not the one metadata partition.
func responseShapeError(rpc string, h kraft.Header, topics int) error {
	return fmt.Errorf("wire: %s response from %d: %d topics, want 1 partition of %s", rpc, h.From, topics, MetadataTopic)
}

// KRaftRequest maps an inbound KRaft request (Vote, BeginQuorumEpoch,
// EndQuorumEpoch, Fetch, FetchSnapshot) to the core's message, addressed To
// local; the caller sets the RequestID. The wire edge checks what the core
// does not: the cluster id (a set, different id is answered with a top-level
// INCONSISTENT_CLUSTER_ID) and the topic shape (anything but exactly one
// topic, the metadata topic, with exactly partition 0 is answered with a
// top-level INVALID_REQUEST; FetchSnapshot for another partition gets
// UNKNOWN_TOPIC_OR_PARTITION, as in
// KafkaRaftClient.handleFetchSnapshotRequest). In those cases msg is nil and
// answer is the complete response to send. err is non-nil only for a request
// that is not a KRaft RPC.
func KRaftRequest(req kmsg.Request, clusterID string, local kraft.NodeID) (msg kraft.Message, answer kmsg.Response, err error) {
	switch r := req.(type) {
	case *kmsg.VoteRequest:
		msg, answer = voteToCore(r, clusterID, local)
	case *kmsg.BeginQuorumEpochRequest:
		msg, answer = beginQuorumEpochToCore(r, clusterID, local)
	case *kmsg.EndQuorumEpochRequest:
		msg, answer = endQuorumEpochToCore(r, clusterID, local)
	case *kmsg.FetchRequest:
		msg, answer = fetchToCore(r, clusterID, local)
	case *kmsg.FetchSnapshotRequest:
		msg, answer = fetchSnapshotToCore(r, clusterID, local)
	default:
		return nil, nil, fmt.Errorf("%w: request %T", ErrNotKRaft, req)
	}
	return msg, answer, nil
}

// KmsgResponse encodes the core's answer m (a response message) as the Kafka
// response at version (the version of the request it answers). records
// holds the record batches of a Fetch response (the whole batches the
// runtime read for m.Read) or the chunk of a FetchSnapshot response; it is
// ignored for the other RPCs.
func KmsgResponse(m kraft.Message, version int16, records []byte) (kmsg.Response, error) {
	switch m := m.(type) {
	case *kraft.VoteResponse:
		return voteResponseToKmsg(m, version), nil
	case *kraft.BeginQuorumEpochResponse:
		return beginQuorumEpochResponseToKmsg(m, version), nil
	case *kraft.EndQuorumEpochResponse:
		return endQuorumEpochResponseToKmsg(m, version), nil
	case *kraft.FetchResponse:
		return fetchResponseToKmsg(m, version, records), nil
	case *kraft.FetchSnapshotResponse:
		return fetchSnapshotResponseToKmsg(m, version, records), nil
	}
	return nil, fmt.Errorf("%w: response %T", ErrNotKRaft, m)
}

// KmsgRequest encodes the core's outbound request m as a Kafka request
// carrying clusterID ("" for none). The version is left at the highest the
// message type has; the sender (transport's version negotiation) lowers it
// to what both ends support, and every field the lower version lacks has a
// counterpart it does carry (Fetch's ReplicaID and ReplicaState, Vote's
// Candidate fields, EndQuorumEpoch's PreferredSuccessors and
// PreferredCandidates). A PreVote cannot be carried below Vote v2.
func KmsgRequest(m kraft.Message, clusterID string) (kmsg.Request, error) {
	if f, ok := m.(*kraft.FetchRequest); ok {
		return fetchRequest(f, clusterID), nil
	}
	cid := clusterIDField(clusterID)
	switch m := m.(type) {
	case *kraft.VoteRequest:
		return voteToKmsg(m, cid), nil
	case *kraft.BeginQuorumEpochRequest:
		return beginQuorumEpochToKmsg(m, cid), nil
	case *kraft.EndQuorumEpochRequest:
		return endQuorumEpochToKmsg(m, cid), nil
	case *kraft.FetchSnapshotRequest:
		return fetchSnapshotToKmsg(m, cid), nil
	}
	return nil, fmt.Errorf("%w: request %T", ErrNotKRaft, m)
}

// noLeader is the leader view of a response that carries none (a
// top-level error): unknown leader, unknown epoch.
var noLeader = kraft.LeaderAndEpoch{LeaderID: kraft.NoNode, Epoch: -1}

// KRaftResponse maps a peer's Kafka response to the core's message with
// header h (From the peer, To this node, the RequestID of the request it
// answers). For Fetch and FetchSnapshot it also returns the record bytes
// (batches, or the snapshot chunk), which the runtime summarises and keeps
// under a records handle; Batches, Records and Chunk are left for it to
// fill. A top-level error becomes a response with that error and no leader.
// A response whose topic shape is not the single metadata partition is an
// error: it cannot answer a request this node sent.
func KRaftResponse(resp kmsg.Response, h kraft.Header) (kraft.Message, []byte, error) {
	var m kraft.Message
	var err error
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		m, err = voteResponseToCore(r, h)
	case *kmsg.BeginQuorumEpochResponse:
		m, err = beginQuorumEpochResponseToCore(r, h)
	case *kmsg.EndQuorumEpochResponse:
		m, err = endQuorumEpochResponseToCore(r, h)
	case *kmsg.FetchResponse:
		return fetchResponseToCore(r, h)
	case *kmsg.FetchSnapshotResponse:
		return fetchSnapshotResponseToCore(r, h)
	default:
		return nil, nil, fmt.Errorf("%w: response %T", ErrNotKRaft, resp)
	}
	return m, nil, err
}

// KRaftFailure returns the response the core expects when the request req
// it sent could not be answered (lost connection, timeout, full queue): a
// response of the matching type with code (normally
// CodeBrokerNotAvailable), from the request's destination, carrying its
// RequestID, and no leader.
func KRaftFailure(req kraft.Message, code kraft.ErrorCode) (kraft.Message, error) {
	rh := kraft.HeaderOf(req)
	h := kraft.Header{From: rh.To, To: rh.From, RequestID: rh.RequestID}
	switch req.(type) {
	case *kraft.VoteRequest:
		return &kraft.VoteResponse{Header: h, Error: code, Leader: noLeader}, nil
	case *kraft.BeginQuorumEpochRequest:
		return &kraft.BeginQuorumEpochResponse{Header: h, Error: code, Leader: noLeader}, nil
	case *kraft.EndQuorumEpochRequest:
		return &kraft.EndQuorumEpochResponse{Header: h, Error: code, Leader: noLeader}, nil
	case *kraft.FetchRequest:
		return &kraft.FetchResponse{Header: h, Error: code, Leader: noLeader, HighWatermark: -1, LogStartOffset: -1,
			DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch}, nil
	case *kraft.FetchSnapshotRequest:
		return &kraft.FetchSnapshotResponse{Header: h, Error: code, Leader: noLeader, SnapshotID: kraft.NoOffsetAndEpoch}, nil
	}
	return nil, fmt.Errorf("%w: request %T", ErrNotKRaft, req)
}

// ForeignCluster reports whether req, a KRaft request, names a cluster
// id other than ours (the requests KRaftRequest refuses with
// INCONSISTENT_CLUSTER_ID), and if so the id it names and the node that
// sent it (-1 when the request does not say).
func ForeignCluster(req kmsg.Request, ours string) (theirs string, from kraft.NodeID, foreign bool) {
	var id *string
	from = kraft.NoNode
	switch r := req.(type) {
	case *kmsg.VoteRequest:
		id = r.ClusterID
		if _, p, ok := onlyPartition(r.Topics, votePartitions); ok {
			from = kraft.NodeID(p.CandidateID)
		}
	case *kmsg.BeginQuorumEpochRequest:
		id = r.ClusterID
		if _, p, ok := onlyPartition(r.Topics, beginQuorumEpochPartitions); ok {
			from = kraft.NodeID(p.LeaderID)
		}
	case *kmsg.EndQuorumEpochRequest:
		id = r.ClusterID
		if _, p, ok := onlyPartition(r.Topics, endQuorumEpochPartitions); ok {
			from = kraft.NodeID(p.LeaderID)
		}
	case *kmsg.FetchRequest:
		id, from = r.ClusterID, kraft.NodeID(r.ReplicaID)
		if r.Version >= 15 {
			from = kraft.NodeID(r.ReplicaState.ID)
		}
	case *kmsg.FetchSnapshotRequest:
		id, from = r.ClusterID, kraft.NodeID(r.ReplicaID)
	default:
		return "", kraft.NoNode, false
	}
	if clusterIDMatches(id, ours) {
		return "", kraft.NoNode, false
	}
	return *id, from, true
}
