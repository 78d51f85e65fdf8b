package raft

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/metadata"
)

// registering adjusts a test cluster's nodes to register themselves, as
// every Kafka controller does.
func registering(c *Config) { c.DisableControllerRegistration = false }

// registrations are the controllers registered in node's image, by id.
func registrations(n *Controller) map[int32]*metadata.Controller {
	out := map[int32]*metadata.Controller{}
	for r := range n.CurrentImage().Cluster().Controllers() {
		out[r.ID] = r
	}
	return out
}

// waitRegistered waits until every node of c holds a registration of
// every node, each with the incarnation want names (any when absent),
// and returns node 1's.
func waitRegistered(t *testing.T, c *testCluster, n int, want map[int32][16]byte) map[int32]*metadata.Controller {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d controllers registered on every node", n), func() bool {
		for i := range n {
			regs := registrations(c.node(NodeID(i + 1)))
			if len(regs) != n {
				return false
			}
			for id, inc := range want {
				if regs[id].IncarnationID != inc {
					return false
				}
			}
		}
		return true
	})
	return registrations(c.node(1))
}

// TestControllersRegister: once metadata.version 3.7-IV0 or later is
// finalized, every controller registers its advertised listener, a fresh
// incarnation id and the feature ranges it supports; before, none does.
// An observer (a broker's process) does not register as a controller. A
// restarted controller registers again with a new incarnation, and the
// others keep theirs.
func TestControllersRegister(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		registering(cfg)
		formatBootstrap(t, *cfg, metadata.MetadataVersion3_7_IV0-1)
	})
	leader := c.leader()
	ocfg := ForTests(100, t.TempDir())
	ocfg.QuorumVoters = c.cfgs[0].QuorumVoters
	registering(&ocfg)
	observer := startTestObserver(t, ocfg)
	// Give the nodes time to register, which they must not at 3.6-IV2.
	for i := range 3 {
		res := submit(t, c.node(leader), topicRecord(fmt.Sprint("probe-", i)))
		c.waitApplied(res.LastOffset + 1)
	}
	for i := range 3 {
		n := c.node(NodeID(i + 1))
		if mv := n.CurrentImage().Features().MetadataVersion(); mv != metadata.MetadataVersion3_7_IV0-1 {
			t.Fatalf("node %d is at metadata.version %d", i+1, mv)
		}
		if regs := registrations(n); len(regs) != 0 {
			t.Fatalf("node %d registered controllers %v before metadata.version 3.7-IV0", i+1, regs)
		}
	}

	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	regs := waitRegistered(t, c, 3, nil)
	waitFor(t, "the observer to apply the registrations", func() bool {
		return observer.CurrentImage().Cluster().NumControllers() == 3
	})
	if _, ok := regs[100]; ok {
		t.Error("the observer registered as a controller")
	}
	incarnations := map[int32][16]byte{}
	supported := c.node(1).rc.features.Supported(false)
	for id, r := range regs {
		addr := c.node(NodeID(id)).Addr().String()
		if len(r.Endpoints) != 1 || r.Endpoints[0].Name != "CONTROLLER" || r.Endpoints[0].SecurityProtocol != int16(SecurityPlaintext) ||
			fmt.Sprintf("%s:%d", r.Endpoints[0].Host, r.Endpoints[0].Port) != addr {
			t.Errorf("controller %d registered endpoints %+v, want CONTROLLER PLAINTEXT %s", id, r.Endpoints, addr)
		}
		want := map[metadata.SupportedFeature]bool{}
		for _, f := range supported {
			want[f] = true
		}
		for _, f := range r.Features {
			delete(want, f)
		}
		if len(r.Features) != len(supported) || len(want) != 0 {
			t.Errorf("controller %d registered features %+v, want the %d it supports", id, r.Features, len(supported))
		}
		if r.IncarnationID == ([16]byte{}) || r.ZkMigrationReady {
			t.Errorf("controller %d registration %+v", id, r)
		}
		for other, inc := range incarnations {
			if inc == r.IncarnationID {
				t.Errorf("controllers %d and %d share incarnation %x", id, other, inc)
			}
		}
		incarnations[id] = r.IncarnationID
	}

	// DescribeCluster lists the registrations, each at its endpoint.
	for i := range 3 {
		resp := describeControllers(dialRaw(t, c.node(NodeID(i+1)).Addr()), 1)
		if len(resp.Brokers) != 3 {
			t.Fatalf("node %d: DescribeCluster lists %+v, want the three registrations", i+1, resp.Brokers)
		}
		for _, b := range resp.Brokers {
			if ep := regs[b.NodeID].Endpoints[0]; b.Host != ep.Host || b.Port != int32(ep.Port) {
				t.Errorf("node %d: DescribeCluster lists %+v, registered at %s:%d", i+1, b, ep.Host, ep.Port)
			}
		}
	}

	restarted := c.follower(leader)
	c.stop(restarted)
	c.restart(restarted)
	waitFor(t, "the restarted controller to register a new incarnation", func() bool {
		for i := range 3 {
			r, ok := registrations(c.node(NodeID(i + 1)))[int32(restarted)]
			if !ok || r.IncarnationID == incarnations[int32(restarted)] {
				return false
			}
		}
		return true
	})
	for id, r := range registrations(c.node(leader)) {
		if id != int32(restarted) && r.IncarnationID != incarnations[id] {
			t.Errorf("controller %d changed its incarnation when %d restarted", id, restarted)
		}
	}
}

// registrationRequestFor is a ControllerRegistration of controller id
// with incarnation id 0…0incarnation.
func registrationRequestFor(id int32, incarnation byte) *kmsg.ControllerRegistrationRequest {
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID, req.IncarnationID = id, [16]byte{15: incarnation}
	l := kmsg.NewControllerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "controller-9.example", 9093
	req.Listeners = append(req.Listeners, l)
	f := kmsg.NewControllerRegistrationRequestFeature()
	f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = metadata.FeatureMetadataVersion, 7, metadata.MaxMetadataVersion
	req.Features = append(req.Features, f)
	return req
}

// TestControllerRegistrationRPC: the leader appends the registration a
// ControllerRegistration asks for and answers NONE once it is committed;
// a zero incarnation or a controller that does not support the finalized
// metadata.version is INVALID_REGISTRATION or UNSUPPORTED_VERSION, and a
// follower answers NOT_CONTROLLER.
func TestControllerRegistrationRPC(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	conn, follower := dialRaw(t, c.node(leader).Addr()), dialRaw(t, c.node(c.follower(leader)).Addr())
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)

	resp := conn.call(1, registrationRequestFor(9, 1)).(*kmsg.ControllerRegistrationResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("a valid registration answered %d (%v)", resp.ErrorCode, resp.ErrorMessage)
	}
	r, ok := c.node(leader).CurrentImage().Cluster().Controller(9)
	if !ok || r.IncarnationID != ([16]byte{15: 1}) || len(r.Endpoints) != 1 || r.Endpoints[0].Host != "controller-9.example" || r.Endpoints[0].Port != 9093 {
		t.Fatalf("the leader's image holds %+v (%v) after the registration was answered", r, ok)
	}

	zero := registrationRequestFor(9, 0)
	if resp := conn.call(2, zero).(*kmsg.ControllerRegistrationResponse); resp.ErrorCode != kerr.InvalidRegistration.Code ||
		resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "zero incarnation id") {
		t.Errorf("a zero incarnation answered %d (%v), want INVALID_REGISTRATION", resp.ErrorCode, resp.ErrorMessage)
	}
	old := registrationRequestFor(8, 2)
	old.Features[0].MaxSupportedVersion = metadata.MaxMetadataVersion - 1
	if resp := conn.call(3, old).(*kmsg.ControllerRegistrationResponse); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("a controller without the finalized metadata.version answered %d (%v), want UNSUPPORTED_VERSION", resp.ErrorCode, resp.ErrorMessage)
	}
	if _, ok := c.node(leader).CurrentImage().Cluster().Controller(8); ok {
		t.Error("a refused registration is in the image")
	}

	if resp := follower.call(1, registrationRequestFor(7, 3)).(*kmsg.ControllerRegistrationResponse); resp.ErrorCode != kerr.NotController.Code {
		t.Errorf("a follower answered %d, want NOT_CONTROLLER", resp.ErrorCode)
	}
}

// TestControllerRegistrationNeedsMetadataVersion: below 3.7-IV0 the
// leader refuses a registration with Kafka's UNSUPPORTED_VERSION and
// message.
func TestControllerRegistrationNeedsMetadataVersion(t *testing.T) {
	old := metadata.MetadataVersion3_7_IV0 - 1
	c := newTestClusterWith(t, 1, "", func(cfg *Config) { formatBootstrap(t, *cfg, old) })
	waitFor(t, "the bootstrap metadata.version to be applied", func() bool {
		return c.node(1).CurrentImage().Features().MetadataVersion() == old
	})
	resp := dialRaw(t, c.node(1).Addr()).call(1, registrationRequestFor(9, 1)).(*kmsg.ControllerRegistrationResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != errRegistrationMetadataVersion {
		t.Errorf("a registration at metadata.version %d answered %d (%v)", old, resp.ErrorCode, resp.ErrorMessage)
	}
	if c.node(1).CurrentImage().Cluster().NumControllers() != 0 {
		t.Error("a refused registration is in the image")
	}
}

// TestControllerRegistrationNeedsClusterAction: ControllerRegistration
// needs CLUSTER_ACTION on the cluster, as Kafka's ControllerApis asks.
func TestControllerRegistrationNeedsClusterAction(t *testing.T) {
	n := startHostileNode(t, func(c *Config) {
		c.ClusterGrants = grantsFunc(func(_, _ string, op ClusterOperation) bool { return op != OperationClusterAction })
	})
	before := n.mark()
	resp := dialRaw(t, n.c.Addr()).call(1, registrationRequestFor(9, 1)).(*kmsg.ControllerRegistrationResponse)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("without CLUSTER_ACTION a registration answered %d", resp.ErrorCode)
	}
	n.unchanged(before)
}

// describeControllers sends DescribeCluster for the controllers on conn.
func describeControllers(conn *rawConn, corr int32) *kmsg.DescribeClusterResponse {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 2, 2
	return conn.call(corr, req).(*kmsg.DescribeClusterResponse)
}

// TestDescribeClusterListsRegisteredControllers: once controllers have
// registered, DescribeCluster lists them, each at its endpoint on the
// listener the request arrived on, and leaves out a registration without
// such an endpoint; the controller id is the leader when it is listed.
// Before any registration the voters stand in for them.
func TestDescribeClusterListsRegisteredControllers(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	waitFor(t, "the bootstrap metadata.version to be applied", func() bool {
		return c.node(leader).CurrentImage().Features().MetadataVersion() == metadata.MaxMetadataVersion
	})
	conn := dialRaw(t, c.node(leader).Addr())
	if resp := describeControllers(conn, 1); resp.ErrorCode != 0 || len(resp.Brokers) != 3 || NodeID(resp.ControllerID) != leader {
		t.Fatalf("without registrations DescribeCluster answered %+v, want the three voters", resp)
	}

	other := registrationRequestFor(8, 2)
	other.Listeners[0].Name = "REPLICATION"
	for i, req := range []*kmsg.ControllerRegistrationRequest{registrationRequestFor(9, 1), other} {
		if resp := conn.call(int32(2+i), req).(*kmsg.ControllerRegistrationResponse); resp.ErrorCode != 0 {
			t.Fatalf("registration %d answered %d", req.ControllerID, resp.ErrorCode)
		}
	}
	resp := describeControllers(conn, 4)
	if resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 9 || resp.Brokers[0].Host != "controller-9.example" ||
		resp.Brokers[0].Port != 9093 || resp.ControllerID != -1 {
		t.Fatalf("DescribeCluster answered %+v, want controller 9 alone, on CONTROLLER, and no controller id", resp)
	}

	own := registrationRequestFor(int32(leader), 3)
	own.Listeners[0].Host, own.Listeners[0].Port = "leader.example", 19093
	if r := conn.call(5, own).(*kmsg.ControllerRegistrationResponse); r.ErrorCode != 0 {
		t.Fatalf("the leader's registration answered %d", r.ErrorCode)
	}
	waitFor(t, "every node to apply the registrations", func() bool {
		for i := range 3 {
			if c.node(NodeID(i+1)).CurrentImage().Cluster().NumControllers() != 3 {
				return false
			}
		}
		return true
	})
	for i := range 3 {
		resp := describeControllers(dialRaw(t, c.node(NodeID(i+1)).Addr()), 1)
		ids := []int32{}
		for _, b := range resp.Brokers {
			ids = append(ids, b.NodeID)
		}
		if fmt.Sprint(ids) != fmt.Sprint([]int32{min(int32(leader), 9), max(int32(leader), 9)}) || NodeID(resp.ControllerID) != leader {
			t.Errorf("node %d: DescribeCluster lists %v with controller %d, want %d and 9 with %d", i+1, ids, resp.ControllerID, leader, leader)
		}
	}
}

// TestRegistrationNamesTheBoundPort: a controller listening on port 0
// registers the port it is bound to, and DescribeCluster lists it there.
func TestRegistrationNamesTheBoundPort(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	registering(&cfg)
	c := startNode(t, cfg)
	waitFor(t, "the lone controller to register", func() bool { return c.CurrentImage().Cluster().NumControllers() == 1 })
	r, _ := c.CurrentImage().Cluster().Controller(1)
	if fmt.Sprintf("%s:%d", r.Endpoints[0].Host, r.Endpoints[0].Port) != c.Addr().String() {
		t.Errorf("registered %+v, bound at %s", r.Endpoints, c.Addr())
	}
	resp := describeControllers(dialRaw(t, c.Addr()), 1)
	if len(resp.Brokers) != 1 || fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != c.Addr().String() || resp.ControllerID != 1 {
		t.Errorf("DescribeCluster answered %+v, want controller 1 at %s", resp, c.Addr())
	}
}
