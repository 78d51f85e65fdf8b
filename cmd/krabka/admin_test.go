package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAdminFlagsAreChecked: server-start and healthcheck refuse a
// malformed admin address (and a negative lag or read bound) before doing
// anything, naming the flag.
func TestAdminFlagsAreChecked(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	for _, addr := range []string{"9404", "host:", "host:port", "host:70000", "[::1]:-1", "a b:1"} {
		mustFail(t, `--admin-address "`+addr+`"`, "server-start", "--admin-address", addr, n.props)
		mustFail(t, `--admin-address "`+addr+`"`, "healthcheck", "--admin-address", addr)
	}
	mustFail(t, "--ready-max-lag -1: must not be negative", "server-start", "--admin-address", "127.0.0.1:0", "--ready-max-lag", "-1", n.props)
	mustFail(t, "--ready-read-timeout -1s: must not be negative", "server-start", "--admin-address", "127.0.0.1:0", "--ready-read-timeout", "-1s", n.props)
	mustFail(t, `--check "up": want ready or live`, "healthcheck", "--check", "up")
	mustFail(t, "/readyz: ", "healthcheck", "--admin-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--timeout", "2s")
}

// TestAdminEndpointsOfAQuorum runs a three-node quorum with server-start
// and scrapes each node's /metrics over HTTP: the leader has
// activecontrollercount 1 and the followers 0, every node reports the
// same leader and three voters, and the high watermark moves as the
// leader commits its NoOpRecords. /livez and /readyz answer 200 and the
// healthcheck command exits 0 against each node; once the other two
// stop, the remaining node's /readyz answers 503 and healthcheck fails.
func TestAdminEndpointsOfAQuorum(t *testing.T) {
	const n = 3
	admins, _, stops := startAdminQuorum(t, n)

	var leader int
	waitUntil(t, "one active controller", func() bool {
		leader = -1
		active := 0
		for i := range n {
			m, err := scrape(admins[i])
			if err != nil {
				return false
			}
			if m["kafka_controller_kafkacontroller_activecontrollercount"] == 1 {
				active++
				leader = i
			}
		}
		return active == 1
	})
	for i := range n {
		m, err := scrape(admins[i])
		if err != nil {
			t.Fatal(err)
		}
		state := "follower"
		want := 0.0
		if i == leader {
			state, want = "leader", 1
		}
		if got := m["kafka_controller_kafkacontroller_activecontrollercount"]; got != want {
			t.Errorf("node %d: activecontrollercount %v, want %v", i+1, got, want)
		}
		if m[`kafka_server_raftmetrics_current_state{current_state="`+state+`"}`] != 1 {
			t.Errorf("node %d: no current_state %s series with value 1", i+1, state)
		}
		if got := m["kafka_server_raftmetrics_current_leader"]; got != float64(leader+1) {
			t.Errorf("node %d: current_leader %v, want %d", i+1, got, leader+1)
		}
		if got := m["kafka_server_raftmetrics_number_of_voters"]; got != n {
			t.Errorf("node %d: number_of_voters %v, want %d", i+1, got, n)
		}
		for _, name := range []string{"go_goroutines", "process_start_time_seconds", "kafka_server_raftchannelmetrics_request_total", "krabka_log_fsync_duration_seconds_count",
			`krabka_listener_connections_closed_total{listener="CONTROLLER",reason="idle"}`, `krabka_listener_connections_refused_total{listener="CONTROLLER",reason="quota"}`} {
			if _, ok := m[name]; !ok {
				t.Errorf("node %d exposes no %s", i+1, name)
			}
		}
		// The followers fetch from the leader, which sends each of them
		// its BeginQuorumEpoch: every listener has accepted a voter.
		if got := m[`krabka_listener_connections_accepted_total{listener="CONTROLLER"}`]; got < 1 {
			t.Errorf("node %d: %v connections accepted on its listener, want at least another voter's", i+1, got)
		}
	}
	before, err := scrape(admins[leader])
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the leader's high watermark to move", func() bool {
		m, err := scrape(admins[leader])
		return err == nil && m["kafka_server_raftmetrics_high_watermark"] > before["kafka_server_raftmetrics_high_watermark"] &&
			m["kafka_server_raftmetrics_append_records_rate"] > 0
	})

	for i := range n {
		waitUntil(t, "every node to be ready", func() bool { return get(admins[i], "/readyz") == http.StatusOK })
		if code := get(admins[i], "/livez"); code != http.StatusOK {
			t.Errorf("node %d: /livez %d", i+1, code)
		}
		if r := mustSucceed(t, "healthcheck", "--admin-address", admins[i]); r.stdout != "ok\n" {
			t.Errorf("healthcheck of node %d printed %q", i+1, r.stdout)
		}
		if r := mustSucceed(t, "healthcheck", "--admin-address", admins[i], "--verbose", "--exclude", "linearizable-read"); !strings.Contains(r.stdout, "[+]leader ok\n") ||
			strings.Contains(r.stdout, "linearizable-read") || !strings.HasSuffix(r.stdout, "\nok\n") {
			t.Errorf("healthcheck --verbose --exclude linearizable-read of node %d printed %q", i+1, r.stdout)
		}
		if code, body := getBody(admins[i], "/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]linearizable-read ok\n") || !strings.HasSuffix(body, "\nok\n") {
			t.Errorf("node %d: /readyz?verbose = %d %q", i+1, code, body)
		}
	}
	last := (leader + 1) % n
	for i := range n {
		if i != last {
			stops[i]()
		}
	}
	waitUntil(t, "the node left alone to be not ready", func() bool { return get(admins[last], "/readyz") == http.StatusServiceUnavailable })
	if code, body := getBody(admins[last], "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]linearizable-read failed: ") || !strings.HasSuffix(body, "\nreadyz check failed\n") {
		t.Errorf("the node left alone: /readyz = %d %q", code, body)
	}
	mustFail(t, "/readyz: 503 Service Unavailable: [+]engine-loop ok", "healthcheck", "--admin-address", admins[last])
	mustSucceed(t, "healthcheck", "--admin-address", admins[last], "--check", "live")
	// Leaving out what a node alone fails makes it pass: the exclusions
	// reach the endpoint.
	mustSucceed(t, "healthcheck", "--admin-address", admins[last], "--exclude", "leader", "--exclude", "caught-up",
		"--exclude", "committing", "--exclude", "linearizable-read")
	mustFail(t, `unknown health check "no-such-check"`, "healthcheck", "--admin-address", admins[last], "--exclude", "no-such-check")
}

// startAdminQuorum formats and runs an n-node static quorum on loopback
// with server-start, each node with an admin endpoint, and returns the
// admin addresses, the voters' addresses and a stop function per node.
func startAdminQuorum(t *testing.T, n int) (admins, voterAddrs []string, stops []func()) {
	t.Helper()
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, freePort(t)))
		admins = append(admins, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	stops = make([]func(), n)
	for i := range n {
		addr := voters[i][strings.Index(voters[i], "@")+1:]
		node := newTestNode(t, i+1, "listeners=CONTROLLER://"+addr, "advertised.listeners=CONTROLLER://"+addr,
			"controller.quorum.voters="+strings.Join(voters, ","),
			"controller.quorum.election.timeout.ms=200", "controller.quorum.fetch.timeout.ms=1000",
			"metadata.max.idle.interval.ms=100")
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", node.props)
		stops[i] = serveUntilStopped(t, "server-start", "--admin-address", admins[i], node.props)
		voterAddrs = append(voterAddrs, addr)
	}
	return admins, voterAddrs, stops
}

// serveUntilStopped runs the command line args in this process until
// stop is called or the test ends.
func serveUntilStopped(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, args, &stdout, &stderr) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("krabka %s: exit %d: %s", strings.Join(args, " "), code, tail(stderr.String(), 5))
			}
		case <-time.After(40 * time.Second):
			t.Errorf("krabka %s did not stop", strings.Join(args, " "))
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitUntil polls cond for up to 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get returns the status code of GET path on addr, 0 when unreachable.
func get(addr, path string) int {
	code, _ := getBody(addr, path)
	return code
}

// getBody returns the status code and body of GET path on addr, 0 when
// unreachable.
func getBody(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads addr's /metrics in the text format: every series (name
// with its labels as written) with its value.
func scrape(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics line %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}
