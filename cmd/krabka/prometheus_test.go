package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka-go/krabka/metrics/prom"
	"github.com/krabka-go/krabka/raft"
)

// The tests in this file run Debian's prometheus and promtool (installed
// by .ci/run). Without them they skip, except when CI is set, where a
// missing binary fails the test so CI never passes by skipping.

// needTool returns the path of the named binary, or skips t (fails it
// when CI is set) when it is not on PATH.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found on PATH (apt-get install prometheus)", name)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (required when CI is set)")
	}
	t.Skip(msg)
	return ""
}

// promServer is a prometheus process scraping the test's quorum.
type promServer struct {
	addr string
}

// startPrometheus runs prometheus on a free loopback port with a
// temporary storage directory, scraping each admin address every
// second with the label node="<index+1>", and waits until it answers.
func startPrometheus(t *testing.T, admins []string) *promServer {
	t.Helper()
	bin := needTool(t, "prometheus")
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n")
	if rules := alertsFile(t); fileExists(rules) {
		cfg.WriteString("rule_files:\n  - " + strconv.Quote(rules) + "\n")
	}
	cfg.WriteString("scrape_configs:\n  - job_name: krabka\n    static_configs:\n")
	for i, a := range admins {
		fmt.Fprintf(&cfg, "      - targets: [%q]\n        labels: {node: \"%d\"}\n", a, i+1)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &promServer{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+p.addr,
		"--log.level=warn")
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("prometheus output:\n%s", tail(stderr.String(), 20))
		}
	})
	waitUntilFor(t, "prometheus to be ready", 60*time.Second, func() bool { return get(p.addr, "/-/ready") == http.StatusOK })
	return p
}

// alertsFile is the absolute path of the shipped alert rules.
func alertsFile(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// promSample is one series of an instant query's vector result.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  float64
}

// query runs an instant PromQL query and returns its vector result, or
// the error Prometheus answered.
func (p *promServer) query(expr string) ([]promSample, error) {
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: %s: %w", expr, resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, nil
	}
	var out []promSample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v", expr, r.Value[1])
		}
		out = append(out, promSample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// scalar runs expr and returns its single value; ok is false when the
// query failed or did not return exactly one series.
func (p *promServer) scalar(expr string) (float64, bool) {
	s, err := p.query(expr)
	if err != nil || len(s) != 1 {
		return 0, false
	}
	return s[0].Value, true
}

// waitUntilFor polls cond until it holds or d passes.
func waitUntilFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPrometheusScrapesAQuorum runs a real Prometheus, loaded with the
// shipped alert rules, against a three-node quorum started with
// server-start: every target comes up,
// exactly one node is leader and active controller, every node reports
// the same epoch, the high watermark rises as the leader commits its
// NoOpRecords, every query of the shipped Grafana dashboard returns
// series, and once the leader is killed the scrape data shows
// another node as the one leader, the leader-change expression moves and
// the node-down and quorum-at-risk alerts become pending or fire.
func TestPrometheusScrapesAQuorum(t *testing.T) {
	needTool(t, "prometheus")
	const n = 3
	admins, _, stops := startAdminQuorum(t, n)
	start := time.Now()
	p := startPrometheus(t, admins)
	const wait = 90 * time.Second

	waitUntilFor(t, "all three targets up", wait, func() bool {
		v, ok := p.scalar(`sum(up{job="krabka"})`)
		return ok && v == n
	})
	waitUntilFor(t, "one leader and one active controller", wait, func() bool {
		l, ok1 := p.scalar(`sum(kafka_server_raftmetrics_current_state{current_state="leader"})`)
		a, ok2 := p.scalar(`sum(kafka_controller_kafkacontroller_activecontrollercount)`)
		c, ok3 := p.scalar(`count(kafka_server_raftmetrics_current_epoch)`)
		return ok1 && ok2 && ok3 && l == 1 && a == 1 && c == n
	})
	waitUntilFor(t, "the same epoch on every node", wait, func() bool {
		d, ok := p.scalar(`max(kafka_server_raftmetrics_current_epoch) - min(kafka_server_raftmetrics_current_epoch)`)
		return ok && d == 0
	})
	hw0, ok := p.scalar(`max(kafka_server_raftmetrics_high_watermark)`)
	if !ok {
		t.Fatal("no high watermark in the scrape data")
	}
	waitUntilFor(t, "the high watermark to rise", wait, func() bool {
		hw, ok := p.scalar(`max(kafka_server_raftmetrics_high_watermark)`)
		return ok && hw > hw0
	})

	checkDashboardQueries(t, p)

	leaders, err := p.query(`kafka_server_raftmetrics_current_state{current_state="leader"} == 1`)
	if err != nil || len(leaders) != 1 {
		t.Fatalf("leader series: %v %v", leaders, err)
	}
	old := leaders[0].Metric["node"]
	i, _ := strconv.Atoi(old)
	if i < 1 || i > n {
		t.Fatalf("leader series without a node label: %v", leaders[0].Metric)
	}
	t.Logf("node %s leads after %v; killing it", old, time.Since(start).Round(time.Millisecond))
	stops[i-1]()

	waitUntilFor(t, "the old leader's target down", wait, func() bool {
		v, ok := p.scalar(`up{job="krabka",node="` + old + `"}`)
		return ok && v == 0
	})
	var now string
	waitUntilFor(t, "a new leader in the scrape data", wait, func() bool {
		s, err := p.query(`kafka_server_raftmetrics_current_state{current_state="leader"} == 1`)
		if err != nil || len(s) != 1 || s[0].Metric["node"] == old {
			return false
		}
		now = s[0].Metric["node"]
		a, ok := p.scalar(`sum(kafka_controller_kafkacontroller_activecontrollercount)`)
		return ok && a == 1
	})
	waitUntilFor(t, "the leader-change expression to move", wait, func() bool {
		v, ok := p.scalar(`max(changes(kafka_server_raftmetrics_current_leader[5m]))`)
		return ok && v > 0
	})
	t.Logf("node %s leads after the kill", now)
	waitUntilFor(t, "KrabkaNodeDown and KrabkaQuorumAtRisk pending or firing", wait, func() bool {
		a := p.alerts(t)
		return a["KrabkaNodeDown"] && a["KrabkaQuorumAtRisk"]
	})
	t.Logf("test ran %v", time.Since(start).Round(time.Millisecond))
}

// alerts returns the names of the alerts Prometheus has pending or
// firing, and fails t when a shipped rule does not evaluate.
func (p *promServer) alerts(t *testing.T) map[string]bool {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/api/v1/rules?type=alert")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
					State     string `json:"state"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("/api/v1/rules: %v", err)
	}
	active := map[string]bool{}
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			if r.Health == "err" {
				t.Fatalf("rule %s does not evaluate: %s", r.Name, r.LastError)
			}
			if r.State == "pending" || r.State == "firing" {
				active[r.Name] = true
			}
		}
	}
	return active
}

// TestAlertRules checks the shipped alert rules with promtool and runs
// their unit tests (deploy/prometheus/alerts_test.yml), and checks that
// every Krabka or Kafka metric the rules name is one the exporter emits.
func TestAlertRules(t *testing.T) {
	promtool := needTool(t, "promtool")
	dir := filepath.Dir(alertsFile(t))
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	rules, err := os.ReadFile(alertsFile(t))
	if err != nil {
		t.Fatal(err)
	}
	checkMetricNames(t, "alerts.yml", string(rules))
}

// metricName matches a name of the series Krabka exports.
var metricName = regexp.MustCompile(`\b(?:kafka|krabka)_[a-z0-9_]+`)

// checkMetricNames fails t for each Krabka or Kafka metric name in text
// that metrics/prom/testdata/names.golden does not list (a histogram's
// _bucket, _sum and _count series count as its name).
func checkMetricNames(t *testing.T, what, text string) {
	t.Helper()
	golden, err := os.ReadFile(filepath.Join("..", "..", "metrics", "prom", "testdata", "names.golden"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
		name, kind, _ := strings.Cut(line, " ")
		known[name] = true
		if kind == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[name+s] = true
			}
		}
	}
	// The listener counters come from a collector of their own.
	reg := prometheus.NewRegistry()
	if err := reg.Register(prom.NewListenerCollector(func() []raft.ListenerStats { return []raft.ListenerStats{{Name: "CONTROLLER"}} })); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		known[f.GetName()] = true
	}
	seen := 0
	for _, name := range metricName.FindAllString(text, -1) {
		seen++
		if !known[name] {
			t.Errorf("%s names %s, which the exporter does not emit", what, name)
		}
	}
	if seen == 0 {
		t.Errorf("%s names no metric", what)
	}
}

// dashboardFile is the path of the shipped Grafana dashboard.
const dashboardFile = "../../deploy/grafana/krabka.json"

// dashboardExprs parses the shipped Grafana dashboard and returns every
// PromQL expression in it: each panel target's (rows' nested panels
// too) and each query variable's.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Title      string            `json:"title"`
		UID        string            `json:"uid"`
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("%s: no title or uid", dashboardFile)
	}
	var exprs []string
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: panel: %v", dashboardFile, err)
			}
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.Expr == "" || refs[tg.RefID] {
					t.Errorf("panel %q: target %q is empty or its refId repeats", p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("%s: variable query: %v", dashboardFile, err)
		}
		if q.Query != "" {
			exprs = append(exprs, q.Query)
		}
	}
	return exprs
}

// TestGrafanaDashboard: the shipped dashboard parses, every panel has
// queries, and every metric they name is one the exporter emits.
// TestPrometheusScrapesAQuorum runs each query against a live
// Prometheus.
func TestGrafanaDashboard(t *testing.T) {
	exprs := dashboardExprs(t)
	checkMetricNames(t, "deploy/grafana/krabka.json", strings.Join(exprs, "\n"))
}

// dashboardVariables turns a dashboard query into PromQL: the job
// variable becomes the test's scrape job and Grafana's rate interval a
// fixed window. A label_values variable query becomes the series it
// reads.
var dashboardVariables = strings.NewReplacer("$job", "krabka", "$__rate_interval", "1m")

// checkDashboardQueries runs every dashboard query on p and fails t for
// each that Prometheus refuses or that returns no series.
func checkDashboardQueries(t *testing.T, p *promServer) {
	t.Helper()
	for _, e := range dashboardExprs(t) {
		q := dashboardVariables.Replace(e)
		if name, ok := strings.CutPrefix(q, "label_values("); ok {
			q, _, _ = strings.Cut(name, ",")
		}
		s, err := p.query(q)
		if err != nil {
			t.Errorf("dashboard query: %v", err)
		} else if len(s) == 0 {
			t.Errorf("dashboard query %q returns no series", q)
		}
	}
}
