package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestPprofServesProfilesUntilStopped(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stop, bound, err := startPprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
		resp, err := client.Get("http://" + bound + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("GET %s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		if path == "/debug/pprof/goroutine?debug=1" && !strings.Contains(string(body), "goroutine profile") {
			t.Fatalf("GET %s: not a goroutine profile:\n%.200s", path, body)
		}
	}
	stop()
	if _, err := client.Get("http://" + bound + "/debug/pprof/"); err == nil {
		t.Fatal("the profiles are still served after stop")
	}
}

func TestPprofBadAddressNamesTheVariable(t *testing.T) {
	_, _, err := startPprof("not an address")
	if err == nil || !strings.Contains(err.Error(), pprofEnv+`="not an address"`) {
		t.Fatalf("err = %v, want one naming %s and the address", err, pprofEnv)
	}
}

func TestServerStartFailsOnABadPprofAddress(t *testing.T) {
	n, _ := newFormattedVoter(t)
	t.Setenv(pprofEnv, "not an address")
	mustFail(t, pprofEnv+`="not an address"`, "server-start", n.props)
}
