package raft

import (
	"net"
	"strings"
	"sync/atomic"

	"github.com/krabka-go/krabka/metadata"
)

// ClusterOperation is an operation on the cluster resource, by Kafka's
// AclOperation code.
type ClusterOperation int8

// The operations ACL entries name (Kafka's AclOperation). A controller
// listener asks for OperationClusterAction, OperationDescribe and
// OperationAlter only; the others matter as what an entry names.
const (
	OperationAll             ClusterOperation = 2
	OperationRead            ClusterOperation = 3
	OperationWrite           ClusterOperation = 4
	OperationCreate          ClusterOperation = 5
	OperationDelete          ClusterOperation = 6
	OperationAlter           ClusterOperation = 7
	OperationDescribe        ClusterOperation = 8
	OperationClusterAction   ClusterOperation = 9
	OperationDescribeConfigs ClusterOperation = 10
	OperationAlterConfigs    ClusterOperation = 11
	OperationIdempotentWrite ClusterOperation = 12
)

// String returns Kafka's name of the operation.
func (op ClusterOperation) String() string {
	switch op {
	case OperationAll:
		return "ALL"
	case OperationRead:
		return "READ"
	case OperationWrite:
		return "WRITE"
	case OperationCreate:
		return "CREATE"
	case OperationDelete:
		return "DELETE"
	case OperationAlter:
		return "ALTER"
	case OperationDescribe:
		return "DESCRIBE"
	case OperationClusterAction:
		return "CLUSTER_ACTION"
	case OperationDescribeConfigs:
		return "DESCRIBE_CONFIGS"
	case OperationAlterConfigs:
		return "ALTER_CONFIGS"
	case OperationIdempotentWrite:
		return "IDEMPOTENT_WRITE"
	}
	return "UNKNOWN"
}

// ClusterGrants decides whether a request may run: whether principal
// (Kafka's "Type:Name", "User:ANONYMOUS" on a connection without
// authentication), connected from host (the client's IP address), may
// perform op on the cluster. The controller listener asks before it
// serves any request but ApiVersions, on the connections' goroutines, so
// an implementation must be safe for concurrent use and should not
// block. [Config.ClusterGrants] installs one; authorizer.class.name
// installs Kafka's StandardAuthorizer rules over the node's ACLs.
type ClusterGrants interface {
	Allowed(principal, host string, op ClusterOperation) bool
}

// ResourceType is the type of a resource ACL entries protect, by Kafka's
// ResourceType code.
type ResourceType int8

// The resource types of Kafka's ACLs (ResourceType).
const (
	ResourceTopic ResourceType = iota + 2
	ResourceGroup
	ResourceCluster
	ResourceTransactionalID
	ResourceDelegationToken
	ResourceUser
)

// Resource is one resource an operation is asked for: a topic by name, the
// cluster as [ClusterResource], and so on.
type Resource struct {
	Type ResourceType
	Name string
}

// ClusterResource is the cluster, as Kafka names it in ACL entries
// ("kafka-cluster").
var ClusterResource = Resource{Type: ResourceCluster, Name: clusterResource}

// ResourceGrants is what a [ClusterGrants] implements to judge resources
// other than the cluster as well: whether principal, connected from host,
// may perform op on res. An [AdminRouter] asks through
// [AdminHandle.Authorized]; a ClusterGrants without it refuses every
// resource but the cluster.
type ResourceGrants interface {
	AllowedOn(principal, host string, op ClusterOperation, res Resource) bool
}

// StandardAuthorizerClass is the one authorizer.class.name Krabka accepts:
// Kafka's KRaft authorizer, whose ACLs live in the metadata log
// (AccessControlEntryRecord).
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Kafka's ACL codes the authorizer reads (ResourceType, PatternType,
// AclPermissionType), and the names of the cluster resource and the
// wildcards.
const (
	aclResourceCluster = int8(ResourceCluster)
	aclPatternLiteral  = 3
	aclPatternPrefixed = 4
	aclDeny            = 2
	aclAllow           = 3
	clusterResource    = "kafka-cluster"
	aclWildcard        = "*"
	wildcardPrincipal  = "User:*"
)

// standardAuthorizer applies Kafka's StandardAuthorizer rules to the ACLs
// of the node's current metadata image: a super user may do everything;
// otherwise a matching DENY entry refuses, a matching ALLOW entry grants,
// and with no entry on the cluster resource at all
// allow.everyone.if.no.acl.found decides.
type standardAuthorizer struct {
	superUsers    map[string]bool
	allowEveryone bool
	image         func() *metadata.Image
	// table holds the cluster's entries of the last image asked about;
	// it is rebuilt only when an image's ACLs differ from it.
	table atomic.Pointer[aclTable]
}

// aclTable is the entries of one image: all of them (to tell whether a
// later image changed them) and those that apply to the cluster
// resource.
type aclTable struct {
	img     *metadata.Image
	all     []*metadata.ACL
	cluster []*metadata.ACL
}

// newStandardAuthorizer returns the authorizer of super.users (principals
// separated by semicolons) and allow.everyone.if.no.acl.found over the
// images image returns.
func newStandardAuthorizer(superUsers []string, allowEveryone bool, image func() *metadata.Image) *standardAuthorizer {
	a := &standardAuthorizer{superUsers: map[string]bool{}, allowEveryone: allowEveryone, image: image}
	for _, u := range superUsers {
		a.superUsers[u] = true
	}
	return a
}

// Allowed implements [ClusterGrants].
func (a *standardAuthorizer) Allowed(principal, host string, op ClusterOperation) bool {
	if a.superUsers[principal] {
		return true
	}
	return decide(a.current().cluster, a.allowEveryone, principal, host, op)
}

// AllowedOn implements [ResourceGrants]: Kafka's StandardAuthorizer rules
// over the entries that protect res (a literal entry naming it or the
// wildcard, a prefixed entry whose prefix it starts with).
func (a *standardAuthorizer) AllowedOn(principal, host string, op ClusterOperation, res Resource) bool {
	if res == ClusterResource {
		return a.Allowed(principal, host, op)
	}
	if a.superUsers[principal] {
		return true
	}
	var matching []*metadata.ACL
	for _, e := range a.current().all {
		if protects(e, res) {
			matching = append(matching, e)
		}
	}
	return decide(matching, a.allowEveryone, principal, host, op)
}

// current returns the table of the current image, rebuilding it when the
// image's ACLs are not those of the table: a new image with the same
// entries (most commits) reuses the table.
func (a *standardAuthorizer) current() *aclTable {
	img := a.image()
	t := a.table.Load()
	if t != nil && t.img == img {
		return t
	}
	acls := img.ACLs()
	if t != nil && sameEntries(t.all, acls) {
		t = &aclTable{img: img, all: t.all, cluster: t.cluster}
	} else {
		t = buildACLTable(img)
	}
	a.table.Store(t)
	return t
}

// sameEntries reports whether acls holds exactly the entries of all, in
// order. Entries are immutable once in an image, so the same pointers
// mean the same ACLs.
func sameEntries(all []*metadata.ACL, acls metadata.ACLsImage) bool {
	if acls.Len() != len(all) {
		return false
	}
	i := 0
	for e := range acls.All() {
		if all[i] != e {
			return false
		}
		i++
	}
	return true
}

func buildACLTable(img *metadata.Image) *aclTable {
	acls := img.ACLs()
	t := &aclTable{img: img, all: make([]*metadata.ACL, 0, acls.Len())}
	for e := range acls.All() {
		t.all = append(t.all, e)
		if onCluster(e) {
			t.cluster = append(t.cluster, e)
		}
	}
	return t
}

// onCluster reports whether entry e protects the cluster resource.
func onCluster(e *metadata.ACL) bool { return protects(e, ClusterResource) }

// protects reports whether entry e protects res: an entry of res's type
// whose literal name is res's or the wildcard, or whose prefix res's name
// starts with (Kafka's StandardAuthorizerData matching).
func protects(e *metadata.ACL, res Resource) bool {
	if ResourceType(e.ResourceType) != res.Type {
		return false
	}
	switch e.PatternType {
	case aclPatternLiteral:
		return e.ResourceName == res.Name || e.ResourceName == aclWildcard
	case aclPatternPrefixed:
		return strings.HasPrefix(res.Name, e.ResourceName)
	}
	return false
}

// decide applies Kafka's StandardAuthorizerData rules to the entries on
// the cluster resource: any matching DENY refuses, else any matching
// ALLOW grants, else the request is refused, unless there is no entry on
// the resource at all, when allowEveryone decides.
func decide(cluster []*metadata.ACL, allowEveryone bool, principal, host string, op ClusterOperation) bool {
	if len(cluster) == 0 {
		return allowEveryone
	}
	allowed := false
	for _, e := range cluster {
		if e.Principal != principal && e.Principal != wildcardPrincipal {
			continue
		}
		if !hostMatches(e.Host, host) {
			continue
		}
		switch e.PermissionType {
		case aclDeny:
			if ClusterOperation(e.Operation) == OperationAll || ClusterOperation(e.Operation) == op {
				return false
			}
		case aclAllow:
			if grants(ClusterOperation(e.Operation), op) {
				allowed = true
			}
		}
	}
	return allowed
}

// grants reports whether an ALLOW entry for entry permits op: ALL permits
// everything; DESCRIBE is implied by READ, WRITE, DELETE and ALTER, and
// DESCRIBE_CONFIGS by ALTER_CONFIGS (Kafka's AclEntry implied
// operations).
func grants(entry, op ClusterOperation) bool {
	if entry == OperationAll || entry == op {
		return true
	}
	switch op {
	case OperationDescribe:
		return entry == OperationRead || entry == OperationWrite || entry == OperationDelete || entry == OperationAlter
	case OperationDescribeConfigs:
		return entry == OperationAlterConfigs
	}
	return false
}

// hostMatches reports whether an entry's host admits a client at host:
// the wildcard admits every host, an address the same address however it
// is spelled (Kafka compares the client's InetAddress.getHostAddress,
// which spells IPv6 in full).
func hostMatches(entry, host string) bool {
	if entry == aclWildcard || entry == host {
		return true
	}
	a, b := net.ParseIP(entry), net.ParseIP(host)
	return a != nil && b != nil && a.Equal(b)
}
