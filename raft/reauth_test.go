package raft

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/transport"
)

// TestReauthSettingPrecedence: connections.max.reauth.ms of a mechanism
// on a listener is its listener.name.<l>.<mechanism>. key, else the
// listener's key, else the node-wide key, as Kafka's SaslChannelBuilder
// reads it; 0 or less is no lifetime.
func TestReauthSettingPrecedence(t *testing.T) {
	const (
		listener = "listener.name.controller.connections.max.reauth.ms"
		plainKey = "listener.name.controller.plain.connections.max.reauth.ms"
		scramKey = "listener.name.controller.scram-sha-256.connections.max.reauth.ms"
	)
	cases := []struct {
		name        string
		set         map[string]string
		plain, scra time.Duration
	}{
		{"none", nil, 0, 0},
		{"node-wide", map[string]string{keyConnectionsMaxReauth: "60000"}, time.Minute, time.Minute},
		{"listener wins", map[string]string{keyConnectionsMaxReauth: "60000", listener: "30000"}, 30 * time.Second, 30 * time.Second},
		{"mechanism wins", map[string]string{keyConnectionsMaxReauth: "60000", listener: "30000", scramKey: "10000"}, 30 * time.Second, 10 * time.Second},
		{"mechanism off", map[string]string{keyConnectionsMaxReauth: "60000", plainKey: "0"}, 0, time.Minute},
		{"negative is off", map[string]string{keyConnectionsMaxReauth: "-5"}, 0, 0},
		{"beyond a Duration", map[string]string{keyConnectionsMaxReauth: "9223372036854775807"}, time.Duration(maxReauthMs) * time.Millisecond, time.Duration(maxReauthMs) * time.Millisecond},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			saslNode(&c, SecuritySASLPlaintext)
			c.SASL["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256"
			maps.Copy(c.SASL, tt.set)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			h, _, err := c.listenerSASL("CONTROLLER")
			if err != nil {
				t.Fatal(err)
			}
			if got := h.MaxReauth[transport.MechanismPlain]; got != tt.plain {
				t.Errorf("PLAIN lifetime %v, want %v", got, tt.plain)
			}
			if got := h.MaxReauth[transport.MechanismScramSHA256]; got != tt.scra {
				t.Errorf("SCRAM-SHA-256 lifetime %v, want %v", got, tt.scra)
			}
		})
	}
}

// TestValidateReauthRules: a re-authentication setting that cannot be
// read or would be ignored is refused with its key.
func TestValidateReauthRules(t *testing.T) {
	cases := []struct {
		name, line, key, reason string
	}{
		{"not a number", "connections.max.reauth.ms=1h", keyConnectionsMaxReauth, "must be a number of milliseconds"},
		{"a listener that is not SASL", "listener.name.other.connections.max.reauth.ms=60000", "listener.name.other.connections.max.reauth.ms", "would be ignored"},
		{"a mechanism not enabled", "listener.name.controller.scram-sha-512.connections.max.reauth.ms=60000", "listener.name.controller.scram-sha-512.connections.max.reauth.ms", "not enabled on listener CONTROLLER"},
		{"a mechanism not implemented", "listener.name.controller.oauthbearer.connections.max.reauth.ms=60000", "listener.name.controller.oauthbearer.connections.max.reauth.ms", "SASL setting is not implemented"},
		{"a mechanism without a listener", "plain.connections.max.reauth.ms=60000", "plain.connections.max.reauth.ms", "only after a listener prefix"},
	}
	text := baseProperties + "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT\n" +
		"sasl.enabled.mechanisms=PLAIN\nsasl.mechanism.controller.protocol=PLAIN\n" +
		"listener.name.controller.plain.sasl.jaas.config=" + testJAAS + "\n"
	if _, _, err := ParseProperties([]byte(text + "connections.max.reauth.ms=3600000\n")); err != nil {
		t.Fatalf("connections.max.reauth.ms on a SASL listener: %v", err)
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseProperties([]byte(text + tt.line + "\n"))
			got := configErrors(t, err)
			if len(got) != 1 || got[0].Key != tt.key || !strings.Contains(got[0].Reason, tt.reason) {
				t.Fatalf("ParseProperties(%s) = %v; want one problem with %s saying %q", tt.line, err, tt.key, tt.reason)
			}
		})
	}
	if _, _, err := ParseProperties([]byte(baseProperties + "connections.max.reauth.ms=60000\n")); err == nil ||
		!strings.Contains(err.Error(), "no controller listener uses a SASL security protocol") {
		t.Errorf("a lifetime without a SASL listener: %v, want it refused as ignored", err)
	}
}

// TestSASLQuorumReauthenticates: three voters with SASL_PLAINTEXT and a
// session lifetime re-authenticate their connections to each other
// before the sessions end (KIP-368): every listener counts
// re-authentications, none closes an expired session, and the quorum
// keeps committing.
func TestSASLQuorumReauthenticates(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		saslNode(cfg, SecuritySASLPlaintext)
		cfg.SASL[keyConnectionsMaxReauth] = "1500"
	})
	leader := c.leader()
	stats := func(id NodeID) transport.ServerStats { return c.node(id).srv.srvs[0].Stats() }
	waitFor(t, "the followers' connections to the leader to re-authenticate twice", func() bool {
		return stats(leader).Reauthenticated >= 4
	})
	res := submit(t, c.node(c.follower(leader)), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	for id := NodeID(1); id <= 3; id++ {
		if st := stats(id); st.ClosedExpired != 0 || st.ReauthFailed != 0 {
			t.Errorf("node %d: %+v, want no expired session and no failed re-authentication", id, st)
		}
	}
}
