package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka-go/krabka/raft"
)

// fakeChecks answers the health checks with fixed results: failing maps
// a check's name to its error. Like the Controller, it refuses to
// exclude a name it does not run.
type fakeChecks struct {
	failing map[string]error
	// opts is what the last call was given.
	opts raft.HealthOptions
}

func (f *fakeChecks) results(names []string, o raft.HealthOptions) ([]raft.CheckResult, error) {
	f.opts = o
	for _, x := range o.Exclude {
		if !slices.Contains(names, x) {
			return nil, fmt.Errorf("%w %q", raft.ErrUnknownCheck, x)
		}
	}
	var rs []raft.CheckResult
	for _, n := range names {
		if !slices.Contains(o.Exclude, n) {
			rs = append(rs, raft.CheckResult{Name: n, Err: f.failing[n]})
		}
	}
	return rs, nil
}

func (f *fakeChecks) LiveChecks(o raft.HealthOptions) ([]raft.CheckResult, error) {
	return f.results(raft.LiveCheckNames(), o)
}

func (f *fakeChecks) ReadyChecks(_ context.Context, o raft.HealthOptions) ([]raft.CheckResult, error) {
	return f.results(raft.ReadyCheckNames(), o)
}

// ask sends GET target to h and returns the status and body.
func ask(h http.Handler, method, target string) (int, string) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w.Code, w.Body.String()
}

// TestHealthEndpointsInEtcdsForm: /livez and /readyz answer "ok", list
// every check with ?verbose, list every check and "<kind> check failed"
// with 503 when one fails whatever the query, and leave out the checks
// ?exclude names.
func TestHealthEndpointsInEtcdsForm(t *testing.T) {
	reg, _, err := newMetricsRegistry()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeChecks{}
	opts := raft.DefaultHealthOptions()
	opts.MaxLag = 7
	h := mustAdminHandler(t, reg, f, opts)

	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/readyz", 200, "ok\n"},
		{"/livez", 200, "ok\n"},
		{"/readyz?verbose", 200, "[+]engine-loop ok\n[+]fatal-fault ok\n[+]leader ok\n[+]caught-up ok\n[+]committing ok\n[+]linearizable-read ok\nok\n"},
		{"/readyz?verbose=true&exclude=linearizable-read&exclude=leader", 200, "[+]engine-loop ok\n[+]fatal-fault ok\n[+]caught-up ok\n[+]committing ok\nok\n"},
		{"/readyz?verbose=false", 200, "ok\n"},
		{"/livez?verbose", 200, "[+]engine-loop ok\n[+]fatal-fault ok\nok\n"},
	} {
		if code, body := ask(h, "GET", tc.target); code != tc.code || body != tc.body {
			t.Errorf("GET %s = %d %q, want %d %q", tc.target, code, body, tc.code, tc.body)
		}
	}
	if f.opts.MaxLag != 7 || f.opts.ReadTimeout != opts.ReadTimeout || f.opts.MaxTurn != opts.MaxTurn {
		t.Errorf("the checks ran with %+v, want the bounds of %+v", f.opts, opts)
	}

	f.failing = map[string]error{raft.CheckLeader: errors.New("no leader known in epoch 3"), raft.CheckLinearizableRead: errors.Join(errors.New("a"), errors.New("b"))}
	want := "[+]engine-loop ok\n[+]fatal-fault ok\n[-]leader failed: no leader known in epoch 3\n[+]caught-up ok\n[+]committing ok\n[-]linearizable-read failed: a; b\nreadyz check failed\n"
	for _, target := range []string{"/readyz", "/readyz?verbose"} {
		if code, body := ask(h, "GET", target); code != 503 || body != want {
			t.Errorf("GET %s with failing checks = %d %q, want 503 %q", target, code, body, want)
		}
	}
	if code, body := ask(h, "GET", "/readyz?exclude=leader&exclude=linearizable-read"); code != 200 || body != "ok\n" {
		t.Errorf("GET /readyz excluding the failing checks = %d %q, want 200 ok", code, body)
	}
	if code, _ := ask(h, "GET", "/livez"); code != 200 {
		t.Errorf("GET /livez with failing readiness checks = %d, want 200", code)
	}
}

// TestAdminDefaultsAreTheLibrarys: the flags' defaults are the bounds of
// raft.DefaultHealthOptions, and a zero read timeout is the default.
func TestAdminDefaultsAreTheLibrarys(t *testing.T) {
	d := raft.DefaultHealthOptions()
	if d.MaxLag != defaultReadyMaxLag {
		t.Errorf("defaultReadyMaxLag %d, raft.DefaultHealthOptions().MaxLag %d", defaultReadyMaxLag, d.MaxLag)
	}
	// adminOptions made without the flags read with the default.
	if got := (&adminOptions{readyMaxLag: 5}).healthOptions(); got.ReadTimeout != d.ReadTimeout || got.MaxLag != 5 {
		t.Errorf("healthOptions of a zero read timeout = %+v, want the default read timeout %v", got, d.ReadTimeout)
	}
	if got := (&adminOptions{readTimeout: time.Second}).healthOptions(); got.ReadTimeout != time.Second {
		t.Errorf("healthOptions with --ready-read-timeout 1s = %+v", got)
	}
}

// TestHealthEndpointsRefuseBadRequests: a query that does not parse, an
// unknown parameter or value, an empty or unknown check name answer 400
// saying why; another method answers 405.
func TestHealthEndpointsRefuseBadRequests(t *testing.T) {
	reg, _, err := newMetricsRegistry()
	if err != nil {
		t.Fatal(err)
	}
	h := mustAdminHandler(t, reg, &fakeChecks{}, raft.DefaultHealthOptions())
	for _, tc := range []struct{ target, want string }{
		{"/readyz?%zz", "/readyz: bad query"},
		{"/readyz?verbose;x", "/readyz: bad query"},
		{"/readyz?foo=1", `/readyz: unknown parameter "foo" (want verbose or exclude)`},
		{"/livez?verbose=yes", `/livez: verbose="yes": want no value, true or false`},
		{"/readyz?exclude=", "/readyz: exclude needs a check name"},
		{"/readyz?exclude=nope", `/readyz: raft: unknown health check "nope"`},
		{"/livez?exclude=leader", `/livez: raft: unknown health check "leader"`},
	} {
		code, body := ask(h, "GET", tc.target)
		if code != http.StatusBadRequest || !strings.HasPrefix(body, tc.want) {
			t.Errorf("GET %s = %d %q, want 400 %q", tc.target, code, body, tc.want)
		}
	}
	if code, _ := ask(h, "POST", "/readyz"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /readyz = %d, want 405", code)
	}
}

// FuzzHealthQuery: no query makes a health endpoint panic or answer
// anything but 200, 400 or 503, and a query that parses names no empty
// check.
func FuzzHealthQuery(f *testing.F) {
	for _, s := range []string{"", "verbose", "verbose=true&exclude=leader", "exclude=", "%zz", "a=b;c", "exclude=nope&exclude=leader"} {
		f.Add(s)
	}
	reg, _, err := newMetricsRegistry()
	if err != nil {
		f.Fatal(err)
	}
	h := mustAdminHandler(f, reg, &fakeChecks{failing: map[string]error{raft.CheckLeader: errors.New("none")}}, raft.DefaultHealthOptions())
	f.Fuzz(func(t *testing.T, q string) {
		_, exclude, err := parseHealthQuery(q)
		if err == nil && slices.Contains(exclude, "") {
			t.Fatalf("parseHealthQuery(%q) excludes an empty name", q)
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/readyz", nil)
		r.URL.RawQuery = q
		h.ServeHTTP(w, r)
		if w.Code != 200 && w.Code != 400 && w.Code != 503 {
			t.Fatalf("GET /readyz?%s = %d", q, w.Code)
		}
	})
}

// mustAdminHandler is adminHandler, failing tb when it fails.
func mustAdminHandler(tb testing.TB, reg *prometheus.Registry, c healthChecks, opts raft.HealthOptions) http.Handler {
	tb.Helper()
	h, err := adminHandler(reg, c, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// TestHealthEndpointsOfOneCheck: /readyz/NAME and /livez/NAME run the one
// check NAME, answer 503 with its reason when it fails while the others
// pass and 200 when it passes while another fails; a check of the other
// kind or of no kind is 404, and exclude on such a path is 400.
func TestHealthEndpointsOfOneCheck(t *testing.T) {
	reg, _, err := newMetricsRegistry()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeChecks{failing: map[string]error{raft.CheckLeader: errors.New("no leader known in epoch 3")}}
	h := mustAdminHandler(t, reg, f, raft.DefaultHealthOptions())
	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/readyz/leader", 503, "[-]leader failed: no leader known in epoch 3\nreadyz check failed\n"},
		{"/readyz/caught-up", 200, "ok\n"},
		{"/readyz/caught-up?verbose", 200, "[+]caught-up ok\nok\n"},
		{"/livez/fatal-fault?verbose", 200, "[+]fatal-fault ok\nok\n"},
		{"/livez/leader", 404, "/livez/leader: no such check (checks: engine-loop, fatal-fault)\n"},
		{"/readyz/nope", 404, "/readyz/nope: no such check (checks: engine-loop, fatal-fault, leader, caught-up, committing, linearizable-read)\n"},
		{"/readyz/leader?exclude=committing", 400, "/readyz/leader: exclude applies to /readyz, not to the path of one check\n"},
		{"/readyz/leader?bogus", 400, `/readyz: unknown parameter "bogus" (want verbose or exclude)` + "\n"},
	} {
		if code, body := ask(h, "GET", tc.target); code != tc.code || body != tc.body {
			t.Errorf("GET %s = %d %q, want %d %q", tc.target, code, body, tc.code, tc.body)
		}
	}
	if code, _ := ask(h, "GET", "/readyz/leader/more"); code != http.StatusNotFound {
		t.Errorf("GET /readyz/leader/more = %d, want 404", code)
	}
}

// TestHealthMetricsCountEveryCheckRun: each check an endpoint runs sets
// krabka_healthcheck to its last result and counts one run of its status
// in krabka_healthchecks_total; /metrics alone runs none.
func TestHealthMetricsCountEveryCheckRun(t *testing.T) {
	reg, _, err := newMetricsRegistry()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeChecks{failing: map[string]error{raft.CheckLeader: errors.New("none")}}
	h := mustAdminHandler(t, reg, f, raft.DefaultHealthOptions())
	if _, body := ask(h, "GET", "/metrics"); strings.Contains(body, "krabka_healthcheck{") {
		t.Fatalf("/metrics before any health request shows a check result:\n%s", body)
	}
	ask(h, "GET", "/readyz")
	ask(h, "GET", "/readyz/leader")
	ask(h, "GET", "/livez")
	f.failing = nil
	ask(h, "GET", "/readyz/leader")
	_, body := ask(h, "GET", "/metrics")
	for _, want := range []string{
		`krabka_healthcheck{name="leader",type="readyz"} 1`,
		`krabka_healthcheck{name="caught-up",type="readyz"} 1`,
		`krabka_healthcheck{name="engine-loop",type="livez"} 1`,
		`krabka_healthchecks_total{name="leader",status="error",type="readyz"} 2`,
		`krabka_healthchecks_total{name="leader",status="success",type="readyz"} 1`,
		`krabka_healthchecks_total{name="caught-up",status="success",type="readyz"} 1`,
		`krabka_healthchecks_total{name="fatal-fault",status="success",type="livez"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if _, err := adminHandler(reg, f, raft.DefaultHealthOptions()); err == nil {
		t.Error("a second admin handler on the same registry registered its metrics twice")
	}
}
