package raft

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// createTopicsRouter is an embedder's CreateTopics, as Kafka's
// ControllerApis.handleCreateTopics serves it: CREATE on the cluster or on
// the topic, TOPIC_ALREADY_EXISTS for a name the image holds, otherwise a
// TopicRecord and a PartitionRecord per partition, replicated on node 1,
// committed through the controller before the answer. A topic called
// "panic" makes it panic; one called "block" makes it wait, ignoring its
// context, until release is closed.
type createTopicsRouter struct {
	claims  []AdminClaim
	release chan struct{}

	mu   sync.Mutex
	seen []AdminRequest
}

func newCreateTopicsRouter() *createTopicsRouter {
	return &createTopicsRouter{
		claims:  []AdminClaim{{Key: kmsg.CreateTopics.Int16(), MinVersion: 2, MaxVersion: 7}},
		release: make(chan struct{}),
	}
}

func (r *createTopicsRouter) AdminClaims() []AdminClaim { return r.claims }

func (r *createTopicsRouter) ServeAdmin(ctx context.Context, req AdminRequest) (kmsg.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, req)
	r.mu.Unlock()
	create, ok := req.Request.(*kmsg.CreateTopicsRequest)
	if !ok {
		panic("a router bug: a request it did not claim")
	}
	resp := create.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range create.Topics {
		switch t.Topic {
		case "panic":
			panic("a router bug")
		case "block":
			<-r.release
			return nil, errors.New("released")
		}
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		switch {
		case !req.Node.Authorized(OperationCreate, ClusterResource) &&
			!req.Node.Authorized(OperationCreate, Resource{Type: ResourceTopic, Name: t.Topic}):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case topicExists(req.Node.CurrentImage(), t.Topic):
			rt.ErrorCode = kerr.TopicAlreadyExists.Code
		default:
			id := sha256.Sum256([]byte(t.Topic))
			topic := metadata.NewTopicRecord()
			topic.Name, topic.TopicId = t.Topic, [16]byte(id[:16])
			records := []metadata.Record{topic}
			for p := range t.NumPartitions {
				pr := metadata.NewPartitionRecord()
				pr.TopicId, pr.PartitionId, pr.Replicas, pr.Isr, pr.Leader = topic.TopicId, p, []int32{1}, []int32{1}, 1
				pr.LeaderEpoch, pr.PartitionEpoch = 0, 0
				records = append(records, pr)
			}
			if _, err := req.Node.SubmitChange(ctx, records); err != nil {
				return nil, err
			}
			rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = topic.TopicId, t.NumPartitions, 1
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (r *createTopicsRouter) requests() []AdminRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]AdminRequest(nil), r.seen...)
}

func topicExists(img *metadata.Image, name string) bool {
	_, ok := img.Topics().ByName(name)
	return ok
}

// createTopics is a CreateTopics request for topics of partitions
// partitions each.
func createTopics(partitions int32, topics ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	for _, name := range topics {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, t)
	}
	return req
}

// adminClient is a franz-go client of addr with opts.
func adminClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.ClientID("admin-test")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// askAPIVersions sends ApiVersions to broker, as a Kafka client of
// software kgo-test 1.0.
func askAPIVersions(t *testing.T, broker *kgo.Broker) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo-test", "1.0"
	resp, err := req.RequestWith(t.Context(), broker)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// claimedRange is the range an ApiVersions answer lists for key, and
// whether it lists key.
func claimedRange(resp *kmsg.ApiVersionsResponse, key int16) ([2]int16, bool) {
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return [2]int16{k.MinVersion, k.MaxVersion}, true
		}
	}
	return [2]int16{}, false
}

// TestAdminRouterCreateTopics: a franz-go client sends CreateTopics to the
// controller listener of a node whose AdminRouter claims it: ApiVersions
// lists the claimed range, the client negotiates the claimed maximum, and
// the router gets the decoded request with the principal and header,
// writes the topic through the controller and answers; the image holds
// the topic, and a second CreateTopics of it is TOPIC_ALREADY_EXISTS.
func TestAdminRouterCreateTopics(t *testing.T) {
	router := newCreateTopicsRouter()
	n := startHostileNode(t, func(c *Config) { c.AdminRouter = router })
	cl := adminClient(t, n.c.Addr().String())
	broker := cl.SeedBrokers()[0]

	versions := askAPIVersions(t, broker)
	if got, ok := claimedRange(versions, kmsg.CreateTopics.Int16()); !ok || got != [2]int16{2, 7} {
		t.Fatalf("ApiVersions lists CreateTopics %v (%v), want the claimed 2-7", got, ok)
	}
	if _, ok := claimedRange(versions, kmsg.DescribeQuorum.Int16()); !ok {
		t.Fatal("ApiVersions lost the node's own APIs")
	}

	resp, err := createTopics(3, "orders").RequestWith(t.Context(), broker)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 7 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].NumPartitions != 3 {
		t.Fatalf("CreateTopics answered %+v", resp)
	}
	seen := router.requests()
	if len(seen) != 1 || seen[0].Principal != "User:ANONYMOUS" || seen[0].ClientID != "admin-test" ||
		seen[0].Request.GetVersion() != 7 || seen[0].RemoteAddr == nil || seen[0].Listener.String() != n.c.Addr().String() {
		t.Fatalf("the router saw %+v", seen)
	}
	topic, ok := n.c.CurrentImage().Topics().ByName("orders")
	if !ok || topic.NumPartitions() != 3 || topic.ID != resp.Topics[0].TopicID {
		t.Fatalf("the image holds %+v (%v) after the create", topic, ok)
	}

	again, err := createTopics(3, "orders").RequestWith(t.Context(), broker)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Topics) != 1 || again.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Errorf("a second create answered %+v, want TOPIC_ALREADY_EXISTS", again)
	}
}

// TestAdminRouterAuthorizesThroughTheNode: on a SASL listener with the
// standard authorizer, the router gets the authenticated principal and
// checks Kafka's CREATE on each topic with the node's ACLs: alice may
// create the topics her prefixed ACL names and no other; a client that
// did not authenticate reaches nothing. ApiVersions before
// authentication lists the claimed range too.
func TestAdminRouterAuthorizesThroughTheNode(t *testing.T) {
	router := newCreateTopicsRouter()
	n := startHostileNode(t, func(c *Config) {
		saslNode(c, SecuritySASLPlaintext)
		c.AuthorizerClassName = StandardAuthorizerClass
		c.SuperUsers = []string{"User:admin"}
		c.AdminRouter = router
	})
	if _, err := n.c.SubmitChange(t.Context(), []metadata.Record{
		aclRecord(1, int8(ResourceTopic), "alice-", aclPatternPrefixed, "User:alice", aclWildcard, OperationCreate, aclAllow),
	}); err != nil {
		t.Fatal(err)
	}

	// Before authentication the SASL listener answers ApiVersions itself.
	conn := dialRaw(t, n.c.Addr())
	versions := conn.call(1, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	if got, ok := claimedRange(versions, kmsg.CreateTopics.Int16()); !ok || got != [2]int16{2, 7} {
		t.Fatalf("the SASL listener's ApiVersions lists CreateTopics %v (%v), want 2-7", got, ok)
	}

	alice := adminClient(t, n.c.Addr().String(), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	resp, err := createTopics(1, "alice-orders", "bob-orders").RequestWith(t.Context(), alice.SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if codes["alice-orders"] != 0 || codes["bob-orders"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's create answered %v, want alice-orders created and bob-orders TOPIC_AUTHORIZATION_FAILED", codes)
	}
	if seen := router.requests(); len(seen) != 1 || seen[0].Principal != "User:alice" {
		t.Fatalf("the router saw %+v, want alice's request", seen)
	}
	if topicExists(n.c.CurrentImage(), "bob-orders") || !topicExists(n.c.CurrentImage(), "alice-orders") {
		t.Fatal("the image does not hold exactly the authorized topic")
	}

	// CREATE on the cluster grants every topic.
	if _, err := n.c.SubmitChange(t.Context(), []metadata.Record{clusterACL(2, "User:alice", OperationCreate, aclAllow)}); err != nil {
		t.Fatal(err)
	}
	resp, err = createTopics(1, "bob-orders").RequestWith(t.Context(), alice.SeedBrokers()[0])
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("with CREATE on the cluster alice's create answered %+v, %v", resp, err)
	}

	// Without authentication no request reaches the router.
	anonymous := adminClient(t, n.c.Addr().String())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := createTopics(1, "alice-anon").RequestWith(ctx, anonymous.SeedBrokers()[0]); err == nil {
		t.Error("a client that did not authenticate got an answer to CreateTopics")
	}
	if len(router.requests()) != 2 {
		t.Errorf("the router saw %d requests, want alice's two", len(router.requests()))
	}
}

// TestAdminRouterContained: a router that panics answers its request with
// UNKNOWN_SERVER_ERROR in every topic, one that blocks (ignoring its
// context) with REQUEST_TIMED_OUT after the request timeout; the
// connection keeps serving and the node keeps leading. A failed request
// of an API whose error answer the node does not build closes its
// connection, and the listener still serves new ones.
func TestAdminRouterContained(t *testing.T) {
	router := newCreateTopicsRouter()
	router.claims = append(router.claims, AdminClaim{Key: kmsg.ElectLeaders.Int16(), MinVersion: 0, MaxVersion: 2})
	defer close(router.release)
	n := startHostileNode(t, func(c *Config) {
		c.AdminRouter = router
		c.RequestTimeout = 300 * time.Millisecond
	})
	conn := dialRaw(t, n.c.Addr())

	req := createTopics(1, "panic", "orders")
	req.Version = 7
	resp := conn.call(1, req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.UnknownServerError.Code || resp.Topics[1].ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("a create the router panicked on answered %+v, want UNKNOWN_SERVER_ERROR for each topic", resp)
	}

	start := time.Now()
	req = createTopics(1, "block")
	req.Version = 7
	resp = conn.call(2, req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("a create the router blocked on answered %+v, want REQUEST_TIMED_OUT", resp)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("answered after %v, before the request timeout", waited)
	}

	req = createTopics(2, "orders")
	req.Version = 7
	resp = conn.call(3, req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || !topicExists(n.c.CurrentImage(), "orders") {
		t.Fatalf("after the failures the connection's create answered %+v", resp)
	}
	if st := n.c.QuorumState(); st.Role != RoleLeader {
		t.Fatalf("the node is %s after the router's failures", st.Role)
	}

	// ElectLeaders reaches the router, which panics on an API it cannot
	// serve; the node has no error answer for it and closes.
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Version = 2
	conn.send(4, elect)
	conn.expectClosed()
	again := dialRaw(t, n.c.Addr())
	if v := again.call(1, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); v.ErrorCode != 0 {
		t.Fatalf("a new connection's ApiVersions answered %d", v.ErrorCode)
	}
}

// TestAdminRouterUnclaimedStillClosed: an API the router does not claim,
// and a claimed API at a version outside its claim, close the connection
// as before, without reaching the router.
func TestAdminRouterUnclaimedStillClosed(t *testing.T) {
	router := newCreateTopicsRouter()
	n := startHostileNode(t, func(c *Config) { c.AdminRouter = router })
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	n.closes(encode(t, del), unknownKeyCount)
	old := createTopics(1, "orders")
	old.Version = 1
	n.closes(encode(t, old), versionCount)
	if len(router.requests()) != 0 {
		t.Fatalf("the router saw %+v", router.requests())
	}
}

// TestAdminRouterClaimsRefusedAtStart: a claim of an API the node serves
// itself, of a key that is no Kafka API, of an empty or undecodable
// range, or of a key twice, fails Start with the reason.
func TestAdminRouterClaimsRefusedAtStart(t *testing.T) {
	for _, tc := range []struct {
		claims []AdminClaim
		want   string
	}{
		{[]AdminClaim{{Key: wire.KeyDescribeQuorum, MinVersion: 0, MaxVersion: 1}}, "DescribeQuorum) is served by the controller itself"},
		{[]AdminClaim{{Key: wire.KeyAPIVersions, MinVersion: 0, MaxVersion: 3}}, "served by the controller itself"},
		{[]AdminClaim{{Key: wire.KeyReadImage, MinVersion: 0, MaxVersion: 0}}, "served by the controller itself"},
		{[]AdminClaim{{Key: 900, MinVersion: 0, MaxVersion: 0}}, "api key 900 is not a Kafka API"},
		{[]AdminClaim{{Key: kmsg.CreateTopics.Int16(), MinVersion: 5, MaxVersion: 4}}, "not a range of versions"},
		{[]AdminClaim{{Key: kmsg.CreateTopics.Int16(), MinVersion: 0, MaxVersion: 99}}, "newer than the newest version decoded"},
		{[]AdminClaim{{Key: kmsg.CreateTopics.Int16(), MaxVersion: 7}, {Key: kmsg.CreateTopics.Int16(), MaxVersion: 5}}, "claims api key 19 twice"},
	} {
		router := newCreateTopicsRouter()
		router.claims = tc.claims
		cfg := ForTests(1, t.TempDir())
		cfg.AdminRouter = router
		c, err := Start(t.Context(), cfg)
		if err == nil {
			_ = c.Shutdown(t.Context())
			t.Errorf("claims %+v: Start succeeded", tc.claims)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("claims %+v: Start failed with %q, want %q", tc.claims, err, tc.want)
		}
	}
}

// TestAuthzResourceRules: the standard authorizer judges a resource other
// than the cluster by the entries of its type that name it literally, by
// the wildcard or by a prefix of its name, with DENY winning, super
// users, and allow.everyone.if.no.acl.found deciding only while no entry
// protects that resource.
func TestAuthzResourceRules(t *testing.T) {
	const alice = "User:alice"
	topic := func(name string) Resource { return Resource{Type: ResourceTopic, Name: name} }
	allowPrefix := aclRecord(1, int8(ResourceTopic), "orders-", aclPatternPrefixed, alice, aclWildcard, OperationCreate, aclAllow)
	denyLiteral := aclRecord(2, int8(ResourceTopic), "orders-secret", aclPatternLiteral, alice, aclWildcard, OperationAll, aclDeny)
	allowWildcard := aclRecord(3, int8(ResourceTopic), "*", aclPatternLiteral, "User:bob", aclWildcard, OperationAlter, aclAllow)
	groupEntry := aclRecord(4, int8(ResourceGroup), "orders-app", aclPatternLiteral, alice, aclWildcard, OperationRead, aclAllow)
	img := imageWith(t, allowPrefix, denyLiteral, allowWildcard, groupEntry)
	for _, tc := range []struct {
		name          string
		super         []string
		allowEveryone bool
		principal     string
		op            ClusterOperation
		res           Resource
		want          bool
	}{
		{"a prefixed ALLOW grants a topic it prefixes", nil, false, alice, OperationCreate, topic("orders-eu"), true},
		{"a prefixed ALLOW is for its operation", nil, false, alice, OperationDelete, topic("orders-eu"), false},
		{"a literal DENY of ALL wins over the prefix", nil, false, alice, OperationCreate, topic("orders-secret"), false},
		{"a literal entry names its resource only", nil, false, alice, OperationCreate, topic("orders-secret-2"), true},
		{"the wildcard protects every topic", nil, false, "User:bob", OperationAlter, topic("payments"), true},
		{"ALTER implies DESCRIBE on a topic", nil, false, "User:bob", OperationDescribe, topic("payments"), true},
		{"a topic's entries do not reach a group", nil, false, "User:bob", OperationAlter, Resource{Type: ResourceGroup, Name: "payments"}, false},
		{"a group entry grants its group", nil, false, alice, OperationRead, Resource{Type: ResourceGroup, Name: "orders-app"}, true},
		{"a group entry names its group only", nil, true, alice, OperationRead, Resource{Type: ResourceGroup, Name: "other-app"}, true},
		{"entries on a topic turn allow-everyone off", nil, true, "User:carol", OperationCreate, topic("payments"), false},
		{"a super user may do everything", []string{"User:carol"}, false, "User:carol", OperationDelete, topic("orders-secret"), true},
		{"with no entry on the cluster, allow-everyone decides", nil, true, "User:carol", OperationCreate, ClusterResource, true},
		{"without allow-everyone nothing is granted", nil, false, "User:carol", OperationCreate, ClusterResource, false},
	} {
		a := newStandardAuthorizer(tc.super, tc.allowEveryone, func() *metadata.Image { return img })
		if got := a.AllowedOn(tc.principal, "10.0.0.1", tc.op, tc.res); got != tc.want {
			t.Errorf("%s: %s %s on %+v = %v, want %v", tc.name, tc.principal, tc.op, tc.res, got, tc.want)
		}
	}
}

// resourceGrants is ClusterGrants that also judges other resources.
type resourceGrants struct{ grantsFunc }

func (resourceGrants) AllowedOn(principal, _ string, op ClusterOperation, res Resource) bool {
	return principal == "User:alice" && op == OperationCreate && res.Type == ResourceTopic
}

// TestAdminHandleAuthorizedSeams: without an authorizer everything is
// granted; a ClusterGrants judges the cluster and refuses any other
// resource unless it implements ResourceGrants, which then judges all.
func TestAdminHandleAuthorizedSeams(t *testing.T) {
	orders := Resource{Type: ResourceTopic, Name: "orders"}
	cfg := ForTests(1, t.TempDir())
	none := &AdminHandle{authz: newRequestAuthz(cfg, metadata.EmptyImage, nil), principal: "User:x", host: "10.0.0.1"}
	if !none.Authorized(OperationCreate, orders) || !none.Authorized(OperationAlter, ClusterResource) {
		t.Error("without an authorizer a check was refused")
	}
	cfg.ClusterGrants = grantsFunc(func(p, _ string, op ClusterOperation) bool { return op == OperationCreate })
	cluster := &AdminHandle{authz: newRequestAuthz(cfg, metadata.EmptyImage, nil), principal: "User:alice", host: "10.0.0.1"}
	if !cluster.Authorized(OperationCreate, ClusterResource) || cluster.Authorized(OperationAlter, ClusterResource) {
		t.Error("ClusterGrants did not decide the cluster")
	}
	if cluster.Authorized(OperationCreate, orders) {
		t.Error("a ClusterGrants without AllowedOn granted a topic")
	}
	cfg.ClusterGrants = resourceGrants{cfg.ClusterGrants.(grantsFunc)}
	resources := &AdminHandle{authz: newRequestAuthz(cfg, metadata.EmptyImage, nil), principal: "User:alice", host: "10.0.0.1"}
	if !resources.Authorized(OperationCreate, orders) || resources.Authorized(OperationCreate, ClusterResource) {
		t.Error("ResourceGrants did not decide every resource")
	}
}
