package raft

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kafkaSecurityProperties are the security and connection-quota
// properties a Kafka controller reads (SslConfigs, SaslConfigs,
// BrokerSecurityConfigs, SecurityConfig, KRaftConfigs, ServerConfigs,
// SocketServerConfigs, QuotaConfig, DelegationTokenManagerConfigs, the
// StandardAuthorizer's own), each with a value an operator would set.
// Krabka enforces none of them, so ParseProperties must refuse each. The
// TLS properties Krabka does enforce are in config_tls_test.go.
var kafkaSecurityProperties = []struct{ key, value, reason string }{
	{"ssl.provider", "SunJSSE", "this TLS setting is not implemented"},
	{"ssl.keymanager.algorithm", "SunX509", "TLS"},
	{"ssl.trustmanager.algorithm", "PKIX", "TLS"},
	{"ssl.secure.random.implementation", "SHA1PRNG", "TLS"},
	{"ssl.engine.factory.class", "com.example.Engine", "TLS"},
	{"ssl.allow.dn.changes", "false", "TLS"},
	{"ssl.allow.san.changes", "false", "TLS"},
	{"ssl.keystore.alias", "kafka", "TLS"},
	{"security.providers", "com.example.Fips", "TLS"},

	{"sasl.enabled.mechanisms", "SCRAM-SHA-512", "no controller listener uses a SASL security protocol, so this setting would be ignored"},
	{"sasl.mechanism.controller.protocol", "PLAIN", "SASL"},
	{"sasl.mechanism.controller.protocol", "GSSAPI", "SASL"}, // Kafka's default, but only a SASL listener reads it
	{"sasl.mechanism.inter.broker.protocol", "PLAIN", "SASL"},
	{"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="hunter2";`, "SASL"},
	{"sasl.server.callback.handler.class", "com.example.Handler", "SASL"},
	{"sasl.client.callback.handler.class", "com.example.Handler", "SASL"},
	{"sasl.login.callback.handler.class", "com.example.Handler", "SASL"},
	{"sasl.login.class", "com.example.Login", "SASL"},
	{"sasl.server.max.receive.size", "524288", "SASL"},
	{"sasl.kerberos.service.name", "kafka", "SASL"},
	{"sasl.kerberos.principal.to.local.rules", "DEFAULT", "SASL"},
	{"sasl.oauthbearer.jwks.endpoint.url", "https://idp.example.com/jwks", "SASL"},
	{"sasl.oauthbearer.expected.audience", "kafka", "SASL"},
	{"connections.max.reauth.ms", "3600000", "SASL"},
	{"connection.failed.authentication.delay.ms", "1000", "SASL"},
	{"security.inter.broker.protocol", "SASL_SSL", "PLAINTEXT"},

	{"principal.builder.class", "com.example.Builder", "principals come from TLS or SASL"},

	{"delegation.token.secret.key", "hunter2", "delegation tokens are not implemented"},
	{"delegation.token.max.lifetime.ms", "604800000", "delegation tokens"},
	{"delegation.token.expiry.time.ms", "86400000", "delegation tokens"},
	{"delegation.token.expiry.check.interval.ms", "3600000", "delegation tokens"},

	{"client.quota.callback.class", "com.example.Quota", "client quotas are not implemented"},

	{"listener.name.controller.max.connections", "100", "per-listener connection limits are not implemented yet"},
	{"listener.name.controller.sasl.enabled.mechanisms", "PLAIN", "listener CONTROLLER is not a controller listener with a SASL security protocol"},
	{"listener.name.controller.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="hunter2";`, "SASL"},
	{"listener.name.controller.scram-sha-256.sasl.server.callback.handler.class", "com.example.Handler", "SASL"},
	{"listener.name.controller.oauthbearer.connections.max.reauth.ms", "3600000", "SASL"},
	{"listener.name.controller.principal.builder.class", "com.example.Builder", "principals"},
	{"listener.name.controller.connections.max.idle.ms", "60000", "per-listener settings (listener.name.<listener>.*) are not implemented"},
}

// TestParsePropertiesRefusesUnenforcedSecurity: each security or
// connection-quota property Krabka does not enforce is a *ConfigError
// naming it, never a Warning, and the error does not show the value.
func TestParsePropertiesRefusesUnenforcedSecurity(t *testing.T) {
	for _, tt := range kafkaSecurityProperties {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			_, w, err := ParseProperties([]byte(baseProperties + tt.key + "=" + tt.value + "\n"))
			got := configErrors(t, err)
			if len(got) != 1 || got[0].Key != tt.key || !strings.Contains(got[0].Reason, tt.reason) {
				t.Fatalf("ParseProperties(%s=%s) = %v; want one *ConfigError for %s saying %q", tt.key, tt.value, err, tt.key, tt.reason)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key {
				t.Errorf("errors.As finds %v, want the problem with %s", ce, tt.key)
			}
			if got[0].Value != "" || (tt.value != "" && strings.Contains(err.Error(), tt.value)) {
				t.Errorf("error %q shows the value, which may be a secret", err)
			}
			if len(w) != 0 {
				t.Errorf("warnings = %v, want none: a refused property is an error only", w)
			}
		})
	}
}

// TestParsePropertiesAcceptsUnsetSecurityValues: a refused property
// written with the value Kafka reads as "not set" protects nothing, so it
// is accepted (and ignored, with a Warning).
func TestParsePropertiesAcceptsUnsetSecurityValues(t *testing.T) {
	for _, line := range []string{
		"security.providers=",
		"client.quota.callback.class=",
		"security.inter.broker.protocol=plaintext",
	} {
		t.Run(line, func(t *testing.T) {
			_, w, err := ParseProperties([]byte(baseProperties + line + "\n"))
			if err != nil {
				t.Fatalf("ParseProperties(%s) = %v, want the unset value accepted", line, err)
			}
			key, _, _ := strings.Cut(line, "=")
			if len(w) != 1 || w[0].Key != key {
				t.Errorf("warnings = %v, want one saying %s is ignored", w, key)
			}
		})
	}
}

// TestParsePropertiesAcceptsReauthOff: connections.max.reauth.ms at 0
// or less turns re-authentication off, which a node without a SASL
// listener has nothing to apply to: accepted, without a warning.
func TestParsePropertiesAcceptsReauthOff(t *testing.T) {
	for _, v := range []string{"0", "-1"} {
		if _, w, err := ParseProperties([]byte(baseProperties + "connections.max.reauth.ms=" + v + "\n")); err != nil || len(w) != 0 {
			t.Errorf("connections.max.reauth.ms=%s: %v, warnings %v; want it accepted", v, err, w)
		}
	}
}

// TestRefusedPropertiesAreNotMirrored: no property Config mirrors falls in
// a refused family; it would be refused before it is read.
func TestRefusedPropertiesAreNotMirrored(t *testing.T) {
	for _, p := range propertyTable {
		if _, ok := findRefused(p.key); ok {
			t.Errorf("%s is both read into Config and refused", p.key)
		}
	}
}

// TestValidateRefusesSecureListeners: a listener mapped to
// SASL_PLAINTEXT or SASL_SSL is refused, by Validate and so by
// ParseProperties and Start, whichever list names the listener.
func TestValidateRefusesSecureListeners(t *testing.T) {
	for _, p := range []SecurityProtocol{SecuritySASLPlaintext, SecuritySASLSSL} {
		cases := []struct {
			name   string
			mutate func(*Config)
			bad    string
		}{
			{"the controller listener", func(c *Config) {
				c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": p}
			}, "CONTROLLER"},
			{"a second controller listener", func(c *Config) {
				c.ControllerListenerNames = []string{"CONTROLLER", "SECURE"}
				c.Listeners = append(c.Listeners, Endpoint{Name: "SECURE", Port: 9094})
				c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecurityPlaintext, "SECURE": p}
			}, "SECURE"},
			{"a listener named after the protocol", func(c *Config) {
				c.ControllerListenerNames = []string{p.String()}
				c.Listeners = []Endpoint{{Name: p.String(), Port: 9093}}
			}, p.String()},
		}
		for _, tt := range cases {
			t.Run(p.String()+"/"+tt.name, func(t *testing.T) {
				c := validConfig()
				tt.mutate(&c)
				got := configErrors(t, c.Validate())
				want := "mechanism GSSAPI (listener " + tt.bad + ") is not implemented"
				if !slices.ContainsFunc(got, func(e *ConfigError) bool {
					return e.Key == keySASLEnabledMechanisms && strings.Contains(e.Reason, want)
				}) {
					t.Errorf("Validate() = %v, want a sasl.enabled.mechanisms problem saying %q", c.Validate(), want)
				}
			})
		}
	}
}

func TestParsePropertiesRefusesSecureListener(t *testing.T) {
	_, _, err := ParseProperties([]byte(baseProperties + "listener.security.protocol.map=CONTROLLER:SASL_SSL\n"))
	got := configErrors(t, err)
	if !slices.ContainsFunc(got, func(e *ConfigError) bool {
		return e.Key == keySASLEnabledMechanisms && strings.Contains(e.Reason, "GSSAPI (listener CONTROLLER) is not implemented")
	}) {
		t.Errorf("ParseProperties = %v, want a sasl.enabled.mechanisms problem: Kafka's default GSSAPI is not implemented", err)
	}
}

func TestStartRefusesSecureListener(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySASLSSL}
	c, err := Start(t.Context(), cfg)
	if err == nil {
		_ = c.Shutdown(t.Context())
		t.Fatal("Start served a listener mapped to SASL_SSL")
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("Start = %v, want a *ConfigError", err)
	}
}

// TestLoadConfigHardenedController: a secured Kafka controller's file is
// refused with one problem per setting Krabka would not enforce, none of
// them a Warning, and no secret in the message.
func TestLoadConfigHardenedController(t *testing.T) {
	_, w, err := LoadConfig(filepath.Join("testdata", "config", "hardened-controller.properties"))
	var keys []string
	for _, p := range configErrors(t, err) {
		keys = append(keys, p.Key)
	}
	want := []string{
		"ssl.principal.mapping.rules", // read by SSL listeners only, and this one is SASL_SSL
		"sasl.mechanism.inter.broker.protocol",
		"listener.name.controller.max.connections",
		"security.inter.broker.protocol",
		"security.providers",
		"principal.builder.class", "delegation.token.secret.key", "delegation.token.max.lifetime.ms",
		"client.quota.callback.class",
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("refused keys:\n got %v\nwant %v", keys, want)
	}
	if len(w) != 0 {
		t.Errorf("warnings = %v, want none", w)
	}
	for _, secret := range []string{"s3cret", "changeit", "${file:"} {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows %q", secret)
		}
	}
}
