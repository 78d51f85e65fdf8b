package raft

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// baseProperties is a minimal valid controller file; tests append lines,
// and a later line replaces an earlier one with the same key.
const baseProperties = `process.roles=controller
node.id=1
listeners=CONTROLLER://:9093
controller.listener.names=CONTROLLER
controller.quorum.voters=1@controller-1:9093,2@controller-2:9093,3@controller-3:9093
`

func TestParsePropertiesBaseIsValid(t *testing.T) {
	c, w, err := ParseProperties([]byte(baseProperties))
	if err != nil || len(w) != 0 {
		t.Fatalf("ParseProperties(base) = %v, %v, want no error and no warnings", w, err)
	}
	want := validConfig()
	want.MetadataLogDir = "/tmp/kafka-logs"
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("ParseProperties(base) mismatch (-want +got):\n%s", diff)
	}
}

// TestParsePropertiesEveryKey reads each property Config mirrors with
// valid values and checks the field it lands in.
func TestParsePropertiesEveryKey(t *testing.T) {
	tests := []struct {
		line string
		got  func(Config) any
		want any
	}{
		{"node.id=2\ncontroller.quorum.voters=2@c2:9093", func(c Config) any { return c.NodeID }, NodeID(2)},
		{"node.id= +1 ", func(c Config) any { return c.NodeID }, NodeID(1)},
		{"node.id=1\nbroker.id=1", func(c Config) any { return c.NodeID }, NodeID(1)},
		{"process.roles = controller", func(c Config) any { return c.ProcessRoles }, []ProcessRole{ControllerRole}},
		{"controller.listener.names=CONTROLLER , BACKUP\nlisteners=CONTROLLER://:9093,BACKUP://:9094",
			func(c Config) any { return c.ControllerListenerNames }, []string{"CONTROLLER", "BACKUP"}},
		{"listeners=controller://[::1]:9093", func(c Config) any { return c.Listeners },
			[]Endpoint{{Name: "CONTROLLER", Host: "::1", Port: 9093}}},
		{"listeners=CONTROLLER://127.0.0.1:0, ,", func(c Config) any { return c.Listeners },
			[]Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 0}}},
		{"advertised.listeners=CONTROLLER://controller-1.example.com:19093", func(c Config) any { return c.AdvertisedListeners },
			[]Endpoint{{Name: "CONTROLLER", Host: "controller-1.example.com", Port: 19093}}},
		{"advertised.listeners=", func(c Config) any { return c.AdvertisedListeners }, []Endpoint(nil)},
		{"listener.security.protocol.map=controller:plaintext, SASL_SSL : SASL_SSL", func(c Config) any { return c.ListenerSecurityProtocolMap },
			map[string]SecurityProtocol{"CONTROLLER": SecurityPlaintext, "SASL_SSL": SecuritySASLSSL}},
		{"metadata.log.dir=/data/meta\nlog.dirs=/data/a,/data/b", func(c Config) any { return c.MetadataLogDir }, "/data/meta"},
		{"log.dirs= /data/a , /data/b\nlog.dir=/data/c", func(c Config) any { return c.MetadataLogDir }, "/data/a"},
		{"log.dir=/data/c", func(c Config) any { return c.MetadataLogDir }, "/data/c"},
		{"controller.quorum.voters=1@[::1]:9093,2@PLAINTEXT://c2:9093,3@::3:9093", func(c Config) any { return c.QuorumVoters },
			[]QuorumVoter{{ID: 1, Host: "::1", Port: 9093}, {ID: 2, Host: "c2", Port: 9093}, {ID: 3, Host: "::3", Port: 9093}}},
		{"controller.quorum.bootstrap.servers=c1:9093, [2001:db8::2]:9093", func(c Config) any { return c.QuorumBootstrapServers },
			[]HostPort{{Host: "c1", Port: 9093}, {Host: "2001:db8::2", Port: 9093}}},
		{"controller.quorum.election.timeout.ms=1500", func(c Config) any { return c.ElectionTimeout }, 1500 * time.Millisecond},
		{"controller.quorum.fetch.timeout.ms=4000", func(c Config) any { return c.FetchTimeout }, 4 * time.Second},
		{"controller.quorum.election.backoff.max.ms=0", func(c Config) any { return c.ElectionBackoffMax }, time.Duration(0)},
		{"controller.quorum.request.timeout.ms=30000", func(c Config) any { return c.RequestTimeout }, 30 * time.Second},
		{"controller.quorum.retry.backoff.ms=100", func(c Config) any { return c.RetryBackoff }, 100 * time.Millisecond},
		{"controller.quorum.append.linger.ms=5", func(c Config) any { return c.AppendLinger }, 5 * time.Millisecond},
		{"controller.quorum.auto.join.enable=TRUE", func(c Config) any { return c.AutoJoin }, true},
		{"controller.quorum.fetch.max.bytes=8388608", func(c Config) any { return c.FetchMaxBytes }, int32(8 << 20)},
		{"controller.quorum.fetch.snapshot.max.bytes=65536", func(c Config) any { return c.FetchSnapshotMaxBytes }, int32(65536)},
		{"metadata.log.max.record.bytes.between.snapshots=10000000000", func(c Config) any { return c.MaxRecordBytesBetweenSnapshots }, int64(10000000000)},
		{"metadata.log.max.snapshot.interval.ms=0", func(c Config) any { return c.MaxSnapshotInterval }, time.Duration(0)},
		{"metadata.log.segment.bytes=8388608", func(c Config) any { return c.SegmentBytes }, int32(8 << 20)},
		{"metadata.log.segment.ms=3600000", func(c Config) any { return c.SegmentTime }, time.Hour},
		{"metadata.max.retention.bytes=-1", func(c Config) any { return c.MaxRetentionBytes }, int64(-1)},
		{"metadata.max.retention.ms=-1", func(c Config) any { return c.MaxRetentionTime }, -time.Millisecond},
		{"metadata.max.idle.interval.ms=0", func(c Config) any { return c.MaxIdleInterval }, time.Duration(0)},
		{"unstable.api.versions.enable=true", func(c Config) any { return c.UnstableAPIVersions }, true},
		{"unstable.feature.versions.enable=True", func(c Config) any { return c.UnstableFeatureVersions }, true},
		{"internal.metadata.log.segment.bytes=1024", func(c Config) any { return c.InternalSegmentBytes }, int32(1024)},
		{"internal.metadata.max.batch.size.in.bytes=1024", func(c Config) any { return c.InternalMaxBatchBytes }, int32(1024)},
		{"internal.metadata.delete.delay.millis=0", func(c Config) any { return c.InternalDeleteDelay }, time.Duration(0)},
		{"socket.request.max.bytes=1048576", func(c Config) any { return c.SocketRequestMaxBytes }, int32(1 << 20)},
		{"connections.max.idle.ms=-1", func(c Config) any { return c.ConnectionsMaxIdle }, -time.Millisecond},
		{"max.connections=1000", func(c Config) any { return c.MaxConnections }, int32(1000)},
		{"max.connections.per.ip=0\nmax.connections.per.ip.overrides=10.0.0.1:5", func(c Config) any { return c.MaxConnectionsPerIP }, int32(0)},
		{"max.connections.per.ip.overrides=192.0.2.10:100, ::1:7,", func(c Config) any { return c.MaxConnectionsPerIPOverrides },
			map[string]int32{"192.0.2.10": 100, "::1": 7}},
	}
	for _, tt := range tests {
		t.Run(strings.SplitN(tt.line, "=", 2)[0], func(t *testing.T) {
			c, w, err := ParseProperties([]byte(baseProperties + tt.line + "\n"))
			if err != nil || len(w) != 0 {
				t.Fatalf("ParseProperties(%q) = %v, %v, want no error and no warnings", tt.line, w, err)
			}
			if diff := cmp.Diff(tt.want, tt.got(c)); diff != "" {
				t.Errorf("ParseProperties(%q) mismatch (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

// TestParsePropertiesMalformedValues checks that each unreadable value is
// a *ConfigError naming the key and the value, and that nothing else is
// reported about that key.
func TestParsePropertiesMalformedValues(t *testing.T) {
	tests := []struct {
		key, value, reason string
	}{
		{"node.id", "one", "32-bit integer"},
		{"node.id", "", "32-bit integer"},
		{"node.id", "2147483648", "32-bit integer"},
		{"node.id", "1.0", "32-bit integer"},
		{"process.roles", "controller,", "empty entry"},
		{"process.roles", "Controller", `unknown process role "Controller"`},
		{"process.roles", "controller,metadata", `unknown process role "metadata"`},
		{"controller.listener.names", "CONTROLLER,,OTHER", "empty entry"},
		{"listeners", "CONTROLLER:9093", `cannot read listener "CONTROLLER:9093"`},
		{"listeners", "CONTROLLER://host", "NAME://host:port"},
		{"listeners", "CONTROLLER://host:", "NAME://host:port"},
		{"listeners", "CONTROLLER://host:port", "NAME://host:port"},
		{"listeners", "CONTROLLER://host:65536", "port 65536 is out of range 0-65535"},
		{"listeners", "CONTROLLER://host:-1", "port -1 is out of range"},
		{"listeners", "CONTROLLER://host:99999999999", "out of range"},
		{"listeners", "CONTROLLER://bad host:9093", "cannot read listener"},
		{"advertised.listeners", "CONTROLLER://c1", "cannot read listener"},
		{"listener.security.protocol.map", "CONTROLLER", `cannot read entry "CONTROLLER"`},
		{"listener.security.protocol.map", "CONTROLLER:TLS", `unknown security protocol "TLS"`},
		{"controller.quorum.voters", "1@c1:9093,", "empty entry"},
		{"controller.quorum.voters", "c1:9093", "{id}@{host}:{port}"},
		{"controller.quorum.voters", "1@c1@c2:9093", "{id}@{host}:{port}"},
		{"controller.quorum.voters", "x@c1:9093", `id "x" is not a 32-bit integer`},
		{"controller.quorum.voters", "@c1:9093", `id "" is not a 32-bit integer`},
		{"controller.quorum.voters", "1@c1", `cannot read "c1" as host:port`},
		{"controller.quorum.voters", "1@c1:-1", "as host:port"},
		{"controller.quorum.voters", "1@c1:70000", "port 70000 is out of range"},
		{"controller.quorum.voters", "1@", "as host:port"},
		{"controller.quorum.bootstrap.servers", "c1", "{host}:{port}"},
		{"controller.quorum.bootstrap.servers", "c1:9093,,c2:9093", "empty entry"},
		{"controller.quorum.election.timeout.ms", "1s", "32-bit integer"},
		{"controller.quorum.fetch.timeout.ms", "2147483648", "32-bit integer"},
		{"controller.quorum.election.backoff.max.ms", "x", "32-bit integer"},
		{"controller.quorum.request.timeout.ms", "2e3", "32-bit integer"},
		{"controller.quorum.retry.backoff.ms", "", "32-bit integer"},
		{"controller.quorum.append.linger.ms", "25ms", "32-bit integer"},
		{"controller.quorum.auto.join.enable", "yes", "true or false"},
		{"controller.quorum.fetch.max.bytes", "1MiB", "32-bit integer"},
		{"controller.quorum.fetch.snapshot.max.bytes", "4294967296", "32-bit integer"},
		{"metadata.log.max.record.bytes.between.snapshots", "20MB", "64-bit integer"},
		{"metadata.log.max.snapshot.interval.ms", "1h", "64-bit integer"},
		{"metadata.log.segment.bytes", "1073741824000", "32-bit integer"},
		{"metadata.log.segment.ms", "week", "64-bit integer"},
		{"metadata.max.retention.bytes", "99999999999999999999", "64-bit integer"},
		{"metadata.max.retention.ms", "-", "64-bit integer"},
		{"metadata.max.idle.interval.ms", "0.5", "32-bit integer"},
		{"internal.metadata.log.segment.bytes", "0", "at least 1"},
		{"internal.metadata.log.segment.bytes", "x", "32-bit integer"},
		{"internal.metadata.max.batch.size.in.bytes", "x", "32-bit integer"},
		{"internal.metadata.delete.delay.millis", "x", "64-bit integer"},
		{"socket.request.max.bytes", "100MB", "32-bit integer"},
		{"connections.max.idle.ms", "10m", "64-bit integer"},
		{"max.connections", "unlimited", "32-bit integer"},
		{"max.connections.per.ip", "-", "32-bit integer"},
		{"max.connections.per.ip.overrides", "10.0.0.1", `cannot read entry "10.0.0.1"`},
		{"max.connections.per.ip.overrides", "10.0.0.1:many", `limit "many" for 10.0.0.1 is not a 32-bit integer`},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			_, _, err := ParseProperties([]byte(baseProperties + tt.key + "=" + tt.value + "\n"))
			problems := configErrors(t, err)
			if len(problems) != 1 {
				t.Fatalf("ParseProperties(%s=%s) gave %d problems, want 1:\n%v", tt.key, tt.value, len(problems), err)
			}
			p := problems[0]
			if p.Key != tt.key || p.Value != tt.value || !strings.Contains(p.Reason, tt.reason) {
				t.Errorf("problem = %v, want key %s, value %q and a reason containing %q", p, tt.key, tt.value, tt.reason)
			}
		})
	}
}

func TestParsePropertiesValidates(t *testing.T) {
	// Each line breaks one rule; the first problem reported is that
	// rule's, and n problems are reported in all.
	tests := []struct {
		line, key, reason string
		n                 int
	}{
		{"process.roles=broker", "process.roles", "cannot be a broker", 1},
		{"process.roles=broker,controller", "process.roles", "combined broker and controller mode is not supported", 1},
		{"process.roles=controller,controller", "process.roles", "appears twice", 1},
		{"process.roles=", "process.roles", "required", 1},
		{"node.id=7", "controller.quorum.voters", "this node's id 7 must be one of the voters", 1},
		{"controller.quorum.voters=1@c1:9093,1@c2:9093", "controller.quorum.voters", "voter id 1 appears twice", 1},
		{"controller.quorum.voters=1@0.0.0.0:9093", "controller.quorum.voters", "non-routable host 0.0.0.0", 1},
		{"controller.quorum.voters=1@:9093", "controller.quorum.voters", "voter 1 has no host", 1},
		{"controller.quorum.voters=", "controller.quorum.voters", "controller.quorum.bootstrap.servers", 1},
		{"controller.listener.names=\nlisteners=", "controller.listener.names", "required", 2},
		{"advertised.listeners=CONTROLLER://0.0.0.0:9093", "advertised.listeners", "non-routable address 0.0.0.0", 1},
		{"controller.quorum.fetch.max.bytes=0", "controller.quorum.fetch.max.bytes", "at least 1", 1},
		{"metadata.log.segment.bytes=8388607", "metadata.log.segment.bytes", "at least 8388608", 1},
		{"controller.quorum.election.timeout.ms=-1", "controller.quorum.election.timeout.ms", "at least 0", 1},
		{"log.dirs=", "metadata.log.dir", "required", 1},
		{"metadata.log.dir=\nlog.dir=/data/c", "metadata.log.dir", "required", 1},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			_, _, err := ParseProperties([]byte(baseProperties + tt.line + "\n"))
			problems := configErrors(t, err)
			if len(problems) != tt.n || problems[0].Key != tt.key || !strings.Contains(problems[0].Reason, tt.reason) {
				t.Errorf("ParseProperties(%q) = %v, want %d problems, the first with %s: %q", tt.line, err, tt.n, tt.key, tt.reason)
			}
		})
	}
}

// TestParsePropertiesBrokerID checks Kafka's synonym broker.id for
// node.id.
func TestParsePropertiesBrokerID(t *testing.T) {
	const rest = `process.roles=controller
listeners=CONTROLLER://:9093
controller.listener.names=CONTROLLER
controller.quorum.voters=2@controller-2:9093
`
	c, _, err := ParseProperties([]byte(rest + "broker.id=2\n"))
	if err != nil || c.NodeID != 2 {
		t.Errorf("broker.id=2 alone gives node %d, %v; want node 2", c.NodeID, err)
	}
	if _, ok := c.Properties()["broker.id"]; ok {
		t.Errorf("Properties() shows broker.id; node.id is the one name it renders")
	}

	tests := []struct {
		lines, key, value, reason string
	}{
		{"node.id=2\nbroker.id=3", "node.id", "2", "must equal broker.id (3)"},
		{"broker.id=two", "broker.id", "two", "32-bit integer"},
		{"node.id=2\nbroker.id=two", "broker.id", "two", "32-bit integer"},
		{"node.id=x\nbroker.id=2", "node.id", "x", "32-bit integer"},
	}
	for _, tt := range tests {
		_, _, err := ParseProperties([]byte(rest + tt.lines + "\n"))
		problems := configErrors(t, err)
		if len(problems) != 1 || problems[0].Key != tt.key || problems[0].Value != tt.value || !strings.Contains(problems[0].Reason, tt.reason) {
			t.Errorf("ParseProperties(%q) = %v, want one problem: %s=%q %s", tt.lines, err, tt.key, tt.value, tt.reason)
		}
	}
}

func TestParsePropertiesJavaSyntax(t *testing.T) {
	tests := []struct {
		name, text string
		got        func(Config) any
		want       any
	}{
		{"colon separator", "metadata.log.dir: /data/x", func(c Config) any { return c.MetadataLogDir }, "/data/x"},
		{"whitespace separator", "metadata.log.dir   /data/x", func(c Config) any { return c.MetadataLogDir }, "/data/x"},
		{"spaces around equals", "metadata.log.dir = /data/x   ", func(c Config) any { return c.MetadataLogDir }, "/data/x"},
		{"bang comment", "! metadata.log.dir=/data/y\nmetadata.log.dir=/data/x", func(c Config) any { return c.MetadataLogDir }, "/data/x"},
		{"hash comment", "# metadata.log.dir=/data/y\nmetadata.log.dir=/data/x", func(c Config) any { return c.MetadataLogDir }, "/data/x"},
		{"line continuation", "controller.quorum.voters=1@c1:9093,\\\n    2@c2:9093,\\\n\t3@c3:9093", func(c Config) any { return len(c.QuorumVoters) }, 3},
		{"unicode escape", "metadata.log.dir=/data/\\u00e9t\\u00E9", func(c Config) any { return c.MetadataLogDir }, "/data/été"},
		{"ISO-8859-1 byte", "metadata.log.dir=/data/\xe9", func(c Config) any { return c.MetadataLogDir }, "/data/é"},
		{"escaped separator in value", "metadata.log.dir=/data/a\\=b\\:c", func(c Config) any { return c.MetadataLogDir }, "/data/a=b:c"},
		{"CRLF line endings", "metadata.log.dir=/data/x\r\nmetadata.max.idle.interval.ms=7\r\n", func(c Config) any { return c.MaxIdleInterval }, 7 * time.Millisecond},
		{"last duplicate wins", "metadata.max.idle.interval.ms=7\nmetadata.max.idle.interval.ms=9", func(c Config) any { return c.MaxIdleInterval }, 9 * time.Millisecond},
		{"no expansion", "metadata.log.dir=${HOME}/data", func(c Config) any { return c.MetadataLogDir }, "${HOME}/data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := ParseProperties([]byte(baseProperties + tt.text + "\n"))
			if err != nil {
				t.Fatalf("ParseProperties(%q) = %v", tt.text, err)
			}
			if diff := cmp.Diff(tt.want, tt.got(c)); diff != "" {
				t.Errorf("ParseProperties(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestParsePropertiesSyntaxError(t *testing.T) {
	_, _, err := ParseProperties([]byte(baseProperties + "metadata.log.dir=\\u12zz\n"))
	if err == nil {
		t.Fatal("ParseProperties with a malformed \\u escape = nil error")
	}
	if errors.As(err, new(*ConfigError)) {
		t.Errorf("a syntax error is not about one property, got %v", err)
	}
	if !strings.HasPrefix(err.Error(), "raft: read properties: ") {
		t.Errorf("error %q lacks the raft: read properties prefix", err)
	}
}

func TestParsePropertiesLongMillisAreCapped(t *testing.T) {
	c, w, err := ParseProperties([]byte(baseProperties + "metadata.max.retention.ms=9223372036854775807\n"))
	if err != nil {
		t.Fatalf("ParseProperties = %v", err)
	}
	if c.MaxRetentionTime != time.Duration(maxMillis)*time.Millisecond {
		t.Errorf("MaxRetentionTime = %v, want the longest whole-millisecond Duration", c.MaxRetentionTime)
	}
	if len(w) != 1 || w[0].Key != "metadata.max.retention.ms" || !strings.Contains(w[0].Reason, "292 years") {
		t.Errorf("warnings = %v, want one about metadata.max.retention.ms being capped", w)
	}
}

func TestParsePropertiesUnknownKeysAreWarnings(t *testing.T) {
	text := baseProperties + "num.network.threads=3\npassword.encoder.secret=hunter2\nlog.retention.hours=168\n"
	c, w, err := ParseProperties([]byte(text))
	if err != nil {
		t.Fatalf("ParseProperties = %v, want unknown keys not to be errors", err)
	}
	if c.NodeID != 1 {
		t.Errorf("NodeID = %d, want 1", c.NodeID)
	}
	want := Warnings{
		{Key: "num.network.threads", Reason: "not used by a Krabka controller; ignored"},
		{Key: "password.encoder.secret", Reason: "not used by a Krabka controller; ignored"},
		{Key: "log.retention.hours", Reason: "not used by a Krabka controller; ignored"},
	}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
	for _, x := range w {
		if strings.Contains(x.String(), "hunter2") {
			t.Errorf("warning %q shows a value", x)
		}
	}
	if got := w[0].String(); got != "num.network.threads: not used by a Krabka controller; ignored" {
		t.Errorf("Warning.String() = %q", got)
	}
}

func TestLoadConfigController(t *testing.T) {
	c, w, err := LoadConfig(filepath.Join("testdata", "config", "controller.properties"))
	if err != nil {
		t.Fatalf("LoadConfig = %v", err)
	}
	want := DefaultConfig()
	want.NodeID = 1
	want.ProcessRoles = []ProcessRole{ControllerRole}
	want.QuorumVoters = []QuorumVoter{
		{ID: 1, Host: "controller-1.example.com", Port: 9093},
		{ID: 2, Host: "controller-2.example.com", Port: 9093},
		{ID: 3, Host: "2001:db8::3", Port: 9093},
	}
	want.Listeners = []Endpoint{{Name: "CONTROLLER", Port: 9093}}
	want.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "controller-1.example.com", Port: 9093}}
	want.ControllerListenerNames = []string{"CONTROLLER"}
	want.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecurityPlaintext, "PLAINTEXT": SecurityPlaintext}
	want.SocketRequestMaxBytes = 104857600
	want.MetadataLogDir = "/var/lib/kafka/metadata"
	want.ElectionTimeout = 1500 * time.Millisecond
	want.FetchTimeout = 3 * time.Second
	want.MaxIdleInterval = time.Second
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("LoadConfig mismatch (-want +got):\n%s", diff)
	}
	var keys []string
	for _, x := range w {
		keys = append(keys, x.Key)
	}
	wantKeys := []string{
		"num.network.threads", "num.io.threads", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
		"num.partitions", "num.recovery.threads.per.data.dir", "offsets.topic.replication.factor",
		"transaction.state.log.replication.factor", "transaction.state.log.min.isr", "log.retention.hours",
		"log.segment.bytes", "log.retention.check.interval.ms", "password.encoder.secret",
	}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("warning keys mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadConfigDynamicController(t *testing.T) {
	c, w, err := LoadConfig(filepath.Join("testdata", "config", "dynamic-controller.properties"))
	if err != nil || len(w) != 0 {
		t.Fatalf("LoadConfig = %v, %v, want no error and no warnings", w, err)
	}
	if !c.AutoJoin || len(c.QuorumVoters) != 0 || len(c.QuorumBootstrapServers) != 3 {
		t.Errorf("auto join %v, voters %v, bootstrap servers %v; want a dynamic quorum with auto join", c.AutoJoin, c.QuorumVoters, c.QuorumBootstrapServers)
	}
	if c.MetadataLogDir != "/var/lib/krabka/metadata" {
		t.Errorf("MetadataLogDir = %q, want metadata.log.dir to win over log.dirs", c.MetadataLogDir)
	}
	want := []Endpoint{{Name: "CONTROLLER", Host: "controller-4", Port: 9093}}
	if diff := cmp.Diff(want, c.AdvertisedControllerEndpoints()); diff != "" {
		t.Errorf("AdvertisedControllerEndpoints mismatch (-want +got):\n%s", diff)
	}
}

// TestLoadConfigBroken checks that unreadable values and rule violations
// of one file come back together, each once.
func TestLoadConfigBroken(t *testing.T) {
	_, w, err := LoadConfig(filepath.Join("testdata", "config", "broken.properties"))
	type problem struct{ key, value string }
	var got []problem
	for _, p := range configErrors(t, err) {
		got = append(got, problem{p.Key, p.Value})
	}
	want := []problem{
		{"node.id", "one"},
		{"listeners", "CONTROLLER://:9093,CONTROLLER://:99999"},
		{"controller.quorum.fetch.timeout.ms", "2s"},
		{"process.roles", "broker,controller"},
		{"controller.quorum.voters", "1@controller-1:9093,2@0.0.0.0:9093"},
		{"controller.quorum.fetch.max.bytes", "0"},
		{"metadata.log.segment.bytes", "1048576"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(problem{})); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s\nerror:\n%v", diff, err)
	}
	if len(w) != 1 || w[0].Key != "log.retention.hours" {
		t.Errorf("warnings = %v, want log.retention.hours", w)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, _, err := LoadConfig(filepath.Join(t.TempDir(), "absent.properties"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadConfig(absent) = %v, want an error wrapping os.ErrNotExist", err)
	}
}

// TestPropertiesRoundTrip renders configs as properties and reads them
// back: the effective configuration must not change.
func TestPropertiesRoundTrip(t *testing.T) {
	full := validConfig()
	full.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "2001:db8::1", Port: 19093}}
	full.QuorumBootstrapServers = []HostPort{{Host: "c1", Port: 9093}, {Host: "::1", Port: 9094}}
	full.ListenerSecurityProtocolMap = map[string]SecurityProtocol{"CONTROLLER": SecurityPlaintext, "OTHER": SecuritySSL}
	full.AutoJoin = true
	full.InternalSegmentBytes = 4096
	full.MaxRetentionTime = -time.Millisecond
	full.ConnectionsMaxIdle = -time.Millisecond
	full.MaxConnectionsPerIP = 0
	full.MaxConnectionsPerIPOverrides = map[string]int32{"::1": 3, "10.0.0.1": 100}
	for name, c := range map[string]Config{
		"valid":     validConfig(),
		"full":      full,
		"for tests": ForTests(3, "/tmp/krabka test"),
	} {
		t.Run(name, func(t *testing.T) {
			back, _, err := ParseProperties([]byte(c.String()))
			if err != nil {
				t.Fatalf("ParseProperties(String()) = %v\n%s", err, c)
			}
			if diff := cmp.Diff(c.Properties(), back.Properties()); diff != "" {
				t.Errorf("round trip changed the properties (-before +after):\n%s", diff)
			}
			for _, k := range []string{"node.id", "listeners", "controller.quorum.voters"} {
				if _, ok := c.Properties()[k]; !ok {
					t.Errorf("Properties() lacks %s", k)
				}
			}
		})
	}
}

func TestStringIsSortedKeyValueLines(t *testing.T) {
	s := ForTests(1, "/data").String()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := 1; i < len(lines); i++ {
		prev, _, _ := strings.Cut(lines[i-1], "=")
		key, _, _ := strings.Cut(lines[i], "=")
		if prev >= key {
			t.Errorf("key %q comes before %q", prev, key)
		}
	}
	for _, want := range []string{
		"controller.quorum.voters=1@127.0.0.1:0",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
		"listeners=CONTROLLER://127.0.0.1:0",
		"metadata.log.dir=/data",
		"controller.quorum.election.timeout.ms=100",
	} {
		if !strings.Contains(s, want+"\n") {
			t.Errorf("String() lacks line %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "internal.metadata.log.segment.bytes") {
		t.Errorf("String() shows the unset internal segment override:\n%s", s)
	}
}

// TestPropertiesRenderEveryKey checks that Properties shows every
// property that ParseProperties reads.
func TestPropertiesRenderEveryKey(t *testing.T) {
	props := DefaultConfig().Properties()
	props["internal.metadata.log.segment.bytes"] = ""
	props["krabka.log.level"] = ""
	if got, want := len(props), len(propertyTable)+1; got != want {
		t.Errorf("Properties() has %d keys, want %d", got, want)
	}
	for _, p := range propertyTable {
		if _, ok := props[p.key]; !ok {
			t.Errorf("Properties() lacks %s", p.key)
		}
	}
	if _, ok := props[keyMetadataLogDir]; !ok {
		t.Errorf("Properties() lacks metadata.log.dir")
	}
}

func TestStringEscapesValues(t *testing.T) {
	tests := []struct {
		dir, line string
		roundTrip bool
	}{
		{`C:\kafka\meta`, `metadata.log.dir=C:\\kafka\\meta`, true},
		{"/data/été", `metadata.log.dir=/data/\u00e9t\u00e9`, true},
		{"/data/a\tb\nc", `metadata.log.dir=/data/a\u0009b\u000ac`, true},
		{" /data", `metadata.log.dir=\ /data`, false}, // values are trimmed on reading, as Kafka trims them
		{"/data/😀", `metadata.log.dir=/data/\ud83d\ude00`, false},
	}
	for _, tt := range tests {
		c := validConfig()
		c.MetadataLogDir = tt.dir
		s := c.String()
		if !strings.Contains(s, tt.line+"\n") {
			t.Errorf("String() with metadata.log.dir %q lacks line %q:\n%s", tt.dir, tt.line, s)
		}
		if !tt.roundTrip {
			continue
		}
		back, _, err := ParseProperties([]byte(s))
		if err != nil || back.MetadataLogDir != tt.dir {
			t.Errorf("reading String() back gives metadata.log.dir %q, %v; want %q", back.MetadataLogDir, err, tt.dir)
		}
	}
}
