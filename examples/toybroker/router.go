package toybroker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// Router is the controller side: the admin APIs a broker sends its
// controllers. Set it as raft.Config.AdminRouter on every controller.
type Router struct{}

// AdminClaims claims BrokerRegistration and CreateTopics at the versions
// Kafka 4.3's controllers serve.
func (Router) AdminClaims() []raft.AdminClaim {
	return []raft.AdminClaim{
		{Key: kmsg.BrokerRegistration.Int16(), MinVersion: 0, MaxVersion: 4},
		{Key: kmsg.CreateTopics.Int16(), MinVersion: 2, MaxVersion: 7},
	}
}

// ServeAdmin answers one claimed request.
func (Router) ServeAdmin(ctx context.Context, req raft.AdminRequest) (kmsg.Response, error) {
	switch r := req.Request.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return register(ctx, req.Node, r), nil
	case *kmsg.CreateTopicsRequest:
		return createTopics(ctx, req.Node, r), nil
	}
	return nil, fmt.Errorf("toybroker: a request it did not claim: %T", req.Request)
}

// register writes the broker's registration, as Kafka's
// ClusterControlManager.registerBroker does: only a principal allowed
// CLUSTER_ACTION on the cluster may register, and the answer carries the
// broker epoch, the offset of the RegisterBrokerRecord.
func register(ctx context.Context, node *raft.AdminHandle, req *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	if !node.Authorized(raft.OperationClusterAction, raft.ClusterResource) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	rec := metadata.NewRegisterBrokerRecord()
	rec.BrokerId, rec.IncarnationId, rec.Rack = req.BrokerID, req.IncarnationID, req.Rack
	// A toy broker sends no heartbeats, so it registers unfenced; a
	// real one starts fenced and is unfenced by its heartbeats.
	rec.Fenced = false
	for _, l := range req.Listeners {
		rec.EndPoints = append(rec.EndPoints, metadata.RegisterBrokerRecordBrokerEndpoint{
			Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	for _, f := range req.Features {
		rec.Features = append(rec.Features, metadata.RegisterBrokerRecordBrokerFeature{
			Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
	}
	res, err := node.SubmitChange(ctx, []metadata.Record{rec})
	switch {
	case errors.Is(err, raft.ErrInvalidChange):
		// The image refuses the registration: the broker does not
		// support a finalized feature level, say.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	case err != nil:
		resp.ErrorCode = kerr.UnknownServerError.Code
	default:
		resp.BrokerEpoch = res.Offset
	}
	return resp
}

// createTopics creates each topic with its partitions placed on the
// registered brokers, round robin, the first replica leading, as one
// submission per topic.
func createTopics(ctx context.Context, node *raft.AdminHandle, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		var err error
		rt.ErrorCode, rt.TopicID, rt.NumPartitions, rt.ReplicationFactor, err = createTopic(ctx, node, t)
		if err != nil {
			msg := err.Error()
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createTopic creates one topic of a CreateTopics request and returns
// the answer's error code, topic id, partition count and replication
// factor, and the error that the code stands for.
func createTopic(ctx context.Context, node *raft.AdminHandle, t kmsg.CreateTopicsRequestTopic) (int16, [16]byte, int32, int16, error) {
	var none [16]byte
	if !node.Authorized(raft.OperationCreate, raft.ClusterResource) &&
		!node.Authorized(raft.OperationCreate, raft.Resource{Type: raft.ResourceTopic, Name: t.Topic}) {
		return kerr.TopicAuthorizationFailed.Code, none, -1, -1, nil
	}
	img := node.CurrentImage()
	if _, ok := img.Topics().ByName(t.Topic); ok {
		return kerr.TopicAlreadyExists.Code, none, -1, -1, nil
	}
	var brokers []int32
	for b := range img.Cluster().Brokers() {
		if !b.Fenced {
			brokers = append(brokers, b.ID)
		}
	}
	slices.Sort(brokers)
	partitions, rf := max(t.NumPartitions, 1), t.ReplicationFactor
	if rf <= 0 {
		rf = 1
	}
	if int(rf) > len(brokers) {
		return kerr.InvalidReplicationFactor.Code, none, -1, -1, fmt.Errorf("replication factor %d, but %d brokers are registered", rf, len(brokers))
	}
	topic := metadata.NewTopicRecord()
	topic.Name = t.Topic
	_, _ = rand.Read(topic.TopicId[:])
	records := []metadata.Record{topic}
	for p := range partitions {
		replicas := make([]int32, rf)
		for i := range replicas {
			replicas[i] = brokers[(int(p)+i)%len(brokers)]
		}
		pr := metadata.NewPartitionRecord()
		pr.TopicId, pr.PartitionId, pr.Replicas, pr.Isr, pr.Leader = topic.TopicId, p, replicas, slices.Clone(replicas), replicas[0]
		pr.LeaderEpoch, pr.PartitionEpoch = 0, 0
		records = append(records, pr)
	}
	// Made against the image read above: a topic of the same name
	// created meanwhile, or a broker that left, refuses it.
	switch _, err := node.SubmitChange(ctx, records, raft.IfUnchangedSince(img.Offset())); {
	case errors.Is(err, raft.ErrImageChanged), errors.Is(err, raft.ErrUncommittedTail):
		return kerr.RequestTimedOut.Code, none, -1, -1, err // retriable: the client sends it again
	case errors.Is(err, raft.ErrInvalidChange):
		return kerr.InvalidRequest.Code, none, -1, -1, err
	case err != nil:
		return kerr.UnknownServerError.Code, none, -1, -1, err
	}
	return 0, topic.TopicId, partitions, rf, nil
}
