package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/magiconair/properties"
)

// The Kafka properties that Config mirrors.
const (
	keyNodeID                         = "node.id"
	keyBrokerID                       = "broker.id"
	keyProcessRoles                   = "process.roles"
	keyControllerListenerNames        = "controller.listener.names"
	keyListeners                      = "listeners"
	keyAdvertisedListeners            = "advertised.listeners"
	keyListenerSecurityProtocolMap    = "listener.security.protocol.map"
	keyMetadataLogDir                 = "metadata.log.dir"
	keyLogDirs                        = "log.dirs"
	keyLogDir                         = "log.dir"
	keyQuorumVoters                   = "controller.quorum.voters"
	keyQuorumBootstrapServers         = "controller.quorum.bootstrap.servers"
	keyElectionTimeout                = "controller.quorum.election.timeout.ms"
	keyFetchTimeout                   = "controller.quorum.fetch.timeout.ms"
	keyElectionBackoffMax             = "controller.quorum.election.backoff.max.ms"
	keyRequestTimeout                 = "controller.quorum.request.timeout.ms"
	keyRetryBackoff                   = "controller.quorum.retry.backoff.ms"
	keyAppendLinger                   = "controller.quorum.append.linger.ms"
	keyAutoJoin                       = "controller.quorum.auto.join.enable"
	keyFetchMaxBytes                  = "controller.quorum.fetch.max.bytes"
	keyFetchSnapshotMaxBytes          = "controller.quorum.fetch.snapshot.max.bytes"
	keyMaxRecordBytesBetweenSnapshots = "metadata.log.max.record.bytes.between.snapshots"
	keyMaxSnapshotInterval            = "metadata.log.max.snapshot.interval.ms"
	keySegmentBytes                   = "metadata.log.segment.bytes"
	keySegmentTime                    = "metadata.log.segment.ms"
	keyMaxRetentionBytes              = "metadata.max.retention.bytes"
	keyMaxRetentionTime               = "metadata.max.retention.ms"
	keyMaxIdleInterval                = "metadata.max.idle.interval.ms"
	keyUnstableAPIVersions            = "unstable.api.versions.enable"
	keyUnstableFeatureVersions        = "unstable.feature.versions.enable"
	keyLogLevel                       = "krabka.log.level"
	keyInternalSegmentBytes           = "internal.metadata.log.segment.bytes"
	keyInternalMaxBatchBytes          = "internal.metadata.max.batch.size.in.bytes"
	keyInternalDeleteDelay            = "internal.metadata.delete.delay.millis"
	keySocketRequestMaxBytes          = "socket.request.max.bytes"
	keyConnectionsMaxIdle             = "connections.max.idle.ms"
	keyMaxConnections                 = "max.connections"
	keyAuthorizerClassName            = "authorizer.class.name"
	keySuperUsers                     = "super.users"
	keyAllowEveryoneIfNoACLFound      = "allow.everyone.if.no.acl.found"
	keyMaxConnectionsPerIP            = "max.connections.per.ip"
	keyMaxConnectionsPerIPOverrides   = "max.connections.per.ip.overrides"
	keyQuotaWindowNum                 = "quota.window.num"
	keyQuotaWindowSize                = "quota.window.size.seconds"
)

// Warning is something in a properties file that does not stop the node
// but that an operator should see, such as a property Krabka does not
// use. A Warning never carries the property's value, which may be a
// secret.
type Warning struct {
	// Key is the property.
	Key string
	// Reason says why the property is not used as written.
	Reason string
}

// String formats the warning as key: reason.
func (w Warning) String() string { return w.Key + ": " + w.Reason }

// Warnings are the warnings of one properties file, in file order.
type Warnings []Warning

// LoadConfig reads the server.properties file at path, as Kafka reads it
// (see [ParseProperties]), and validates the result.
func LoadConfig(path string) (Config, Warnings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("raft: load config: %w", err)
	}
	return ParseProperties(data)
}

// ParseProperties reads a server.properties file's contents into a
// Config that starts from [DefaultConfig], and validates the result.
//
// The text is Java properties, read as Kafka reads it: ISO-8859-1, with
// # and ! comments, key=value, key: value and key value lines, backslash
// line continuations and \uXXXX escapes, and no ${...} expansion (Kafka
// leaves such values as written). Values are trimmed, as Kafka trims
// them.
//
// Besides the properties Config mirrors, it reads log.dirs and log.dir
// for the metadata directory (see [Config.MetadataLogDir]) and broker.id,
// Kafka's older name for node.id. A security or connection-quota
// property that Krabka does not enforce (TLS, SASL, authorizers,
// delegation tokens, connection rates, per-listener settings; see
// docs/security.md) is a [*ConfigError] naming it, without its value,
// which may be a secret, unless its value is one Kafka reads as unset.
// Any other property, such as a broker's, is not an error: it comes back
// as a [Warning], to be logged. A value that cannot be read (a non-integer, a listener without a port) is a [*ConfigError]
// naming the property and the value; it is reported together with every
// problem that [Config.Validate] finds in the rest of the file, joined
// with [errors.Join]. A file that is not valid properties text is an
// error of its own. When err is not nil, the Config holds what could be
// read.
func ParseProperties(data []byte) (Config, Warnings, error) {
	keys, values, err := readProperties(data)
	if err != nil {
		return Config{}, nil, err
	}
	return fromProperties(keys, values)
}

// readProperties reads Java properties text as ParseProperties does.
func readProperties(data []byte) ([]string, map[string]string, error) {
	loader := properties.Loader{Encoding: properties.ISO_8859_1, DisableExpansion: true}
	p, err := loader.LoadBytes(data)
	if err != nil {
		return nil, nil, fmt.Errorf("raft: read properties: %w", err)
	}
	keys := p.Keys()
	values := make(map[string]string, len(keys))
	for _, k := range keys {
		v, _ := p.Get(k)
		values[k] = strings.TrimSpace(v)
	}
	return keys, values, nil
}

// fromProperties builds a Config from properties, taking keys in the
// given order.
func fromProperties(keys []string, values map[string]string) (Config, Warnings, error) {
	c := DefaultConfig()
	var warnings Warnings
	var errs []error
	bad := map[string]bool{}
	for _, k := range keys {
		v := strings.TrimSpace(values[k])
		if k == keyMetadataLogDir || k == keyLogDirs || k == keyLogDir || k == keyBrokerID {
			continue // read below, together with the keys they depend on
		}
		if reason := upperListenerSSLKey(k); reason != "" {
			errs = append(errs, &ConfigError{Key: k, Reason: reason})
			continue
		}
		if _, _, ok := sslBaseKey(k); ok {
			if c.SSL == nil {
				c.SSL = map[string]string{}
			}
			c.SSL[k] = v
			continue
		}
		if _, _, ok := saslBaseKey(k); ok {
			if c.SASL == nil {
				c.SASL = map[string]string{}
			}
			c.SASL[k] = v
			continue
		}
		if listener, ok := listenerRateKey(k); ok {
			n, err := parseInt32(v)
			if err != nil {
				errs = append(errs, &ConfigError{Key: k, Value: v, Reason: err.Error()})
				bad[k] = true
				continue
			}
			if c.ListenerMaxConnectionCreationRate == nil {
				c.ListenerMaxConnectionCreationRate = map[string]int32{}
			}
			if listener != strings.ToLower(listener) {
				errs = append(errs, &ConfigError{Key: k, Value: v, Reason: "per-listener settings name the listener in lower case, as Kafka reads them"})
				continue
			}
			c.ListenerMaxConnectionCreationRate[strings.ToUpper(listener)] = n
			continue
		}
		if slices.Contains(clientOnlyKeys, k) {
			warnings = append(warnings, Warning{Key: k, Reason: "a client setting, read by krabka metadata-quorum add-controller when this file is its --command-config; a controller does not read it"})
			continue
		}
		if reason := refusal(k, v); reason != "" {
			// The value is left out: it may be a secret.
			errs = append(errs, &ConfigError{Key: k, Reason: reason})
			continue
		}
		prop, ok := propertyByKey[k]
		if !ok {
			warnings = append(warnings, Warning{Key: k, Reason: "not used by a Krabka controller; ignored"})
			continue
		}
		warn, err := prop.parse(&c, v)
		if err != nil {
			errs = append(errs, &ConfigError{Key: k, Value: v, Reason: err.Error()})
			bad[k] = true
		}
		if warn != "" {
			warnings = append(warnings, Warning{Key: k, Reason: warn})
		}
	}
	c.MetadataLogDir = resolveMetadataLogDir(values)
	if err := applyBrokerID(&c, values, bad); err != nil {
		errs = append(errs, err)
	}

	for _, e := range c.problems() {
		// A problem that involves an unreadable property was caused by
		// what could not be read, which is reported already.
		if ce, ok := e.(*ConfigError); ok && slices.ContainsFunc(ce.keys(), func(k string) bool { return bad[k] }) {
			continue
		}
		errs = append(errs, e)
	}
	return c, warnings, errors.Join(errs...)
}

// listenerRateKey returns the listener of a
// listener.name.<listener>.max.connection.creation.rate key, as written.
func listenerRateKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, perListenerPrefix)
	if !ok {
		return "", false
	}
	listener, ok := strings.CutSuffix(rest, "."+keyMaxConnectionCreationRate)
	return listener, ok && listener != "" && !strings.Contains(listener, ".")
}

// listenerRateProperty is the per-listener creation rate key of the
// listener called name.
func listenerRateProperty(name string) string {
	return perListenerPrefix + strings.ToLower(name) + "." + keyMaxConnectionCreationRate
}

// applyBrokerID reads broker.id, which Kafka treats as a synonym of
// node.id: it sets node.id when node.id is absent, and must equal it
// otherwise.
func applyBrokerID(c *Config, values map[string]string, bad map[string]bool) error {
	v, ok := values[keyBrokerID]
	if !ok {
		return nil
	}
	v = strings.TrimSpace(v)
	_, hasNodeID := values[keyNodeID]
	id, err := parseInt32(v)
	switch {
	case err != nil:
		bad[keyBrokerID] = true
		if !hasNodeID {
			bad[keyNodeID] = true
		}
		return &ConfigError{Key: keyBrokerID, Value: v, Reason: err.Error()}
	case !hasNodeID:
		c.NodeID = NodeID(id)
	case !bad[keyNodeID] && NodeID(id) != c.NodeID:
		bad[keyNodeID] = true
		return &ConfigError{Key: keyNodeID, Value: c.NodeID.String(), Reason: fmt.Sprintf("must equal broker.id (%d), Kafka's older name for the same setting", id)}
	}
	return nil
}

// resolveMetadataLogDir applies Kafka's rule: metadata.log.dir, else the
// first of log.dirs, else the first of log.dir, else log.dir's default.
func resolveMetadataLogDir(values map[string]string) string {
	if v, ok := values[keyMetadataLogDir]; ok {
		return strings.TrimSpace(v) // even when empty, as Kafka takes it
	}
	dirs, ok := values[keyLogDirs]
	if !ok {
		dirs, ok = values[keyLogDir]
	}
	if !ok {
		return DefaultMetadataLogDir
	}
	if list := splitCSV(dirs); len(list) > 0 {
		return list[0]
	}
	return ""
}

// Properties returns the configuration as Kafka properties: every
// property Config mirrors, by its Kafka name, with the value a
// server.properties file would hold. Durations are in milliseconds;
// listener.security.protocol.map shows the effective map (see
// [Config.ListenerSecurityProtocol]); the metadata directory is
// metadata.log.dir; internal.metadata.log.segment.bytes and
// krabka.log.level appear only when set; a TLS private key given inline (ssl.keystore.key),
// ssl.key.password, ssl.keystore.password and ssl.truststore.password
// show as [hidden], as Kafka logs its secrets. Reading
// the result back gives an equivalent Config, but for those keys.
func (c Config) Properties() map[string]string {
	out := make(map[string]string, len(propertyTable)+1)
	for _, p := range propertyTable {
		if v, ok := p.format(c); ok {
			out[p.key] = v
		}
	}
	out[keyMetadataLogDir] = c.MetadataLogDir
	for k, v := range c.SSL {
		out[k] = shown(k, v)
	}
	for name, n := range c.ListenerMaxConnectionCreationRate {
		out[listenerRateProperty(name)] = strconv.FormatInt(int64(n), 10)
	}
	for k, v := range c.SASL {
		if base, _, _ := saslBaseKey(k); base == keySASLJAASConfig {
			v = hiddenValue
		}
		out[k] = v
	}
	return out
}

// String renders [Config.Properties] as a properties file of key=value
// lines sorted by key, for logging the effective configuration at
// startup. Characters that properties text cannot hold as they are
// (backslashes, control characters, anything beyond ASCII) are escaped
// as Java escapes them, so [ParseProperties] reads the text back.
func (c Config) String() string {
	props := c.Properties()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(k)
		b.WriteByte('=')
		writeEscaped(&b, props[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// writeEscaped writes a property value in ASCII: a leading space and
// backslashes escaped, control and non-ASCII characters as \uXXXX
// (UTF-16, as Java writes them).
func writeEscaped(b *strings.Builder, v string) {
	for i, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == ' ' && i == 0:
			b.WriteString(`\ `)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
}

// property reads and writes one Kafka property of a Config. parse gets
// the trimmed value and may return a warning; format returns false when
// the property is to be left out.
type property struct {
	key    string
	parse  func(c *Config, v string) (warning string, err error)
	format func(c Config) (string, bool)
}

var propertyTable = []property{
	{keyNodeID, func(c *Config, v string) (string, error) {
		n, err := parseInt32(v)
		if err == nil {
			c.NodeID = NodeID(n)
		}
		return "", err
	}, func(c Config) (string, bool) { return c.NodeID.String(), true }},
	{keyProcessRoles, func(c *Config, v string) (string, error) {
		entries, err := splitList(v)
		if err != nil {
			return "", err
		}
		var roles []ProcessRole
		for _, e := range entries {
			switch e {
			case "broker":
				roles = append(roles, BrokerRole)
			case "controller":
				roles = append(roles, ControllerRole)
			default:
				return "", fmt.Errorf("unknown process role %q (only broker and controller exist)", e)
			}
		}
		c.ProcessRoles = roles
		return "", nil
	}, func(c Config) (string, bool) { return formatRoles(c.ProcessRoles), true }},
	{keyControllerListenerNames, func(c *Config, v string) (string, error) {
		entries, err := splitList(v)
		if err == nil {
			c.ControllerListenerNames = entries
		}
		return "", err
	}, func(c Config) (string, bool) { return strings.Join(c.ControllerListenerNames, ","), true }},
	{keyListeners, func(c *Config, v string) (string, error) {
		eps, err := parseEndpoints(v)
		if err == nil {
			c.Listeners = eps
		}
		return "", err
	}, func(c Config) (string, bool) { return formatEndpoints(c.Listeners), true }},
	{keyAdvertisedListeners, func(c *Config, v string) (string, error) {
		eps, err := parseEndpoints(v)
		if err == nil {
			c.AdvertisedListeners = eps
		}
		return "", err
	}, func(c Config) (string, bool) { return formatEndpoints(c.AdvertisedListeners), true }},
	{keyListenerSecurityProtocolMap, func(c *Config, v string) (string, error) {
		m, err := parseProtocolMap(v)
		if err == nil {
			c.ListenerSecurityProtocolMap = m
		}
		return "", err
	}, func(c Config) (string, bool) { return formatProtocolMap(c.effectiveProtocolMap()), true }},
	{keyQuorumVoters, func(c *Config, v string) (string, error) {
		voters, err := parseVoters(v)
		if err == nil {
			c.QuorumVoters = voters
		}
		return "", err
	}, func(c Config) (string, bool) { return formatVoters(c.QuorumVoters), true }},
	{keyQuorumBootstrapServers, func(c *Config, v string) (string, error) {
		servers, err := parseHostPorts(v)
		if err == nil {
			c.QuorumBootstrapServers = servers
		}
		return "", err
	}, func(c Config) (string, bool) { return formatHostPorts(c.QuorumBootstrapServers), true }},
	intMillisProperty(keyElectionTimeout, func(c *Config) *time.Duration { return &c.ElectionTimeout }),
	intMillisProperty(keyFetchTimeout, func(c *Config) *time.Duration { return &c.FetchTimeout }),
	intMillisProperty(keyElectionBackoffMax, func(c *Config) *time.Duration { return &c.ElectionBackoffMax }),
	intMillisProperty(keyRequestTimeout, func(c *Config) *time.Duration { return &c.RequestTimeout }),
	intMillisProperty(keyRetryBackoff, func(c *Config) *time.Duration { return &c.RetryBackoff }),
	intMillisProperty(keyAppendLinger, func(c *Config) *time.Duration { return &c.AppendLinger }),
	boolProperty(keyAutoJoin, func(c *Config) *bool { return &c.AutoJoin }),
	int32Property(keyFetchMaxBytes, func(c *Config) *int32 { return &c.FetchMaxBytes }),
	int32Property(keyFetchSnapshotMaxBytes, func(c *Config) *int32 { return &c.FetchSnapshotMaxBytes }),
	int64Property(keyMaxRecordBytesBetweenSnapshots, func(c *Config) *int64 { return &c.MaxRecordBytesBetweenSnapshots }),
	longMillisProperty(keyMaxSnapshotInterval, func(c *Config) *time.Duration { return &c.MaxSnapshotInterval }),
	int32Property(keySegmentBytes, func(c *Config) *int32 { return &c.SegmentBytes }),
	longMillisProperty(keySegmentTime, func(c *Config) *time.Duration { return &c.SegmentTime }),
	int64Property(keyMaxRetentionBytes, func(c *Config) *int64 { return &c.MaxRetentionBytes }),
	longMillisProperty(keyMaxRetentionTime, func(c *Config) *time.Duration { return &c.MaxRetentionTime }),
	intMillisProperty(keyMaxIdleInterval, func(c *Config) *time.Duration { return &c.MaxIdleInterval }),
	boolProperty(keyUnstableAPIVersions, func(c *Config) *bool { return &c.UnstableAPIVersions }),
	boolProperty(keyUnstableFeatureVersions, func(c *Config) *bool { return &c.UnstableFeatureVersions }),
	{keyInternalSegmentBytes, func(c *Config, v string) (string, error) {
		n, err := parseInt32(v)
		if err != nil {
			return "", err
		}
		if n < 1 {
			return "", errors.New("must be at least 1")
		}
		c.InternalSegmentBytes = n
		return "", nil
	}, func(c Config) (string, bool) {
		return strconv.FormatInt(int64(c.InternalSegmentBytes), 10), c.InternalSegmentBytes != 0
	}},
	int32Property(keyInternalMaxBatchBytes, func(c *Config) *int32 { return &c.InternalMaxBatchBytes }),
	longMillisProperty(keyInternalDeleteDelay, func(c *Config) *time.Duration { return &c.InternalDeleteDelay }),
	int32Property(keySocketRequestMaxBytes, func(c *Config) *int32 { return &c.SocketRequestMaxBytes }),
	longMillisProperty(keyConnectionsMaxIdle, func(c *Config) *time.Duration { return &c.ConnectionsMaxIdle }),
	int32Property(keyMaxConnections, func(c *Config) *int32 { return &c.MaxConnections }),
	int32Property(keyMaxConnectionsPerIP, func(c *Config) *int32 { return &c.MaxConnectionsPerIP }),
	int32Property(keyMaxConnectionCreationRate, func(c *Config) *int32 { return &c.MaxConnectionCreationRate }),
	int32Property(keyQuotaWindowNum, func(c *Config) *int32 { return &c.QuotaWindowNum }),
	{keyQuotaWindowSize, func(c *Config, v string) (string, error) {
		n, err := parseInt32(v)
		if err == nil {
			c.QuotaWindowSize = time.Duration(n) * time.Second
		}
		return "", err
	}, func(c Config) (string, bool) {
		return strconv.FormatInt(int64(c.QuotaWindowSize/time.Second), 10), true
	}},
	{keyMaxConnectionsPerIPOverrides, func(c *Config, v string) (string, error) {
		m, err := parseOverrides(v)
		if err == nil {
			c.MaxConnectionsPerIPOverrides = m
		}
		return "", err
	}, func(c Config) (string, bool) { return formatOverrides(c.MaxConnectionsPerIPOverrides), true }},
	{keyAuthorizerClassName, func(c *Config, v string) (string, error) {
		c.AuthorizerClassName = v
		return "", nil
	}, func(c Config) (string, bool) { return c.AuthorizerClassName, true }},
	{keySuperUsers, func(c *Config, v string) (string, error) {
		c.SuperUsers = nil
		for u := range strings.SplitSeq(v, ";") {
			if u = strings.TrimSpace(u); u != "" {
				c.SuperUsers = append(c.SuperUsers, u)
			}
		}
		return "", nil
	}, func(c Config) (string, bool) { return strings.Join(c.SuperUsers, ";"), true }},
	{keyLogLevel, func(c *Config, v string) (string, error) {
		lv := strings.ToLower(v)
		if _, err := ParseLogLevel(lv); err != nil {
			return "", err
		}
		c.LogLevel = lv
		return "", nil
	}, func(c Config) (string, bool) { return c.LogLevel, c.LogLevel != "" }},
	{keyAllowEveryoneIfNoACLFound, func(c *Config, v string) (string, error) {
		b, err := parseBool(v)
		if err == nil {
			c.AllowEveryoneIfNoACLFound = b
		}
		return "", err
	}, func(c Config) (string, bool) { return strconv.FormatBool(c.AllowEveryoneIfNoACLFound), true }},
}

// ParseLogLevel reads a log level as krabka.log.level and krabka's
// --log-level take it: debug, info, warn or error, in any case (log4j
// writes them in capitals).
func ParseLogLevel(v string) (slog.Level, error) {
	switch strings.ToLower(v) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, errors.New("must be debug, info, warn or error")
}

// parseBool reads Kafka's boolean: true or false in any case.
func parseBool(v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, errors.New("must be true or false")
}

var propertyByKey = func() map[string]property {
	m := make(map[string]property, len(propertyTable))
	for _, p := range propertyTable {
		m[p.key] = p
	}
	return m
}()

func int32Property(key string, field func(*Config) *int32) property {
	return property{key, func(c *Config, v string) (string, error) {
		n, err := parseInt32(v)
		if err == nil {
			*field(c) = n
		}
		return "", err
	}, func(c Config) (string, bool) { return strconv.FormatInt(int64(*field(&c)), 10), true }}
}

func int64Property(key string, field func(*Config) *int64) property {
	return property{key, func(c *Config, v string) (string, error) {
		n, err := parseInt64(v)
		if err == nil {
			*field(c) = n
		}
		return "", err
	}, func(c Config) (string, bool) { return strconv.FormatInt(*field(&c), 10), true }}
}

// boolProperty is a Kafka BOOLEAN property.
func boolProperty(key string, field func(*Config) *bool) property {
	return property{key, func(c *Config, v string) (string, error) {
		b, err := parseBool(v)
		if err == nil {
			*field(c) = b
		}
		return "", err
	}, func(c Config) (string, bool) { return strconv.FormatBool(*field(&c)), true }}
}

// intMillisProperty is a Kafka INT property in milliseconds.
func intMillisProperty(key string, field func(*Config) *time.Duration) property {
	return property{key, func(c *Config, v string) (string, error) {
		n, err := parseInt32(v)
		if err == nil {
			*field(c) = time.Duration(n) * time.Millisecond
		}
		return "", err
	}, func(c Config) (string, bool) { return formatMillis(*field(&c)), true }}
}

// maxMillis is the longest duration a time.Duration holds, in whole
// milliseconds (about 292 years).
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// longMillisProperty is a Kafka LONG property in milliseconds. Values
// beyond what a time.Duration holds (Kafka users write
// 9223372036854775807 for "forever") are capped with a warning.
func longMillisProperty(key string, field func(*Config) *time.Duration) property {
	return property{key, func(c *Config, v string) (string, error) {
		n, err := parseInt64(v)
		if err != nil {
			return "", err
		}
		warn := ""
		if n > maxMillis || n < -maxMillis {
			warn = fmt.Sprintf("%d ms is longer than Krabka can hold; using %d ms (about 292 years)", n, max(min(n, maxMillis), -maxMillis))
			n = max(min(n, maxMillis), -maxMillis)
		}
		*field(c) = time.Duration(n) * time.Millisecond
		return warn, nil
	}, func(c Config) (string, bool) { return formatMillis(*field(&c)), true }}
}
