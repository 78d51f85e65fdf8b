package wire

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
		resp := r.ResponseKind().(*kmsg.VoteResponse)
		if !clusterIDMatches(r.ClusterID, clusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return nil, resp, nil
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != MetadataPartition {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return nil, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		m := &kraft.VoteRequest{
			Header:          kraft.Header{From: kraft.NodeID(p.CandidateID), To: local},
			ReplicaEpoch:    kraft.Epoch(p.CandidateEpoch),
			Replica:         kraft.ReplicaKey{ID: kraft.NodeID(p.CandidateID), DirectoryID: kraft.Uuid(p.CandidateDirectoryID)},
			Voter:           kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: kraft.Uuid(p.VoterDirectoryID)},
			LastOffsetEpoch: kraft.Epoch(p.LastOffsetEpoch),
			LastOffset:      kraft.Offset(p.LastOffset),
			PreVote:         p.PreVote,
		}
		if r.Version < 1 {
			m.Voter = kraft.ReplicaKey{ID: kraft.NoNode}
		}
		return m, nil, nil

	case *kmsg.BeginQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.BeginQuorumEpochResponse)
		if !clusterIDMatches(r.ClusterID, clusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return nil, resp, nil
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != MetadataPartition {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return nil, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		m := &kraft.BeginQuorumEpochRequest{
			Header:      kraft.Header{From: kraft.NodeID(p.LeaderID), To: local},
			Voter:       kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: kraft.Uuid(p.VoterDirectoryID)},
			LeaderID:    kraft.NodeID(p.LeaderID),
			LeaderEpoch: kraft.Epoch(p.LeaderEpoch),
		}
		if r.Version < 1 {
			m.Voter = kraft.ReplicaKey{ID: kraft.NoNode}
		}
		return m, nil, nil

	case *kmsg.EndQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.EndQuorumEpochResponse)
		if !clusterIDMatches(r.ClusterID, clusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return nil, resp, nil
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != MetadataPartition {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return nil, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		m := &kraft.EndQuorumEpochRequest{
			Header:      kraft.Header{From: kraft.NodeID(p.LeaderID), To: local},
			LeaderID:    kraft.NodeID(p.LeaderID),
			LeaderEpoch: kraft.Epoch(p.LeaderEpoch),
		}
		if r.Version >= 1 {
			for _, c := range p.PreferredCandidates {
				m.PreferredCandidates = append(m.PreferredCandidates, kraft.ReplicaKey{ID: kraft.NodeID(c.CandidateID), DirectoryID: kraft.Uuid(c.CandidateDirectoryID)})
			}
		} else {
			for _, id := range p.PreferredSuccessors {
				m.PreferredCandidates = append(m.PreferredCandidates, kraft.ReplicaKey{ID: kraft.NodeID(id)})
			}
		}
		return m, nil, nil

	case *kmsg.FetchRequest:
		// The answer is made only for a refusal: a follower fetches
		// continuously, and an accepted Fetch is answered by the core.
		if !clusterIDMatches(r.ClusterID, clusterID) {
			resp := r.ResponseKind().(*kmsg.FetchResponse)
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return nil, resp, nil
		}
		if r.Version < 13 || len(r.Topics) != 1 || r.Topics[0].TopicID != MetadataTopicID || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != MetadataPartition {
			resp := r.ResponseKind().(*kmsg.FetchResponse)
			resp.ErrorCode = kerr.InvalidRequest.Code
			return nil, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		replica := r.ReplicaID
		if r.Version >= 15 {
			replica = r.ReplicaState.ID
		}
		m := &kraft.FetchRequest{
			Header:             kraft.Header{From: kraft.NodeID(replica), To: local},
			Replica:            kraft.ReplicaKey{ID: kraft.NodeID(replica)},
			CurrentLeaderEpoch: kraft.Epoch(p.CurrentLeaderEpoch),
			FetchOffset:        kraft.Offset(p.FetchOffset),
			LastFetchedEpoch:   kraft.Epoch(p.LastFetchedEpoch),
			MaxWait:            millis(r.MaxWaitMillis),
			MaxBytes:           r.MaxBytes,
			HighWatermark:      math.MaxInt64,
		}
		if r.Version >= 17 {
			m.Replica.DirectoryID = kraft.Uuid(p.ReplicaDirectoryID)
		}
		if r.Version >= 18 {
			m.HighWatermark = kraft.Offset(p.HighWatermark)
		}
		return m, nil, nil

	case *kmsg.FetchSnapshotRequest:
		resp := r.ResponseKind().(*kmsg.FetchSnapshotResponse)
		if !clusterIDMatches(r.ClusterID, clusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return nil, resp, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return nil, resp, nil
		}
		t, p := r.Topics[0], r.Topics[0].Partitions[0]
		if t.Topic != MetadataTopic || p.Partition != MetadataPartition {
			rt := kmsg.NewFetchSnapshotResponseTopic()
			rt.Topic = t.Topic
			rp := kmsg.NewFetchSnapshotResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			return nil, resp, nil
		}
		m := &kraft.FetchSnapshotRequest{
			Header:             kraft.Header{From: kraft.NodeID(r.ReplicaID), To: local},
			Replica:            kraft.ReplicaKey{ID: kraft.NodeID(r.ReplicaID)},
			CurrentLeaderEpoch: kraft.Epoch(p.CurrentLeaderEpoch),
			SnapshotID:         kraft.OffsetAndEpoch{Offset: kraft.Offset(p.SnapshotID.EndOffset), Epoch: kraft.Epoch(p.SnapshotID.Epoch)},
			Position:           p.Position,
			MaxBytes:           r.MaxBytes,
		}
		if r.Version >= 1 {
			m.Replica.DirectoryID = kraft.Uuid(p.ReplicaDirectoryID)
		}
		return m, nil, nil
	}
	return nil, nil, fmt.Errorf("%w: request %T", ErrNotKRaft, req)
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// fetchAnswer holds a Fetch response with its one topic, partition and
// broker (the leader's endpoint, when named), allocated as one object: a
// leader answers its followers' fetches one after another.
type fetchAnswer struct {
	resp   kmsg.FetchResponse
	topic  [1]kmsg.FetchResponseTopic
	part   [1]kmsg.FetchResponseTopicPartition
	broker [1]kmsg.FetchResponseBroker
}

// KmsgResponse encodes the core's answer m (a response message) as the Kafka
// response at version (the version of the request it answers). records
// holds the record batches of a Fetch response (the whole batches the
// runtime read for m.Read) or the chunk of a FetchSnapshot response; it is
// ignored for the other RPCs.
func KmsgResponse(m kraft.Message, version int16, records []byte) (kmsg.Response, error) {
	switch m := m.(type) {
	case *kraft.VoteResponse:
		resp := kmsg.NewPtrVoteResponse()
		resp.Version = version
		t := kmsg.NewVoteResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewVoteResponseTopicPartition()
		p.ErrorCode = KafkaCode(m.Error)
		p.LeaderID, p.LeaderEpoch = int32(m.Leader.LeaderID), int32(m.Leader.Epoch)
		p.VoteGranted = m.VoteGranted
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, nil
	case *kraft.BeginQuorumEpochResponse:
		resp := kmsg.NewPtrBeginQuorumEpochResponse()
		resp.Version = version
		t := kmsg.NewBeginQuorumEpochResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
		p.ErrorCode = KafkaCode(m.Error)
		p.LeaderID, p.LeaderEpoch = int32(m.Leader.LeaderID), int32(m.Leader.Epoch)
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, nil
	case *kraft.EndQuorumEpochResponse:
		resp := kmsg.NewPtrEndQuorumEpochResponse()
		resp.Version = version
		t := kmsg.NewEndQuorumEpochResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewEndQuorumEpochResponseTopicPartition()
		p.ErrorCode = KafkaCode(m.Error)
		p.LeaderID, p.LeaderEpoch = int32(m.Leader.LeaderID), int32(m.Leader.Epoch)
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, nil
	case *kraft.FetchResponse:
		a := new(fetchAnswer)
		resp := &a.resp
		resp.Version = version
		a.topic[0] = kmsg.FetchResponseTopic{Topic: MetadataTopic, TopicID: MetadataTopicID, Partitions: a.part[:]}
		p := &a.part[0]
		p.Default()
		p.Partition = MetadataPartition
		p.ErrorCode = KafkaCode(m.Error)
		p.HighWatermark = int64(m.HighWatermark)
		p.LogStartOffset = int64(m.LogStartOffset)
		p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = int32(m.DivergingEpoch.Epoch), int64(m.DivergingEpoch.Offset)
		p.SnapshotID.Epoch, p.SnapshotID.EndOffset = int32(m.SnapshotID.Epoch), int64(m.SnapshotID.Offset)
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = int32(m.Leader.LeaderID), int32(m.Leader.Epoch)
		p.RecordBatches = records
		resp.Topics = a.topic[:]
		resp.Brokers = a.broker[:0]
		return resp, nil
	case *kraft.FetchSnapshotResponse:
		resp := kmsg.NewPtrFetchSnapshotResponse()
		resp.Version = version
		t := kmsg.NewFetchSnapshotResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewFetchSnapshotResponseTopicPartition()
		p.Partition = MetadataPartition
		p.ErrorCode = KafkaCode(m.Error)
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch = int64(m.SnapshotID.Offset), int32(m.SnapshotID.Epoch)
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = int32(m.Leader.LeaderID), int32(m.Leader.Epoch)
		p.Size = m.Size
		p.Position = m.Position
		p.Bytes = records
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, nil
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
		req := kmsg.NewPtrVoteRequest()
		req.ClusterID = cid
		req.VoterID = int32(m.Voter.ID)
		t := kmsg.NewVoteRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewVoteRequestTopicPartition()
		p.Partition = MetadataPartition
		p.CandidateEpoch = int32(m.ReplicaEpoch)
		p.CandidateID = int32(m.Replica.ID)
		p.CandidateDirectoryID = [16]byte(m.Replica.DirectoryID)
		p.VoterDirectoryID = [16]byte(m.Voter.DirectoryID)
		p.LastOffsetEpoch = int32(m.LastOffsetEpoch)
		p.LastOffset = int64(m.LastOffset)
		p.PreVote = m.PreVote
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req, nil
	case *kraft.BeginQuorumEpochRequest:
		req := kmsg.NewPtrBeginQuorumEpochRequest()
		req.ClusterID = cid
		req.VoterID = int32(m.Voter.ID)
		t := kmsg.NewBeginQuorumEpochRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
		p.Partition = MetadataPartition
		p.VoterDirectoryID = [16]byte(m.Voter.DirectoryID)
		p.LeaderID = int32(m.LeaderID)
		p.LeaderEpoch = int32(m.LeaderEpoch)
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req, nil
	case *kraft.EndQuorumEpochRequest:
		req := kmsg.NewPtrEndQuorumEpochRequest()
		req.ClusterID = cid
		t := kmsg.NewEndQuorumEpochRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewEndQuorumEpochRequestTopicPartition()
		p.Partition = MetadataPartition
		p.LeaderID = int32(m.LeaderID)
		p.LeaderEpoch = int32(m.LeaderEpoch)
		for _, c := range m.PreferredCandidates {
			p.PreferredSuccessors = append(p.PreferredSuccessors, int32(c.ID))
			pc := kmsg.NewEndQuorumEpochRequestTopicPartitionPreferredCandidate()
			pc.CandidateID = int32(c.ID)
			pc.CandidateDirectoryID = [16]byte(c.DirectoryID)
			p.PreferredCandidates = append(p.PreferredCandidates, pc)
		}
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req, nil
	case *kraft.FetchSnapshotRequest:
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.ClusterID = cid
		req.ReplicaID = int32(m.Replica.ID)
		req.MaxBytes = m.MaxBytes
		t := kmsg.NewFetchSnapshotRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewFetchSnapshotRequestTopicPartition()
		p.Partition = MetadataPartition
		p.CurrentLeaderEpoch = int32(m.CurrentLeaderEpoch)
		p.SnapshotID.EndOffset = int64(m.SnapshotID.Offset)
		p.SnapshotID.Epoch = int32(m.SnapshotID.Epoch)
		p.Position = m.Position
		p.ReplicaDirectoryID = [16]byte(m.Replica.DirectoryID)
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req, nil
	}
	return nil, fmt.Errorf("%w: request %T", ErrNotKRaft, m)
}

// fetchAsk holds a Fetch request with its one topic, partition and
// cluster id, allocated as one object: a follower sends one after another.
type fetchAsk struct {
	req       kmsg.FetchRequest
	topic     [1]kmsg.FetchRequestTopic
	part      [1]kmsg.FetchRequestTopicPartition
	clusterID string
}

// fetchRequest is KmsgRequest for a Fetch.
func fetchRequest(m *kraft.FetchRequest, clusterID string) *kmsg.FetchRequest {
	a := new(fetchAsk)
	// Every field a Default would set is set here.
	a.part[0] = kmsg.FetchRequestTopicPartition{
		Partition:          MetadataPartition,
		CurrentLeaderEpoch: int32(m.CurrentLeaderEpoch),
		FetchOffset:        int64(m.FetchOffset),
		LastFetchedEpoch:   int32(m.LastFetchedEpoch),
		LogStartOffset:     -1,
		ReplicaDirectoryID: [16]byte(m.Replica.DirectoryID),
		HighWatermark:      int64(m.HighWatermark),
	}
	a.topic[0] = kmsg.FetchRequestTopic{Topic: MetadataTopic, TopicID: MetadataTopicID, Partitions: a.part[:]}
	a.req = kmsg.FetchRequest{
		ReplicaID:     int32(m.Replica.ID),
		ReplicaState:  kmsg.FetchRequestReplicaState{ID: int32(m.Replica.ID), Epoch: -1},
		MaxWaitMillis: int32(m.MaxWait / time.Millisecond),
		MaxBytes:      m.MaxBytes,
		SessionEpoch:  -1,
		Topics:        a.topic[:],
	}
	if clusterID != "" { // as clusterIDField
		a.clusterID = clusterID
		a.req.ClusterID = &a.clusterID
	}
	return &a.req
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
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		m := &kraft.VoteResponse{Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader}
		if r.ErrorCode != 0 && len(r.Topics) == 0 {
			return m, nil, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, nil, fmt.Errorf("wire: vote response from %d: %d topics, want 1 partition of %s", h.From, len(r.Topics), MetadataTopic)
		}
		p := r.Topics[0].Partitions[0]
		m.Error = KRaftCode(p.ErrorCode)
		m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.LeaderID), Epoch: kraft.Epoch(p.LeaderEpoch)}
		m.VoteGranted = p.VoteGranted
		return m, nil, nil
	case *kmsg.BeginQuorumEpochResponse:
		m := &kraft.BeginQuorumEpochResponse{Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader}
		if r.ErrorCode != 0 && len(r.Topics) == 0 {
			return m, nil, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, nil, fmt.Errorf("wire: begin quorum epoch response from %d: %d topics, want 1 partition of %s", h.From, len(r.Topics), MetadataTopic)
		}
		p := r.Topics[0].Partitions[0]
		m.Error = KRaftCode(p.ErrorCode)
		m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.LeaderID), Epoch: kraft.Epoch(p.LeaderEpoch)}
		return m, nil, nil
	case *kmsg.EndQuorumEpochResponse:
		m := &kraft.EndQuorumEpochResponse{Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader}
		if r.ErrorCode != 0 && len(r.Topics) == 0 {
			return m, nil, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, nil, fmt.Errorf("wire: end quorum epoch response from %d: %d topics, want 1 partition of %s", h.From, len(r.Topics), MetadataTopic)
		}
		p := r.Topics[0].Partitions[0]
		m.Error = KRaftCode(p.ErrorCode)
		m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.LeaderID), Epoch: kraft.Epoch(p.LeaderEpoch)}
		return m, nil, nil
	case *kmsg.FetchResponse:
		m := &kraft.FetchResponse{
			Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader, HighWatermark: -1, LogStartOffset: -1,
			DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
		}
		if r.ErrorCode != 0 && len(r.Topics) == 0 {
			return m, nil, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, nil, fmt.Errorf("wire: fetch response from %d: %d topics, want 1 partition of %s", h.From, len(r.Topics), MetadataTopic)
		}
		p := r.Topics[0].Partitions[0]
		m.Error = KRaftCode(p.ErrorCode)
		m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.CurrentLeader.LeaderID), Epoch: kraft.Epoch(p.CurrentLeader.LeaderEpoch)}
		m.HighWatermark = kraft.Offset(p.HighWatermark)
		m.LogStartOffset = kraft.Offset(p.LogStartOffset)
		m.DivergingEpoch = kraft.OffsetAndEpoch{Offset: kraft.Offset(p.DivergingEpoch.EndOffset), Epoch: kraft.Epoch(p.DivergingEpoch.Epoch)}
		m.SnapshotID = kraft.OffsetAndEpoch{Offset: kraft.Offset(p.SnapshotID.EndOffset), Epoch: kraft.Epoch(p.SnapshotID.Epoch)}
		return m, p.RecordBatches, nil
	case *kmsg.FetchSnapshotResponse:
		m := &kraft.FetchSnapshotResponse{
			Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader, SnapshotID: kraft.NoOffsetAndEpoch,
		}
		if r.ErrorCode != 0 && len(r.Topics) == 0 {
			return m, nil, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, nil, fmt.Errorf("wire: fetch snapshot response from %d: %d topics, want 1 partition of %s", h.From, len(r.Topics), MetadataTopic)
		}
		p := r.Topics[0].Partitions[0]
		m.Error = KRaftCode(p.ErrorCode)
		m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.CurrentLeader.LeaderID), Epoch: kraft.Epoch(p.CurrentLeader.LeaderEpoch)}
		m.SnapshotID = kraft.OffsetAndEpoch{Offset: kraft.Offset(p.SnapshotID.EndOffset), Epoch: kraft.Epoch(p.SnapshotID.Epoch)}
		m.Size = p.Size
		m.Position = p.Position
		m.Length = int64(len(p.Bytes))
		return m, p.Bytes, nil
	}
	return nil, nil, fmt.Errorf("%w: response %T", ErrNotKRaft, resp)
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
