package raft

import (
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// NodeID is a node's node.id (int32 on the wire). Negative values mean
// "no node".
type NodeID int32

// String formats the id in decimal.
func (id NodeID) String() string { return strconv.FormatInt(int64(id), 10) }

// ProcessRole is one value of process.roles.
type ProcessRole int8

// The roles Kafka knows. Krabka runs [ControllerRole] only.
const (
	// BrokerRole is process.roles value "broker". Krabka does not run
	// brokers, and [Config.Validate] rejects it.
	BrokerRole ProcessRole = iota + 1
	// ControllerRole is process.roles value "controller".
	ControllerRole
)

// String returns the role as process.roles spells it.
func (r ProcessRole) String() string {
	switch r {
	case BrokerRole:
		return "broker"
	case ControllerRole:
		return "controller"
	default:
		return "ProcessRole(" + strconv.Itoa(int(r)) + ")"
	}
}

// SecurityProtocol is the security protocol of a listener
// (listener.security.protocol.map). The values are Kafka's protocol ids.
type SecurityProtocol int8

// Kafka's security protocols.
const (
	// SecurityPlaintext is PLAINTEXT.
	SecurityPlaintext SecurityProtocol = 0
	// SecuritySSL is SSL.
	SecuritySSL SecurityProtocol = 1
	// SecuritySASLPlaintext is SASL_PLAINTEXT.
	SecuritySASLPlaintext SecurityProtocol = 2
	// SecuritySASLSSL is SASL_SSL.
	SecuritySASLSSL SecurityProtocol = 3
)

// securityProtocols lists every protocol in Kafka's id order.
var securityProtocols = []SecurityProtocol{SecurityPlaintext, SecuritySSL, SecuritySASLPlaintext, SecuritySASLSSL}

// String returns Kafka's name for p.
func (p SecurityProtocol) String() string {
	switch p {
	case SecurityPlaintext:
		return "PLAINTEXT"
	case SecuritySSL:
		return "SSL"
	case SecuritySASLPlaintext:
		return "SASL_PLAINTEXT"
	case SecuritySASLSSL:
		return "SASL_SSL"
	default:
		return "SecurityProtocol(" + strconv.Itoa(int(p)) + ")"
	}
}

func (p SecurityProtocol) valid() bool { return p >= SecurityPlaintext && p <= SecuritySASLSSL }

// Endpoint is one entry of listeners or advertised.listeners, written
// NAME://host:port in a properties file ([host] for an IPv6 address).
type Endpoint struct {
	// Name is the listener name, upper case as Kafka normalises it
	// (CONTROLLER).
	Name string
	// Host is the host name or IP address. Empty means every interface
	// when binding (Kafka stores it as null).
	Host string
	// Port is the TCP port. Port 0 on a listener asks the operating
	// system for a free port.
	Port uint16
}

// String formats e as Kafka writes it: NAME://host:port, with an IPv6
// address in brackets.
func (e Endpoint) String() string { return e.Name + "://" + formatHostPort(e.Host, e.Port) }

// Address returns host:port for net.Listen and net.Dial.
func (e Endpoint) Address() string { return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))) }

// QuorumVoter is one entry of controller.quorum.voters, written
// id@host:port ([host] for an IPv6 address).
type QuorumVoter struct {
	// ID is the voter's node.id.
	ID NodeID
	// Host is the voter's host name or IP address.
	Host string
	// Port is the port of the voter's first controller listener.
	Port uint16
}

// String formats v as Kafka writes it: id@host:port.
func (v QuorumVoter) String() string { return v.ID.String() + "@" + formatHostPort(v.Host, v.Port) }

// Address returns host:port for net.Dial.
func (v QuorumVoter) Address() string { return net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port))) }

// HostPort is one entry of controller.quorum.bootstrap.servers, written
// host:port ([host] for an IPv6 address).
type HostPort struct {
	// Host is a host name or IP address.
	Host string
	// Port is a TCP port.
	Port uint16
}

// String formats h as Kafka writes it: host:port.
func (h HostPort) String() string { return formatHostPort(h.Host, h.Port) }

// Address returns host:port for net.Dial.
func (h HostPort) Address() string { return net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))) }

// formatHostPort writes host:port with an IPv6 address in brackets, as
// Kafka's Utils.formatAddress does.
func formatHostPort(host string, port uint16) string {
	p := strconv.Itoa(int(port))
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + p
	}
	return host + ":" + p
}

// Config configures one Krabka controller node. Every field but the
// Go-only ones at the end mirrors a Kafka property, named in its
// comment, with Kafka 4.3.1's default as [DefaultConfig] sets it.
//
// Build a Config with [DefaultConfig] (then set the identity, listeners
// and quorum), with [ForTests], or from a server.properties file with
// [LoadConfig] or [ParseProperties]. [Config.Validate] reports every
// problem and changes nothing. Slices and maps are not copied: do not
// change them while a node uses the Config.
type Config struct {
	// NodeID is node.id, this node's id (≥ 0). It has no default: -1
	// means unset. A properties file may spell it broker.id, Kafka's
	// older name for the same setting.
	NodeID NodeID
	// ProcessRoles is process.roles. Krabka runs controllers only, so it
	// must be exactly [ControllerRole]; "broker" (and with it Kafka's
	// combined broker,controller mode) is rejected.
	ProcessRoles []ProcessRole
	// ControllerListenerNames is controller.listener.names: the names of
	// the listeners that serve the controller protocol. The first is the
	// one KRaft uses to reach the other voters and the default listener
	// of the voter set. Every name must appear in Listeners.
	ControllerListenerNames []string
	// Listeners is listeners (default PLAINTEXT://:9092): the endpoints
	// this node binds. On a controller-only node every listener must be
	// a controller listener.
	Listeners []Endpoint
	// AdvertisedListeners is advertised.listeners: the endpoints other
	// nodes use to reach this one. Empty means Listeners, name by name
	// (see [Config.AdvertisedControllerEndpoints]). An advertised
	// controller listener must not use 0.0.0.0.
	AdvertisedListeners []Endpoint
	// ListenerSecurityProtocolMap is listener.security.protocol.map,
	// keyed by upper-case listener name. Nil means Kafka's default:
	// every protocol name maps to itself and, when no SSL or SASL
	// listener is in use, each controller listener name maps to
	// PLAINTEXT (see [Config.ListenerSecurityProtocol]). A listener
	// mapped to SASL_PLAINTEXT or SASL_SSL needs the SASL settings of
	// [Config.SASL], and one mapped to SSL or SASL_SSL those of
	// [Config.SSL] (docs/security.md).
	ListenerSecurityProtocolMap map[string]SecurityProtocol
	// SSL holds the TLS properties of the SSL and SASL_SSL listeners by their Kafka
	// keys: ssl.keystore.*, ssl.truststore.*, ssl.key.password, ssl.client.auth,
	// ssl.enabled.protocols, ssl.protocol, ssl.cipher.suites and
	// ssl.endpoint.identification.algorithm, and their per-listener
	// overrides listener.name.<listener>.<key> (listener in lower case),
	// which win over the node-wide key. The first controller listener's
	// settings also secure this node's connections to the other
	// controllers. docs/security.md lists the keys and their defaults.
	SSL map[string]string
	// SASL holds the SASL properties of the SASL_PLAINTEXT and SASL_SSL
	// listeners by their Kafka keys: sasl.enabled.mechanisms,
	// sasl.jaas.config, sasl.mechanism.controller.protocol,
	// sasl.server.max.receive.size,
	// connection.failed.authentication.delay.ms and
	// connections.max.reauth.ms, and the per-listener
	// listener.name.<listener>.sasl.enabled.mechanisms,
	// listener.name.<listener>.<mechanism>.sasl.jaas.config and
	// listener.name.<listener>[.<mechanism>].connections.max.reauth.ms
	// (listener and mechanism in lower case), which win over the
	// node-wide key. PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are
	// implemented; docs/security.md lists the keys and their defaults.
	SASL map[string]string
	// MetadataLogDir is the directory that holds meta.properties and the
	// __cluster_metadata-0 log. In a properties file it is
	// metadata.log.dir; when that is unset, the first entry of log.dirs;
	// when that is unset too, log.dir, whose default is /tmp/kafka-logs.
	MetadataLogDir string

	// QuorumVoters is controller.quorum.voters, the static voter set
	// (kraft.version 0). When it is not empty it must contain NodeID.
	QuorumVoters []QuorumVoter
	// QuorumBootstrapServers is controller.quorum.bootstrap.servers, the
	// endpoints a node of a dynamic quorum (KIP-853) asks for the
	// leader. QuorumVoters and QuorumBootstrapServers must not both be
	// empty.
	QuorumBootstrapServers []HostPort

	// ElectionTimeout is controller.quorum.election.timeout.ms (1000):
	// the base of the randomised election timer, [Te, 2Te).
	ElectionTimeout time.Duration
	// FetchTimeout is controller.quorum.fetch.timeout.ms (2000): a voter
	// that has not fetched from its leader for this long starts an
	// election; a leader resigns after 1.5 times this without fetches
	// from a majority.
	FetchTimeout time.Duration
	// ElectionBackoffMax is controller.quorum.election.backoff.max.ms
	// (1000): the longest backoff before a new election after a leader
	// resigned.
	ElectionBackoffMax time.Duration
	// RequestTimeout is controller.quorum.request.timeout.ms (2000): how
	// long a request to another node may stay unanswered.
	RequestTimeout time.Duration
	// RetryBackoff is controller.quorum.retry.backoff.ms (20): the pause
	// before sending again to a node whose request failed.
	RetryBackoff time.Duration
	// AppendLinger is controller.quorum.append.linger.ms (25): how long
	// Kafka's leader lets writes accumulate before it writes a batch. It
	// is parsed and validated but the runtime does not wait: its engine
	// commits in groups, appending together everything queued when it
	// turns to the log, with one fsync, and never holds a write back for
	// more to arrive (docs/architecture.md).
	AppendLinger time.Duration
	// AutoJoin is controller.quorum.auto.join.enable (false): whether
	// this controller, while an observer of a dynamic quorum, adds itself
	// to the voter set with AddRaftVoter (KIP-853); the leader accepts it
	// once it has caught up.
	AutoJoin bool
	// FetchMaxBytes is controller.quorum.fetch.max.bytes (1 MiB): the
	// most bytes one Fetch asks for.
	FetchMaxBytes int32
	// FetchSnapshotMaxBytes is controller.quorum.fetch.snapshot.max.bytes
	// (1 MiB): the most bytes one FetchSnapshot asks for.
	FetchSnapshotMaxBytes int32

	// MaxRecordBytesBetweenSnapshots is
	// metadata.log.max.record.bytes.between.snapshots (20 MiB): a
	// snapshot is taken once this many bytes were committed since the
	// last one.
	MaxRecordBytesBetweenSnapshots int64
	// MaxSnapshotInterval is metadata.log.max.snapshot.interval.ms (one
	// hour): a snapshot is taken once this long passed since the last
	// one while new records were committed. 0 disables time-based
	// snapshots.
	MaxSnapshotInterval time.Duration
	// SegmentBytes is metadata.log.segment.bytes (1 GiB, at least
	// 8 MiB): the size at which the log rolls to a new segment.
	SegmentBytes int32
	// SegmentTime is metadata.log.segment.ms (seven days): the age at
	// which the log rolls to a new segment.
	SegmentTime time.Duration
	// MaxRetentionBytes is metadata.max.retention.bytes (100 MiB): old
	// snapshots and the log before them are deleted while the log and
	// snapshots together are larger. Negative disables the limit.
	MaxRetentionBytes int64
	// MaxRetentionTime is metadata.max.retention.ms (seven days): old
	// snapshots and the log before them are deleted once older than
	// this. Negative disables the limit.
	MaxRetentionTime time.Duration
	// MaxIdleInterval is metadata.max.idle.interval.ms (500): how often
	// an idle leader appends a NoOpRecord (KIP-835). 0 disables them.
	MaxIdleInterval time.Duration

	// UnstableAPIVersions is unstable.api.versions.enable (false):
	// whether the controller listeners advertise in ApiVersions, and
	// serve, the API versions Kafka marks latestVersionUnstable. Without
	// it a request at such a version closes its connection, as Kafka's
	// does. Kafka 4.3.1 marks none of the APIs a controller serves, so
	// with this release's version table it changes nothing
	// (docs/operations.md).
	UnstableAPIVersions bool
	// UnstableFeatureVersions is unstable.feature.versions.enable
	// (false): whether the feature levels above each feature's latest
	// production level are supported: advertised in ApiVersions, accepted
	// by UpdateFeatures and by krabka storage format. Every feature level
	// this release implements is a production level, so it changes
	// nothing yet (metadata.KnownFeatures).
	UnstableFeatureVersions bool

	// InternalSegmentBytes is internal.metadata.log.segment.bytes, an
	// override of SegmentBytes below its 8 MiB minimum, for tests only.
	// 0 means unset.
	InternalSegmentBytes int32
	// InternalMaxBatchBytes is internal.metadata.max.batch.size.in.bytes
	// (8 MiB), the largest batch the leader writes; for tests only.
	InternalMaxBatchBytes int32
	// InternalDeleteDelay is internal.metadata.delete.delay.millis (60 s),
	// read and validated as Kafka does but not used: Kafka removes a
	// deleted snapshot's .deleted file after this delay, hoping its
	// readers are done; Krabka's snapshot store removes it when its last
	// reader closes it (snapshot.Store). For tests only.
	InternalDeleteDelay time.Duration

	// SocketRequestMaxBytes is socket.request.max.bytes (100 MiB): the
	// largest request frame a listener accepts.
	SocketRequestMaxBytes int32
	// ConnectionsMaxIdle is connections.max.idle.ms (ten minutes): a
	// connection that sends no request for this long is closed. Negative
	// disables the limit.
	ConnectionsMaxIdle time.Duration
	// MaxConnections is max.connections (2147483647): the most
	// connections the node holds open at once, over all its listeners; a
	// connection beyond it waits unserved until one closes, as Kafka's
	// acceptor waits. 0 serves none, as in Kafka.
	MaxConnections int32
	// MaxConnectionsPerIP is max.connections.per.ip (2147483647): the
	// most connections the node holds open at once from one IP address,
	// over all its listeners. 0 admits only the addresses of
	// MaxConnectionsPerIPOverrides, and is allowed only together with
	// them.
	MaxConnectionsPerIP int32
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// per IP address limits that replace MaxConnectionsPerIP; 0 admits
	// no connection from that address. Kafka also takes host names,
	// resolved once at start; Krabka refuses them: write the address.
	MaxConnectionsPerIPOverrides map[string]int32
	// MaxConnectionCreationRate is max.connection.creation.rate
	// (2147483647, no limit): the most connections a second the node
	// accepts over all its listeners together (KIP-612). Above it the
	// listeners delay accepting, by at most a second per connection;
	// nothing is refused. 0 lets one connection a second through, as in
	// Kafka, whose delay is capped at one quota window (QuotaWindowSize).
	MaxConnectionCreationRate int32
	// ListenerMaxConnectionCreationRate is
	// listener.name.<listener>.max.connection.creation.rate, by
	// upper-case listener name: a listener's own rate, applied in
	// addition to MaxConnectionCreationRate.
	ListenerMaxConnectionCreationRate map[string]int32
	// QuotaWindowNum is quota.window.num (11) and QuotaWindowSize
	// quota.window.size.seconds (1 s): the connection creation rates are
	// measured over QuotaWindowNum samples of QuotaWindowSize each, and
	// an accept is delayed by at most QuotaWindowSize, as Kafka measures
	// its quotas. Krabka has no other quota they apply to.
	QuotaWindowNum  int32
	QuotaWindowSize time.Duration

	// AuthorizerClassName is authorizer.class.name. Empty (the default)
	// serves every request to every client that reaches a listener.
	// [StandardAuthorizerClass] checks each request but ApiVersions
	// against the ACLs of the node's metadata image (docs/security.md
	// lists the operation each request needs); any other class is
	// refused.
	AuthorizerClassName string
	// SuperUsers is super.users, principals ("User:CN=admin") separated
	// by semicolons, whom the authorizer grants every operation. Like
	// AllowEveryoneIfNoACLFound it does nothing without
	// AuthorizerClassName.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found
	// (false): with it the authorizer grants every request while no ACL
	// protects the cluster resource.
	AllowEveryoneIfNoACLFound bool
	// ClusterGrants, when not nil, decides every request but ApiVersions
	// in place of an authorizer; it has no Kafka property and excludes
	// AuthorizerClassName.
	ClusterGrants ClusterGrants
	// ShardRouter, when not nil, serves the KRaft RPCs the controller
	// listeners receive for partitions other than __cluster_metadata-0
	// (see [ShardRouter]); it has no Kafka property.
	ShardRouter ShardRouter
	// AdminRouter, when not nil, serves the admin APIs it claims on the
	// controller listeners (see [AdminRouter]); it has no Kafka
	// property.
	AdminRouter AdminRouter
	// DisableControllerRegistration keeps the node from registering
	// itself in the metadata log (RegisterControllerRecord, KIP-919),
	// which Kafka's controllers always do once caught up at
	// metadata.version 3.7-IV0 or later; it has no Kafka property.
	// [ForTests] sets it, so that a test's log holds only what the test
	// writes. The node still serves the registrations of others.
	DisableControllerRegistration bool
	// RegistrationAdmission, when not nil, is asked by the leader before
	// it appends a submission that registers a broker anew (see
	// [RegistrationAdmission]); it has no Kafka property.
	RegistrationAdmission RegistrationAdmission

	// Logger receives the node's log lines. It has no Kafka property;
	// nil discards them.
	Logger *slog.Logger
	// LogLevel is krabka.log.level, Krabka's own property (Kafka sets its
	// levels in log4j files): debug, info, warn or error, the least
	// severe level of the lines the node hands Logger. Empty: every line
	// Logger's handler is enabled for.
	LogLevel string
	// Metrics receives the node's measurements (see [Metrics]). It has no
	// Kafka property; nil records nothing.
	Metrics Metrics
}

// Kafka's limits and defaults that more than one place needs.
const (
	// MinSegmentBytes is the least metadata.log.segment.bytes Kafka
	// accepts: 8 MiB.
	MinSegmentBytes = 8 << 20
	// DefaultMetadataLogDir is log.dir's default, where the metadata log
	// lives when no directory is configured.
	DefaultMetadataLogDir = "/tmp/kafka-logs"
)

// DefaultConfig returns Kafka 4.3.1's defaults. It sets no node.id (-1),
// no process.roles, no controller.listener.names and no quorum, so it
// does not pass [Config.Validate] until those are set.
func DefaultConfig() Config {
	return Config{
		NodeID:         -1,
		Listeners:      []Endpoint{{Name: "PLAINTEXT", Port: 9092}},
		MetadataLogDir: DefaultMetadataLogDir,

		ElectionTimeout:       1000 * time.Millisecond,
		FetchTimeout:          2000 * time.Millisecond,
		ElectionBackoffMax:    1000 * time.Millisecond,
		RequestTimeout:        2000 * time.Millisecond,
		RetryBackoff:          20 * time.Millisecond,
		AppendLinger:          25 * time.Millisecond,
		FetchMaxBytes:         1 << 20,
		FetchSnapshotMaxBytes: 1 << 20,

		MaxRecordBytesBetweenSnapshots: 20 << 20,
		MaxSnapshotInterval:            time.Hour,
		SegmentBytes:                   1 << 30,
		SegmentTime:                    7 * 24 * time.Hour,
		MaxRetentionBytes:              100 << 20,
		MaxRetentionTime:               7 * 24 * time.Hour,
		MaxIdleInterval:                500 * time.Millisecond,

		InternalMaxBatchBytes: 8 << 20,
		InternalDeleteDelay:   60 * time.Second,

		SocketRequestMaxBytes: 100 << 20,
		ConnectionsMaxIdle:    10 * time.Minute,
		MaxConnections:        math.MaxInt32,
		MaxConnectionsPerIP:   math.MaxInt32,

		MaxConnectionCreationRate: math.MaxInt32,
		QuotaWindowNum:            11,
		QuotaWindowSize:           time.Second,
	}
}

// ForTests returns a valid Config for a single-node quorum in dir, for
// tests and examples: node nodeID is the only voter and the only
// controller, on a CONTROLLER listener at 127.0.0.1 port 0, so the
// operating system picks a free port. Its own voter entry names port 0
// too; a single voter elects itself and never connects to itself.
//
// Timers are short so that tests run fast: election timeout 100 ms,
// election backoff 100 ms, fetch and request timeouts 1 s, retry backoff
// 10 ms, append linger 1 ms. NoOpRecords (MaxIdleInterval 0) and the
// node's own controller registration (DisableControllerRegistration) are
// off, so the log holds only what a test writes. Everything else keeps
// Kafka's defaults.
func ForTests(nodeID NodeID, dir string) Config {
	c := DefaultConfig()
	c.NodeID = nodeID
	c.ProcessRoles = []ProcessRole{ControllerRole}
	c.ControllerListenerNames = []string{"CONTROLLER"}
	c.Listeners = []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 0}}
	c.MetadataLogDir = dir
	c.QuorumVoters = []QuorumVoter{{ID: nodeID, Host: "127.0.0.1", Port: 0}}
	c.ElectionTimeout = 100 * time.Millisecond
	c.ElectionBackoffMax = 100 * time.Millisecond
	c.FetchTimeout = time.Second
	c.RequestTimeout = time.Second
	c.RetryBackoff = 10 * time.Millisecond
	c.AppendLinger = time.Millisecond
	c.MaxIdleInterval = 0
	c.DisableControllerRegistration = true
	return c
}

// EffectiveSegmentBytes returns the segment size the log uses:
// InternalSegmentBytes when set, else SegmentBytes.
func (c Config) EffectiveSegmentBytes() int32 {
	if c.InternalSegmentBytes > 0 {
		return c.InternalSegmentBytes
	}
	return c.SegmentBytes
}

// AdvertisedControllerEndpoints returns the endpoint this node publishes
// for each controller listener, in ControllerListenerNames order: the
// advertised listener of that name, else the listener of that name with
// a 0.0.0.0 host turned into the empty (wildcard) host, which stands for
// this machine's name. A name found in neither is skipped. This is
// Kafka's effectiveAdvertisedControllerListeners; the first entry is the
// endpoint the other voters use.
func (c Config) AdvertisedControllerEndpoints() []Endpoint {
	var out []Endpoint
	for _, name := range c.ControllerListenerNames {
		if e, ok := findEndpoint(c.AdvertisedListeners, name); ok {
			out = append(out, e)
		} else if e, ok := findEndpoint(c.Listeners, name); ok {
			if e.Host == nonRoutableHost {
				e.Host = ""
			}
			out = append(out, e)
		}
	}
	return out
}

func findEndpoint(eps []Endpoint, name string) (Endpoint, bool) {
	for _, e := range eps {
		if e.Name == strings.ToUpper(name) {
			return e, true
		}
	}
	return Endpoint{}, false
}

// ListenerSecurityProtocol returns the security protocol of the listener
// called name (compared in upper case), and whether there is one.
//
// With an explicit ListenerSecurityProtocolMap it is that map's entry.
// With a nil map it follows Kafka's default for KRaft nodes: each
// protocol name (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) maps to itself
// and, unless a controller listener name or a listener name is SSL,
// SASL_PLAINTEXT or SASL_SSL, every controller listener name maps to
// PLAINTEXT.
func (c Config) ListenerSecurityProtocol(name string) (SecurityProtocol, bool) {
	name = strings.ToUpper(name)
	if c.ListenerSecurityProtocolMap != nil {
		p, ok := c.ListenerSecurityProtocolMap[name]
		return p, ok
	}
	for _, p := range securityProtocols {
		if p.String() == name {
			return p, true
		}
	}
	if c.usesSSLOrSASL() {
		return 0, false
	}
	for _, cn := range c.ControllerListenerNames {
		if strings.ToUpper(cn) == name {
			return SecurityPlaintext, true
		}
	}
	return 0, false
}

// usesSSLOrSASL reports whether a controller listener name or a
// listener's name is one of the secure protocol names, which turns off
// Kafka's implicit PLAINTEXT mapping of controller listeners.
func (c Config) usesSSLOrSASL() bool {
	secure := func(n string) bool {
		return n == "SSL" || n == "SASL_PLAINTEXT" || n == "SASL_SSL"
	}
	for _, n := range c.ControllerListenerNames {
		if secure(n) {
			return true
		}
	}
	for _, e := range c.Listeners {
		if secure(e.Name) {
			return true
		}
	}
	return false
}
