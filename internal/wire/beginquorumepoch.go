package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// BeginQuorumEpoch (key 53): the kmsg⇄core mapping of both directions.

func beginQuorumEpochPartitions(t *kmsg.BeginQuorumEpochRequestTopic) []kmsg.BeginQuorumEpochRequestTopicPartition {
	return t.Partitions
}

func beginQuorumEpochResponsePartitions(t *kmsg.BeginQuorumEpochResponseTopic) []kmsg.BeginQuorumEpochResponseTopicPartition {
	return t.Partitions
}

// beginQuorumEpochToCore is KRaftRequest for a BeginQuorumEpoch.
func beginQuorumEpochToCore(r *kmsg.BeginQuorumEpochRequest, clusterID string, local kraft.NodeID) (kraft.Message, kmsg.Response) {
	resp := r.ResponseKind().(*kmsg.BeginQuorumEpochResponse)
	if !clusterIDMatches(r.ClusterID, clusterID) {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return nil, resp
	}
	t, p, ok := onlyPartition(r.Topics, beginQuorumEpochPartitions)
	if !ok || t.Topic != MetadataTopic || p.Partition != MetadataPartition {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return nil, resp
	}
	m := &kraft.BeginQuorumEpochRequest{
		Header:      kraft.Header{From: kraft.NodeID(p.LeaderID), To: local},
		Voter:       kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: kraft.UUID(p.VoterDirectoryID)},
		LeaderID:    kraft.NodeID(p.LeaderID),
		LeaderEpoch: kraft.Epoch(p.LeaderEpoch),
	}
	if r.Version < 1 {
		m.Voter = kraft.ReplicaKey{ID: kraft.NoNode}
	}
	return m, nil
}

// beginQuorumEpochResponseToKmsg is KmsgResponse for a BeginQuorumEpoch.
func beginQuorumEpochResponseToKmsg(m *kraft.BeginQuorumEpochResponse, version int16) kmsg.Response {
	resp := kmsg.NewPtrBeginQuorumEpochResponse()
	resp.Version = version
	t := kmsg.NewBeginQuorumEpochResponseTopic()
	t.Topic = MetadataTopic
	p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
	p.ErrorCode = KafkaCode(m.Error)
	p.LeaderID, p.LeaderEpoch = int32(m.Leader.LeaderID), int32(m.Leader.Epoch)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

// beginQuorumEpochToKmsg is KmsgRequest for a BeginQuorumEpoch.
func beginQuorumEpochToKmsg(m *kraft.BeginQuorumEpochRequest, cid *string) kmsg.Request {
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
	return req
}

// beginQuorumEpochResponseToCore is KRaftResponse for a BeginQuorumEpoch.
func beginQuorumEpochResponseToCore(r *kmsg.BeginQuorumEpochResponse, h kraft.Header) (kraft.Message, error) {
	m := &kraft.BeginQuorumEpochResponse{Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader}
	if r.ErrorCode != 0 && len(r.Topics) == 0 {
		return m, nil
	}
	_, p, ok := onlyPartition(r.Topics, beginQuorumEpochResponsePartitions)
	if !ok {
		return nil, responseShapeError("begin quorum epoch", h, len(r.Topics))
	}
	m.Error = KRaftCode(p.ErrorCode)
	m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.LeaderID), Epoch: kraft.Epoch(p.LeaderEpoch)}
	return m, nil
}
