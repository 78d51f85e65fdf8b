// Package prom exports a Krabka node's [raft.Metrics] to Prometheus.
//
// The KRaft metrics carry the names that Strimzi's jmx_exporter rules
// give Kafka's MBeans, so that dashboards and alerts written for Kafka's
// controllers work unchanged: kafka.server:type=raft-metrics becomes
// kafka_server_raftmetrics_<attribute> (hyphens as underscores),
// current-state an info-style series with the state as the current_state
// label and the value 1, kafka.server:type=raft-channel-metrics
// kafka_server_raftchannelmetrics_<attribute>, and
// kafka.controller:type=KafkaController,name=ActiveControllerCount
// kafka_controller_kafkacontroller_activecontrollercount. The averages,
// maxima and rates are Kafka's windowed statistics (two samples of 30 s,
// Kafka's metrics.num.samples and metrics.sample.window.ms), in Kafka's
// units (milliseconds, records per second); an average or maximum
// without a sample in the window is NaN, as Kafka reports it.
//
// Beside them are Krabka's own metrics in Prometheus's style, in base
// units: histograms of the fsync duration, the commit latency and the
// group commit's batches, counters of leader changes and proposals, and
// the controller listeners' traffic. docs/operations.md lists them all.
package prom

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka-go/krabka/raft"
)

// Recorder is a [raft.Metrics] that keeps its values in Prometheus
// collectors. Its methods allocate nothing.
type Recorder struct {
	now func() time.Time

	state                                              atomic.Int32 // index in raft.RaftStates
	stateDesc                                          *prometheus.Desc
	leader, epoch, vote, highWatermark                 prometheus.Gauge
	logEndOffset, logEndEpoch, unknownVoters           prometheus.Gauge
	voters, observers, uncommittedVoterChange          prometheus.Gauge
	activeControllers                                  prometheus.Gauge
	commitLatency, electionLatency                     windowed
	fetchRecords, appendRecords                        windowed
	pollIdle, pollBusy                                 windowed
	channelConnections                                 prometheus.Gauge
	channelSent, channelReceived                       traffic
	listenerConnections                                prometheus.Gauge
	listenerReceived, listenerSent                     traffic
	fsyncSeconds, commitSeconds                        prometheus.Histogram
	batchRecords, batchBytes                           prometheus.Histogram
	leaderChanges, proposalsCommitted, proposalsFailed prometheus.Counter
}

// Kafka's sampled statistics: metrics.num.samples samples of
// metrics.sample.window.ms each.
const (
	sampleWindow = 30 * time.Second
	samples      = 2
)

// New returns a Recorder whose metrics are registered with reg. It fails
// when reg already holds one of the names.
func New(reg prometheus.Registerer) (*Recorder, error) {
	r := &Recorder{now: time.Now}
	r.state.Store(-1)
	var cs []prometheus.Collector
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		cs = append(cs, g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		cs = append(cs, c)
		return c
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		cs = append(cs, h)
		return h
	}
	stat := func(name, help string, value func() float64) {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value))
	}
	const raftNS = "kafka_server_raftmetrics_"
	const channelNS = "kafka_server_raftchannelmetrics_"
	r.stateDesc = prometheus.NewDesc(raftNS+"current_state",
		"The current state of this member (1 for the state in the current_state label).", []string{"current_state"}, nil)
	cs = append(cs, stateCollector{r})
	r.leader = gauge(raftNS+"current_leader", "The current quorum leader's id; -1 indicates unknown.")
	r.epoch = gauge(raftNS+"current_epoch", "The current quorum epoch.")
	r.vote = gauge(raftNS+"current_vote", "The current voted id; -1 indicates not voted for anyone.")
	r.highWatermark = gauge(raftNS+"high_watermark", "The high watermark maintained on this member; -1 if it is unknown.")
	r.logEndOffset = gauge(raftNS+"log_end_offset", "The current raft log end offset.")
	r.logEndEpoch = gauge(raftNS+"log_end_epoch", "The current raft log end epoch.")
	r.unknownVoters = gauge(raftNS+"number_unknown_voter_connections", "Number of unknown voters whose connection information is not cached.")
	r.voters = gauge(raftNS+"number_of_voters", "Number of voters in the latest voter set.")
	r.observers = gauge(raftNS+"number_of_observers", "Number of observers the leader tracks; 0 on other members.")
	r.uncommittedVoterChange = gauge(raftNS+"uncommitted_voter_change", "1 while the leader has a voter change that is not committed.")
	r.activeControllers = gauge("kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller (the leader that has committed in its epoch), else 0.")
	stat(raftNS+"commit_latency_avg", "The average time in milliseconds to commit a submission.", r.commitLatency.avg(r))
	stat(raftNS+"commit_latency_max", "The maximum time in milliseconds to commit a submission.", r.commitLatency.max(r))
	stat(raftNS+"election_latency_avg", "The average time in milliseconds spent on electing a new leader.", r.electionLatency.avg(r))
	stat(raftNS+"election_latency_max", "The maximum time in milliseconds spent on electing a new leader.", r.electionLatency.max(r))
	stat(raftNS+"fetch_records_rate", "The average number of records fetched from the leader per second.", r.fetchRecords.rate(r))
	stat(raftNS+"append_records_rate", "The average number of records appended per second as the leader.", r.appendRecords.rate(r))
	stat(raftNS+"poll_idle_ratio_avg", "The ratio of time the engine loop is idle as opposed to doing work.", r.idleRatio)
	r.channelConnections = gauge(channelNS+"connection_count", "The current number of connections to other nodes.")
	r.channelSent = traffic{counter(channelNS+"request_total", "The total number of requests sent to other nodes."),
		counter(channelNS+"outgoing_byte_total", "The total number of bytes sent to other nodes.")}
	r.channelReceived = traffic{counter(channelNS+"response_total", "The total number of responses received from other nodes."),
		counter(channelNS+"incoming_byte_total", "The total number of bytes read from other nodes.")}
	r.listenerConnections = gauge("krabka_listener_connections", "The current number of connections to the controller listeners.")
	r.listenerReceived = traffic{counter("krabka_listener_requests_total", "Requests read by the controller listeners."),
		counter("krabka_listener_received_bytes_total", "Bytes read by the controller listeners.")}
	r.listenerSent = traffic{counter("krabka_listener_responses_total", "Responses written by the controller listeners."),
		counter("krabka_listener_sent_bytes_total", "Bytes written by the controller listeners.")}
	r.fsyncSeconds = histogram("krabka_log_fsync_duration_seconds", "The duration of one fsync of the metadata log.",
		prometheus.ExponentialBuckets(0.0001, 2, 16))
	r.commitSeconds = histogram("krabka_commit_latency_seconds", "The time from a submission's arrival on the leader to its application.",
		prometheus.ExponentialBuckets(0.0001, 2, 16))
	r.batchRecords = histogram("krabka_group_commit_batch_records", "The records of one batch the leader proposes.",
		prometheus.ExponentialBuckets(1, 2, 14))
	r.batchBytes = histogram("krabka_group_commit_batch_size_bytes", "The size of one batch the leader proposes.",
		prometheus.ExponentialBuckets(64, 4, 10))
	r.leaderChanges = counter("krabka_leader_changes_seen_total", "The number of leader changes this node has seen.")
	r.proposalsCommitted = counter("krabka_proposals_committed_total", "Submissions proposed by this node as the leader and applied.")
	r.proposalsFailed = counter("krabka_proposals_failed_total", "Submissions proposed by this node as the leader that failed before their commit.")
	r.leader.Set(-1)
	r.vote.Set(-1)
	r.highWatermark.Set(-1)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// stateCollector exposes current_state as jmx_exporter does: one series,
// for the current state, with the value 1.
type stateCollector struct{ r *Recorder }

func (s stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- s.r.stateDesc }

func (s stateCollector) Collect(ch chan<- prometheus.Metric) {
	if i := s.r.state.Load(); i >= 0 {
		ch <- prometheus.MustNewConstMetric(s.r.stateDesc, prometheus.GaugeValue, 1, string(raft.RaftStates[i]))
	}
}

var _ raft.Metrics = (*Recorder)(nil)

// Quorum sets the quorum gauges.
func (r *Recorder) Quorum(q raft.QuorumMetrics) {
	for i, s := range raft.RaftStates {
		if s == q.State {
			r.state.Store(int32(i))
		}
	}
	r.leader.Set(float64(q.Leader))
	r.epoch.Set(float64(q.Epoch))
	r.vote.Set(float64(q.Vote))
	r.highWatermark.Set(float64(q.HighWatermark))
	r.logEndOffset.Set(float64(q.LogEndOffset))
	r.logEndEpoch.Set(float64(q.LogEndEpoch))
	r.voters.Set(float64(q.Voters))
	r.observers.Set(float64(q.Observers))
	r.uncommittedVoterChange.Set(boolGauge(q.UncommittedVoterChange))
	r.activeControllers.Set(boolGauge(q.Active))
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Committed records a commit's latency.
func (r *Recorder) Committed(latency time.Duration) {
	r.commitLatency.record(r.now(), millis(latency))
	r.commitSeconds.Observe(latency.Seconds())
	r.proposalsCommitted.Inc()
}

// ProposalsFailed counts failed proposals.
func (r *Recorder) ProposalsFailed(n int) { r.proposalsFailed.Add(float64(n)) }

// Elected records an election's latency.
func (r *Recorder) Elected(latency time.Duration) {
	r.electionLatency.record(r.now(), millis(latency))
}

// LeaderChanged counts a leader change.
func (r *Recorder) LeaderChanged() { r.leaderChanges.Inc() }

// Appended counts appended records: as the leader, or fetched.
func (r *Recorder) Appended(records int, asLeader bool) {
	if asLeader {
		r.appendRecords.record(r.now(), float64(records))
	} else {
		r.fetchRecords.record(r.now(), float64(records))
	}
}

// Proposed records one batch of the group commit.
func (r *Recorder) Proposed(records, bytes int) {
	r.batchRecords.Observe(float64(records))
	r.batchBytes.Observe(float64(bytes))
}

// Synced records an fsync's duration.
func (r *Recorder) Synced(d time.Duration) { r.fsyncSeconds.Observe(d.Seconds()) }

// Polled records one turn of the engine loop.
func (r *Recorder) Polled(idle, busy time.Duration) {
	now := r.now()
	r.pollIdle.record(now, float64(idle))
	r.pollBusy.record(now, float64(busy))
}

// ChannelConnections counts connections to other nodes.
func (r *Recorder) ChannelConnections(delta int) { r.channelConnections.Add(float64(delta)) }

// ChannelSent counts requests sent to other nodes.
func (r *Recorder) ChannelSent(requests, bytes int) { r.channelSent.add(requests, bytes) }

// ChannelReceived counts responses read from other nodes.
func (r *Recorder) ChannelReceived(responses, bytes int) { r.channelReceived.add(responses, bytes) }

// ListenerConnections counts the listeners' connections.
func (r *Recorder) ListenerConnections(delta int) { r.listenerConnections.Add(float64(delta)) }

// ListenerReceived counts requests read by the listeners.
func (r *Recorder) ListenerReceived(requests, bytes int) { r.listenerReceived.add(requests, bytes) }

// ListenerSent counts responses written by the listeners.
func (r *Recorder) ListenerSent(responses, bytes int) { r.listenerSent.add(responses, bytes) }

// traffic counts frames and their bytes.
type traffic struct{ frames, bytes prometheus.Counter }

func (t traffic) add(frames, bytes int) {
	t.frames.Add(float64(frames))
	t.bytes.Add(float64(bytes))
}

// idleRatio is the share of the loop's time in the window spent waiting.
func (r *Recorder) idleRatio() float64 {
	now := r.now()
	idle, _, _ := r.pollIdle.sums(now)
	busy, _, _ := r.pollBusy.sums(now)
	if idle+busy == 0 {
		return math.NaN()
	}
	return idle / (idle + busy)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// windowed is a statistic over the last samples windows of sampleWindow,
// as Kafka's SampledStat keeps them: each sample holds the sum, count and
// maximum of the values recorded while it was current.
type windowed struct {
	mu      sync.Mutex
	samples [samples]sample
	current int
}

type sample struct {
	start    time.Time
	sum, max float64
	count    int64
}

// record adds v at now, starting a new sample when the current one is
// a window old.
func (w *windowed) record(now time.Time, v float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.samples[w.current]
	if s.start.IsZero() || now.Sub(s.start) >= sampleWindow {
		w.current = (w.current + 1) % samples
		s = &w.samples[w.current]
		*s = sample{start: now, max: math.Inf(-1)}
	}
	s.sum += v
	s.count++
	s.max = max(s.max, v)
}

// sums returns the sum, count and maximum of the samples that are not
// older than samples windows at now, and the start of the oldest.
func (w *windowed) sums(now time.Time) (sum float64, count int64, oldest time.Time) {
	sum, _, count, oldest = w.stats(now)
	return sum, count, oldest
}

func (w *windowed) stats(now time.Time) (sum, maxV float64, count int64, oldest time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	maxV = math.Inf(-1)
	for _, s := range w.samples {
		if s.start.IsZero() || now.Sub(s.start) >= samples*sampleWindow {
			continue
		}
		sum += s.sum
		count += s.count
		maxV = max(maxV, s.max)
		if oldest.IsZero() || s.start.Before(oldest) {
			oldest = s.start
		}
	}
	return sum, maxV, count, oldest
}

// avg returns the average of the window's values, NaN without any.
func (w *windowed) avg(r *Recorder) func() float64 {
	return func() float64 {
		sum, _, count, _ := w.stats(r.now())
		if count == 0 {
			return math.NaN()
		}
		return sum / float64(count)
	}
}

// max returns the window's largest value, NaN without any.
func (w *windowed) max(r *Recorder) func() float64 {
	return func() float64 {
		_, m, count, _ := w.stats(r.now())
		if count == 0 {
			return math.NaN()
		}
		return m
	}
}

// rate returns the window's sum per second, over at least samples-1
// whole windows, as Kafka's Rate measures the elapsed time.
func (w *windowed) rate(r *Recorder) func() float64 {
	return func() float64 {
		now := r.now()
		sum, _, oldest := w.sums(now)
		if oldest.IsZero() {
			return 0
		}
		elapsed := max(now.Sub(oldest), (samples-1)*sampleWindow)
		return sum / elapsed.Seconds()
	}
}
