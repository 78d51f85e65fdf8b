package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka-go/krabka/raft"
)

// ListenerCollector exports the connection counters of a node's
// controller listeners ([raft.Controller.ListenerStats]), read at each
// scrape, so that recording them costs the connections nothing:
//
//	krabka_listener_connections_accepted_total{listener}
//	krabka_listener_connections_refused_total{listener,reason="quota|ip_creation_rate"}
//	krabka_listener_accepts_throttled_total{listener}
//	krabka_listener_accepts_waited_total{listener}
//	krabka_listener_connections_closed_total{listener,reason="invalid|idle|session_expired|reauthentication_failed"}
//	krabka_listener_reauthentications_total{listener}
//	krabka_listener_connections_active{listener}
type ListenerCollector struct {
	stats                                                    func() []raft.ListenerStats
	accepted, refused, throttled, waited, closed, reauth, on *prometheus.Desc
}

// NewListenerCollector returns a collector of what stats returns.
func NewListenerCollector(stats func() []raft.ListenerStats) *ListenerCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("krabka_listener_"+name, help, append([]string{"listener"}, labels...), nil)
	}
	return &ListenerCollector{
		stats:     stats,
		accepted:  d("connections_accepted_total", "Connections a controller listener accepted and admitted."),
		refused:   d("connections_refused_total", "Connections a controller listener closed at accept, by the quota that refused them.", "reason"),
		throttled: d("accepts_throttled_total", "Accepts a controller listener delayed for max.connection.creation.rate."),
		waited:    d("accepts_waited_total", "Accepts a controller listener held, waiting for a connection slot under max.connections."),
		closed:    d("connections_closed_total", "Connections a controller listener closed, by reason: an invalid frame or request, idle for connections.max.idle.ms, a request after the SASL session expired, a failed re-authentication.", "reason"),
		reauth:    d("reauthentications_total", "Successful SASL re-authentications (KIP-368) on a controller listener."),
		on:        d("connections_active", "Connections open on a controller listener."),
	}
}

// Describe implements [prometheus.Collector].
func (c *ListenerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.accepted, c.refused, c.throttled, c.waited, c.closed, c.reauth, c.on} {
		ch <- d
	}
}

// Collect implements [prometheus.Collector].
func (c *ListenerCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, s := range c.stats() {
		counter(c.accepted, s.Accepted, s.Name)
		counter(c.refused, s.Rejected, s.Name, "quota")
		counter(c.refused, s.IPThrottled, s.Name, "ip_creation_rate")
		counter(c.throttled, s.Throttled, s.Name)
		counter(c.waited, s.SlotWaits, s.Name)
		counter(c.closed, s.ClosedInvalid, s.Name, "invalid")
		counter(c.closed, s.ClosedIdle, s.Name, "idle")
		counter(c.closed, s.ClosedExpired, s.Name, "session_expired")
		counter(c.closed, s.ReauthFailed, s.Name, "reauthentication_failed")
		counter(c.reauth, s.Reauthenticated, s.Name)
		ch <- prometheus.MustNewConstMetric(c.on, prometheus.GaugeValue, float64(s.Active), s.Name)
	}
}
