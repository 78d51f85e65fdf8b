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
	h := adminHandler(reg, f, opts)

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
	h := adminHandler(reg, &fakeChecks{}, raft.DefaultHealthOptions())
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
	h := adminHandler(reg, &fakeChecks{failing: map[string]error{raft.CheckLeader: errors.New("none")}}, raft.DefaultHealthOptions())
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
