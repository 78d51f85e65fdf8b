package metadata

import (
	"strconv"
	"strings"
)

// replayConfig applies a ConfigRecord (Kafka's ConfigurationsDelta): a
// value sets the key, null deletes it. Rules: the resource type is
// topic, broker, client metrics or group (Kafka's controller never
// persists broker logger levels); the key is not empty; a topic
// resource names an existing topic (Kafka answers
// UNKNOWN_TOPIC_OR_PARTITION otherwise); a broker resource is "" (the
// cluster default) or a broker id; other resources have a name.
func (img *Image) replayConfig(r *ConfigRecord) error {
	res := ConfigResource{Type: r.ResourceType, Name: r.ResourceName}
	switch r.ResourceType {
	case ConfigResourceTopic:
		if _, ok := img.topics.byName.Get(r.ResourceName); !ok {
			return reject(ErrNotFound, "config %s of unknown topic %s", r.Name, r.ResourceName)
		}
	case ConfigResourceBroker:
		if r.ResourceName != "" && !isBrokerID(r.ResourceName) {
			return reject(ErrInvalidRecord, "config %s of broker %q, which is not a broker id", r.Name, r.ResourceName)
		}
	case ConfigResourceBrokerLogger:
		return reject(ErrInvalidRecord, "logger %s of broker %q: broker logger levels are not kept in the metadata log", r.Name, r.ResourceName)
	case ConfigResourceClientMetrics, ConfigResourceGroup:
		if r.ResourceName == "" {
			return reject(ErrInvalidRecord, "config %s of a resource of type %d without a name", r.Name, r.ResourceType)
		}
	default:
		return reject(ErrInvalidRecord, "unknown config resource type %d", r.ResourceType)
	}
	if r.Name == "" {
		return reject(ErrInvalidRecord, "empty config name for resource %d/%q", r.ResourceType, r.ResourceName)
	}
	m, ok := img.configs.resources.Get(res)
	if !ok {
		m = newPMap[string, string](strings.Compare)
	}
	if r.Value == nil {
		m = m.without(r.Name, img.edit)
	} else {
		m = m.with(r.Name, *r.Value, img.edit)
	}
	if m.Len() == 0 {
		img.configs.resources = img.configs.resources.without(res, img.edit)
	} else {
		img.configs.resources = img.configs.resources.with(res, m, img.edit)
	}
	return nil
}

func isBrokerID(s string) bool {
	n, err := strconv.ParseInt(s, 10, 32)
	return err == nil && n >= 0 && strconv.FormatInt(n, 10) == s
}

// replayClientQuota applies a ClientQuotaRecord: it sets or (Remove)
// deletes one quota of an entity. Rules (Kafka's
// ClientQuotaControlManager): the entity has at least one component; the
// types are user, client-id or ip, each at most once; ip is not combined
// with another type; the key is not empty; a value that is set is
// positive.
func (img *Image) replayClientQuota(r *ClientQuotaRecord) error {
	if len(r.Entity) == 0 {
		return reject(ErrInvalidRecord, "quota %s of an empty entity", r.Key)
	}
	entity := make([]QuotaEntityPart, 0, len(r.Entity))
	for _, e := range r.Entity {
		switch e.EntityType {
		case QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP:
		default:
			return reject(ErrInvalidRecord, "unknown quota entity type %q", e.EntityType)
		}
		for _, o := range entity {
			if o.Type == e.EntityType {
				return reject(ErrInvalidRecord, "quota entity lists type %s twice", e.EntityType)
			}
		}
		entity = append(entity, QuotaEntityPart{Type: e.EntityType, Name: cloneString(e.EntityName)})
	}
	if len(entity) > 1 {
		for _, e := range entity {
			if e.Type == QuotaEntityIP {
				return reject(ErrInvalidRecord, "an ip quota entity cannot be combined with user or client-id")
			}
		}
	}
	if r.Key == "" {
		return reject(ErrInvalidRecord, "empty quota key")
	}
	if !r.Remove && !(r.Value > 0) {
		return reject(ErrInvalidRecord, "quota %s value %v is not positive", r.Key, r.Value)
	}
	entity = sortedEntity(entity)
	key := quotaEntityKey(entity)
	q, ok := img.quotas.entities.Get(key)
	values := newPMap[string, float64](strings.Compare)
	if ok {
		values = q.values
	}
	if r.Remove {
		values = values.without(r.Key, img.edit)
	} else {
		values = values.with(r.Key, r.Value, img.edit)
	}
	if values.Len() == 0 {
		img.quotas.entities = img.quotas.entities.without(key, img.edit)
	} else {
		img.quotas.entities = img.quotas.entities.with(key, &ClientQuota{Entity: entity, values: values}, img.edit)
	}
	return nil
}

// replayProducerIDs applies a ProducerIdsRecord. Rules (Kafka's
// ProducerIdControlManager.replay and AllocateProducerIds): the next
// producer id grows strictly; a record from a broker (id >= 0) carries
// that broker's current epoch; a snapshot writes broker id -1.
func (img *Image) replayProducerIDs(r *ProducerIdsRecord) error {
	if r.NextProducerId <= img.producerIDs.next {
		return reject(ErrInvalidRecord, "next producer id %d is not above the current %d", r.NextProducerId, img.producerIDs.next)
	}
	if r.BrokerId >= 0 {
		if _, err := img.brokerAt(r.BrokerId, r.BrokerEpoch); err != nil {
			return err
		}
	} else if r.BrokerId != -1 {
		return reject(ErrInvalidRecord, "invalid broker id %d", r.BrokerId)
	}
	img.producerIDs.next = r.NextProducerId
	return nil
}

// replayACL applies an AccessControlEntryRecord. Rules (Kafka's
// AclControlManager.validateNewAcl and replay): the id is not zero and
// not in use, and no entry has the same binding (all other fields);
// the resource type, pattern type, operation and permission are concrete
// values (not ANY or UNKNOWN); the resource name and host are not empty;
// the principal has the form type:name.
func (img *Image) replayACL(r *AccessControlEntryRecord) error {
	if r.Id == ([16]byte{}) {
		return reject(ErrInvalidRecord, "zero acl id")
	}
	if _, ok := img.acls.byID.Get(r.Id); ok {
		return reject(ErrAlreadyExists, "acl %s already exists", formatUUID(r.Id))
	}
	switch {
	case r.ResourceType < 2 || r.ResourceType > 7:
		return reject(ErrInvalidRecord, "acl %s: invalid resource type %d", formatUUID(r.Id), r.ResourceType)
	case r.PatternType != 3 && r.PatternType != 4:
		return reject(ErrInvalidRecord, "acl %s: invalid pattern type %d", formatUUID(r.Id), r.PatternType)
	case r.Operation < 2 || r.Operation > 15:
		return reject(ErrInvalidRecord, "acl %s: invalid operation %d", formatUUID(r.Id), r.Operation)
	case r.PermissionType != 2 && r.PermissionType != 3:
		return reject(ErrInvalidRecord, "acl %s: invalid permission type %d", formatUUID(r.Id), r.PermissionType)
	case r.ResourceName == "":
		return reject(ErrInvalidRecord, "acl %s: empty resource name", formatUUID(r.Id))
	case r.Host == "":
		return reject(ErrInvalidRecord, "acl %s: empty host", formatUUID(r.Id))
	}
	if i := strings.IndexByte(r.Principal, ':'); i <= 0 || i == len(r.Principal)-1 {
		return reject(ErrInvalidRecord, "acl %s: principal %q is not of the form type:name", formatUUID(r.Id), r.Principal)
	}
	a := &ACL{
		ID: r.Id, ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, PermissionType: r.PermissionType,
	}
	binding := aclBinding(a)
	if other, ok := img.acls.byBinding.Get(binding); ok {
		return reject(ErrAlreadyExists, "acl %s has the same binding as acl %s", formatUUID(r.Id), formatUUID(other))
	}
	img.acls.byID = img.acls.byID.with(r.Id, a, img.edit)
	img.acls.byBinding = img.acls.byBinding.with(binding, r.Id, img.edit)
	return nil
}

// replayRemoveACL removes an ACL, which must exist.
func (img *Image) replayRemoveACL(r *RemoveAccessControlEntryRecord) error {
	a, ok := img.acls.byID.Get(r.Id)
	if !ok {
		return reject(ErrNotFound, "no acl with id %s", formatUUID(r.Id))
	}
	img.acls.byID = img.acls.byID.without(r.Id, img.edit)
	img.acls.byBinding = img.acls.byBinding.without(aclBinding(a), img.edit)
	return nil
}

// SCRAM iteration bounds (Kafka's ScramMechanism min and max iterations).
const (
	minScramIterations = 4096
	maxScramIterations = 16384
)

// metadataVersion3_5_IV2 adds SCRAM credentials (KIP-554).
const metadataVersion3_5_IV2 int16 = 11

// metadataVersion3_6_IV2 adds delegation tokens (KIP-900).
const metadataVersion3_6_IV2 int16 = 14

// replayScram applies a UserScramCredentialRecord, which creates or
// replaces a credential. Rules: metadata.version is at least 3.5-IV2; the
// user name is not empty; the mechanism is SCRAM-SHA-256 or -512; the
// iterations lie in [4096, 16384]; salt and keys are not empty.
func (img *Image) replayScram(r *UserScramCredentialRecord) error {
	if mv := img.features.metadataVersion; mv < metadataVersion3_5_IV2 {
		return reject(ErrUnsupportedFeature, "SCRAM credentials need metadata.version 3.5-IV2 (11), have %d", mv)
	}
	switch {
	case r.Name == "":
		return reject(ErrInvalidRecord, "empty SCRAM user name")
	case r.Mechanism != ScramSHA256 && r.Mechanism != ScramSHA512:
		return reject(ErrInvalidRecord, "user %s: unknown SCRAM mechanism %d", r.Name, r.Mechanism)
	case r.Iterations < minScramIterations || r.Iterations > maxScramIterations:
		return reject(ErrInvalidRecord, "user %s: %d iterations are outside %d-%d", r.Name, r.Iterations, minScramIterations, maxScramIterations)
	case len(r.Salt) == 0 || len(r.StoredKey) == 0 || len(r.ServerKey) == 0:
		return reject(ErrInvalidRecord, "user %s: empty salt or key", r.Name)
	}
	c := &ScramCredential{
		Name: r.Name, Mechanism: r.Mechanism, Iterations: r.Iterations,
		Salt: cloneNonEmpty(r.Salt), StoredKey: cloneNonEmpty(r.StoredKey), ServerKey: cloneNonEmpty(r.ServerKey),
	}
	img.scram.creds = img.scram.creds.with(scramKey{r.Mechanism, r.Name}, c, img.edit)
	return nil
}

// replayRemoveScram removes a credential, which must exist (Kafka
// answers RESOURCE_NOT_FOUND otherwise).
func (img *Image) replayRemoveScram(r *RemoveUserScramCredentialRecord) error {
	k := scramKey{r.Mechanism, r.Name}
	if _, ok := img.scram.creds.Get(k); !ok {
		return reject(ErrNotFound, "user %s has no credential for SCRAM mechanism %d", r.Name, r.Mechanism)
	}
	img.scram.creds = img.scram.creds.without(k, img.edit)
	return nil
}

// replayDelegationToken applies a DelegationTokenRecord, which creates a
// token or renews it. Rules: metadata.version is at least 3.6-IV2; the
// token id and owner are not empty; the expiration is not after the
// maximum time, and the issue time not after the expiration.
func (img *Image) replayDelegationToken(r *DelegationTokenRecord) error {
	if mv := img.features.metadataVersion; mv < metadataVersion3_6_IV2 {
		return reject(ErrUnsupportedFeature, "delegation tokens need metadata.version 3.6-IV2 (14), have %d", mv)
	}
	switch {
	case r.TokenId == "":
		return reject(ErrInvalidRecord, "empty delegation token id")
	case r.Owner == "":
		return reject(ErrInvalidRecord, "token %s has no owner", r.TokenId)
	case r.ExpirationTimestamp > r.MaxTimestamp:
		return reject(ErrInvalidRecord, "token %s expires at %d, after its maximum time %d", r.TokenId, r.ExpirationTimestamp, r.MaxTimestamp)
	case r.IssueTimestamp > r.ExpirationTimestamp:
		return reject(ErrInvalidRecord, "token %s is issued at %d, after it expires at %d", r.TokenId, r.IssueTimestamp, r.ExpirationTimestamp)
	}
	img.tokens.byID = img.tokens.byID.with(r.TokenId, DelegationTokenOf(r), img.edit)
	return nil
}

// replayRemoveDelegationToken removes a token, which must exist.
func (img *Image) replayRemoveDelegationToken(r *RemoveDelegationTokenRecord) error {
	if _, ok := img.tokens.byID.Get(r.TokenId); !ok {
		return reject(ErrNotFound, "no delegation token %s", r.TokenId)
	}
	img.tokens.byID = img.tokens.byID.without(r.TokenId, img.edit)
	return nil
}
