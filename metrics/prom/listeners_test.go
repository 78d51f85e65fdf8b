package prom

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka-go/krabka/raft"
)

// gatherSeries registers c alone and returns every series it exports,
// keyed by name and label values ("name{v1,v2}").
func gatherSeries(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetValue()
			}
			key += "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// Every counter of every listener is exported under its name and labels,
// read from the stats at each scrape.
func TestListenerCollector(t *testing.T) {
	stats := []raft.ListenerStats{{
		Name: "CONTROLLER", Accepted: 7, Active: 3, Rejected: 2, SlotWaits: 11, Throttled: 4, IPThrottled: 1,
		ClosedInvalid: 5, ClosedIdle: 6, ClosedExpired: 8, Reauthenticated: 9, ReauthFailed: 10,
	}, {Name: "CONTROLLER2", Accepted: 1}}
	c := NewListenerCollector(func() []raft.ListenerStats { return stats })
	want := map[string]float64{
		"krabka_listener_connections_accepted_total{CONTROLLER}":                       7,
		"krabka_listener_connections_active{CONTROLLER}":                               3,
		"krabka_listener_connections_refused_total{CONTROLLER,quota}":                  2,
		"krabka_listener_connections_refused_total{CONTROLLER,ip_creation_rate}":       1,
		"krabka_listener_accepts_throttled_total{CONTROLLER}":                          4,
		"krabka_listener_accepts_waited_total{CONTROLLER}":                             11,
		"krabka_listener_connections_closed_total{CONTROLLER,invalid}":                 5,
		"krabka_listener_connections_closed_total{CONTROLLER,idle}":                    6,
		"krabka_listener_connections_closed_total{CONTROLLER,session_expired}":         8,
		"krabka_listener_connections_closed_total{CONTROLLER,reauthentication_failed}": 10,
		"krabka_listener_reauthentications_total{CONTROLLER}":                          9,
		"krabka_listener_connections_accepted_total{CONTROLLER2}":                      1,
	}
	got := gatherSeries(t, c)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != 22 {
		t.Errorf("%d series, want 11 per listener", len(got))
	}
	stats[0].Accepted = 8
	if got := gatherSeries(t, c); got["krabka_listener_connections_accepted_total{CONTROLLER}"] != 8 {
		t.Error("the stats are not read at each scrape")
	}
}
