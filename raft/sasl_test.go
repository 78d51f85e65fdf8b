package raft

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/krabka-go/krabka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"
)

// testJAAS is a PLAIN login module: this node authenticates as admin and
// accepts admin and alice.
const testJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// saslNode maps cfg's controller listener to p with PLAIN.
func saslNode(cfg *Config, p SecurityProtocol) {
	cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": p}
	cfg.SASL = map[string]string{
		"listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
		keySASLControllerMechanism:                         "PLAIN",
		"listener.name.controller.plain.sasl.jaas.config":  testJAAS,
		keyFailedAuthenticationDelay:                       "50",
	}
}

// kgoDescribeQuorumSASL sends DescribeQuorum to addr through kgo
// authenticating with mech (none when nil).
func kgoDescribeQuorumSASL(t *testing.T, addr string, mech sasl.Mechanism) error {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := describeQuorumRequest().RequestWith(ctx, cl.SeedBrokers()[0])
	if err == nil && resp.Topics[0].Partitions[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	return err
}

// TestSASLQuorumElectsAndCommits: three voters with SASL_PLAINTEXT
// between them elect a leader and commit, authenticating with the login
// module's username and password; a kgo client with PLAIN credentials
// gets DescribeQuorum, and one with a wrong password, an unknown user or
// no authentication gets nothing.
func TestSASLQuorumElectsAndCommits(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) { saslNode(cfg, SecuritySASLPlaintext) })
	leader := c.leader()
	res := submit(t, c.node(c.follower(leader)), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)

	addr := c.node(leader).Addr().String()
	if err := kgoDescribeQuorumSASL(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); err != nil {
		t.Fatalf("DescribeQuorum as alice: %v", err)
	}
	for name, auth := range map[string]plain.Auth{
		"wrong password": {User: "alice", Pass: "admin-secret"},
		"unknown user":   {User: "mallory", Pass: "alice-secret"},
	} {
		if err := kgoDescribeQuorumSASL(t, addr, auth.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: err = %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if err := kgoDescribeQuorumSASL(t, addr, nil); err == nil {
		t.Error("a client that did not authenticate got DescribeQuorum")
	}
}

// TestSASLSSLListenerServesPLAINOverTLS: a SASL_SSL listener runs TLS,
// then PLAIN.
func TestSASLSSLListenerServesPLAINOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	cfg := ForTests(1, t.TempDir())
	sslNode(t, &cfg, t.TempDir(), ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca, "none")
	sslSettings := cfg.SSL
	saslNode(&cfg, SecuritySASLSSL)
	cfg.SSL = sslSettings
	node := startNode(t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.Addr().String()), kgo.DialTLSConfig(clientTLS(t, ca, nil)),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := describeQuorumRequest().RequestWith(t.Context(), cl.SeedBrokers()[0]); err != nil {
		t.Fatalf("DescribeQuorum over SASL_SSL: %v", err)
	}
}

// TestValidateSASLRules: what a SASL listener needs, and each SASL
// setting that would be ignored or cannot be applied, is a problem that
// names its key and never shows the login module.
func TestValidateSASLRules(t *testing.T) {
	base := validConfig()
	saslNode(&base, SecuritySASLPlaintext)
	if err := base.Validate(); err != nil {
		t.Fatalf("a PLAIN listener: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		key    string
		reason string
	}{
		{"Kafka's default mechanism", func(c *Config) { delete(c.SASL, "listener.name.controller.sasl.enabled.mechanisms") },
			keySASLEnabledMechanisms, "mechanism GSSAPI (listener CONTROLLER) is not implemented"},
		{"OAUTHBEARER", func(c *Config) {
			c.SASL["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN,OAUTHBEARER"
		},
			"listener.name.controller.sasl.enabled.mechanisms", "mechanism OAUTHBEARER (listener CONTROLLER) is not implemented"},
		{"SCRAM between controllers without a login module", func(c *Config) {
			c.SASL["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256"
			c.SASL[keySASLControllerMechanism] = "SCRAM-SHA-256"
		},
			"listener.name.controller.scram-sha-256.sasl.jaas.config", "required"},
		{"SCRAM login module with users", func(c *Config) {
			c.SASL["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-512"
			c.SASL["listener.name.controller.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`
		},
			"listener.name.controller.scram-sha-512.sasl.jaas.config", "not one ScramLoginModule reads"},
		{"SCRAM login module of a mechanism not enabled", func(c *Config) {
			c.SASL["listener.name.controller.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`
		},
			"listener.name.controller.scram-sha-512.sasl.jaas.config", "not enabled on listener CONTROLLER"},
		{"no login module", func(c *Config) { delete(c.SASL, "listener.name.controller.plain.sasl.jaas.config") },
			"listener.name.controller.plain.sasl.jaas.config", "required"},
		{"another login module", func(c *Config) {
			c.SASL["listener.name.controller.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`
		}, "listener.name.controller.plain.sasl.jaas.config", "must be org.apache.kafka.common.security.plain.PlainLoginModule"},
		{"no users", func(c *Config) {
			c.SASL["listener.name.controller.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";`
		}, "listener.name.controller.plain.sasl.jaas.config", "accepts no user"},
		{"no own credentials", func(c *Config) {
			c.SASL["listener.name.controller.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`
		}, "listener.name.controller.plain.sasl.jaas.config", "needs the username and password options"},
		{"GSSAPI between controllers", func(c *Config) { delete(c.SASL, keySASLControllerMechanism) },
			keySASLControllerMechanism, "GSSAPI and OAUTHBEARER are not implemented"},
		{"a listener that is not SASL", func(c *Config) { c.SASL["listener.name.other.sasl.enabled.mechanisms"] = "PLAIN" },
			"listener.name.other.sasl.enabled.mechanisms", "would be ignored"},
		{"an upper-case listener", func(c *Config) { c.SASL["listener.name.CONTROLLER.sasl.enabled.mechanisms"] = "PLAIN" },
			"listener.name.CONTROLLER.sasl.enabled.mechanisms", "lower case"},
		{"no SASL listener", func(c *Config) { c.ListenerSecurityProtocolMap = nil },
			"listener.name.controller.plain.sasl.jaas.config", "would be ignored"},
		{"max receive size", func(c *Config) { c.SASL[keySASLServerMaxReceiveSize] = "0" }, keySASLServerMaxReceiveSize, "positive"},
		{"negative delay", func(c *Config) { c.SASL[keyFailedAuthenticationDelay] = "-1" }, keyFailedAuthenticationDelay, "0 or more"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.SASL = maps.Clone(base.SASL)
			tt.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want a %s problem saying %q", tt.key, tt.reason)
			}
			got := configErrors(t, err)
			if !slices.ContainsFunc(got, func(e *ConfigError) bool { return e.Key == tt.key && strings.Contains(e.Reason, tt.reason) }) {
				t.Errorf("Validate() = %v, want a %s problem saying %q", err, tt.key, tt.reason)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the problem shows a password: %v", err)
			}
		})
	}
}

// TestParsePropertiesSASL: the SASL keys are read into Config.SASL, other
// sasl.* keys stay refused, and Properties hides the login module.
func TestParsePropertiesSASL(t *testing.T) {
	text := baseProperties + "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT\n" +
		"sasl.enabled.mechanisms=PLAIN\nsasl.mechanism.controller.protocol=PLAIN\nsasl.server.max.receive.size=1024\n" +
		"connection.failed.authentication.delay.ms=0\n" +
		"listener.name.controller.plain.sasl.jaas.config=" + testJAAS + "\n"
	cfg, _, err := ParseProperties([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SASL[keySASLServerMaxReceiveSize] != "1024" || cfg.SASL["listener.name.controller.plain.sasl.jaas.config"] != testJAAS {
		t.Errorf("SASL = %v", cfg.SASL)
	}
	if p := cfg.Properties(); p["listener.name.controller.plain.sasl.jaas.config"] != hiddenValue || strings.Contains(cfg.String(), "secret") {
		t.Errorf("Properties shows the login module: %v", p)
	}
	h, client, err := cfg.listenerSASL("CONTROLLER")
	if err != nil || h.MaxReceiveSize != 1024 || h.FailedDelay != 0 || h.PlainUsers["alice"] != "alice-secret" || client.Username != "admin" {
		t.Errorf("listenerSASL = %+v, %+v, %v", h, client, err)
	}
	_, _, err = ParseProperties([]byte(text + "sasl.login.callback.handler.class=x.Y\n"))
	if got := configErrors(t, err); len(got) != 1 || got[0].Key != "sasl.login.callback.handler.class" {
		t.Errorf("a SASL key Krabka does not implement was not refused alone: %v", err)
	}
}

// TestParsePlainJAAS: the parser reads Kafka's syntax and refuses what it
// cannot read, naming the option but never its value.
func TestParsePlainJAAS(t *testing.T) {
	j, err := parsePlainJAAS("  org.apache.kafka.common.security.plain.PlainLoginModule   required\n username=\"admin\"\tpassword=\"a \\\"quoted\\\" \\\\ secret\" user_admin=\"x\" ;  ")
	if err != nil || j.username != "admin" || j.password != `a "quoted" \ secret` || j.users["admin"] != "x" {
		t.Fatalf("parsePlainJAAS = %+v, %v", j, err)
	}
	for _, bad := range []string{
		"",
		`org.apache.kafka.common.security.plain.PlainLoginModule username="a";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="secret"`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username=secret;`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="secret;`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="se\ncret";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="secret" username="secret";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_="secret";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required debug="secret";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="secret"; other required;`,
	} {
		if _, err := parsePlainJAAS(bad); err == nil {
			t.Errorf("parsePlainJAAS(%q) accepted it", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("parsePlainJAAS(%q) error shows a value: %v", bad, err)
		}
	}
}

// FuzzParsePlainJAAS: the parser never panics, and what it accepts it
// reads back the same from its canonical rendering.
func FuzzParsePlainJAAS(f *testing.F) {
	f.Add(testJAAS)
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule optional user_a="\\\"";`)
	f.Fuzz(func(t *testing.T, s string) {
		j, err := parsePlainJAAS(s)
		if err != nil {
			return
		}
		quote := func(v string) string {
			return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		}
		text := plainLoginModule + " required"
		if j.hasUsername {
			text += " username=" + quote(j.username)
		}
		if j.password != "" {
			text += " password=" + quote(j.password)
		}
		for u, p := range j.users {
			text += " user_" + u + "=" + quote(p)
		}
		again, err := parsePlainJAAS(text + ";")
		if err != nil || again.username != j.username || again.password != j.password || len(again.users) != len(j.users) {
			t.Fatalf("%q read as %+v; its rendering %q read as %+v, %v", s, j, text, again, err)
		}
		for u, p := range j.users {
			if again.users[u] != p {
				t.Fatalf("user %q: %q then %q", u, p, again.users[u])
			}
		}
	})
}

// TestSCRAMCredentialFromImage: a SASL listener enabling SCRAM for
// clients (PLAIN between controllers) accepts a credential committed
// after it started, through SubmitChange of a UserScramCredentialRecord,
// and refuses it once a RemoveUserScramCredentialRecord is committed.
func TestSCRAMCredentialFromImage(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	saslNode(&cfg, SecuritySASLPlaintext)
	cfg.SASL["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256"
	node := startNode(t, cfg)
	addr := node.Addr().String()
	mech := scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()
	waitFor(t, "metadata.version", func() bool { return node.CurrentImage().Features().MetadataVersion() > 0 })
	if err := kgoDescribeQuorumSASL(t, addr, mech); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("before the credential: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	cl, err := xscram.SHA256.NewClient("carol", "carol-secret", "")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cl.GetStoredCredentialsWithError(xscram.KeyFactors{Salt: "carol-salt", Iters: 4096})
	if err != nil {
		t.Fatal(err)
	}
	rec := metadata.NewUserScramCredentialRecord()
	rec.Name, rec.Mechanism, rec.Salt, rec.StoredKey, rec.ServerKey, rec.Iterations = "carol", metadata.ScramSHA256, []byte("carol-salt"), sc.StoredKey, sc.ServerKey, 4096
	submit(t, node, rec)
	if err := kgoDescribeQuorumSASL(t, addr, mech); err != nil {
		t.Fatalf("after the credential was committed: %v", err)
	}
	rm := metadata.NewRemoveUserScramCredentialRecord()
	rm.Name, rm.Mechanism = "carol", metadata.ScramSHA256
	submit(t, node, rm)
	if err := kgoDescribeQuorumSASL(t, addr, mech); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("after the credential was removed: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// scramQuorumNode maps cfg's controller listener to SASL_PLAINTEXT with
// SCRAM-SHA-512 between the controllers, as admin, whose credential the
// bootstrap records written into cfg's directory hold (krabka storage
// format --add-scram).
func scramQuorumNode(t *testing.T, cfg *Config) {
	t.Helper()
	cfg.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySASLPlaintext}
	cfg.SASL = map[string]string{
		"listener.name.controller.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		keySASLControllerMechanism:                                "SCRAM-SHA-512",
		"listener.name.controller.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
		keyFailedAuthenticationDelay:                              "50",
	}
	cl, err := xscram.SHA512.NewClient("admin", "admin-secret", "")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cl.GetStoredCredentialsWithError(xscram.KeyFactors{Salt: "admin-salt", Iters: 4096})
	if err != nil {
		t.Fatal(err)
	}
	cred := metadata.NewUserScramCredentialRecord()
	cred.Name, cred.Mechanism, cred.Salt, cred.StoredKey, cred.ServerKey, cred.Iterations = "admin", metadata.ScramSHA512, []byte("admin-salt"), sc.StoredKey, sc.ServerKey, 4096
	var values [][]byte
	for _, r := range []metadata.Record{metadataVersionRecord(), cred} {
		b, err := metadata.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, b)
	}
	file, err := snapshot.EncodeBootstrap(snapshot.BatchTimes{}, values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.MetadataLogDir, snapshot.BootstrapFile), file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSCRAMQuorumRestartsTogether: controllers that authenticate to each
// other with SCRAM elect their first leader on the bootstrap records'
// credential, and elect again after all of them stop at once: until a
// node has applied its log it authenticates with the credentials its own
// log and snapshot hold, since its image then holds only its snapshot, or
// nothing, and no leader can commit anything without an election.
func TestSCRAMQuorumRestartsTogether(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) { scramQuorumNode(t, cfg) })
	leader := c.leader()
	res := submit(t, c.node(c.follower(leader)), topicRecord("orders"))
	c.waitApplied(res.LastOffset + 1)
	for id := NodeID(1); id <= 3; id++ {
		c.stop(id)
	}
	for id := NodeID(1); id <= 3; id++ {
		c.restart(id)
	}
	leader = c.leader()
	res = submit(t, c.node(c.follower(leader)), topicRecord("payments"))
	c.waitApplied(res.LastOffset + 1)
	for i, n := range c.nodes {
		if _, ok := n.CurrentImage().Topics().ByName("orders"); !ok {
			t.Errorf("node %d lost the topic committed before the restart", i+1)
		}
	}
}
