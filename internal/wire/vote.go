package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Vote (key 52): the kmsg⇄core mapping of both directions.

func votePartitions(t *kmsg.VoteRequestTopic) []kmsg.VoteRequestTopicPartition { return t.Partitions }

func voteResponsePartitions(t *kmsg.VoteResponseTopic) []kmsg.VoteResponseTopicPartition {
	return t.Partitions
}

// voteToCore is KRaftRequest for a Vote.
func voteToCore(r *kmsg.VoteRequest, clusterID string, local kraft.NodeID) (kraft.Message, kmsg.Response) {
	resp := r.ResponseKind().(*kmsg.VoteResponse)
	if !clusterIDMatches(r.ClusterID, clusterID) {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return nil, resp
	}
	t, p, ok := onlyPartition(r.Topics, votePartitions)
	if !ok || t.Topic != MetadataTopic || p.Partition != MetadataPartition {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return nil, resp
	}
	m := &kraft.VoteRequest{
		Header:          kraft.Header{From: kraft.NodeID(p.CandidateID), To: local},
		ReplicaEpoch:    kraft.Epoch(p.CandidateEpoch),
		Replica:         kraft.ReplicaKey{ID: kraft.NodeID(p.CandidateID), DirectoryID: kraft.UUID(p.CandidateDirectoryID)},
		Voter:           kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: kraft.UUID(p.VoterDirectoryID)},
		LastOffsetEpoch: kraft.Epoch(p.LastOffsetEpoch),
		LastOffset:      kraft.Offset(p.LastOffset),
		PreVote:         p.PreVote,
	}
	if r.Version < 1 {
		m.Voter = kraft.ReplicaKey{ID: kraft.NoNode}
	}
	return m, nil
}

// voteResponseToKmsg is KmsgResponse for a Vote.
func voteResponseToKmsg(m *kraft.VoteResponse, version int16) kmsg.Response {
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
	return resp
}

// voteToKmsg is KmsgRequest for a Vote.
func voteToKmsg(m *kraft.VoteRequest, cid *string) kmsg.Request {
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
	return req
}

// voteResponseToCore is KRaftResponse for a Vote.
func voteResponseToCore(r *kmsg.VoteResponse, h kraft.Header) (kraft.Message, error) {
	m := &kraft.VoteResponse{Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader}
	if r.ErrorCode != 0 && len(r.Topics) == 0 {
		return m, nil
	}
	_, p, ok := onlyPartition(r.Topics, voteResponsePartitions)
	if !ok {
		return nil, responseShapeError("vote", h, len(r.Topics))
	}
	m.Error = KRaftCode(p.ErrorCode)
	m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.LeaderID), Epoch: kraft.Epoch(p.LeaderEpoch)}
	m.VoteGranted = p.VoteGranted
	return m, nil
}
