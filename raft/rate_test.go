package raft

import (
	"net"
	"strings"
	"testing"
	"time"
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
