package metadata

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Config resource types (Kafka's ConfigResource.Type ids).
const (
	// ConfigResourceTopic is a topic's configuration.
	ConfigResourceTopic int8 = 2
	// ConfigResourceBroker is a broker's configuration; the name "" is
	// the cluster-wide default.
	ConfigResourceBroker int8 = 4
	// ConfigResourceBrokerLogger is a broker's logger levels; Kafka
	// changes them on the broker and never in the metadata log, so the
	// image rejects ConfigRecords of this type.
	ConfigResourceBrokerLogger int8 = 8
	// ConfigResourceClientMetrics is a client metrics subscription
	// (KIP-714).
	ConfigResourceClientMetrics int8 = 16
	// ConfigResourceGroup is a consumer or share group's configuration
	// (KIP-848).
	ConfigResourceGroup int8 = 32
)

// ConfigResource names a configurable resource.
type ConfigResource struct {
	// Type is one of the ConfigResource... constants.
	Type int8
	// Name is the resource name (topic name, broker id, ...).
	Name string
}

func compareConfigResource(a, b ConfigResource) int {
	if c := cmp.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// ConfigsImage holds the dynamic configurations by resource (Kafka's
// ConfigurationsImage).
type ConfigsImage struct {
	resources pmap[ConfigResource, pmap[string, string]]
}

// Get returns the value of config key of a resource.
func (c ConfigsImage) Get(r ConfigResource, key string) (string, bool) {
	m, ok := c.resources.Get(r)
	if !ok {
		return "", false
	}
	return m.Get(key)
}

// Resource iterates over the configs of a resource by key.
func (c ConfigsImage) Resource(r ConfigResource) iter.Seq2[string, string] {
	m, ok := c.resources.Get(r)
	if !ok {
		return func(func(string, string) bool) {}
	}
	return m.All()
}

// Resources iterates over the resources that have at least one config,
// by type then name.
func (c ConfigsImage) Resources() iter.Seq[ConfigResource] {
	return func(yield func(ConfigResource) bool) {
		for r := range c.resources.All() {
			if !yield(r) {
				return
			}
		}
	}
}

// Len returns the number of resources with configs.
func (c ConfigsImage) Len() int { return c.resources.Len() }

// Client quota entity types.
const (
	// QuotaEntityUser is a user principal name.
	QuotaEntityUser = "user"
	// QuotaEntityClientID is a client id.
	QuotaEntityClientID = "client-id"
	// QuotaEntityIP is a client IP address.
	QuotaEntityIP = "ip"
)

// QuotaEntityPart is one component of a client quota entity.
type QuotaEntityPart struct {
	// Type is QuotaEntityUser, QuotaEntityClientID or QuotaEntityIP.
	Type string
	// Name is the entity name; nil is the default entity of the type.
	Name *string
}

// ClientQuota is the quota values of one entity.
type ClientQuota struct {
	// Entity are the entity components, sorted by Type.
	Entity []QuotaEntityPart
	values pmap[string, float64]
}

// Value returns the value of quota key.
func (q *ClientQuota) Value(key string) (float64, bool) { return q.values.Get(key) }

// Values iterates over the quota values by key.
func (q *ClientQuota) Values() iter.Seq2[string, float64] { return q.values.All() }

// ClientQuotasImage holds the client quotas by entity (Kafka's
// ClientQuotasImage).
type ClientQuotasImage struct {
	entities pmap[string, *ClientQuota]
}

// Get returns the quotas of an entity, given in any order.
func (c ClientQuotasImage) Get(entity []QuotaEntityPart) (*ClientQuota, bool) {
	return c.entities.Get(quotaEntityKey(sortedEntity(entity)))
}

// All iterates over the entities with at least one quota, in the order of
// their canonical keys.
func (c ClientQuotasImage) All() iter.Seq[*ClientQuota] { return c.entities.Values() }

// Len returns the number of entities with quotas.
func (c ClientQuotasImage) Len() int { return c.entities.Len() }

func sortedEntity(entity []QuotaEntityPart) []QuotaEntityPart {
	out := make([]QuotaEntityPart, len(entity))
	copy(out, entity)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Type < out[j-1].Type; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// quotaEntityKey encodes a sorted entity as a map key.
func quotaEntityKey(entity []QuotaEntityPart) string {
	var b strings.Builder
	for _, p := range entity {
		b.WriteString(p.Type)
		if p.Name == nil {
			b.WriteString("\x00-")
		} else {
			b.WriteString("\x00=")
			b.WriteString(*p.Name)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// ProducerIDsImage holds the producer id allocation state (Kafka's
// ProducerIdsImage).
type ProducerIDsImage struct {
	next int64
}

// NextProducerID returns the first producer id of the next block to
// allocate; -1 when none was ever allocated.
func (p ProducerIDsImage) NextProducerID() int64 { return p.next }

// ACL is an access control entry (AccessControlEntryRecord).
type ACL struct {
	// ID identifies the entry.
	ID [16]byte
	// ResourceType is Kafka's resource type id (2 TOPIC, 3 GROUP, 4
	// CLUSTER, 5 TRANSACTIONAL_ID, 6 DELEGATION_TOKEN, 7 USER).
	ResourceType int8
	// ResourceName is the resource name or pattern.
	ResourceName string
	// PatternType is 3 LITERAL or 4 PREFIXED.
	PatternType int8
	// Principal is "type:name", e.g. "User:alice".
	Principal string
	// Host is the client host, "*" for any.
	Host string
	// Operation is Kafka's ACL operation id (2 ALL ... 14).
	Operation int8
	// PermissionType is 2 DENY or 3 ALLOW.
	PermissionType int8
}

// ACLsImage holds the access control entries by id (Kafka's AclsImage).
type ACLsImage struct {
	byID pmap[[16]byte, *ACL]
	// byBinding maps aclBinding of every entry to its id, to reject a
	// second entry with the same binding as Kafka's AclControlManager.
	byBinding pmap[string, [16]byte]
}

// aclBinding encodes everything but the id of an entry.
func aclBinding(a *ACL) string {
	return fmt.Sprintf("%d\x00%s\x00%d\x00%s\x00%s\x00%d\x00%d", a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.PermissionType)
}

// Get returns the entry with the given id.
func (a ACLsImage) Get(id [16]byte) (*ACL, bool) { return a.byID.Get(id) }

// All iterates over the entries by ascending id bytes.
func (a ACLsImage) All() iter.Seq[*ACL] { return a.byID.Values() }

// Len returns the number of entries.
func (a ACLsImage) Len() int { return a.byID.Len() }

// SCRAM mechanisms (Kafka's ScramMechanism ids).
const (
	// ScramSHA256 is SCRAM-SHA-256.
	ScramSHA256 int8 = 1
	// ScramSHA512 is SCRAM-SHA-512.
	ScramSHA512 int8 = 2
)

// ScramCredential is a user's SCRAM credential for one mechanism.
type ScramCredential struct {
	// Name is the user name.
	Name string
	// Mechanism is ScramSHA256 or ScramSHA512.
	Mechanism int8
	// Salt, StoredKey and ServerKey are the credential's secrets.
	Salt, StoredKey, ServerKey []byte
	// Iterations is the hash iteration count.
	Iterations int32
}

type scramKey struct {
	mechanism int8
	name      string
}

func compareScramKey(a, b scramKey) int {
	if c := cmp.Compare(a.mechanism, b.mechanism); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// ScramImage holds the SCRAM credentials (Kafka's ScramImage).
type ScramImage struct {
	creds pmap[scramKey, *ScramCredential]
}

// Get returns the credential of a user for a mechanism.
func (s ScramImage) Get(mechanism int8, name string) (*ScramCredential, bool) {
	return s.creds.Get(scramKey{mechanism, name})
}

// All iterates over the credentials by mechanism, then user name.
func (s ScramImage) All() iter.Seq[*ScramCredential] { return s.creds.Values() }

// Len returns the number of credentials.
func (s ScramImage) Len() int { return s.creds.Len() }

// DelegationToken is a delegation token (DelegationTokenRecord).
type DelegationToken struct {
	// TokenID identifies the token.
	TokenID string
	// Owner and Requester are principals ("User:alice").
	Owner, Requester string
	// Renewers are the principals that may renew the token.
	Renewers []string
	// IssueTimestamp, MaxTimestamp and ExpirationTimestamp are in ms.
	IssueTimestamp, MaxTimestamp, ExpirationTimestamp int64
}

// Equal reports whether t and u describe the same token; nil equals only
// nil.
func (t *DelegationToken) Equal(u *DelegationToken) bool {
	if t == nil || u == nil {
		return t == u
	}
	return t.TokenID == u.TokenID && t.Owner == u.Owner && t.Requester == u.Requester &&
		slices.Equal(t.Renewers, u.Renewers) && t.IssueTimestamp == u.IssueTimestamp &&
		t.MaxTimestamp == u.MaxTimestamp && t.ExpirationTimestamp == u.ExpirationTimestamp
}

// DelegationTokenOf returns the token r describes, as the image holds it
// once r is replayed. It does not validate r.
func DelegationTokenOf(r *DelegationTokenRecord) *DelegationToken {
	return &DelegationToken{
		TokenID: r.TokenId, Owner: r.Owner, Requester: r.Requester, Renewers: cloneNonEmpty(r.Renewers),
		IssueTimestamp: r.IssueTimestamp, MaxTimestamp: r.MaxTimestamp, ExpirationTimestamp: r.ExpirationTimestamp,
	}
}

// Record returns the DelegationTokenRecord that describes t.
func (t *DelegationToken) Record() *DelegationTokenRecord {
	r := NewDelegationTokenRecord()
	r.TokenId, r.Owner, r.Requester, r.Renewers = t.TokenID, t.Owner, t.Requester, slices.Clone(t.Renewers)
	r.IssueTimestamp, r.MaxTimestamp, r.ExpirationTimestamp = t.IssueTimestamp, t.MaxTimestamp, t.ExpirationTimestamp
	return r
}

// DelegationTokensImage holds the delegation tokens by id (Kafka's
// DelegationTokenImage).
type DelegationTokensImage struct {
	byID pmap[string, *DelegationToken]
}

// Get returns the token with the given id.
func (d DelegationTokensImage) Get(id string) (*DelegationToken, bool) { return d.byID.Get(id) }

// All iterates over the tokens by id.
func (d DelegationTokensImage) All() iter.Seq[*DelegationToken] { return d.byID.Values() }

// Len returns the number of tokens.
func (d DelegationTokensImage) Len() int { return d.byID.Len() }
