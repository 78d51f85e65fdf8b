package raft

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ConfigError is one problem with one configuration property.
// [Config.Validate], [ParseProperties] and [LoadConfig] join every
// problem they find with [errors.Join]; each joined error is a
// *ConfigError, and errors.As finds the first.
type ConfigError struct {
	// Key is the Kafka property, such as "controller.quorum.voters".
	Key string
	// Value is the offending value as a properties file writes it; empty
	// when the property is missing or the problem is not one value's.
	Value string
	// Reason says what is wrong and, where it helps, what to do.
	Reason string

	// related are the other properties the problem depends on.
	related []string
}

// keys returns Key and the other properties the problem depends on.
func (e *ConfigError) keys() []string { return append([]string{e.Key}, e.related...) }

// Error formats the problem as raft: key="value": reason.
func (e *ConfigError) Error() string {
	if e.Value == "" {
		return "raft: " + e.Key + ": " + e.Reason
	}
	return "raft: " + e.Key + "=" + strconv.Quote(e.Value) + ": " + e.Reason
}

// validHost matches the characters Kafka accepts in a host
// (Utils.validHostPattern).
var validHost = regexp.MustCompile(`^[0-9a-zA-Z\-%._:]*$`)

// failedAuthenticationDelay is Kafka's default of
// connection.failed.authentication.delay.ms.
const failedAuthenticationDelay = 100 * time.Millisecond

// nonRoutableHost is the wildcard address that Kafka refuses wherever
// another node must connect (QuorumConfig.NON_ROUTABLE_HOST).
const nonRoutableHost = "0.0.0.0"

// Validate reports every problem with c, each as a [*ConfigError] naming
// the Kafka property, joined with [errors.Join]; nil means c is valid. It
// does not modify c.
//
// It applies Kafka's rules for a controller-only node (KafkaConfig's
// validation, QuorumConfig, the ConfigDef ranges of each property) and
// Krabka's own: only the controller role; voter entries with distinct,
// non-negative ids and a host, because the consensus core cannot run
// otherwise (Kafka keeps the last of two entries with one id and reads an
// empty host as the local host); upper-case listener names, as Kafka's
// parser leaves them; an SSL or SASL_SSL listener only with a key store
// and TLS settings Krabka can apply as written, and a SASL listener only
// with the PLAIN mechanism and a login module Krabka reads
// (docs/security.md); IP addresses only in
// max.connections.per.ip.overrides; and durations in whole milliseconds,
// as the properties hold them. Kafka enforces no relation between the quorum
// timeouts, and neither does Validate.
func (c Config) Validate() error { return errors.Join(c.problems()...) }

// problems returns every problem with c, each a *ConfigError, in field
// order.
func (c Config) problems() []error { return c.problemsAs(false) }

// problemsAs is problems for a voter-capable node (observer false) or for
// a node started with [StartObserver] (observer true), whose node id must
// stay out of a static voter set and which never joins on its own.
func (c Config) problemsAs(observer bool) []error {
	v := validator{}
	c.validateIdentity(&v)
	c.validateListeners(&v)
	c.validateSSL(&v)
	c.validateSASL(&v)
	c.validateQuorum(&v, observer)
	c.validateNumbers(&v)
	c.validateAuthorizer(&v)
	if c.LogLevel != "" {
		if _, err := ParseLogLevel(c.LogLevel); err != nil {
			v.add(keyLogLevel, c.LogLevel, "%v", err)
		}
	}
	return v.errs
}

type validator struct{ errs []error }

func (v *validator) add(key, value, format string, args ...any) {
	v.errs = append(v.errs, &ConfigError{Key: key, Value: value, Reason: fmt.Sprintf(format, args...)})
}

// addRelated adds a problem with key that also depends on the related
// properties.
func (v *validator) addRelated(key string, related []string, value, format string, args ...any) {
	v.errs = append(v.errs, &ConfigError{Key: key, Value: value, Reason: fmt.Sprintf(format, args...), related: related})
}

func (c Config) validateIdentity(v *validator) {
	switch {
	case c.NodeID == -1:
		v.add(keyNodeID, "", "required: set it to this node's id (0 or more)")
	case c.NodeID < 0:
		v.add(keyNodeID, c.NodeID.String(), "must be at least 0")
	}

	roles := formatRoles(c.ProcessRoles)
	if len(c.ProcessRoles) == 0 {
		v.add(keyProcessRoles, "", "required: Krabka runs controllers only, so set process.roles=controller")
	}
	for i, r := range c.ProcessRoles {
		switch {
		case r == BrokerRole && slices.Contains(c.ProcessRoles, ControllerRole):
			v.add(keyProcessRoles, roles, "Krabka runs controllers only; combined broker and controller mode is not supported, so set process.roles=controller and run the broker as a separate Kafka node")
		case r == BrokerRole:
			v.add(keyProcessRoles, roles, "Krabka runs controllers only and cannot be a broker; set process.roles=controller")
		case r != ControllerRole:
			v.add(keyProcessRoles, roles, "unknown process role %s (only broker and controller exist)", r)
		case slices.Contains(c.ProcessRoles[:i], r):
			v.add(keyProcessRoles, roles, "role %s appears twice", r)
		}
	}

	if c.MetadataLogDir == "" {
		v.add(keyMetadataLogDir, "", "required: set metadata.log.dir, log.dirs or log.dir to the directory of the metadata log")
	}
}

func (c Config) validateListeners(v *validator) {
	names := strings.Join(c.ControllerListenerNames, ",")
	if len(c.ControllerListenerNames) == 0 {
		v.add(keyControllerListenerNames, "", "required: name the listener (from listeners) that serves the controller protocol, such as CONTROLLER")
	}
	for i, n := range c.ControllerListenerNames {
		switch {
		case n == "":
			v.add(keyControllerListenerNames, names, "empty listener name")
		case slices.Contains(c.ControllerListenerNames[:i], n):
			v.add(keyControllerListenerNames, names, "listener %s appears twice", n)
		case !slices.ContainsFunc(c.Listeners, func(e Endpoint) bool { return e.Name == n }):
			hint := ""
			if _, ok := findEndpoint(c.Listeners, n); ok {
				hint = " (listener names are upper case)"
			}
			v.addRelated(keyControllerListenerNames, []string{keyListeners}, names, "listener %s must appear in listeners%s", n, hint)
		}
	}

	listeners := formatEndpoints(c.Listeners)
	if len(c.Listeners) == 0 {
		v.add(keyListeners, "", "required: a controller needs at least one listener, such as CONTROLLER://:9093")
	}
	c.validateEndpoints(v, keyListeners, listeners, c.Listeners)
	for _, e := range c.Listeners {
		if e.Name != "" && !slices.Contains(c.ControllerListenerNames, e.Name) {
			v.addRelated(keyListeners, []string{keyControllerListenerNames}, listeners, "listener %s is not in controller.listener.names; a controller-only node may list controller listeners only", e.Name)
		}
	}
	c.validatePorts(v, listeners)

	advertised := formatEndpoints(c.AdvertisedListeners)
	c.validateEndpoints(v, keyAdvertisedListeners, advertised, c.AdvertisedListeners)
	for _, e := range c.AdvertisedControllerEndpoints() {
		if e.Host == nonRoutableHost {
			v.addRelated(keyAdvertisedListeners, []string{keyControllerListenerNames}, advertised, "controller listener %s advertises the non-routable address 0.0.0.0; advertise a host the other controllers can reach", e.Name)
		}
	}

	for _, name := range sortedKeys(c.ListenerSecurityProtocolMap) {
		p := c.ListenerSecurityProtocolMap[name]
		if name == "" || name != strings.ToUpper(name) {
			v.add(keyListenerSecurityProtocolMap, formatProtocolMap(c.ListenerSecurityProtocolMap), "listener name %q must be non-empty and upper case", name)
		}
		if !p.valid() {
			v.add(keyListenerSecurityProtocolMap, formatProtocolMap(c.ListenerSecurityProtocolMap), "listener %s has unknown security protocol %s", name, p)
		}
	}
}

// validateEndpoints checks what listeners and advertised.listeners share:
// names present, upper case, distinct, and mapped to a security protocol.
func (c Config) validateEndpoints(v *validator, key, value string, eps []Endpoint) {
	for i, e := range eps {
		switch {
		case e.Name == "":
			v.add(key, value, "endpoint %s has no listener name", e)
			continue
		case e.Name != strings.ToUpper(e.Name):
			v.add(key, value, "listener name %s must be upper case", e.Name)
		case slices.ContainsFunc(eps[:i], func(o Endpoint) bool { return o.Name == e.Name }):
			v.add(key, value, "listener %s appears twice; each listener needs its own name", e.Name)
		}
		if !validHost.MatchString(e.Host) {
			v.add(key, value, "listener %s has an invalid host %q", e.Name, e.Host)
		}
		if _, ok := c.ListenerSecurityProtocol(e.Name); !ok {
			v.addRelated(key, []string{keyListenerSecurityProtocolMap, keyControllerListenerNames, keyListeners}, value, "no security protocol defined for listener %s; add it to listener.security.protocol.map", e.Name)
		}
	}
}

// validatePorts applies Kafka's rule that listeners need distinct ports,
// except port 0 and one IPv4 plus one IPv6 address on the same port.
func (c Config) validatePorts(v *validator, value string) {
	byPort := map[uint16][]Endpoint{}
	var ports []uint16
	for _, e := range c.Listeners {
		if e.Port == 0 {
			continue
		}
		if _, ok := byPort[e.Port]; !ok {
			ports = append(ports, e.Port)
		}
		byPort[e.Port] = append(byPort[e.Port], e)
	}
	for _, port := range ports {
		eps := byPort[port]
		if len(eps) < 2 {
			continue
		}
		if len(eps) == 2 && isIPv4(eps[0].Host) != isIPv4(eps[1].Host) && isIP(eps[0].Host) && isIP(eps[1].Host) {
			continue
		}
		v.add(keyListeners, value, "listeners %s and %s share port %d; only one IPv4 and one IPv6 address may share a port", eps[0].Name, eps[1].Name, port)
	}
}

func isIP(host string) bool {
	_, err := parseIP(host)
	return err == nil
}

func isIPv4(host string) bool {
	ip, err := parseIP(host)
	return err == nil && ip.Is4()
}

func (c Config) validateQuorum(v *validator, observer bool) {
	voters := formatVoters(c.QuorumVoters)
	if len(c.QuorumVoters) == 0 && len(c.QuorumBootstrapServers) == 0 {
		v.addRelated(keyQuorumVoters, []string{keyQuorumBootstrapServers}, "", "controller.quorum.voters (a static quorum) or controller.quorum.bootstrap.servers (a dynamic quorum) must name the controllers")
	}
	for i, q := range c.QuorumVoters {
		switch {
		case q.ID < 0:
			v.add(keyQuorumVoters, voters, "voter id %d must be at least 0", q.ID)
		case slices.ContainsFunc(c.QuorumVoters[:i], func(o QuorumVoter) bool { return o.ID == q.ID }):
			v.add(keyQuorumVoters, voters, "voter id %d appears twice", q.ID)
		}
		switch {
		case q.Host == "":
			v.add(keyQuorumVoters, voters, "voter %d has no host", q.ID)
		case !validHost.MatchString(q.Host):
			v.add(keyQuorumVoters, voters, "voter %d has an invalid host %q", q.ID, q.Host)
		case q.Host == nonRoutableHost:
			v.add(keyQuorumVoters, voters, "voter %d has the non-routable host 0.0.0.0; name a host the other controllers can reach", q.ID)
		}
	}
	isVoter := slices.ContainsFunc(c.QuorumVoters, func(q QuorumVoter) bool { return q.ID == c.NodeID })
	if observer && isVoter {
		v.addRelated(keyQuorumVoters, []string{keyNodeID}, voters, "an observer's id %d must not be one of the voters", c.NodeID)
	}
	if observer && c.AutoJoin {
		v.add(keyAutoJoin, "true", "an observer never joins the voter set; leave it false")
	}
	if !observer && len(c.QuorumVoters) > 0 && c.NodeID >= 0 && !isVoter {
		v.addRelated(keyQuorumVoters, []string{keyNodeID}, voters, "this node's id %d must be one of the voters, since process.roles contains controller", c.NodeID)
	}
	servers := formatHostPorts(c.QuorumBootstrapServers)
	for _, s := range c.QuorumBootstrapServers {
		switch {
		case s.Host == "":
			v.add(keyQuorumBootstrapServers, servers, "entry %s has no host", s)
		case !validHost.MatchString(s.Host):
			v.add(keyQuorumBootstrapServers, servers, "entry %s has an invalid host", s)
		}
	}
}

// validateNumbers checks each numeric property against Kafka's range.
func (c Config) validateNumbers(v *validator) {
	intMillis := func(key string, d time.Duration, lo time.Duration) {
		c.checkMillis(v, key, d, lo, math.MaxInt32)
	}
	intMillis(keyElectionTimeout, c.ElectionTimeout, 0)
	intMillis(keyFetchTimeout, c.FetchTimeout, 0)
	intMillis(keyElectionBackoffMax, c.ElectionBackoffMax, 0)
	intMillis(keyRequestTimeout, c.RequestTimeout, 0)
	intMillis(keyRetryBackoff, c.RetryBackoff, 0)
	intMillis(keyAppendLinger, c.AppendLinger, 0)
	intMillis(keyMaxIdleInterval, c.MaxIdleInterval, 0)
	// The log's segment.ms must be at least 1 (Kafka's LogConfig).
	c.checkMillis(v, keySegmentTime, c.SegmentTime, time.Millisecond, math.MaxInt64)
	c.checkMillis(v, keyMaxSnapshotInterval, c.MaxSnapshotInterval, 0, math.MaxInt64)
	c.checkMillis(v, keyInternalDeleteDelay, c.InternalDeleteDelay, 0, math.MaxInt64)
	c.checkMillis(v, keyMaxRetentionTime, c.MaxRetentionTime, math.MinInt64, math.MaxInt64)
	c.checkMillis(v, keyConnectionsMaxIdle, c.ConnectionsMaxIdle, math.MinInt64, math.MaxInt64)
	// Kafka closes a connection that failed authentication after
	// connection.failed.authentication.delay.ms (100 by default; Krabka
	// keeps the default); the idle timeout must be longer, or the answer
	// would never reach the client.
	if c.ConnectionsMaxIdle >= 0 && c.ConnectionsMaxIdle <= failedAuthenticationDelay {
		v.add(keyConnectionsMaxIdle, formatMillis(c.ConnectionsMaxIdle), "must be more than %d (connection.failed.authentication.delay.ms), or negative to never close idle connections", failedAuthenticationDelay.Milliseconds())
	}

	atLeast := func(key string, n, lo int64) {
		if n < lo {
			v.add(key, strconv.FormatInt(n, 10), "must be at least %d", lo)
		}
	}
	atLeast(keyFetchMaxBytes, int64(c.FetchMaxBytes), 1)
	atLeast(keyFetchSnapshotMaxBytes, int64(c.FetchSnapshotMaxBytes), 1)
	atLeast(keyMaxRecordBytesBetweenSnapshots, c.MaxRecordBytesBetweenSnapshots, 1)
	atLeast(keySegmentBytes, int64(c.SegmentBytes), MinSegmentBytes)
	atLeast(keyInternalSegmentBytes, int64(c.InternalSegmentBytes), 0)
	atLeast(keyInternalMaxBatchBytes, int64(c.InternalMaxBatchBytes), 1)
	atLeast(keySocketRequestMaxBytes, int64(c.SocketRequestMaxBytes), 1)
	atLeast(keyMaxConnections, int64(c.MaxConnections), 0)
	atLeast(keyMaxConnectionsPerIP, int64(c.MaxConnectionsPerIP), 0)
	atLeast(keyMaxConnectionCreationRate, int64(c.MaxConnectionCreationRate), 0)
	atLeast(keyQuotaWindowNum, int64(c.QuotaWindowNum), 1)
	if c.QuotaWindowSize < time.Second || c.QuotaWindowSize%time.Second != 0 {
		v.add(keyQuotaWindowSize, c.QuotaWindowSize.String(), "must be a whole number of seconds, at least 1")
	}
	for _, name := range sortedKeys(c.ListenerMaxConnectionCreationRate) {
		key := listenerRateProperty(name)
		atLeast(key, int64(c.ListenerMaxConnectionCreationRate[name]), 0)
		if !slices.ContainsFunc(c.ControllerListenerNames, func(n string) bool { return strings.EqualFold(n, name) }) {
			v.addRelated(key, []string{keyControllerListenerNames}, "", "listener %s is not a controller listener, so this rate would be ignored", name)
		}
	}

	if c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0 {
		v.addRelated(keyMaxConnectionsPerIP, []string{keyMaxConnectionsPerIPOverrides}, "0", "may be 0 only when max.connections.per.ip.overrides is set")
	}
	overrides := formatOverrides(c.MaxConnectionsPerIPOverrides)
	seen := map[netip.Addr]string{}
	for _, host := range sortedKeys(c.MaxConnectionsPerIPOverrides) {
		ip, err := overrideAddr(host)
		switch {
		case host == "" || !validHost.MatchString(host):
			v.add(keyMaxConnectionsPerIPOverrides, overrides, "invalid address %q", host)
		case err != nil:
			v.add(keyMaxConnectionsPerIPOverrides, overrides, "%q is not an IP address: Krabka matches connections by IP address and does not resolve host names here (Kafka resolves a name once, at start, to one address), so write the address", host)
		case seen[ip] != "":
			v.add(keyMaxConnectionsPerIPOverrides, overrides, "%s and %s are the same address", seen[ip], host)
		default:
			seen[ip] = host
		}
		if n := c.MaxConnectionsPerIPOverrides[host]; n < 0 {
			v.add(keyMaxConnectionsPerIPOverrides, overrides, "limit %d for %s must be at least 0", n, host)
		}
	}
}

// checkMillis checks that d is a whole number of milliseconds, at least
// lo and at most hi milliseconds, as a Kafka *.ms property holds it.
func (c Config) checkMillis(v *validator, key string, d, lo time.Duration, hi int64) {
	value := formatMillis(d)
	if d%time.Millisecond != 0 {
		v.add(key, d.String(), "must be a whole number of milliseconds")
		return
	}
	if d < lo {
		v.add(key, value, "must be at least %d", lo/time.Millisecond)
	}
	if d.Milliseconds() > hi {
		v.add(key, value, "must be at most %d", hi)
	}
}

// overrideAddr reads an address of max.connections.per.ip.overrides as
// the connection quotas compare it: an IPv4-mapped IPv6 address is its
// IPv4 address and a zone is dropped, as Java's InetAddress compares
// addresses.
func overrideAddr(host string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, err
	}
	return ip.Unmap().WithZone(""), nil
}

// validateAuthorizer accepts Kafka's StandardAuthorizer or none, and
// not together with a ClusterGrants, which would replace it.
func (c Config) validateAuthorizer(v *validator) {
	switch {
	case c.AuthorizerClassName != "" && c.AuthorizerClassName != StandardAuthorizerClass:
		v.add(keyAuthorizerClassName, c.AuthorizerClassName, "Krabka implements only %s, which reads the ACLs of the metadata log; remove the property or set it to that class", StandardAuthorizerClass)
	case c.AuthorizerClassName != "" && c.ClusterGrants != nil:
		v.add(keyAuthorizerClassName, c.AuthorizerClassName, "Config.ClusterGrants is set and would decide every request in place of the authorizer: set one of them")
	}
}
