package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeClusterRequest(v int16, endpointType int8, withOps bool) *kmsg.DescribeClusterRequest {
	r := kmsg.NewPtrDescribeClusterRequest()
	r.SetVersion(v)
	r.EndpointType = endpointType
	r.IncludeClusterAuthorizedOperations = withOps
	return r
}

func TestAnswerDescribeCluster(t *testing.T) {
	nodes := []ClusterNode{{ID: 3, Host: "c3", Port: 9093}, {ID: 1, Host: "c1", Port: 9091}, {ID: 2, Host: "c2", Port: 9092}}
	broker := func(id int32, host string, port int32) kmsg.DescribeClusterResponseBroker {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = id, host, port
		return b
	}
	ok := func(v int16, controllerID, ops int32) *kmsg.DescribeClusterResponse {
		r := kmsg.NewPtrDescribeClusterResponse()
		r.SetVersion(v)
		r.EndpointType, r.ClusterID, r.ControllerID, r.ClusterAuthorizedOperations = EndpointTypeController, "cluster-a", controllerID, ops
		r.Brokers = []kmsg.DescribeClusterResponseBroker{broker(1, "c1", 9091), broker(2, "c2", 9092), broker(3, "c3", 9093)}
		return r
	}
	failed := func(v int16, code int16, msg string) *kmsg.DescribeClusterResponse {
		r := kmsg.NewPtrDescribeClusterResponse()
		r.SetVersion(v)
		r.ErrorCode, r.ErrorMessage = code, &msg
		return r
	}
	const mismatched = "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
	for _, tc := range []struct {
		what   string
		req    *kmsg.DescribeClusterRequest
		leader kraft.NodeID
		want   *kmsg.DescribeClusterResponse
	}{
		{"v1 controllers", describeClusterRequest(1, EndpointTypeController, false), 2, ok(1, 2, -1<<31)},
		{"v2 controllers with operations", describeClusterRequest(2, EndpointTypeController, true), 3, ok(2, 3, 8096)},
		{"leader unknown", describeClusterRequest(2, EndpointTypeController, false), -1, ok(2, -1, -1<<31)},
		{"leader not among the nodes", describeClusterRequest(2, EndpointTypeController, false), 7, ok(2, -1, -1<<31)},
		{"v1 brokers", describeClusterRequest(1, EndpointTypeBroker, false), 2, failed(1, kerr.MismatchedEndpointType.Code, mismatched)},
		{"v0 is always brokers", describeClusterRequest(0, EndpointTypeController, false), 2, failed(0, kerr.InvalidRequest.Code, mismatched)},
		{"v1 unknown type", describeClusterRequest(1, 3, false), 2, failed(1, kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type 3")},
		{"v2 type 0", describeClusterRequest(2, 0, false), 2, failed(2, kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type 0")},
	} {
		t.Run(tc.what, func(t *testing.T) {
			got := AnswerDescribeCluster(tc.req, "cluster-a", tc.leader, nodes)
			if diff := cmp.Diff(tc.want, got, ignoreTags); diff != "" {
				t.Errorf("AnswerDescribeCluster (-want +got):\n%s", diff)
			}
			// The answer encodes at the request's version and decodes
			// back to itself.
			back := kmsg.NewPtrDescribeClusterResponse()
			back.SetVersion(got.GetVersion())
			if err := back.ReadFrom(got.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if tc.req.GetVersion() >= 1 {
				if diff := cmp.Diff(got, back, ignoreTags); diff != "" {
					t.Errorf("round trip (-sent +read):\n%s", diff)
				}
			}
		})
	}
	if ClusterAuthorizedOperationsAll != 8096 {
		t.Errorf("ClusterAuthorizedOperationsAll = %d, want 8096 (0x1fa0)", ClusterAuthorizedOperationsAll)
	}
}
