package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// EndQuorumEpoch (key 54): the kmsg⇄core mapping of both directions.

func endQuorumEpochPartitions(t *kmsg.EndQuorumEpochRequestTopic) []kmsg.EndQuorumEpochRequestTopicPartition {
	return t.Partitions
}

func endQuorumEpochResponsePartitions(t *kmsg.EndQuorumEpochResponseTopic) []kmsg.EndQuorumEpochResponseTopicPartition {
	return t.Partitions
}

// endQuorumEpochToCore is KRaftRequest for an EndQuorumEpoch.
func endQuorumEpochToCore(r *kmsg.EndQuorumEpochRequest, clusterID string, local kraft.NodeID) (kraft.Message, kmsg.Response) {
	resp := r.ResponseKind().(*kmsg.EndQuorumEpochResponse)
	if !clusterIDMatches(r.ClusterID, clusterID) {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return nil, resp
	}
	t, p, ok := onlyPartition(r.Topics, endQuorumEpochPartitions)
	if !ok || t.Topic != MetadataTopic || p.Partition != MetadataPartition {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return nil, resp
	}
	m := &kraft.EndQuorumEpochRequest{
		Header:      kraft.Header{From: kraft.NodeID(p.LeaderID), To: local},
		LeaderID:    kraft.NodeID(p.LeaderID),
		LeaderEpoch: kraft.Epoch(p.LeaderEpoch),
	}
	if r.Version >= 1 {
		for _, c := range p.PreferredCandidates {
			m.PreferredCandidates = append(m.PreferredCandidates, kraft.ReplicaKey{ID: kraft.NodeID(c.CandidateID), DirectoryID: kraft.UUID(c.CandidateDirectoryID)})
		}
	} else {
		for _, id := range p.PreferredSuccessors {
			m.PreferredCandidates = append(m.PreferredCandidates, kraft.ReplicaKey{ID: kraft.NodeID(id)})
		}
	}
	return m, nil
}

// endQuorumEpochResponseToKmsg is KmsgResponse for an EndQuorumEpoch.
func endQuorumEpochResponseToKmsg(m *kraft.EndQuorumEpochResponse, version int16) kmsg.Response {
	resp := kmsg.NewPtrEndQuorumEpochResponse()
	resp.Version = version
	t := kmsg.NewEndQuorumEpochResponseTopic()
	t.Topic = MetadataTopic
	p := kmsg.NewEndQuorumEpochResponseTopicPartition()
	p.ErrorCode = KafkaCode(m.Error)
	p.LeaderID, p.LeaderEpoch = int32(m.Leader.LeaderID), int32(m.Leader.Epoch)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

// endQuorumEpochToKmsg is KmsgRequest for an EndQuorumEpoch.
func endQuorumEpochToKmsg(m *kraft.EndQuorumEpochRequest, cid *string) kmsg.Request {
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
	return req
}

// endQuorumEpochResponseToCore is KRaftResponse for an EndQuorumEpoch.
func endQuorumEpochResponseToCore(r *kmsg.EndQuorumEpochResponse, h kraft.Header) (kraft.Message, error) {
	m := &kraft.EndQuorumEpochResponse{Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader}
	if r.ErrorCode != 0 && len(r.Topics) == 0 {
		return m, nil
	}
	_, p, ok := onlyPartition(r.Topics, endQuorumEpochResponsePartitions)
	if !ok {
		return nil, responseShapeError("end quorum epoch", h, len(r.Topics))
	}
	m.Error = KRaftCode(p.ErrorCode)
	m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.LeaderID), Epoch: kraft.Epoch(p.LeaderEpoch)}
	return m, nil
}
