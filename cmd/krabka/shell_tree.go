package main

import (
	"encoding/base64"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/krabka-go/krabka/metadata"
)

// shellNode is a node of the metadata shell's tree, Kafka's MetadataNode
// (org.apache.kafka.image.node): a directory has named children, a file
// prints text. Nodes are built on demand from an immutable image, so a
// tree costs nothing until it is walked.
type shellNode struct {
	// names returns the children's names of a directory, in any order;
	// nil for a file.
	names func() []string
	// child returns the named child of a directory, or nil.
	child func(name string) *shellNode
	// text is a file's printed form; redacted tells whether secrets are
	// replaced by "[redacted]".
	text func(redacted bool) string
}

// isDir reports whether n is a directory.
func (n *shellNode) isDir() bool { return n.text == nil }

// sortedNames returns a directory's children names sorted, as every Kafka
// command lists them.
func (n *shellNode) sortedNames() []string {
	if n.names == nil {
		return nil
	}
	names := n.names()
	slices.Sort(names)
	return names
}

// shellPrinter prints nodes as Kafka's ShellNodePrinter: a directory's
// name and a colon, its children two spaces deeper; a file's text.
type shellPrinter struct {
	b        *strings.Builder
	depth    int
	redacted bool
}

// print writes n and everything below it.
func (p *shellPrinter) print(n *shellNode) {
	if !n.isDir() {
		p.line(n.text(p.redacted))
		return
	}
	for _, name := range n.sortedNames() {
		c := n.child(name)
		if c == nil {
			continue
		}
		p.line(name + ":")
		p.depth++
		p.print(c)
		p.depth--
	}
}

func (p *shellPrinter) line(s string) {
	p.b.WriteString(strings.Repeat("  ", p.depth))
	p.b.WriteString(s)
	p.b.WriteByte('\n')
}

// leaf returns a file node printing s.
func leaf(s string) *shellNode {
	return &shellNode{text: func(bool) string { return s }}
}

// secretLeaf returns a file node printing s, or "[redacted]" when
// redacting.
func secretLeaf(s string) *shellNode {
	return &shellNode{text: func(redacted bool) string {
		if redacted {
			return "[redacted]"
		}
		return s
	}}
}

// fixedDir returns a directory with the given children.
func fixedDir(children map[string]func() *shellNode) *shellNode {
	return &shellNode{
		names: func() []string {
			return slices.Collect(maps.Keys(children))
		},
		child: func(name string) *shellNode {
			if f, ok := children[name]; ok {
				return f()
			}
			return nil
		},
	}
}

// shellImage is what the shell shows: an image and where it came from.
type shellImage struct {
	img *metadata.Image
	// timeMs is the append time of the last record the image contains
	// (Kafka's MetadataProvenance.lastContainedLogTimeMs).
	timeMs int64
}

// shellRoot returns the root of the tree, Kafka's RootShellNode: /image
// and /local.
func shellRoot(si shellImage) *shellNode {
	return fixedDir(map[string]func() *shellNode{
		"image": func() *shellNode { return imageNode(si) },
		"local": func() *shellNode {
			return fixedDir(map[string]func() *shellNode{
				"version":  func() *shellNode { return leaf(buildVersion()) },
				"commitId": func() *shellNode { return leaf(buildCommit()) },
			})
		},
	})
}

// imageNode is Kafka's MetadataImageNode. As in Kafka, "acls" holds the
// entries by id directly (MetadataImageNode maps it to AclsImageByIdNode)
// and the tokens are under "delegationToken" (DelegationTokenImageNode's
// name).
func imageNode(si shellImage) *shellNode {
	img := si.img
	return fixedDir(map[string]func() *shellNode{
		"provenance": func() *shellNode {
			return leaf(fmt.Sprintf("offset %d, epoch %d, time %s", img.Offset(), img.Epoch(), javaZonedTime(si.timeMs)))
		},
		"features":        func() *shellNode { return featuresNode(img.Features()) },
		"cluster":         func() *shellNode { return clusterNode(img.Cluster()) },
		"topics":          func() *shellNode { return topicsNode(img.Topics()) },
		"configs":         func() *shellNode { return configsNode(img.Configs()) },
		"clientQuotas":    func() *shellNode { return quotasNode(img.ClientQuotas()) },
		"producerIds":     func() *shellNode { return producerIDsNode(img.ProducerIDs()) },
		"acls":            func() *shellNode { return aclsNode(img.ACLs()) },
		"scram":           func() *shellNode { return scramNode(img.Scram()) },
		"delegationToken": func() *shellNode { return tokensNode(img.DelegationTokens()) },
	})
}

// javaZonedTime formats ms since the epoch as Java's
// DateTimeFormatter.ISO_ZONED_DATE_TIME does in zone "UTC": fractional
// seconds without trailing zeros, then "Z[UTC]".
func javaZonedTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.999999999") + "Z[UTC]"
}

// featuresNode is Kafka's FeaturesImageNode: metadataVersion and one
// finalized_<name> file per finalized feature. Kafka 4.x still lists
// zkMigrationState but cannot resolve it (ZooKeeper migration is gone),
// so it is not listed here.
func featuresNode(f metadata.FeaturesImage) *shellNode {
	levels := map[string]int16{}
	for name, level := range f.Levels() {
		if name != metadata.FeatureMetadataVersion {
			levels[name] = level
		}
	}
	return &shellNode{
		names: func() []string {
			out := []string{"metadataVersion"}
			for name := range levels {
				out = append(out, "finalized_"+name)
			}
			return out
		},
		child: func(name string) *shellNode {
			if name == "metadataVersion" {
				return leaf(metadataVersionName(f.MetadataVersion()))
			}
			if feature, ok := strings.CutPrefix(name, "finalized_"); ok {
				// Kafka prints 0 for a feature it does not hold.
				return leaf(strconv.Itoa(int(levels[feature])))
			}
			return nil
		},
	}
}

// clusterNode is Kafka's ClusterImageNode: brokers and controllers by
// id.
func clusterNode(c metadata.ClusterImage) *shellNode {
	return fixedDir(map[string]func() *shellNode{
		"brokers": func() *shellNode {
			return keyedDir(c.Brokers(), func(b *metadata.Broker) string { return strconv.Itoa(int(b.ID)) },
				func(name string) (string, bool) {
					id, ok := parseJavaInt(name)
					if b, found := c.Broker(id); ok && found {
						return brokerString(b), true
					}
					return "", false
				})
		},
		"controllers": func() *shellNode {
			return keyedDir(c.Controllers(), func(b *metadata.Controller) string { return strconv.Itoa(int(b.ID)) },
				func(name string) (string, bool) {
					id, ok := parseJavaInt(name)
					if b, found := c.Controller(id); ok && found {
						return controllerString(b), true
					}
					return "", false
				})
		},
	})
}

// keyedDir returns a directory of files: one per element of all, named
// by name; lookup returns the text of the file with a given name.
func keyedDir[T any](all iter.Seq[T], name func(T) string, lookup func(string) (string, bool)) *shellNode {
	return &shellNode{
		names: func() []string {
			var out []string
			for v := range all {
				out = append(out, name(v))
			}
			return out
		},
		child: func(n string) *shellNode {
			if text, ok := lookup(n); ok {
				return leaf(text)
			}
			return nil
		},
	}
}

// parseJavaInt parses a name as Java's Integer.valueOf does (an optional
// sign and decimal digits, within int32).
func parseJavaInt(s string) (int32, bool) {
	v, err := strconv.ParseInt(s, 10, 32)
	return int32(v), err == nil
}

// javaUUID is Kafka's Uuid.toString: URL-safe base64 without padding.
func javaUUID(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// parseJavaUUID is Kafka's Uuid.fromString.
func parseJavaUUID(s string) ([16]byte, bool) {
	var u [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, false
	}
	copy(u[:], b)
	return u, true
}

// securityProtocolName is Kafka's SecurityProtocol name of an id.
func securityProtocolName(id int16) string {
	switch id {
	case 0:
		return "PLAINTEXT"
	case 1:
		return "SSL"
	case 2:
		return "SASL_PLAINTEXT"
	case 3:
		return "SASL_SSL"
	}
	return "UNKNOWN(" + strconv.Itoa(int(id)) + ")"
}

// endpointsString is the "listeners=[...]" part of Kafka's
// BrokerRegistration and ControllerRegistration toString: Endpoint
// toString by ascending listener name.
func endpointsString(eps []metadata.Endpoint) string {
	sorted := slices.Clone(eps)
	slices.SortFunc(sorted, func(a, b metadata.Endpoint) int { return strings.Compare(a.Name, b.Name) })
	parts := make([]string, len(sorted))
	for i, e := range sorted {
		parts[i] = fmt.Sprintf("Endpoint(listenerName='%s', securityProtocol=%s, host='%s', port=%d)", e.Name, securityProtocolName(e.SecurityProtocol), e.Host, e.Port)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// featuresString is the "supportedFeatures={...}" part: VersionRange
// toString by ascending name.
func featuresString(fs []metadata.SupportedFeature) string {
	sorted := slices.Clone(fs)
	slices.SortFunc(sorted, func(a, b metadata.SupportedFeature) int { return strings.Compare(a.Name, b.Name) })
	parts := make([]string, len(sorted))
	for i, f := range sorted {
		var r string
		switch {
		case f.Min == f.Max:
			r = strconv.Itoa(int(f.Min))
		case f.Max == 32767:
			r = strconv.Itoa(int(f.Min)) + "+"
		default:
			r = strconv.Itoa(int(f.Min)) + "-" + strconv.Itoa(int(f.Max))
		}
		parts[i] = f.Name + ": " + r
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// uuidList is Java's List<Uuid>.toString.
func uuidList(us [][16]byte) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = javaUUID(u)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// intList is Java's Arrays.toString(int[]).
func intList(vs []int32) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(int(v))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// brokerString is Kafka's BrokerRegistration.toString.
func brokerString(b *metadata.Broker) string {
	rack := "Optional.empty"
	if b.Rack != nil {
		rack = "Optional[" + *b.Rack + "]"
	}
	return fmt.Sprintf("BrokerRegistration(id=%d, epoch=%d, incarnationId=%s, listeners=%s, supportedFeatures=%s, rack=%s, fenced=%t, inControlledShutdown=%t, isMigratingZkBroker=%t, directories=%s)",
		b.ID, b.Epoch, javaUUID(b.IncarnationID), endpointsString(b.Endpoints), featuresString(b.Features), rack, b.Fenced, b.InControlledShutdown, b.IsMigratingZkBroker, uuidList(b.LogDirs))
}

// controllerString is Kafka's ControllerRegistration.toString.
func controllerString(c *metadata.Controller) string {
	return fmt.Sprintf("ControllerRegistration(id=%d, incarnationId=%s, zkMigrationReady=%t, listeners=%s, supportedFeatures=%s)",
		c.ID, javaUUID(c.IncarnationID), c.ZkMigrationReady, endpointsString(c.Endpoints), featuresString(c.Features))
}

// partitionString is Kafka's PartitionRegistration.toString.
func partitionString(p *metadata.Partition) string {
	recovery := "RECOVERED"
	if p.LeaderRecoveryState == metadata.LeaderRecovering {
		recovery = "RECOVERING"
	}
	return fmt.Sprintf("PartitionRegistration(replicas=%s, directories=%s, isr=%s, removingReplicas=%s, addingReplicas=%s, elr=%s, lastKnownElr=%s, leader=%d, leaderRecoveryState=%s, leaderEpoch=%d, partitionEpoch=%d)",
		intList(p.Replicas()), uuidList(p.Directories()), intList(p.ISR()), intList(p.RemovingReplicas()), intList(p.AddingReplicas()), intList(p.ELR()), intList(p.LastKnownELR()), p.Leader, recovery, p.LeaderEpoch, p.PartitionEpoch)
}

// topicsNode is Kafka's TopicsImageNode: byName and byId.
func topicsNode(t metadata.TopicsImage) *shellNode {
	return fixedDir(map[string]func() *shellNode{
		"byName": func() *shellNode {
			return &shellNode{
				names: func() []string {
					var out []string
					for name := range t.Names() {
						out = append(out, name)
					}
					return out
				},
				child: func(name string) *shellNode {
					if tp, ok := t.ByName(name); ok {
						return topicNode(tp)
					}
					return nil
				},
			}
		},
		"byId": func() *shellNode {
			return &shellNode{
				names: func() []string {
					var out []string
					for tp := range t.All() {
						out = append(out, javaUUID(tp.ID))
					}
					return out
				},
				child: func(name string) *shellNode {
					id, ok := parseJavaUUID(name)
					if !ok {
						return nil
					}
					if tp, ok := t.ByID(id); ok {
						return topicNode(tp)
					}
					return nil
				},
			}
		},
	})
}

// topicNode is Kafka's TopicImageNode: name, id and one file per
// partition.
func topicNode(tp *metadata.Topic) *shellNode {
	return &shellNode{
		names: func() []string {
			out := []string{"name", "id"}
			for id := range tp.Partitions() {
				out = append(out, strconv.Itoa(int(id)))
			}
			return out
		},
		child: func(name string) *shellNode {
			switch name {
			case "name":
				return leaf(tp.Name)
			case "id":
				return leaf(javaUUID(tp.ID))
			}
			id, err := strconv.ParseInt(name, 10, 32)
			if err != nil {
				return nil
			}
			if p, ok := tp.Partition(int32(id)); ok {
				return leaf(partitionString(p))
			}
			return nil
		},
	}
}

// configResourceTypes are Kafka's ConfigResource.Type names by id, in
// the order of the enum (ConfigurationsImageNode matches names against
// them in this order).
var configResourceTypes = []struct {
	id   int8
	name string
}{
	{metadata.ConfigResourceBrokerLogger, "BROKER_LOGGER"},
	{metadata.ConfigResourceBroker, "BROKER"},
	{metadata.ConfigResourceTopic, "TOPIC"},
	{0, "UNKNOWN"},
	{metadata.ConfigResourceClientMetrics, "CLIENT_METRICS"},
	{metadata.ConfigResourceGroup, "GROUP"},
}

func configTypeName(id int8) string {
	for _, t := range configResourceTypes {
		if t.id == id {
			return t.name
		}
	}
	return "UNKNOWN"
}

// configsNode is Kafka's ConfigurationsImageNode: one directory per
// resource, named TYPE for a default resource and TYPE:name otherwise.
func configsNode(c metadata.ConfigsImage) *shellNode {
	return &shellNode{
		names: func() []string {
			var out []string
			for r := range c.Resources() {
				if r.Name == "" {
					out = append(out, configTypeName(r.Type))
				} else {
					out = append(out, configTypeName(r.Type)+":"+r.Name)
				}
			}
			return out
		},
		child: func(name string) *shellNode {
			for _, t := range configResourceTypes {
				rest, ok := strings.CutPrefix(name, t.name)
				if !ok {
					continue
				}
				if rest != "" {
					if rest, ok = strings.CutPrefix(rest, ":"); !ok {
						return nil
					}
				}
				return configNode(c, metadata.ConfigResource{Type: t.id, Name: rest})
			}
			return nil
		},
	}
}

// configNode is Kafka's ConfigurationImageNode; sensitive values are
// redacted (MetadataNodeRedactionCriteria.Normal).
func configNode(c metadata.ConfigsImage, r metadata.ConfigResource) *shellNode {
	values := map[string]string{}
	for k, v := range c.Resource(r) {
		values[k] = v
	}
	if len(values) == 0 {
		return nil
	}
	return &shellNode{
		names: func() []string {
			return slices.Collect(maps.Keys(values))
		},
		child: func(name string) *shellNode {
			v, ok := values[name]
			if !ok {
				return nil
			}
			if sensitiveConfig(name) {
				return secretLeaf(v)
			}
			return leaf(v)
		},
	}
}

// sensitiveSuffixes end the names of Kafka's configs of type PASSWORD
// (ConfigDef.Type.PASSWORD, whose isSensitive is true), also under a
// listener prefix ("listener.name.<l>.ssl.keystore.password").
var sensitiveSuffixes = []string{
	".password",
	"sasl.jaas.config",
	"ssl.keystore.key",
	"ssl.keystore.certificate.chain",
	"ssl.truststore.certificates",
	".secret",
	"secret.key",
	"client.secret",
}

// sensitiveConfig reports whether a config's value is a secret.
func sensitiveConfig(key string) bool {
	for _, s := range sensitiveSuffixes {
		if key == strings.TrimPrefix(s, ".") || strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// quotaEntityName is Kafka's ClientQuotasImageNode name of an entity:
// clientId(...), ip(...), user(...) in that order joined by "_", with
// '\', '(' and ')' escaped by '\'. Kafka's ClientQuotaEntity holds a
// default part as a null name, which this naming skips, as Kafka's does.
func quotaEntityName(entity []metadata.QuotaEntityPart) string {
	var parts []string
	for _, typ := range []struct{ entity, label string }{
		{metadata.QuotaEntityClientID, "clientId"},
		{metadata.QuotaEntityIP, "ip"},
		{metadata.QuotaEntityUser, "user"},
	} {
		for _, p := range entity {
			if p.Type != typ.entity {
				continue
			}
			if p.Name != nil {
				parts = append(parts, typ.label+"("+quotaEscaper.Replace(*p.Name)+")")
			}
		}
	}
	return strings.Join(parts, "_")
}

var quotaEscaper = strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)

// quotasNode is Kafka's ClientQuotasImageNode.
func quotasNode(q metadata.ClientQuotasImage) *shellNode {
	byName := map[string]*metadata.ClientQuota{}
	for cq := range q.All() {
		byName[quotaEntityName(cq.Entity)] = cq
	}
	return &shellNode{
		names: func() []string {
			return slices.Collect(maps.Keys(byName))
		},
		child: func(name string) *shellNode {
			cq, ok := byName[name]
			if !ok {
				return nil
			}
			return &shellNode{
				names: func() []string {
					return slices.Collect(iterKeys(cq.Values()))
				},
				child: func(key string) *shellNode {
					if v, ok := cq.Value(key); ok {
						return leaf(javaDouble(v))
					}
					return nil
				},
			}
		},
	}
}

// javaDouble is Java's Double.toString for the values quotas hold:
// integral values keep ".0", others print in the shortest form that
// reads back.
func javaDouble(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v >= 1e7 || (v != 0 && v < 1e-3 && v > -1e-3) || v <= -1e7 {
		s = strconv.FormatFloat(v, 'E', -1, 64)
		mant, exp, _ := strings.Cut(s, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		e, _ := strconv.Atoi(exp) // FormatFloat writes a valid exponent
		return mant + "E" + strconv.Itoa(e)
	}
	if !strings.ContainsAny(s, ".NI") {
		s += ".0"
	}
	return s
}

// producerIDsNode is Kafka's ProducerIdsImageNode.
func producerIDsNode(p metadata.ProducerIDsImage) *shellNode {
	return fixedDir(map[string]func() *shellNode{
		"nextProducerId": func() *shellNode { return leaf(strconv.FormatInt(p.NextProducerID(), 10)) },
	})
}

// aclNames are Kafka's enum names (ResourceType, PatternType,
// AclOperation, AclPermissionType) by id.
var (
	aclResourceTypes   = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	aclPatternTypes    = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	aclOperations      = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}
	aclPermissionTypes = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

func enumName(names []string, id int8) string {
	if id >= 0 && int(id) < len(names) {
		return names[id]
	}
	return "UNKNOWN"
}

// aclString is Kafka's StandardAcl.toString.
func aclString(a *metadata.ACL) string {
	return fmt.Sprintf("StandardAcl(resourceType=%s, resourceName=%s, patternType=%s, principal=%s, host=%s, operation=%s, permissionType=%s)",
		enumName(aclResourceTypes, a.ResourceType), a.ResourceName, enumName(aclPatternTypes, a.PatternType), a.Principal, a.Host,
		enumName(aclOperations, a.Operation), enumName(aclPermissionTypes, a.PermissionType))
}

// aclsNode is Kafka's AclsImageByIdNode.
func aclsNode(a metadata.ACLsImage) *shellNode {
	return keyedDir(a.All(), func(acl *metadata.ACL) string { return javaUUID(acl.ID) },
		func(name string) (string, bool) {
			id, ok := parseJavaUUID(name)
			if acl, found := a.Get(id); ok && found {
				return aclString(acl), true
			}
			return "", false
		})
}

// scramMechanisms are Kafka's ScramMechanism names by id.
var scramMechanisms = []struct {
	id   int8
	name string
}{{metadata.ScramSHA256, "SCRAM-SHA-256"}, {metadata.ScramSHA512, "SCRAM-SHA-512"}}

// scramNode is Kafka's ScramImageNode: one directory per mechanism,
// present even when empty, with one file per user.
func scramNode(s metadata.ScramImage) *shellNode {
	return &shellNode{
		names: func() []string {
			out := make([]string, len(scramMechanisms))
			for i, m := range scramMechanisms {
				out[i] = m.name
			}
			return out
		},
		child: func(name string) *shellNode {
			for _, m := range scramMechanisms {
				if m.name != name {
					continue
				}
				return &shellNode{
					names: func() []string {
						var out []string
						for c := range s.All() {
							if c.Mechanism == m.id {
								out = append(out, c.Name)
							}
						}
						return out
					},
					child: func(user string) *shellNode {
						c, ok := s.Get(m.id, user)
						if !ok {
							return nil
						}
						return &shellNode{text: func(redacted bool) string { return scramString(c, redacted) }}
					},
				}
			}
			return nil
		},
	}
}

// scramString is Kafka's ScramCredentialDataNode print.
func scramString(c *metadata.ScramCredential, redacted bool) string {
	field := func(s string) string {
		if redacted {
			return "[redacted]"
		}
		return s
	}
	return fmt.Sprintf("ScramCredentialData(salt=%s, storedKey=%s, serverKey=%s, iterations=%s)",
		field(fmt.Sprintf("%x", c.Salt)), field(fmt.Sprintf("%x", c.StoredKey)), field(fmt.Sprintf("%x", c.ServerKey)), field(strconv.Itoa(int(c.Iterations))))
}

// tokensNode is Kafka's DelegationTokenImageNode.
func tokensNode(d metadata.DelegationTokensImage) *shellNode {
	return &shellNode{
		names: func() []string {
			var out []string
			for t := range d.All() {
				out = append(out, t.TokenID)
			}
			return out
		},
		child: func(id string) *shellNode {
			t, ok := d.Get(id)
			if !ok {
				return nil
			}
			return &shellNode{text: func(redacted bool) string { return tokenString(t, redacted) }}
		},
	}
}

// tokenString is Kafka's DelegationTokenDataNode print, with its
// parentheses as Kafka writes them.
func tokenString(t *metadata.DelegationToken, redacted bool) string {
	field := func(s string) string {
		if redacted {
			return "[redacted]"
		}
		return s
	}
	return "DelegationTokenData" +
		"tokenId=" + field(t.TokenID) +
		"(owner=" + field(t.Owner) +
		"(tokenRequester=" + field(t.Requester) +
		"(renewers=" + field(strings.Join(t.Renewers, " ")) +
		", issueTimestamp=" + field(strconv.FormatInt(t.IssueTimestamp, 10)) +
		", maxTimestamp=" + field(strconv.FormatInt(t.MaxTimestamp, 10)) + ")" +
		", expiryTimestamp=" + field(strconv.FormatInt(t.ExpirationTimestamp, 10))
}

// iterKeys returns the keys of seq.
func iterKeys[K, V any](seq iter.Seq2[K, V]) iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range seq {
			if !yield(k) {
				return
			}
		}
	}
}
