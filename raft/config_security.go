package raft

import (
	"cmp"
	"strconv"
	"strings"
)

// Reasons for refusing a Kafka security or connection-quota property
// that Krabka does not enforce. docs/security.md lists the families.
const (
	reasonTLS                 = "this TLS setting is not implemented; Krabka reads JKS, PKCS12 and PEM key and trust stores and the TLS settings docs/security.md lists, and will not accept one it would ignore: remove the property, or keep this node on Kafka"
	reasonSASL                = "this SASL setting is not implemented; Krabka implements the SASL mechanisms and settings docs/security.md lists, and will not accept one it would ignore: remove the property, or keep this node on Kafka"
	reasonPrincipal           = "principals come from TLS or SASL authentication, and only Kafka's default principal builder is implemented (the certificate's subject, mapped by ssl.principal.mapping.rules, or the SASL user); Krabka will not accept a principal setting it would ignore: remove the property"
	reasonDelegationToken     = "delegation tokens are not implemented (SCRAM refuses a tokenauth login); remove the property"
	reasonClientQuota         = "client quotas are not implemented; Krabka will not accept a quota callback it would not call: remove the property"
	reasonInterBroker         = "a controller-only node has no inter-broker listener: its connections to the other controllers use the first controller listener's security protocol (map it to SSL for TLS); remove the property or set it to PLAINTEXT"
	reasonListenerConnections = "per-listener connection limits are not implemented yet; Krabka will not accept a limit it would not enforce: use max.connections, which counts the connections of every listener"
	reasonPerListener         = "per-listener settings (listener.name.<listener>.*) are not implemented; Krabka applies only node-wide settings and will not accept one it would ignore"
	reasonReauthMechanism     = "Kafka reads a mechanism's connections.max.reauth.ms only after a listener prefix, and ignores it here: write listener.name.<listener>.<mechanism>.connections.max.reauth.ms (mechanism plain, scram-sha-256 or scram-sha-512), or connections.max.reauth.ms for every mechanism"
)

// refusedProperty is a family of Kafka properties that Krabka does not
// enforce and refuses, rather than ignore, so that a configuration never
// looks more protected than the node is.
type refusedProperty struct {
	// key is the property, or the prefix of the family when prefix is
	// set.
	key    string
	prefix bool
	// unset reports whether a value is one Kafka reads as "not set",
	// which is accepted; nil means every value is refused.
	unset  func(v string) bool
	reason string
}

// refusedProperties are the security and connection-quota properties of
// Kafka's KafkaConfig, SocketServerConfigs, BrokerSecurityConfigs,
// SslConfigs, SaslConfigs, SecurityConfig, KRaftConfigs, QuotaConfig and
// DelegationTokenManagerConfigs that Krabka does not enforce.
var refusedProperties = []refusedProperty{
	{key: "ssl.", prefix: true, reason: reasonTLS},
	{key: "sasl.", prefix: true, reason: reasonSASL},
	{key: "security.providers", unset: isEmpty, reason: reasonTLS},
	{key: "security.inter.broker.protocol", unset: equalsFold("PLAINTEXT"), reason: reasonInterBroker},
	{key: "principal.builder.class", reason: reasonPrincipal},
	{key: "delegation.token.", prefix: true, reason: reasonDelegationToken},
	{key: "client.quota.callback.class", unset: isEmpty, reason: reasonClientQuota},
	{key: perListenerPrefix, prefix: true, reason: reasonPerListener},
}

// keyMaxConnectionCreationRate is Kafka's max.connection.creation.rate.
const keyMaxConnectionCreationRate = "max.connection.creation.rate"

func isEmpty(v string) bool { return v == "" }

func isNotPositive(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n <= 0
}

func equalsFold(want string) func(string) bool {
	return func(v string) bool { return strings.EqualFold(v, want) }
}

// refusal returns why key=v is refused, or "" when Krabka does not refuse
// it. A per-listener key (listener.name.<listener>.<rest>) gets the reason
// of what <rest> would configure, when that is known.
func refusal(key, v string) string {
	if strings.HasSuffix(key, "."+keyConnectionsMaxReauth) {
		if !strings.HasPrefix(key, perListenerPrefix) {
			return reasonReauthMechanism
		}
		return reasonSASL // a mechanism Krabka does not implement
	}
	p, ok := findRefused(key)
	if !ok || (p.unset != nil && p.unset(v)) {
		return ""
	}
	if p.key != perListenerPrefix {
		return p.reason
	}
	_, rest, _ := strings.Cut(strings.TrimPrefix(key, perListenerPrefix), ".")
	return cmp.Or(perListenerRefusal(rest), p.reason)
}

// perListenerPrefix starts Kafka's per-listener overrides.
const perListenerPrefix = "listener.name."

// perListenerRefusal returns the reason for the part of a per-listener key
// after the listener name: a per-listener connection quota, a node-wide
// family, or that family after a SASL mechanism
// (<mechanism>.sasl.jaas.config); "" when none matches.
func perListenerRefusal(rest string) string {
	switch rest {
	case keyMaxConnections:
		return reasonListenerConnections
	}
	if p, ok := findRefused(rest); ok && p.key != perListenerPrefix {
		return p.reason
	}
	if _, afterMechanism, ok := strings.Cut(rest, "."); ok {
		if p, ok := findRefused(afterMechanism); ok && p.key != perListenerPrefix {
			return p.reason
		}
	}
	return ""
}

func findRefused(key string) (refusedProperty, bool) {
	for _, p := range refusedProperties {
		if key == p.key || (p.prefix && strings.HasPrefix(key, p.key)) {
			return p, true
		}
	}
	return refusedProperty{}, false
}
