package raft

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// configErrors returns the *ConfigError values joined in err, failing the
// test for any other error.
func configErrors(t *testing.T, err error) []*ConfigError {
	t.Helper()
	var out []*ConfigError
	var walk func(error)
	walk = func(e error) {
		if u, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range u.Unwrap() {
				walk(x)
			}
			return
		}
		ce, ok := e.(*ConfigError)
		if !ok {
			t.Errorf("error %v (%T) is not a *ConfigError", e, e)
			return
		}
		out = append(out, ce)
	}
	if err != nil {
		walk(err)
	}
	return out
}

// validConfig is a valid three-voter static quorum as seen from node 1.
func validConfig() Config {
	c := DefaultConfig()
	c.NodeID = 1
	c.ProcessRoles = []ProcessRole{ControllerRole}
	c.ControllerListenerNames = []string{"CONTROLLER"}
	c.Listeners = []Endpoint{{Name: "CONTROLLER", Port: 9093}}
	c.MetadataLogDir = "/var/lib/kafka/metadata"
	c.QuorumVoters = []QuorumVoter{
		{ID: 1, Host: "controller-1", Port: 9093},
		{ID: 2, Host: "controller-2", Port: 9093},
		{ID: 3, Host: "controller-3", Port: 9093},
	}
	return c
}

// TestDefaultConfigMatchesKafka compares every default with the table in
// Kafka 4.3.1's QuorumConfig, KRaftConfigs, MetadataLogConfig and SocketServerConfigs.
func TestDefaultConfigMatchesKafka(t *testing.T) {
	got := DefaultConfig()
	want := Config{
		NodeID:                         -1,
		Listeners:                      []Endpoint{{Name: "PLAINTEXT", Host: "", Port: 9092}},
		MetadataLogDir:                 "/tmp/kafka-logs",
		ElectionTimeout:                1000 * time.Millisecond,
		FetchTimeout:                   2000 * time.Millisecond,
		ElectionBackoffMax:             1000 * time.Millisecond,
		RequestTimeout:                 2000 * time.Millisecond,
		RetryBackoff:                   20 * time.Millisecond,
		AppendLinger:                   25 * time.Millisecond,
		AutoJoin:                       false,
		FetchMaxBytes:                  1048576,
		FetchSnapshotMaxBytes:          1048576,
		MaxRecordBytesBetweenSnapshots: 20971520,
		MaxSnapshotInterval:            3600000 * time.Millisecond,
		SegmentBytes:                   1073741824,
		SegmentTime:                    604800000 * time.Millisecond,
		MaxRetentionBytes:              104857600,
		MaxRetentionTime:               604800000 * time.Millisecond,
		MaxIdleInterval:                500 * time.Millisecond,
		InternalSegmentBytes:           0,
		InternalMaxBatchBytes:          8388608,
		InternalDeleteDelay:            60000 * time.Millisecond,
		SocketRequestMaxBytes:          104857600,
		ConnectionsMaxIdle:             600000 * time.Millisecond,
		MaxConnections:                 2147483647,
		MaxConnectionsPerIP:            2147483647,
		MaxConnectionCreationRate:      2147483647,
		QuotaWindowNum:                 11,
		QuotaWindowSize:                time.Second,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DefaultConfig() mismatch (-want +got):\n%s", diff)
	}
}

// TestDefaultPropertiesMatchKafka checks the defaults again through their
// Kafka names, as a server.properties file would spell them.
func TestDefaultPropertiesMatchKafka(t *testing.T) {
	want := map[string]string{
		"node.id":                                         "-1",
		"process.roles":                                   "",
		"controller.listener.names":                       "",
		"listeners":                                       "PLAINTEXT://:9092",
		"advertised.listeners":                            "",
		"listener.security.protocol.map":                  "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
		"metadata.log.dir":                                "/tmp/kafka-logs",
		"controller.quorum.voters":                        "",
		"controller.quorum.bootstrap.servers":             "",
		"controller.quorum.election.timeout.ms":           "1000",
		"controller.quorum.fetch.timeout.ms":              "2000",
		"controller.quorum.election.backoff.max.ms":       "1000",
		"controller.quorum.request.timeout.ms":            "2000",
		"controller.quorum.retry.backoff.ms":              "20",
		"controller.quorum.append.linger.ms":              "25",
		"controller.quorum.auto.join.enable":              "false",
		"controller.quorum.fetch.max.bytes":               "1048576",
		"controller.quorum.fetch.snapshot.max.bytes":      "1048576",
		"metadata.log.max.record.bytes.between.snapshots": "20971520",
		"metadata.log.max.snapshot.interval.ms":           "3600000",
		"metadata.log.segment.bytes":                      "1073741824",
		"metadata.log.segment.ms":                         "604800000",
		"metadata.max.retention.bytes":                    "104857600",
		"metadata.max.retention.ms":                       "604800000",
		"metadata.max.idle.interval.ms":                   "500",
		"unstable.api.versions.enable":                    "false",
		"unstable.feature.versions.enable":                "false",
		"internal.metadata.max.batch.size.in.bytes":       "8388608",
		"internal.metadata.delete.delay.millis":           "60000",
		"socket.request.max.bytes":                        "104857600",
		"connections.max.idle.ms":                         "600000",
		"max.connections":                                 "2147483647",
		"max.connections.per.ip":                          "2147483647",
		"max.connection.creation.rate":                    "2147483647",
		"quota.window.num":                                "11",
		"quota.window.size.seconds":                       "1",
		"max.connections.per.ip.overrides":                "",
		"authorizer.class.name":                           "",
		"super.users":                                     "",
		"allow.everyone.if.no.acl.found":                  "false",
	}
	if diff := cmp.Diff(want, DefaultConfig().Properties()); diff != "" {
		t.Errorf("DefaultConfig().Properties() mismatch (-want +got):\n%s", diff)
	}
}

func TestDefaultConfigNeedsIdentityAndQuorum(t *testing.T) {
	keys := map[string]bool{}
	for _, e := range configErrors(t, DefaultConfig().Validate()) {
		keys[e.Key] = true
	}
	for _, k := range []string{"node.id", "process.roles", "controller.listener.names", "listeners", "controller.quorum.voters"} {
		if !keys[k] {
			t.Errorf("DefaultConfig().Validate() does not report %s; got %v", k, keys)
		}
	}
}

func TestForTestsIsValidSingleNodeQuorum(t *testing.T) {
	dir := t.TempDir()
	c := ForTests(7, dir)
	if err := c.Validate(); err != nil {
		t.Fatalf("ForTests(7, dir).Validate() = %v", err)
	}
	if c.NodeID != 7 || c.MetadataLogDir != dir {
		t.Errorf("ForTests(7, dir) = node %d in %q, want node 7 in %q", c.NodeID, c.MetadataLogDir, dir)
	}
	if want := []QuorumVoter{{ID: 7, Host: "127.0.0.1", Port: 0}}; !cmp.Equal(c.QuorumVoters, want) {
		t.Errorf("ForTests voters = %v, want %v", c.QuorumVoters, want)
	}
	if want := []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 0}}; !cmp.Equal(c.Listeners, want) {
		t.Errorf("ForTests listeners = %v, want %v", c.Listeners, want)
	}
	if c.ElectionTimeout >= DefaultConfig().ElectionTimeout || c.AppendLinger >= DefaultConfig().AppendLinger {
		t.Errorf("ForTests timers are not shorter than Kafka's: election %v, linger %v", c.ElectionTimeout, c.AppendLinger)
	}
	if err := ForTests(-3, dir).Validate(); err == nil {
		t.Errorf("ForTests(-3, dir).Validate() = nil, want an error for the negative node id")
	}
}

func TestValidateAcceptsValidConfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
	}{
		{"static quorum", func(*Config) {}},
		{"dynamic quorum with bootstrap servers only", func(c *Config) {
			c.QuorumVoters = nil
			c.QuorumBootstrapServers = []HostPort{{Host: "controller-1", Port: 9093}, {Host: "::1", Port: 9093}}
		}},
		// Kafka enforces no relation between the quorum timeouts.
		{"election timeout above fetch timeout", func(c *Config) {
			c.ElectionTimeout = 5 * time.Second
			c.FetchTimeout = time.Second
		}},
		{"zero timeouts", func(c *Config) {
			c.ElectionTimeout, c.FetchTimeout, c.ElectionBackoffMax = 0, 0, 0
			c.RequestTimeout, c.RetryBackoff, c.AppendLinger, c.MaxIdleInterval = 0, 0, 0, 0
		}},
		{"largest int milliseconds", func(c *Config) { c.FetchTimeout = math.MaxInt32 * time.Millisecond }},
		{"retention disabled", func(c *Config) { c.MaxRetentionBytes, c.MaxRetentionTime = -1, -time.Millisecond }},
		{"idle connections never closed", func(c *Config) { c.ConnectionsMaxIdle = -time.Millisecond }},
		{"idle timeout just above the failed-authentication delay", func(c *Config) { c.ConnectionsMaxIdle = 101 * time.Millisecond }},
		{"segment bytes at the minimum", func(c *Config) { c.SegmentBytes = 8 << 20 }},
		{"internal segment bytes below the minimum", func(c *Config) { c.InternalSegmentBytes = 1 << 20 }},
		{"per-ip limit 0 with overrides", func(c *Config) {
			c.MaxConnectionsPerIP = 0
			c.MaxConnectionsPerIPOverrides = map[string]int32{"10.0.0.1": 100, "::1": 5, "fe80::1%eth0": 3, "::ffff:10.0.0.2": 0}
		}},
		{"IPv4 and IPv6 listeners on one port", func(c *Config) {
			c.ControllerListenerNames = []string{"CONTROLLER", "CONTROLLER6"}
			c.Listeners = []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}, {Name: "CONTROLLER6", Host: "::1", Port: 9093}}
		}},
		{"two listeners on port 0", func(c *Config) {
			c.ControllerListenerNames = []string{"CONTROLLER", "OTHER"}
			c.Listeners = []Endpoint{{Name: "CONTROLLER", Port: 0}, {Name: "OTHER", Port: 0}}
		}},
		// Kafka advertises a 0.0.0.0 listener as the wildcard host.
		{"wildcard listener without advertised listeners", func(c *Config) { c.Listeners[0].Host = "0.0.0.0" }},
		{"wildcard listener with a routable advertised listener", func(c *Config) {
			c.Listeners = []Endpoint{{Name: "CONTROLLER", Host: "0.0.0.0", Port: 9093}}
			c.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "controller-1", Port: 9093}}
		}},
		{"explicit security protocol map", func(c *Config) {
			c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecurityPlaintext}
		}},
		// Kafka's default map names every protocol; entries no listener
		// uses are not a listener's protocol.
		{"protocol map with unused SSL and SASL entries", func(c *Config) {
			c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{
				"CONTROLLER": SecurityPlaintext, "SSL": SecuritySSL, "SASL_PLAINTEXT": SecuritySASLPlaintext, "SASL_SSL": SecuritySASLSSL,
			}
		}},
		{"voter with port 0 and IPv6 host", func(c *Config) { c.QuorumVoters = []QuorumVoter{{ID: 1, Host: "::1", Port: 0}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
}

// TestValidateRules has one case per rule: a valid config with one thing
// broken must give exactly the problems listed.
func TestValidateRules(t *testing.T) {
	type problem struct{ key, reason string }
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []problem
	}{
		{"node.id missing", func(c *Config) { c.NodeID = -1 }, []problem{{"node.id", "required"}}},
		{"node.id negative", func(c *Config) { c.NodeID = -5 }, []problem{{"node.id", "at least 0"}}},
		{"process.roles missing", func(c *Config) { c.ProcessRoles = nil }, []problem{{"process.roles", "required"}}},
		{"process.roles broker", func(c *Config) { c.ProcessRoles = []ProcessRole{BrokerRole} }, []problem{{"process.roles", "cannot be a broker"}}},
		{"process.roles combined", func(c *Config) { c.ProcessRoles = []ProcessRole{BrokerRole, ControllerRole} }, []problem{{"process.roles", "combined broker and controller mode is not supported"}}},
		{"process.roles duplicate", func(c *Config) { c.ProcessRoles = []ProcessRole{ControllerRole, ControllerRole} }, []problem{{"process.roles", "appears twice"}}},
		{"process.roles unknown", func(c *Config) { c.ProcessRoles = []ProcessRole{ControllerRole, 9} }, []problem{{"process.roles", "unknown process role"}}},
		{"metadata.log.dir empty", func(c *Config) { c.MetadataLogDir = "" }, []problem{{"metadata.log.dir", "required"}}},
		{"controller.listener.names empty", func(c *Config) { c.ControllerListenerNames = nil }, []problem{
			{"controller.listener.names", "required"},
			// Only a controller listener gets Kafka's implicit PLAINTEXT.
			{"listeners", "no security protocol defined for listener CONTROLLER"},
			{"listeners", "CONTROLLER is not in controller.listener.names"},
		}},
		{"controller.listener.names absent from listeners", func(c *Config) { c.ControllerListenerNames = []string{"CONTROLLER", "OTHER"} }, []problem{
			{"controller.listener.names", "OTHER must appear in listeners"},
		}},
		{"controller.listener.names lower case", func(c *Config) { c.ControllerListenerNames = []string{"controller"} }, []problem{
			{"controller.listener.names", "listener controller must appear in listeners (listener names are upper case)"},
			{"listeners", "CONTROLLER is not in controller.listener.names"},
		}},
		{"controller.listener.names duplicate", func(c *Config) { c.ControllerListenerNames = []string{"CONTROLLER", "CONTROLLER"} }, []problem{
			{"controller.listener.names", "CONTROLLER appears twice"},
		}},
		{"controller.listener.names empty entry", func(c *Config) { c.ControllerListenerNames = []string{"CONTROLLER", ""} }, []problem{
			{"controller.listener.names", "empty listener name"},
		}},
		{"listeners empty", func(c *Config) { c.Listeners = nil }, []problem{
			{"controller.listener.names", "CONTROLLER must appear in listeners"},
			{"listeners", "required"},
		}},
		{"listeners with a broker listener", func(c *Config) {
			c.Listeners = append(c.Listeners, Endpoint{Name: "PLAINTEXT", Port: 9092})
		}, []problem{{"listeners", "PLAINTEXT is not in controller.listener.names; a controller-only node may list controller listeners only"}}},
		{"listeners duplicate name", func(c *Config) {
			c.Listeners = append(c.Listeners, Endpoint{Name: "CONTROLLER", Port: 9094})
		}, []problem{{"listeners", "CONTROLLER appears twice"}}},
		{"listeners lower-case name", func(c *Config) {
			c.Listeners = []Endpoint{{Name: "controller", Port: 9093}}
			c.ControllerListenerNames = []string{"controller"}
		}, []problem{{"listeners", "must be upper case"}}},
		{"listeners without a name", func(c *Config) {
			c.Listeners = append(c.Listeners, Endpoint{Port: 9094})
		}, []problem{{"listeners", "has no listener name"}}},
		{"listeners invalid host", func(c *Config) { c.Listeners[0].Host = "bad host" }, []problem{{"listeners", `invalid host "bad host"`}}},
		{"listeners share a port", func(c *Config) {
			c.ControllerListenerNames = []string{"CONTROLLER", "OTHER"}
			c.Listeners = []Endpoint{{Name: "CONTROLLER", Port: 9093}, {Name: "OTHER", Host: "127.0.0.1", Port: 9093}}
		}, []problem{{"listeners", "CONTROLLER and OTHER share port 9093"}}},
		{"listeners two IPv4 addresses share a port", func(c *Config) {
			c.ControllerListenerNames = []string{"CONTROLLER", "OTHER"}
			c.Listeners = []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}, {Name: "OTHER", Host: "10.0.0.1", Port: 9093}}
		}, []problem{{"listeners", "share port 9093"}}},
		{"advertised.listeners 0.0.0.0", func(c *Config) {
			c.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "0.0.0.0", Port: 9093}}
		}, []problem{{"advertised.listeners", "non-routable address 0.0.0.0"}}},
		{"advertised.listeners duplicate name", func(c *Config) {
			c.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "a", Port: 9093}, {Name: "CONTROLLER", Host: "b", Port: 9093}}
		}, []problem{{"advertised.listeners", "CONTROLLER appears twice"}}},
		{"explicit protocol map misses the controller listener", func(c *Config) {
			c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"PLAINTEXT": SecurityPlaintext}
		}, []problem{{"listeners", "no security protocol defined for listener CONTROLLER"}}},
		{"SSL in use turns off the implicit PLAINTEXT mapping", func(c *Config) {
			c.ControllerListenerNames = []string{"CONTROLLER", "SSL"}
			c.Listeners = []Endpoint{{Name: "CONTROLLER", Port: 9093}, {Name: "SSL", Port: 9094}}
		}, []problem{
			{"listeners", "no security protocol defined for listener CONTROLLER"},
			{"ssl.keystore.location", "listener SSL is mapped to SSL and needs a key store"},
		}},
		{"protocol map lower-case key", func(c *Config) {
			c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecurityPlaintext, "other": SecuritySSL}
		}, []problem{{"listener.security.protocol.map", `"other" must be non-empty and upper case`}}},
		{"protocol map unknown protocol", func(c *Config) {
			c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": 7}
		}, []problem{{"listener.security.protocol.map", "unknown security protocol"}}},
		{"no voters and no bootstrap servers", func(c *Config) { c.QuorumVoters = nil }, []problem{
			{"controller.quorum.voters", "controller.quorum.bootstrap.servers"},
		}},
		{"node not among the voters", func(c *Config) { c.NodeID = 4 }, []problem{
			{"controller.quorum.voters", "this node's id 4 must be one of the voters"},
		}},
		{"duplicate voter id", func(c *Config) { c.QuorumVoters[2].ID = 2 }, []problem{{"controller.quorum.voters", "voter id 2 appears twice"}}},
		{"negative voter id", func(c *Config) { c.QuorumVoters[2].ID = -3 }, []problem{{"controller.quorum.voters", "voter id -3 must be at least 0"}}},
		{"voter without host", func(c *Config) { c.QuorumVoters[1].Host = "" }, []problem{{"controller.quorum.voters", "voter 2 has no host"}}},
		{"voter invalid host", func(c *Config) { c.QuorumVoters[1].Host = "a/b" }, []problem{{"controller.quorum.voters", `voter 2 has an invalid host "a/b"`}}},
		{"voter 0.0.0.0", func(c *Config) { c.QuorumVoters[1].Host = "0.0.0.0" }, []problem{{"controller.quorum.voters", "voter 2 has the non-routable host 0.0.0.0"}}},
		{"bootstrap server without host", func(c *Config) { c.QuorumBootstrapServers = []HostPort{{Port: 9093}} }, []problem{
			{"controller.quorum.bootstrap.servers", "entry :9093 has no host"},
		}},
		{"bootstrap server invalid host", func(c *Config) { c.QuorumBootstrapServers = []HostPort{{Host: "a b", Port: 9093}} }, []problem{
			{"controller.quorum.bootstrap.servers", "invalid host"},
		}},
		{"election timeout negative", func(c *Config) { c.ElectionTimeout = -time.Millisecond }, []problem{{"controller.quorum.election.timeout.ms", "at least 0"}}},
		{"fetch timeout negative", func(c *Config) { c.FetchTimeout = -time.Second }, []problem{{"controller.quorum.fetch.timeout.ms", "at least 0"}}},
		{"election backoff negative", func(c *Config) { c.ElectionBackoffMax = -time.Second }, []problem{{"controller.quorum.election.backoff.max.ms", "at least 0"}}},
		{"request timeout negative", func(c *Config) { c.RequestTimeout = -time.Second }, []problem{{"controller.quorum.request.timeout.ms", "at least 0"}}},
		{"retry backoff negative", func(c *Config) { c.RetryBackoff = -time.Second }, []problem{{"controller.quorum.retry.backoff.ms", "at least 0"}}},
		{"append linger negative", func(c *Config) { c.AppendLinger = -time.Second }, []problem{{"controller.quorum.append.linger.ms", "at least 0"}}},
		{"idle interval negative", func(c *Config) { c.MaxIdleInterval = -time.Second }, []problem{{"metadata.max.idle.interval.ms", "at least 0"}}},
		{"fetch timeout beyond an int", func(c *Config) { c.FetchTimeout = (math.MaxInt32 + 1) * time.Millisecond }, []problem{
			{"controller.quorum.fetch.timeout.ms", "at most 2147483647"},
		}},
		{"fraction of a millisecond", func(c *Config) { c.ElectionTimeout = 1500 * time.Microsecond }, []problem{
			{"controller.quorum.election.timeout.ms", "whole number of milliseconds"},
		}},
		{"segment time 0", func(c *Config) { c.SegmentTime = 0 }, []problem{{"metadata.log.segment.ms", "at least 1"}}},
		{"snapshot interval negative", func(c *Config) { c.MaxSnapshotInterval = -time.Millisecond }, []problem{{"metadata.log.max.snapshot.interval.ms", "at least 0"}}},
		{"delete delay negative", func(c *Config) { c.InternalDeleteDelay = -time.Millisecond }, []problem{{"internal.metadata.delete.delay.millis", "at least 0"}}},
		{"fetch max bytes 0", func(c *Config) { c.FetchMaxBytes = 0 }, []problem{{"controller.quorum.fetch.max.bytes", "at least 1"}}},
		{"fetch snapshot max bytes negative", func(c *Config) { c.FetchSnapshotMaxBytes = -1 }, []problem{{"controller.quorum.fetch.snapshot.max.bytes", "at least 1"}}},
		{"record bytes between snapshots 0", func(c *Config) { c.MaxRecordBytesBetweenSnapshots = 0 }, []problem{
			{"metadata.log.max.record.bytes.between.snapshots", "at least 1"},
		}},
		{"segment bytes below 8 MiB", func(c *Config) { c.SegmentBytes = 8<<20 - 1 }, []problem{{"metadata.log.segment.bytes", "at least 8388608"}}},
		{"internal segment bytes negative", func(c *Config) { c.InternalSegmentBytes = -1 }, []problem{{"internal.metadata.log.segment.bytes", "at least 0"}}},
		{"internal max batch 0", func(c *Config) { c.InternalMaxBatchBytes = 0 }, []problem{{"internal.metadata.max.batch.size.in.bytes", "at least 1"}}},
		{"socket request max bytes 0", func(c *Config) { c.SocketRequestMaxBytes = 0 }, []problem{{"socket.request.max.bytes", "at least 1"}}},
		{"max connections negative", func(c *Config) { c.MaxConnections = -1 }, []problem{{"max.connections", "at least 0"}}},
		{"max connections per ip negative", func(c *Config) { c.MaxConnectionsPerIP = -1 }, []problem{{"max.connections.per.ip", "at least 0"}}},
		{"max connections per ip 0 without overrides", func(c *Config) { c.MaxConnectionsPerIP = 0 }, []problem{
			{"max.connections.per.ip", "may be 0 only when max.connections.per.ip.overrides is set"},
		}},
		{"override invalid address", func(c *Config) { c.MaxConnectionsPerIPOverrides = map[string]int32{"bad/host": 1} }, []problem{
			{"max.connections.per.ip.overrides", `invalid address "bad/host"`},
		}},
		{"override empty address", func(c *Config) { c.MaxConnectionsPerIPOverrides = map[string]int32{"": 1} }, []problem{
			{"max.connections.per.ip.overrides", `invalid address ""`},
		}},
		{"override host name", func(c *Config) { c.MaxConnectionsPerIPOverrides = map[string]int32{"admin.example.com": 1} }, []problem{
			{"max.connections.per.ip.overrides", `"admin.example.com" is not an IP address: Krabka matches connections by IP address and does not resolve host names here`},
		}},
		{"override one address twice", func(c *Config) {
			c.MaxConnectionsPerIPOverrides = map[string]int32{"10.0.0.1": 1, "::ffff:10.0.0.1": 2}
		}, []problem{
			{"max.connections.per.ip.overrides", "10.0.0.1 and ::ffff:10.0.0.1 are the same address"},
		}},
		{"idle timeout within the failed-authentication delay", func(c *Config) { c.ConnectionsMaxIdle = 100 * time.Millisecond }, []problem{
			{"connections.max.idle.ms", "must be more than 100 (connection.failed.authentication.delay.ms)"},
		}},
		{"idle timeout 0", func(c *Config) { c.ConnectionsMaxIdle = 0 }, []problem{
			{"connections.max.idle.ms", "must be more than 100"},
		}},
		{"override negative limit", func(c *Config) { c.MaxConnectionsPerIPOverrides = map[string]int32{"10.0.0.1": -2} }, []problem{
			{"max.connections.per.ip.overrides", "limit -2 for 10.0.0.1 must be at least 0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			got := configErrors(t, c.Validate())
			if len(got) != len(tt.want) {
				t.Fatalf("Validate() gave %d problems, want %d:\n%v", len(got), len(tt.want), c.Validate())
			}
			for i, w := range tt.want {
				if got[i].Key != w.key || !strings.Contains(got[i].Reason, w.reason) {
					t.Errorf("problem %d = %v, want key %s and a reason containing %q", i, got[i], w.key, w.reason)
				}
			}
		})
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	c := validConfig()
	c.NodeID = -1
	c.ProcessRoles = []ProcessRole{BrokerRole, ControllerRole}
	c.QuorumVoters[0].Host = "0.0.0.0"
	c.SegmentBytes = 1024
	c.FetchMaxBytes = 0
	c.ElectionTimeout = -time.Second
	err := c.Validate()
	want := []string{
		"node.id",
		"process.roles",
		"controller.quorum.voters",
		"controller.quorum.election.timeout.ms",
		"controller.quorum.fetch.max.bytes",
		"metadata.log.segment.bytes",
	}
	var got []string
	for _, e := range configErrors(t, err) {
		got = append(got, e.Key)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate() keys mismatch (-want +got):\n%s\nerror:\n%v", diff, err)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "node.id" {
		t.Errorf("errors.As(Validate(), *ConfigError) = %v, want the node.id problem first", ce)
	}
	if lines := strings.Count(err.Error(), "\n") + 1; lines != len(want) {
		t.Errorf("Validate().Error() has %d lines, want one per problem:\n%v", lines, err)
	}
}

func TestValidateDoesNotModify(t *testing.T) {
	c := validConfig()
	c.NodeID = -1
	c.QuorumVoters = append(c.QuorumVoters, QuorumVoter{ID: 2, Host: "0.0.0.0", Port: 1})
	c.MaxConnectionsPerIPOverrides = map[string]int32{"": -1}
	before := validConfig()
	before.NodeID = -1
	before.QuorumVoters = append(before.QuorumVoters, QuorumVoter{ID: 2, Host: "0.0.0.0", Port: 1})
	before.MaxConnectionsPerIPOverrides = map[string]int32{"": -1}
	if c.Validate() == nil {
		t.Fatal("Validate() = nil, want problems")
	}
	if diff := cmp.Diff(before, c); diff != "" {
		t.Errorf("Validate changed the config (-before +after):\n%s", diff)
	}
}

func TestConfigErrorMessage(t *testing.T) {
	tests := []struct {
		err  ConfigError
		want string
	}{
		{ConfigError{Key: "node.id", Reason: "required"}, "raft: node.id: required"},
		{ConfigError{Key: "node.id", Value: "abc", Reason: "must be a 32-bit integer"}, `raft: node.id="abc": must be a 32-bit integer`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestAdvertisedControllerEndpoints(t *testing.T) {
	c := validConfig()
	c.ControllerListenerNames = []string{"CONTROLLER", "BACKUP"}
	c.Listeners = []Endpoint{{Name: "CONTROLLER", Port: 9093}, {Name: "BACKUP", Host: "10.0.0.1", Port: 9094}}
	c.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "controller-1.example.com", Port: 19093}}
	want := []Endpoint{
		{Name: "CONTROLLER", Host: "controller-1.example.com", Port: 19093},
		{Name: "BACKUP", Host: "10.0.0.1", Port: 9094},
	}
	if diff := cmp.Diff(want, c.AdvertisedControllerEndpoints()); diff != "" {
		t.Errorf("AdvertisedControllerEndpoints() mismatch (-want +got):\n%s", diff)
	}
	c.AdvertisedListeners = nil
	c.Listeners[0].Host = "0.0.0.0"
	want[0] = Endpoint{Name: "CONTROLLER", Host: "", Port: 9093}
	if diff := cmp.Diff(want, c.AdvertisedControllerEndpoints()); diff != "" {
		t.Errorf("AdvertisedControllerEndpoints() from a 0.0.0.0 listener mismatch (-want +got):\n%s", diff)
	}
}

func TestListenerSecurityProtocol(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*Config)
		listener string
		want     SecurityProtocol
		ok       bool
	}{
		{"protocol name maps to itself", func(*Config) {}, "SASL_SSL", SecuritySASLSSL, true},
		{"lower-case lookup", func(*Config) {}, "ssl", SecuritySSL, true},
		{"controller listener defaults to PLAINTEXT", func(*Config) {}, "CONTROLLER", SecurityPlaintext, true},
		{"other names have none", func(*Config) {}, "INTERNAL", 0, false},
		{"explicit map wins", func(c *Config) {
			c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySSL}
		}, "CONTROLLER", SecuritySSL, true},
		{"explicit map has no implicit entries", func(c *Config) {
			c.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecuritySSL}
		}, "PLAINTEXT", 0, false},
		{"a SASL listener turns off the implicit mapping", func(c *Config) {
			c.Listeners = append(c.Listeners, Endpoint{Name: "SASL_PLAINTEXT", Port: 9094})
		}, "CONTROLLER", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			got, ok := c.ListenerSecurityProtocol(tt.listener)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ListenerSecurityProtocol(%q) = %v, %v, want %v, %v", tt.listener, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestEffectiveSegmentBytes(t *testing.T) {
	c := DefaultConfig()
	if got := c.EffectiveSegmentBytes(); got != 1<<30 {
		t.Errorf("EffectiveSegmentBytes() = %d, want %d", got, 1<<30)
	}
	c.InternalSegmentBytes = 4096
	if got := c.EffectiveSegmentBytes(); got != 4096 {
		t.Errorf("EffectiveSegmentBytes() with the internal override = %d, want 4096", got)
	}
}

func TestStringers(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{NodeID(3).String(), "3"},
		{ControllerRole.String(), "controller"},
		{BrokerRole.String(), "broker"},
		{ProcessRole(9).String(), "ProcessRole(9)"},
		{SecuritySASLPlaintext.String(), "SASL_PLAINTEXT"},
		{SecurityProtocol(9).String(), "SecurityProtocol(9)"},
		{Endpoint{Name: "CONTROLLER", Port: 9093}.String(), "CONTROLLER://:9093"},
		{Endpoint{Name: "CONTROLLER", Host: "::1", Port: 9093}.String(), "CONTROLLER://[::1]:9093"},
		{Endpoint{Name: "CONTROLLER", Host: "::1", Port: 9093}.Address(), "[::1]:9093"},
		{Endpoint{Name: "CONTROLLER", Port: 9093}.Address(), ":9093"},
		{QuorumVoter{ID: 2, Host: "fe80::1%eth0", Port: 9093}.String(), "2@[fe80::1%eth0]:9093"},
		{QuorumVoter{ID: 2, Host: "c2", Port: 9093}.Address(), "c2:9093"},
		{HostPort{Host: "c1", Port: 9093}.String(), "c1:9093"},
		{HostPort{Host: "::1", Port: 1}.Address(), "[::1]:1"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
