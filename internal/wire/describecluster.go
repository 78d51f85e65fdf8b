package wire

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Endpoint types of DescribeCluster (KIP-919; Kafka's
// org.apache.kafka.clients.admin.EndpointType).
const (
	// EndpointTypeBroker (1) asks for the brokers; it is the default and
	// the only type before DescribeCluster v1.
	EndpointTypeBroker int8 = 1
	// EndpointTypeController (2) asks for the controllers.
	EndpointTypeController int8 = 2
)

// ClusterAuthorizedOperationsAll is the ClusterAuthorizedOperations bit
// field of every operation Kafka supports on the CLUSTER resource (CREATE,
// ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
// IDEMPOTENT_WRITE: bits 5 and 7–12), which is what a node without an
// authorizer reports (AuthHelper.authorizedOperations,
// AclEntry.supportedOperations).
const ClusterAuthorizedOperationsAll int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12

// ClusterNode is one node a controller lists in its DescribeCluster answer.
type ClusterNode struct {
	// ID is the node id.
	ID kraft.NodeID
	// Host and Port are its controller endpoint.
	Host string
	Port int32
}

// endpointTypeName is Kafka's name of an endpoint type (the EndpointType
// enum constant), as its error messages print it.
func endpointTypeName(t int8) string {
	switch t {
	case EndpointTypeBroker:
		return "BROKER"
	case EndpointTypeController:
		return "CONTROLLER"
	}
	return "UNKNOWN"
}

// AnswerDescribeCluster builds a controller's answer to DescribeCluster
// as Kafka's does (ControllerApis.handleDescribeCluster,
// AuthHelper.computeDescribeClusterResponse), for a node without an
// authorizer:
//
//   - an endpoint type other than broker (1) or controller (2) ⇒
//     UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST at v0);
//   - the broker type, which every v0 request is ⇒ MISMATCHED_ENDPOINT_TYPE
//     (INVALID_REQUEST at v0), since a controller describes controllers;
//   - otherwise the cluster id, the nodes sorted by id, the endpoint type
//     controller, and as ControllerID the quorum leader when it is one of
//     the nodes, else -1. ClusterAuthorizedOperations is
//     [ClusterAuthorizedOperationsAll] when requested, else the schema
//     default (math.MinInt32).
//
// The error answers carry only the code and Kafka's message, with every
// other field at its default, as Kafka's do.
func AnswerDescribeCluster(req *kmsg.DescribeClusterRequest, clusterID string, leaderID kraft.NodeID, nodes []ClusterNode) *kmsg.DescribeClusterResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.Default()
	resp.SetVersion(req.GetVersion())
	requested := req.EndpointType
	if req.GetVersion() < 1 {
		requested = EndpointTypeBroker
	}
	fail := func(code, v0code *kerr.Error, msg string) *kmsg.DescribeClusterResponse {
		resp.ErrorCode = code.Code
		if req.GetVersion() == 0 {
			resp.ErrorCode = v0code.Code
		}
		resp.ErrorMessage = &msg
		return resp
	}
	switch requested {
	case EndpointTypeController:
	case EndpointTypeBroker:
		return fail(kerr.MismatchedEndpointType, kerr.InvalidRequest, fmt.Sprintf(
			"The request was sent to an endpoint of type %s, but we wanted an endpoint of type %s",
			endpointTypeName(EndpointTypeController), endpointTypeName(requested)))
	default:
		return fail(kerr.UnsupportedEndpointType, kerr.InvalidRequest, fmt.Sprintf("Unsupported endpoint type %d", requested))
	}
	resp.EndpointType = EndpointTypeController
	resp.ClusterID = clusterID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = ClusterAuthorizedOperationsAll
	}
	sorted := slices.SortedFunc(slices.Values(nodes), func(a, b ClusterNode) int { return cmp.Compare(a.ID, b.ID) })
	resp.ControllerID = -1
	for _, n := range sorted {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = int32(n.ID), n.Host, n.Port
		resp.Brokers = append(resp.Brokers, b)
		if n.ID == leaderID {
			resp.ControllerID = int32(leaderID)
		}
	}
	return resp
}
