package raft

import (
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/metadata"
)

// TestConnectionCreationRateProperties: max.connection.creation.rate,
// listener.name.<listener>.max.connection.creation.rate and the quota
// window they are measured over (quota.window.num,
// quota.window.size.seconds) are read into Config and written back by
// Properties; a negative rate, an empty window, an upper-case listener
// and a listener that is not a controller listener are refused.
func TestConnectionCreationRateProperties(t *testing.T) {
	cfg, w, err := ParseProperties([]byte(baseProperties + "max.connection.creation.rate=100\nlistener.name.controller.max.connection.creation.rate=10\n"))
	if err != nil || len(w) != 0 {
		t.Fatalf("ParseProperties: %v, warnings %v", err, w)
	}
	if cfg.MaxConnectionCreationRate != 100 || cfg.ListenerMaxConnectionCreationRate["CONTROLLER"] != 10 {
		t.Errorf("rates %d, %v", cfg.MaxConnectionCreationRate, cfg.ListenerMaxConnectionCreationRate)
	}
	if p := cfg.Properties(); p["listener.name.controller.max.connection.creation.rate"] != "10" || p[keyMaxConnectionCreationRate] != "100" {
		t.Errorf("Properties = %v", p)
	}
	cfg, _, err = ParseProperties([]byte(baseProperties + "quota.window.num=4\nquota.window.size.seconds=3\n"))
	if err != nil || cfg.QuotaWindowNum != 4 || cfg.QuotaWindowSize != 3*time.Second {
		t.Errorf("quota window: %v, %d × %v", err, cfg.QuotaWindowNum, cfg.QuotaWindowSize)
	}
	for _, tt := range []struct{ line, key, reason string }{
		{"quota.window.num=0", keyQuotaWindowNum, "at least 1"},
		{"quota.window.size.seconds=0", keyQuotaWindowSize, "at least 1"},
		{"max.connection.creation.rate=-1", keyMaxConnectionCreationRate, "at least 0"},
		{"listener.name.controller.max.connection.creation.rate=-1", "listener.name.controller.max.connection.creation.rate", "at least 0"},
		{"listener.name.other.max.connection.creation.rate=5", "listener.name.other.max.connection.creation.rate", "not a controller listener"},
		{"listener.name.CONTROLLER.max.connection.creation.rate=5", "listener.name.CONTROLLER.max.connection.creation.rate", "lower case"},
		{"listener.name.controller.max.connection.creation.rate=fast", "listener.name.controller.max.connection.creation.rate", ""},
	} {
		_, _, err := ParseProperties([]byte(baseProperties + tt.line + "\n"))
		got := configErrors(t, err)
		if len(got) != 1 || got[0].Key != tt.key || !strings.Contains(got[0].Reason, tt.reason) {
			t.Errorf("ParseProperties(%s) = %v; want one problem with %s saying %q", tt.line, err, tt.key, tt.reason)
		}
	}
}

// TestStartEnforcesConnectionCreationRate: on a real listener, a
// listener's own max.connection.creation.rate delays its accepts (three
// connections at 1 a second: two accepts wait) while the other listener,
// under only the node-wide rate, accepts its three at once; every
// connection is served in the end.
func TestStartEnforcesConnectionCreationRate(t *testing.T) {
	cfg := twoListenerConfig(t)
	cfg.QuotaWindowNum = 2 // the rate over the last second: no burst beyond it
	cfg.MaxConnectionCreationRate = 1000
	cfg.ListenerMaxConnectionCreationRate = map[string]int32{"CONTROLLER2": 1}
	c := startNode(t, cfg)
	for _, name := range []string{"CONTROLLER", "CONTROLLER2"} {
		addr, _ := c.ListenerAddr(name)
		for range 3 {
			nc, err := net.Dial("tcp", addr.String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = nc.Close() })
		}
	}
	first, second := c.srv.srvs[0], c.srv.srvs[1]
	waitFor(t, "the throttled listener to accept its three connections", func() bool { return second.Stats().Accepted == 3 })
	if st := second.Stats(); st.Throttled != 2 {
		t.Errorf("CONTROLLER2 (1 a second): %d accepts delayed, want 2", st.Throttled)
	}
	waitFor(t, "the other listener to accept its three connections", func() bool { return first.Stats().Accepted >= 3 })
	if st := first.Stats(); st.Throttled != 0 {
		t.Errorf("CONTROLLER (node-wide 1000 a second): %d accepts delayed, want none", st.Throttled)
	}
}

// ipQuota is a ClientQuotaRecord setting connection_creation_rate of the
// ip entity name (nil: the default entity).
func ipQuota(name *string, v float64) *metadata.ClientQuotaRecord {
	r := metadata.NewClientQuotaRecord()
	r.Entity = []metadata.ClientQuotaRecordEntityData{{EntityType: metadata.QuotaEntityIP, EntityName: name}}
	r.Key, r.Value = quotaKeyConnectionRate, v
	return r
}

// TestIPRateTable: the ip quotas of an image give each address its own
// connection_creation_rate, else the default entity's; an IPv4-mapped
// name is its IPv4 address; Kafka's default value is no quota; other
// entities and keys count for nothing.
func TestIPRateTable(t *testing.T) {
	str := func(s string) *string { return &s }
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	user := metadata.NewClientQuotaRecord()
	user.Entity = []metadata.ClientQuotaRecordEntityData{{EntityType: metadata.QuotaEntityUser, EntityName: str("10.0.0.9")}}
	user.Key, user.Value = quotaKeyConnectionRate, 1
	other := ipQuota(str("10.0.0.8"), 1)
	other.Key = "producer_byte_rate"
	table := newIPRateTable(imageOf(t, mv, ipQuota(str("10.0.0.1"), 5.9), ipQuota(str("::ffff:10.0.0.2"), 2),
		ipQuota(str("10.0.0.3"), math.MaxInt32), user, other))
	for ip, want := range map[string]int{"10.0.0.1": 5, "10.0.0.2": 2} {
		if got, ok := table.lookup(ip); !ok || got != want {
			t.Errorf("lookup(%s) = %d, %v; want %d", ip, got, ok, want)
		}
	}
	for _, ip := range []string{"10.0.0.3", "10.0.0.8", "10.0.0.9", "10.0.0.4"} {
		if got, ok := table.lookup(ip); ok {
			t.Errorf("lookup(%s) = %d, want no quota", ip, got)
		}
	}
	withDefault := newIPRateTable(imageOf(t, mv, ipQuota(nil, 3), ipQuota(str("10.0.0.1"), 7)))
	if got, ok := withDefault.lookup("10.0.0.4"); !ok || got != 3 {
		t.Errorf("default: lookup = %d, %v; want 3", got, ok)
	}
	if got, ok := withDefault.lookup("10.0.0.1"); !ok || got != 7 {
		t.Errorf("own quota over the default: lookup = %d, %v; want 7", got, ok)
	}
}

// TestStartEnforcesIPConnectionRate: a connection_creation_rate of 1 for
// 127.0.0.2, committed as a ClientQuotaRecord, takes effect on the live
// listener (measured over the last second, quota.window.num=2): the
// first connection from that address is served, the second is held
// unserved and closed, while 127.0.0.1 is served.
func TestStartEnforcesIPConnectionRate(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.QuotaWindowNum = 2
	c := startNode(t, cfg)
	waitFor(t, "node 1 to lead", func() bool { return c.QuorumState().Role == RoleLeader })
	addr := "127.0.0.2"
	submit(t, c, ipQuota(&addr, 1))
	waitFor(t, "the quota to be applied", func() bool {
		_, ok := c.CurrentImage().ClientQuotas().Get([]metadata.QuotaEntityPart{{Type: metadata.QuotaEntityIP, Name: &addr}})
		return ok
	})
	if _, err := apiVersionsFrom(t, "127.0.0.2", c.Addr()); err != nil {
		t.Fatalf("the first connection from 127.0.0.2: %v", err)
	}
	if _, err := apiVersionsFrom(t, "127.0.0.2", c.Addr()); err == nil {
		t.Error("a second connection from 127.0.0.2 within the second was served at connection_creation_rate 1")
	}
	if _, err := apiVersionsFrom(t, "127.0.0.1", c.Addr()); err != nil {
		t.Errorf("127.0.0.1, without a quota: %v", err)
	}
	if st := c.srv.srvs[0].Stats(); st.IPThrottled != 1 {
		t.Errorf("IPThrottled %d, want 1", st.IPThrottled)
	}
}
