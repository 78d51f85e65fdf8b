package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// FetchSnapshot (key 59): the kmsg⇄core mapping of both directions.

func fetchSnapshotPartitions(t *kmsg.FetchSnapshotRequestTopic) []kmsg.FetchSnapshotRequestTopicPartition {
	return t.Partitions
}

func fetchSnapshotResponsePartitions(t *kmsg.FetchSnapshotResponseTopic) []kmsg.FetchSnapshotResponseTopicPartition {
	return t.Partitions
}

// fetchSnapshotToCore is KRaftRequest for a FetchSnapshot. A request for
// another topic or partition is answered UNKNOWN_TOPIC_OR_PARTITION, as in
// KafkaRaftClient.handleFetchSnapshotRequest.
func fetchSnapshotToCore(r *kmsg.FetchSnapshotRequest, clusterID string, local kraft.NodeID) (kraft.Message, kmsg.Response) {
	resp := r.ResponseKind().(*kmsg.FetchSnapshotResponse)
	if !clusterIDMatches(r.ClusterID, clusterID) {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return nil, resp
	}
	t, p, ok := onlyPartition(r.Topics, fetchSnapshotPartitions)
	if !ok {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return nil, resp
	}
	if t.Topic != MetadataTopic || p.Partition != MetadataPartition {
		rt := kmsg.NewFetchSnapshotResponseTopic()
		rt.Topic = t.Topic
		rp := kmsg.NewFetchSnapshotResponseTopicPartition()
		rp.Partition = p.Partition
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return nil, resp
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
		m.Replica.DirectoryID = kraft.UUID(p.ReplicaDirectoryID)
	}
	return m, nil
}

// fetchSnapshotResponseToKmsg is KmsgResponse for a FetchSnapshot; chunk
// is the snapshot bytes the response carries.
func fetchSnapshotResponseToKmsg(m *kraft.FetchSnapshotResponse, version int16, chunk []byte) kmsg.Response {
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
	p.Bytes = chunk
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

// fetchSnapshotToKmsg is KmsgRequest for a FetchSnapshot.
func fetchSnapshotToKmsg(m *kraft.FetchSnapshotRequest, cid *string) kmsg.Request {
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
	return req
}

// fetchSnapshotResponseToCore is KRaftResponse for a FetchSnapshot.
func fetchSnapshotResponseToCore(r *kmsg.FetchSnapshotResponse, h kraft.Header) (kraft.Message, []byte, error) {
	m := &kraft.FetchSnapshotResponse{
		Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader, SnapshotID: kraft.NoOffsetAndEpoch,
	}
	if r.ErrorCode != 0 && len(r.Topics) == 0 {
		return m, nil, nil
	}
	_, p, ok := onlyPartition(r.Topics, fetchSnapshotResponsePartitions)
	if !ok {
		return nil, nil, responseShapeError("fetch snapshot", h, len(r.Topics))
	}
	m.Error = KRaftCode(p.ErrorCode)
	m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.CurrentLeader.LeaderID), Epoch: kraft.Epoch(p.CurrentLeader.LeaderEpoch)}
	m.SnapshotID = kraft.OffsetAndEpoch{Offset: kraft.Offset(p.SnapshotID.EndOffset), Epoch: kraft.Epoch(p.SnapshotID.Epoch)}
	m.Size = p.Size
	m.Position = p.Position
	m.Length = int64(len(p.Bytes))
	return m, p.Bytes, nil
}
