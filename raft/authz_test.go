package raft

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// aclRecord is an entry for principal on host: permission (aclAllow or
// aclDeny) of op on the resource of type resourceType named name with
// pattern (aclPatternLiteral or aclPatternPrefixed). n numbers it.
func aclRecord(n byte, resourceType int8, name string, pattern int8, principal, host string, op ClusterOperation, permission int8) *metadata.AccessControlEntryRecord {
	return &metadata.AccessControlEntryRecord{
		Id: [16]byte{0xac, n}, ResourceType: resourceType, ResourceName: name, PatternType: pattern,
		Principal: principal, Host: host, Operation: int8(op), PermissionType: permission,
	}
}

// clusterACL is an entry on the literal cluster resource from any host.
func clusterACL(n byte, principal string, op ClusterOperation, permission int8) *metadata.AccessControlEntryRecord {
	return aclRecord(n, aclResourceCluster, clusterResource, aclPatternLiteral, principal, aclWildcard, op, permission)
}

// imageWith returns an image holding recs.
func imageWith(t *testing.T, recs ...*metadata.AccessControlEntryRecord) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	if err := d.Replay(metadataVersionRecord(), 0, 1); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if err := d.Replay(r, int64(i+1), 1); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

// TestAuthzMatchingRules: Kafka's StandardAuthorizer rules over the
// cluster's ACLs: resource and pattern matching, principal and host
// matching, DENY winning over ALLOW, ALL and the operations that imply
// DESCRIBE, super users, and allow.everyone.if.no.acl.found with and
// without entries on the cluster.
func TestAuthzMatchingRules(t *testing.T) {
	const alice, bob = "User:CN=alice", "User:CN=bob"
	tests := []struct {
		name          string
		acls          []*metadata.AccessControlEntryRecord
		superUsers    []string
		allowEveryone bool
		principal     string
		host          string
		op            ClusterOperation
		want          bool
	}{
		{"no ACL refuses", nil, nil, false, alice, "10.0.0.1", OperationDescribe, false},
		{"no ACL with allow.everyone grants", nil, nil, true, alice, "10.0.0.1", OperationAlter, true},
		{"allow.everyone does not apply once the cluster has an ACL",
			[]*metadata.AccessControlEntryRecord{clusterACL(1, bob, OperationAlter, aclAllow)}, nil, true, alice, "10.0.0.1", OperationAlter, false},
		{"allow.everyone applies when ACLs protect only other resources",
			[]*metadata.AccessControlEntryRecord{aclRecord(1, 2, "orders", aclPatternLiteral, bob, aclWildcard, OperationRead, aclAllow)}, nil, true, alice, "10.0.0.1", OperationAlter, true},
		{"literal ALLOW grants", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, true},
		{"another principal's ALLOW does not", []*metadata.AccessControlEntryRecord{clusterACL(1, bob, OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"another operation's ALLOW does not", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationDescribe, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"literal wildcard resource",
			[]*metadata.AccessControlEntryRecord{aclRecord(1, aclResourceCluster, "*", aclPatternLiteral, alice, aclWildcard, OperationClusterAction, aclAllow)}, nil, false, alice, "10.0.0.1", OperationClusterAction, true},
		{"prefixed resource",
			[]*metadata.AccessControlEntryRecord{aclRecord(1, aclResourceCluster, "kafka-", aclPatternPrefixed, alice, aclWildcard, OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, true},
		{"a prefix the name does not start with",
			[]*metadata.AccessControlEntryRecord{aclRecord(1, aclResourceCluster, "kafka-cluster-2", aclPatternPrefixed, alice, aclWildcard, OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"another literal name",
			[]*metadata.AccessControlEntryRecord{aclRecord(1, aclResourceCluster, "other", aclPatternLiteral, alice, aclWildcard, OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"a topic ACL of the same name",
			[]*metadata.AccessControlEntryRecord{aclRecord(1, 2, clusterResource, aclPatternLiteral, alice, aclWildcard, OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"wildcard principal", []*metadata.AccessControlEntryRecord{clusterACL(1, "User:*", OperationDescribe, aclAllow)}, nil, false, alice, "10.0.0.1", OperationDescribe, true},
		{"DENY wins over ALLOW", []*metadata.AccessControlEntryRecord{
			clusterACL(1, alice, OperationAlter, aclAllow), clusterACL(2, alice, OperationAlter, aclDeny)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"DENY of everyone wins over a principal's ALLOW", []*metadata.AccessControlEntryRecord{
			clusterACL(1, alice, OperationAll, aclAllow), clusterACL(2, "User:*", OperationAlter, aclDeny)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"DENY ALL refuses every operation", []*metadata.AccessControlEntryRecord{
			clusterACL(1, alice, OperationDescribe, aclAllow), clusterACL(2, alice, OperationAll, aclDeny)}, nil, false, alice, "10.0.0.1", OperationDescribe, false},
		{"DENY of another operation leaves the ALLOW", []*metadata.AccessControlEntryRecord{
			clusterACL(1, alice, OperationAll, aclAllow), clusterACL(2, alice, OperationAlter, aclDeny)}, nil, false, alice, "10.0.0.1", OperationDescribe, true},
		{"DENY ALTER does not imply DENY DESCRIBE", []*metadata.AccessControlEntryRecord{
			clusterACL(1, alice, OperationDescribe, aclAllow), clusterACL(2, alice, OperationAlter, aclDeny)}, nil, false, alice, "10.0.0.1", OperationDescribe, true},
		{"ALLOW ALL grants CLUSTER_ACTION", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationAll, aclAllow)}, nil, false, alice, "10.0.0.1", OperationClusterAction, true},
		{"ALTER implies DESCRIBE", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationDescribe, true},
		{"READ implies DESCRIBE", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationRead, aclAllow)}, nil, false, alice, "10.0.0.1", OperationDescribe, true},
		{"WRITE implies DESCRIBE", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationWrite, aclAllow)}, nil, false, alice, "10.0.0.1", OperationDescribe, true},
		{"DELETE implies DESCRIBE", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationDelete, aclAllow)}, nil, false, alice, "10.0.0.1", OperationDescribe, true},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationAlterConfigs, aclAllow)}, nil, false, alice, "10.0.0.1", OperationDescribeConfigs, true},
		{"DESCRIBE implies nothing", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationDescribe, aclAllow)}, nil, false, alice, "10.0.0.1", OperationClusterAction, false},
		{"CLUSTER_ACTION does not imply ALTER", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationClusterAction, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, false},
		{"super user without ACLs", nil, []string{bob, alice}, false, alice, "10.0.0.1", OperationAlter, true},
		{"super user beats DENY", []*metadata.AccessControlEntryRecord{clusterACL(1, alice, OperationAll, aclDeny)}, []string{alice}, false, alice, "10.0.0.1", OperationAlter, true},
		{"another super user", nil, []string{bob}, false, alice, "10.0.0.1", OperationAlter, false},
		{"host match", []*metadata.AccessControlEntryRecord{
			aclRecord(1, aclResourceCluster, clusterResource, aclPatternLiteral, alice, "10.0.0.1", OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.1", OperationAlter, true},
		{"host mismatch", []*metadata.AccessControlEntryRecord{
			aclRecord(1, aclResourceCluster, clusterResource, aclPatternLiteral, alice, "10.0.0.1", OperationAlter, aclAllow)}, nil, false, alice, "10.0.0.2", OperationAlter, false},
		{"IPv6 host spelled in full", []*metadata.AccessControlEntryRecord{
			aclRecord(1, aclResourceCluster, clusterResource, aclPatternLiteral, alice, "0:0:0:0:0:0:0:1", OperationAlter, aclAllow)}, nil, false, alice, "::1", OperationAlter, true},
		{"DENY from one host only", []*metadata.AccessControlEntryRecord{
			clusterACL(1, alice, OperationAlter, aclAllow),
			aclRecord(2, aclResourceCluster, clusterResource, aclPatternLiteral, alice, "10.0.0.9", OperationAlter, aclDeny)}, nil, false, alice, "10.0.0.1", OperationAlter, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := imageWith(t, tt.acls...)
			a := newStandardAuthorizer(tt.superUsers, tt.allowEveryone, func() *metadata.Image { return img })
			if got := a.Allowed(tt.principal, tt.host, tt.op); got != tt.want {
				t.Errorf("Allowed(%s, %s, %v) = %v, want %v", tt.principal, tt.host, tt.op, got, tt.want)
			}
		})
	}
}

// TestAuthzTableFollowsTheImage: the authorizer's table is rebuilt when
// the image's ACLs change, and kept for an image that changes something
// else.
func TestAuthzTableFollowsTheImage(t *testing.T) {
	const alice = "User:CN=alice"
	d := metadata.NewDelta(metadata.EmptyImage())
	if err := d.Replay(metadataVersionRecord(), 0, 1); err != nil {
		t.Fatal(err)
	}
	img := d.Apply()
	a := newStandardAuthorizer(nil, false, func() *metadata.Image { return img })
	if a.Allowed(alice, "10.0.0.1", OperationAlter) {
		t.Fatal("granted without ACLs")
	}
	replay := func(r metadata.Record, offset int64) {
		t.Helper()
		if err := d.Replay(r, offset, 1); err != nil {
			t.Fatal(err)
		}
		img = d.Apply()
	}
	replay(clusterACL(1, alice, OperationAlter, aclAllow), 1)
	if !a.Allowed(alice, "10.0.0.1", OperationAlter) {
		t.Fatal("an added ACL does not grant")
	}
	withACL := a.table.Load()
	replay(&metadata.TopicRecord{Name: "t", TopicId: [16]byte{1}}, 2)
	if !a.Allowed(alice, "10.0.0.1", OperationAlter) {
		t.Fatal("a topic record revoked the grant")
	}
	if got := a.table.Load(); got.img != img || len(got.cluster) != 1 || &got.cluster[0] != &withACL.cluster[0] {
		t.Errorf("an image without ACL changes rebuilt the table (or kept the old image)")
	}
	replay(&metadata.RemoveAccessControlEntryRecord{Id: [16]byte{0xac, 1}}, 3)
	if a.Allowed(alice, "10.0.0.1", OperationAlter) {
		t.Fatal("a removed ACL still grants")
	}
}

// TestAuthzRefusalShapes: each request the listener checks has an
// operation, ApiVersions none, and each refusal is the API's own
// response with CLUSTER_AUTHORIZATION_FAILED.
func TestAuthzRefusalShapes(t *testing.T) {
	if _, ok := requiredOperation(kmsg.NewPtrApiVersionsRequest()); ok {
		t.Error("ApiVersions needs an operation; it must always be served")
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = wire.MetadataTopic
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	code := kerr.ClusterAuthorizationFailed.Code
	for _, tt := range []struct {
		req  kmsg.Request
		op   ClusterOperation
		code func(kmsg.Response) int16
	}{
		{kmsg.NewPtrVoteRequest(), OperationClusterAction, func(r kmsg.Response) int16 { return r.(*kmsg.VoteResponse).ErrorCode }},
		{kmsg.NewPtrBeginQuorumEpochRequest(), OperationClusterAction, func(r kmsg.Response) int16 { return r.(*kmsg.BeginQuorumEpochResponse).ErrorCode }},
		{kmsg.NewPtrEndQuorumEpochRequest(), OperationClusterAction, func(r kmsg.Response) int16 { return r.(*kmsg.EndQuorumEpochResponse).ErrorCode }},
		{fetch, OperationClusterAction, func(r kmsg.Response) int16 {
			f := r.(*kmsg.FetchResponse)
			if len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 || f.Topics[0].Partitions[0].ErrorCode != code || f.Topics[0].Partitions[0].HighWatermark != -1 {
				return 0
			}
			return f.ErrorCode
		}},
		{kmsg.NewPtrFetchSnapshotRequest(), OperationClusterAction, func(r kmsg.Response) int16 { return r.(*kmsg.FetchSnapshotResponse).ErrorCode }},
		{kmsg.NewPtrUpdateRaftVoterRequest(), OperationClusterAction, func(r kmsg.Response) int16 { return r.(*kmsg.UpdateRaftVoterResponse).ErrorCode }},
		{kmsg.NewPtrDescribeQuorumRequest(), OperationDescribe, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeQuorumResponse).ErrorCode }},
		{kmsg.NewPtrAddRaftVoterRequest(), OperationAlter, func(r kmsg.Response) int16 { return r.(*kmsg.AddRaftVoterResponse).ErrorCode }},
		{kmsg.NewPtrRemoveRaftVoterRequest(), OperationAlter, func(r kmsg.Response) int16 { return r.(*kmsg.RemoveRaftVoterResponse).ErrorCode }},
		{kmsg.NewPtrDescribeClusterRequest(), OperationAlter, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeClusterResponse).ErrorCode }},
		{kmsg.NewPtrUpdateFeaturesRequest(), OperationAlter, func(r kmsg.Response) int16 { return r.(*kmsg.UpdateFeaturesResponse).ErrorCode }},
		{wire.NewSubmitChangeRequest(), OperationAlter, func(r kmsg.Response) int16 { return r.(*wire.SubmitChangeResponse).ErrorCode }},
		{wire.NewReadImageRequest(), OperationDescribe, func(r kmsg.Response) int16 { return r.(*wire.ReadImageResponse).ErrorCode }},
		{wire.NewMetadataFetchRequest(), OperationClusterAction, func(r kmsg.Response) int16 { return r.(*wire.MetadataFetchResponse).ErrorCode }},
	} {
		name := fmt.Sprintf("%T", tt.req)
		if op, ok := requiredOperation(tt.req); !ok || op != tt.op {
			t.Errorf("%s needs %v (%v), want %v", name, op, ok, tt.op)
		}
		if got := tt.code(refusalAnswer(tt.req)); got != code {
			t.Errorf("%s refused with code %d, want %d", name, got, code)
		}
	}
}

// TestAuthzClusterGrantsSeam: a Config's ClusterGrants decides in place
// of the standard authorizer and is given the connection's principal and
// client address; a refusal is logged once per principal within the
// interval.
func TestAuthzClusterGrantsSeam(t *testing.T) {
	var got []string
	grants := grantsFunc(func(p, h string, op ClusterOperation) bool {
		got = append(got, p+"@"+h+" "+op.String())
		return false
	})
	cfg := ForTests(1, t.TempDir())
	cfg.ClusterGrants = grants
	var logs logBuffer
	a := newRequestAuthz(cfg, metadata.EmptyImage, logs.logger())
	req := &transport.Request{Body: kmsg.NewPtrAddRaftVoterRequest(), Conn: transport.ConnInfo{
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 4000}, Principal: transport.Anonymous()}}
	for range 3 {
		if a.allows(t.Context(), req) {
			t.Fatal("allowed what ClusterGrants refuses")
		}
	}
	if len(got) != 3 || got[0] != "User:ANONYMOUS@10.0.0.7 ALTER" {
		t.Errorf("ClusterGrants asked %v", got)
	}
	if n := logs.count("request refused"); n != 1 {
		t.Errorf("%d refusals logged for one principal, want 1", n)
	}
	req.Body = kmsg.NewPtrApiVersionsRequest()
	if !a.allows(t.Context(), req) {
		t.Error("ApiVersions refused")
	}
	cfg.AuthorizerClassName = StandardAuthorizerClass
	if err := cfg.Validate(); err == nil {
		t.Error("Validate accepts ClusterGrants together with authorizer.class.name")
	}
}

type grantsFunc func(principal, host string, op ClusterOperation) bool

func (f grantsFunc) Allowed(principal, host string, op ClusterOperation) bool {
	return f(principal, host, op)
}

// logBuffer collects a logger's text lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// count returns how many lines hold s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for line := range strings.Lines(l.b.String()) {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// tlsRoundTrip sends req on conn and returns the answer.
func tlsRoundTrip(t *testing.T, conn net.Conn, req kmsg.Request) kmsg.Response {
	t.Helper()
	id := "authz-test"
	b, err := wire.AppendRequest(nil, 11, &id, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
	frame, err := wire.ReadFrame(conn, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	resp, err := wire.DecodeResponse(frame, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestAuthzSSLClusterOperations: on SSL listeners with the standard
// authorizer, a principal with ALTER on the cluster adds a voter; one
// with only DESCRIBE is refused AddRaftVoter and DescribeCluster with
// CLUSTER_AUTHORIZATION_FAILED and nothing changes, but may describe the
// quorum; its forged replica Fetch is refused and leaves no replica
// state; the controllers, super users, keep replicating; and an ACL
// written through SubmitChange takes effect.
func TestAuthzSSLClusterOperations(t *testing.T) {
	ca := tlstest.NewCA(t, "quorum CA")
	principal := func(cn string) string { return "User:CN=" + cn + ",O=krabka" }
	c, lns := newDynamicCluster(t, 2, []NodeID{1}, func(cfg *Config) {
		leaf := ca.Issue(t, "controller-"+cfg.NodeID.String(), tlstest.Options{Names: []string{"127.0.0.1", "localhost"}})
		sslNode(t, cfg, t.TempDir(), leaf, ca, "required")
		cfg.AuthorizerClassName = StandardAuthorizerClass
		cfg.SuperUsers = []string{principal("controller-1"), principal("controller-2")}
	})
	c.startNode(1, lns)
	c.startNode(2, lns)
	res := c.submitRetrying(metadataVersionRecord(),
		clusterACL(1, principal("admin"), OperationAlter, aclAllow),
		clusterACL(2, principal("viewer"), OperationDescribe, aclAllow))
	c.waitApplied(res.LastOffset + 1)
	leader := c.waitMembers([]NodeID{1}, []NodeID{2})
	addr := c.node(leader).Addr()
	conn := func(cn string) net.Conn {
		tc, err := dialTLS(t, addr, clientTLS(t, ca, ca.Issue(t, cn, tlstest.Options{})))
		if err != nil {
			t.Fatal(err)
		}
		_ = tc.SetDeadline(time.Now().Add(20 * time.Second))
		return tc
	}
	admin, viewer := conn("admin"), conn("viewer")
	addVoter := func(nc net.Conn) *kmsg.AddRaftVoterResponse {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.VoterDirectoryID, req.TimeoutMillis = 2, dirID(2), 5000
		for _, ep := range c.voterOf(2).Endpoints {
			l := kmsg.NewAddRaftVoterRequestListener()
			l.Name, l.Host, l.Port = ep.Name, ep.Host, ep.Port
			req.Listeners = append(req.Listeners, l)
		}
		return tlsRoundTrip(t, nc, req).(*kmsg.AddRaftVoterResponse)
	}
	denied := kerr.ClusterAuthorizationFailed.Code

	if r := addVoter(viewer); r.ErrorCode != denied || r.ErrorMessage == nil {
		t.Errorf("AddRaftVoter with DESCRIBE only = %+v, want CLUSTER_AUTHORIZATION_FAILED", r)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.SetVersion(1)
	dc.EndpointType = 2
	if r := tlsRoundTrip(t, viewer, dc).(*kmsg.DescribeClusterResponse); r.ErrorCode != denied {
		t.Errorf("DescribeCluster with DESCRIBE only = code %d, want %d", r.ErrorCode, denied)
	}
	dq := tlsRoundTrip(t, viewer, describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
	if dq.ErrorCode != 0 || len(dq.Topics) != 1 || len(dq.Topics[0].Partitions[0].CurrentVoters) != 1 {
		t.Errorf("DescribeQuorum with DESCRIBE = %+v, want the one voter", dq)
	}

	// A forged replica Fetch: the viewer poses as replica 3.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	fetch.ReplicaState.ID, fetch.ReplicaState.Epoch = 3, -1
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = wire.MetadataTopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = c.node(leader).QuorumState().Epoch, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	if r := tlsRoundTrip(t, viewer, fetch).(*kmsg.FetchResponse); r.ErrorCode != denied || len(r.Topics) != 0 {
		t.Errorf("W21: a forged replica Fetch was answered with code %d and %d topics, want CLUSTER_AUTHORIZATION_FAILED", r.ErrorCode, len(r.Topics))
	}
	d, err := c.describe(leader)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(replicaIDs(d.Voters), []NodeID{1}) || slices.Contains(replicaIDs(d.Observers), 3) {
		t.Errorf("W21: after the refused requests voters %v observers %v, want voter 1 and no replica 3", replicaIDs(d.Voters), replicaIDs(d.Observers))
	}

	waitFor(t, "the admin's AddRaftVoter", func() bool {
		r := addVoter(admin)
		switch r.ErrorCode {
		case 0:
			return true
		case kerr.RequestTimedOut.Code:
			return false
		}
		t.Fatalf("AddRaftVoter with ALTER = %+v", r)
		return false
	})
	c.waitMembers([]NodeID{1, 2}, nil)

	rec, err := metadata.Encode(clusterACL(3, principal("viewer"), OperationAlter, aclAllow))
	if err != nil {
		t.Fatal(err)
	}
	sc := wire.NewSubmitChangeRequest()
	sc.Records = [][]byte{rec}
	if r := tlsRoundTrip(t, viewer, sc).(*wire.SubmitChangeResponse); r.ErrorCode != denied {
		t.Errorf("SubmitChange with DESCRIBE only = code %d, want %d", r.ErrorCode, denied)
	}
	if r := tlsRoundTrip(t, admin, sc).(*wire.SubmitChangeResponse); r.ErrorCode != 0 {
		t.Fatalf("SubmitChange with ALTER = %+v", r)
	}
	waitFor(t, "the ACL written through SubmitChange to take effect", func() bool {
		return tlsRoundTrip(t, viewer, dc).(*kmsg.DescribeClusterResponse).ErrorCode == 0
	})

	res = c.submitRetrying(topicRecord("after"))
	c.waitApplied(res.LastOffset + 1)
}

// TestValidateAuthorizer: authorizer.class.name accepts Kafka's
// StandardAuthorizer or nothing and refuses any other class by name;
// super.users reads principals separated by semicolons.
func TestValidateAuthorizer(t *testing.T) {
	c, _, err := ParseProperties([]byte(baseProperties + "authorizer.class.name=" + StandardAuthorizerClass +
		"\nsuper.users= User:CN=a,O=x ;User:admin;\nallow.everyone.if.no.acl.found=TRUE\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.SuperUsers, []string{"User:CN=a,O=x", "User:admin"}) || !c.AllowEveryoneIfNoACLFound || c.AuthorizerClassName != StandardAuthorizerClass {
		t.Errorf("parsed %q %v %q", c.SuperUsers, c.AllowEveryoneIfNoACLFound, c.AuthorizerClassName)
	}
	back, _, err := ParseProperties([]byte(c.String()))
	if err != nil || !slices.Equal(back.SuperUsers, c.SuperUsers) {
		t.Errorf("Properties round trip: %q, %v", back.SuperUsers, err)
	}
	const other = "kafka.security.authorizer.AclAuthorizer"
	_, _, err = ParseProperties([]byte(baseProperties + "authorizer.class.name=" + other + "\n"))
	got := configErrors(t, err)
	if len(got) != 1 || got[0].Key != keyAuthorizerClassName || !strings.Contains(err.Error(), other) {
		t.Errorf("another authorizer class: %v, want one problem naming %s", err, other)
	}
	if _, _, err := ParseProperties([]byte(baseProperties + "allow.everyone.if.no.acl.found=maybe\n")); err == nil {
		t.Error("allow.everyone.if.no.acl.found=maybe accepted")
	}
}

// TestAuthzPlaintextAllowEveryone: on a PLAINTEXT listener every client
// is User:ANONYMOUS; with the authorizer and no ACL it is refused unless
// allow.everyone.if.no.acl.found is set, and ApiVersions is served
// either way.
func TestAuthzPlaintextAllowEveryone(t *testing.T) {
	for _, allow := range []bool{false, true} {
		cfg := ForTests(1, t.TempDir())
		cfg.AuthorizerClassName = StandardAuthorizerClass
		cfg.AllowEveryoneIfNoACLFound = allow
		node := startNode(t, cfg)
		if _, err := apiVersionsFrom(t, "127.0.0.1", node.Addr()); err != nil {
			t.Fatalf("ApiVersions: %v", err)
		}
		r := roundTrip(t, node.Addr().String(), describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
		if denied := r.ErrorCode == kerr.ClusterAuthorizationFailed.Code; denied == allow {
			t.Errorf("allow.everyone.if.no.acl.found=%v: DescribeQuorum code %d", allow, r.ErrorCode)
		}
	}
}

// TestStartWarnsWithoutAuthorizer: a node without an authorizer logs one
// WARN when a listener beyond loopback authenticates no client, and none
// on loopback, with an authorizer, or on a SASL listener, where every
// client authenticates.
func TestStartWarnsWithoutAuthorizer(t *testing.T) {
	const warning = "authenticates no client and no authorizer is set"
	for _, tt := range []struct {
		host       string
		authorizer string
		sasl       bool
		want       int
	}{
		{"0.0.0.0", "", false, 1},
		{"127.0.0.1", "", false, 0},
		{"0.0.0.0", StandardAuthorizerClass, false, 0},
		{"0.0.0.0", "", true, 0},
	} {
		var logs logBuffer
		cfg := ForTests(1, t.TempDir())
		if tt.sasl {
			saslNode(&cfg, SecuritySASLPlaintext)
		}
		cfg.Listeners[0].Host = tt.host
		cfg.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 0}}
		cfg.AuthorizerClassName = tt.authorizer
		cfg.Logger = logs.logger()
		startNode(t, cfg)
		if n := logs.count(warning); n != tt.want || (tt.want == 1 && logs.count("level=WARN") < 1) {
			t.Errorf("listener on %s, authorizer %q, SASL %v: %d warnings, want %d", tt.host, tt.authorizer, tt.sasl, n, tt.want)
		}
	}
}

// TestAuthzACLdControllersReplicate: controllers that are not super
// users keep electing and replicating on their ACL: a PLAINTEXT quorum
// starts open (allow.everyone.if.no.acl.found, no ACL), an ACL granting
// User:ANONYMOUS CLUSTER_ACTION closes it to everything else, and the
// quorum still commits and replicates to every node while a client's
// DescribeQuorum (DESCRIBE) is refused.
func TestAuthzACLdControllersReplicate(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		cfg.AuthorizerClassName = StandardAuthorizerClass
		cfg.AllowEveryoneIfNoACLFound = true
	})
	res := c.submitRetrying(metadataVersionRecord(), clusterACL(1, "User:ANONYMOUS", OperationClusterAction, aclAllow))
	c.waitApplied(res.LastOffset + 1)
	leader := c.leader()
	waitFor(t, "DescribeQuorum to be refused", func() bool {
		r := roundTrip(t, c.node(leader).Addr().String(), describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
		return r.ErrorCode == kerr.ClusterAuthorizationFailed.Code
	})
	res = submit(t, c.node(c.leader()), topicRecord("after-acl"))
	c.waitApplied(res.LastOffset + 1)
}
