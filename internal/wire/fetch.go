package wire

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Fetch (key 1): the kmsg⇄core mapping of both directions.

func fetchPartitions(t *kmsg.FetchRequestTopic) []kmsg.FetchRequestTopicPartition {
	return t.Partitions
}

func fetchResponsePartitions(t *kmsg.FetchResponseTopic) []kmsg.FetchResponseTopicPartition {
	return t.Partitions
}

// fetchToCore is KRaftRequest for a Fetch.
func fetchToCore(r *kmsg.FetchRequest, clusterID string, local kraft.NodeID) (kraft.Message, kmsg.Response) {
	// The answer is made only for a refusal: a follower fetches
	// continuously, and an accepted Fetch is answered by the core.
	if !clusterIDMatches(r.ClusterID, clusterID) {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return nil, resp
	}
	t, p, ok := onlyPartition(r.Topics, fetchPartitions)
	if r.Version < 13 || !ok || t.TopicID != MetadataTopicID || p.Partition != MetadataPartition {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.InvalidRequest.Code
		return nil, resp
	}
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
		m.Replica.DirectoryID = kraft.UUID(p.ReplicaDirectoryID)
	}
	if r.Version >= 18 {
		m.HighWatermark = kraft.Offset(p.HighWatermark)
	}
	return m, nil
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

// fetchResponseToKmsg is KmsgResponse for a Fetch.
func fetchResponseToKmsg(m *kraft.FetchResponse, version int16, records []byte) kmsg.Response {
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
	return resp
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

// fetchResponseToCore is KRaftResponse for a Fetch.
func fetchResponseToCore(r *kmsg.FetchResponse, h kraft.Header) (kraft.Message, []byte, error) {
	m := &kraft.FetchResponse{
		Header: h, Error: KRaftCode(r.ErrorCode), Leader: noLeader, HighWatermark: -1, LogStartOffset: -1,
		DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
	}
	if r.ErrorCode != 0 && len(r.Topics) == 0 {
		return m, nil, nil
	}
	_, p, ok := onlyPartition(r.Topics, fetchResponsePartitions)
	if !ok {
		return nil, nil, responseShapeError("fetch", h, len(r.Topics))
	}
	m.Error = KRaftCode(p.ErrorCode)
	m.Leader = kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(p.CurrentLeader.LeaderID), Epoch: kraft.Epoch(p.CurrentLeader.LeaderEpoch)}
	m.HighWatermark = kraft.Offset(p.HighWatermark)
	m.LogStartOffset = kraft.Offset(p.LogStartOffset)
	m.DivergingEpoch = kraft.OffsetAndEpoch{Offset: kraft.Offset(p.DivergingEpoch.EndOffset), Epoch: kraft.Epoch(p.DivergingEpoch.Epoch)}
	m.SnapshotID = kraft.OffsetAndEpoch{Offset: kraft.Offset(p.SnapshotID.EndOffset), Epoch: kraft.Epoch(p.SnapshotID.Epoch)}
	return m, p.RecordBatches, nil
}
