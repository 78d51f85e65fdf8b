package prom

import (
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka-go/krabka/raft"
)

var update = flag.Bool("update", false, "rewrite testdata/names.golden")

func newRecorder(t *testing.T) (*Recorder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	r, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return r, reg
}

// TestExposedNames: the recorder exposes exactly the names and types of
// testdata/names.golden (Strimzi's names for Kafka's MBeans, then
// Krabka's own), each with a help text, and passes the pedantic
// registry's checks.
func TestExposedNames(t *testing.T) {
	r, reg := newRecorder(t)
	r.Quorum(raft.QuorumMetrics{State: raft.StateLeader})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range families {
		if f.GetHelp() == "" {
			t.Errorf("%s has no help text", f.GetName())
		}
		b.WriteString(f.GetName() + " " + strings.ToLower(f.GetType().String()) + "\n")
	}
	golden := filepath.Join("testdata", "names.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("exposed names:\n%s\nwant (testdata/names.golden):\n%s", got, want)
	}
	if _, err := New(reg); err == nil {
		t.Error("a second Recorder registered the same names")
	}
}

// TestQuorumGauges: the gauges show the last QuorumMetrics, and
// current_state has one series, the current state's, with value 1.
func TestQuorumGauges(t *testing.T) {
	r, reg := newRecorder(t)
	if got := gathered(t, reg, "kafka_server_raftmetrics_current_leader", nil); got != -1 {
		t.Errorf("current_leader before any report = %v, want -1", got)
	}
	if n := series(t, reg, "kafka_server_raftmetrics_current_state"); n != 0 {
		t.Errorf("current_state has %d series before any report, want 0", n)
	}
	r.Quorum(raft.QuorumMetrics{State: raft.StateCandidate, Leader: -1, Epoch: 3, Vote: 2})
	r.Quorum(raft.QuorumMetrics{State: raft.StateLeader, Leader: 2, Epoch: 4, Vote: 2, HighWatermark: 10, LogEndOffset: 12,
		LogEndEpoch: 4, Voters: 3, Observers: 1, UncommittedVoterChange: true, Active: true})
	for name, want := range map[string]float64{
		"current_leader": 2, "current_epoch": 4, "current_vote": 2, "high_watermark": 10, "log_end_offset": 12,
		"log_end_epoch": 4, "number_of_voters": 3, "number_of_observers": 1, "uncommitted_voter_change": 1,
		"number_unknown_voter_connections": 0,
	} {
		if got := gathered(t, reg, "kafka_server_raftmetrics_"+name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := gathered(t, reg, "kafka_controller_kafkacontroller_activecontrollercount", nil); got != 1 {
		t.Errorf("activecontrollercount = %v, want 1", got)
	}
	if n := series(t, reg, "kafka_server_raftmetrics_current_state"); n != 1 {
		t.Errorf("current_state has %d series, want 1", n)
	}
	if got := gathered(t, reg, "kafka_server_raftmetrics_current_state", map[string]string{"current_state": "leader"}); got != 1 {
		t.Errorf("current_state{leader} = %v, want 1", got)
	}
	r.Quorum(raft.QuorumMetrics{State: raft.StateFollower, Leader: 3, Epoch: 5})
	if got := gathered(t, reg, "kafka_server_raftmetrics_current_state", map[string]string{"current_state": "follower"}); got != 1 {
		t.Errorf("current_state{follower} = %v, want 1", got)
	}
	if got := gathered(t, reg, "kafka_controller_kafkacontroller_activecontrollercount", nil); got != 0 {
		t.Errorf("activecontrollercount of a follower = %v, want 0", got)
	}
}

// series returns how many series of name reg exposes.
func series(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}

// gathered returns the value of the series of name whose labels include
// labels (a histogram's sample count), or NaN when there is none.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metric
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return math.NaN()
}

// TestWindowedStatistics: the averages, maxima and rates cover the last
// two 30-second samples, as Kafka's do, and forget older values.
func TestWindowedStatistics(t *testing.T) {
	r, reg := newRecorder(t)
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	value := func(name string) float64 { return gathered(t, reg, "kafka_server_raftmetrics_"+name, nil) }
	if v := value("commit_latency_avg"); !math.IsNaN(v) {
		t.Errorf("commit_latency_avg without a commit = %v, want NaN", v)
	}
	r.Committed(10 * time.Millisecond)
	r.Committed(30 * time.Millisecond)
	if avg, maxV := value("commit_latency_avg"), value("commit_latency_max"); avg != 20 || maxV != 30 {
		t.Errorf("commit latency avg %v max %v, want 20 and 30 (ms)", avg, maxV)
	}
	r.Appended(90, true)
	r.Appended(5, false)
	if got := value("append_records_rate"); got != 3 {
		t.Errorf("append_records_rate = %v, want 90 records over one 30 s window = 3", got)
	}
	now = now.Add(40 * time.Second)
	r.Committed(2 * time.Millisecond)
	if avg, maxV := value("commit_latency_avg"), value("commit_latency_max"); avg != 14 || maxV != 30 {
		t.Errorf("commit latency avg %v max %v over two samples, want 14 and 30", avg, maxV)
	}
	if got := value("fetch_records_rate"); got != 5.0/40 {
		t.Errorf("fetch_records_rate = %v, want 5 records over 40 s", got)
	}
	now = now.Add(50 * time.Second) // the first sample is 90 s old
	if avg, maxV := value("commit_latency_avg"), value("commit_latency_max"); avg != 2 || maxV != 2 {
		t.Errorf("commit latency avg %v max %v, want only the newer sample's 2", avg, maxV)
	}
	r.Elected(250 * time.Millisecond)
	if got := value("election_latency_max"); got != 250 {
		t.Errorf("election_latency_max = %v, want 250", got)
	}
	r.Polled(3*time.Second, time.Second)
	if got := value("poll_idle_ratio_avg"); got != 0.75 {
		t.Errorf("poll_idle_ratio_avg = %v, want 0.75", got)
	}
	if got := gathered(t, reg, "krabka_commit_latency_seconds", nil); got != 3 {
		t.Errorf("krabka_commit_latency_seconds counts %v commits, want 3", got)
	}
	if got := gathered(t, reg, "krabka_proposals_committed_total", nil); got != 3 {
		t.Errorf("krabka_proposals_committed_total = %v, want 3", got)
	}
}

// TestTrafficCounters: the channel and listener methods move their
// counters and connection gauges, and the other events theirs.
func TestTrafficCounters(t *testing.T) {
	r, reg := newRecorder(t)
	r.ChannelConnections(1)
	r.ChannelSent(2, 100)
	r.ChannelReceived(1, 40)
	r.ListenerConnections(1)
	r.ListenerConnections(1)
	r.ListenerConnections(-1)
	r.ListenerReceived(1, 30)
	r.ListenerSent(3, 70)
	r.ProposalsFailed(2)
	r.LeaderChanged()
	r.Synced(time.Millisecond)
	r.Proposed(4, 512)
	for name, want := range map[string]float64{
		"kafka_server_raftchannelmetrics_connection_count":    1,
		"kafka_server_raftchannelmetrics_request_total":       2,
		"kafka_server_raftchannelmetrics_outgoing_byte_total": 100,
		"kafka_server_raftchannelmetrics_response_total":      1,
		"kafka_server_raftchannelmetrics_incoming_byte_total": 40,
		"krabka_listener_connections":                         1,
		"krabka_listener_requests_total":                      1,
		"krabka_listener_received_bytes_total":                30,
		"krabka_listener_responses_total":                     3,
		"krabka_listener_sent_bytes_total":                    70,
		"krabka_proposals_failed_total":                       2,
		"krabka_leader_changes_seen_total":                    1,
		"krabka_log_fsync_duration_seconds":                   1,
		"krabka_group_commit_batch_records":                   1,
		"krabka_group_commit_batch_size_bytes":                1,
	} {
		if got := gathered(t, reg, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// TestRecorderAllocations: every method the engine and the connections
// call allocates nothing.
func TestRecorderAllocations(t *testing.T) {
	r, _ := newRecorder(t)
	q := raft.QuorumMetrics{State: raft.StateLeader, Leader: 1, Epoch: 2, Vote: 1, HighWatermark: 5, Voters: 3, Active: true}
	for name, f := range map[string]func(){
		"Quorum":              func() { q.HighWatermark++; r.Quorum(q) },
		"Committed":           func() { r.Committed(time.Millisecond) },
		"ProposalsFailed":     func() { r.ProposalsFailed(1) },
		"Elected":             func() { r.Elected(time.Millisecond) },
		"LeaderChanged":       r.LeaderChanged,
		"Appended":            func() { r.Appended(1, true); r.Appended(1, false) },
		"Proposed":            func() { r.Proposed(1, 100) },
		"Synced":              func() { r.Synced(time.Millisecond) },
		"Polled":              func() { r.Polled(time.Millisecond, time.Microsecond) },
		"ChannelConnections":  func() { r.ChannelConnections(1) },
		"ChannelSent":         func() { r.ChannelSent(1, 10) },
		"ChannelReceived":     func() { r.ChannelReceived(1, 10) },
		"ListenerConnections": func() { r.ListenerConnections(1) },
		"ListenerReceived":    func() { r.ListenerReceived(1, 10) },
		"ListenerSent":        func() { r.ListenerSent(1, 10) },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s allocates %v times, want 0", name, a)
		}
	}
}

// TestCoreDoesNotImportPrometheus: the library (raft and what it
// imports) builds without client_golang; only this package brings it in.
func TestCoreDoesNotImportPrometheus(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/krabka-go/krabka/raft").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/krabka-go/krabka/internal/kraft") {
		t.Fatalf("go list -deps raft does not list internal/kraft: %v", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/prometheus/") {
			t.Errorf("raft imports %s", d)
		}
	}
}
