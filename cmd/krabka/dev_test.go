package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// changeLine matches a line krabka dev prints when the leader or the
// epoch changes, summaryLine its periodic summary.
var (
	changeLine  = regexp.MustCompile(`(?m)^leader=(-?\d+) epoch=(\d+)$`)
	summaryLine = regexp.MustCompile(`(?m)^summary leader=(-?\d+) epoch=(\d+) high_watermark=(-?\d+) ready=(\d+)/(\d+)$`)
	adminLine   = regexp.MustCompile(`(?m)^Admin node (\d+): +(http://127\.0\.0\.1:\d+)$`)
)

// runDevUntilReady runs krabka dev with the extra flags until it prints
// a summary with a leader that has committed and every node ready, calls
// during (when not nil) with what it printed so far, then stops it and
// returns what it printed.
func runDevUntilReady(t *testing.T, nodes string, during func(stdout string), flags ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	args := append([]string{"--log-format", "json", "dev", "--nodes", nodes, "--summary-interval", "300ms"}, flags...)
	go func() {
		done <- runContext(ctx, args, &out, &errOut)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !allReady(out.String()) {
		select {
		case code := <-done:
			t.Fatalf("dev exited with %d: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready quorum after 20s: %s\n%s", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if during != nil {
		during(out.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("dev did not stop")
	}
	return out.String(), errOut.String()
}

// allReady reports whether out has a summary line with a leader, a high
// watermark and every node ready.
func allReady(out string) bool {
	for _, m := range summaryLine.FindAllStringSubmatch(out, -1) {
		if m[1] != "-1" && m[3] != "-1" && m[4] == m[5] {
			return true
		}
	}
	return false
}

// checkDevReport checks the change lines and the stop lines of a krabka
// dev run of n nodes: each change line differs from the one before, and
// the last reported leader is the first node stopped.
func checkDevReport(t *testing.T, out string, n int) {
	t.Helper()
	changes := changeLine.FindAllStringSubmatch(out, -1)
	if len(changes) == 0 {
		t.Fatalf("no change line:\n%s", out)
	}
	for i := 1; i < len(changes); i++ {
		if changes[i][0] == changes[i-1][0] {
			t.Errorf("line %q printed twice in a row:\n%s", changes[i][0], out)
		}
	}
	// The high watermark moves twice a second; it is only in summaries.
	if strings.Contains(out, "\nhigh_watermark=") || regexp.MustCompile(`(?m)^leader=.*high_watermark`).MatchString(out) {
		t.Errorf("a change line carries the high watermark:\n%s", out)
	}
	if len(changes) > 4 {
		t.Errorf("%d change lines for one election:\n%s", len(changes), out)
	}
	leader := changes[len(changes)-1][1]
	stops := regexp.MustCompile(`(?m)^stopped node=(\d+)$`).FindAllStringSubmatch(out, -1)
	if len(stops) != n {
		t.Fatalf("%d stop lines, want %d:\n%s", len(stops), n, out)
	}
	if stops[0][1] != leader {
		t.Errorf("node %s stopped first, want the leader %s:\n%s", stops[0][1], leader, out)
	}
	seen := map[string]bool{}
	for _, s := range stops {
		if seen[s[1]] {
			t.Errorf("node %s stopped twice:\n%s", s[1], out)
		}
		seen[s[1]] = true
	}
}

// TestDevRunsAQuorum: krabka dev prints the quorum, its directory and
// what happens to it at exit, each node's admin URL (which answers
// /readyz and /metrics), leader changes and summaries; a second run in
// the same --dir restarts the same cluster and keeps the directory.
func TestDevRunsAQuorum(t *testing.T) {
	dir := t.TempDir()
	checkAdmins := func(out string) {
		t.Helper()
		admins := adminLine.FindAllStringSubmatch(out, -1)
		if len(admins) != 3 {
			t.Fatalf("%d admin lines, want 3:\n%s", len(admins), out)
		}
		for i, m := range admins {
			if m[1] != itoa(i+1) {
				t.Errorf("admin line %d names node %s", i+1, m[1])
			}
			addr := strings.TrimPrefix(m[2], "http://")
			if code, body := getBody(addr, "/readyz?verbose"); code != 200 || !strings.HasSuffix(body, "\nok\n") {
				t.Errorf("node %d: /readyz?verbose = %d %q", i+1, code, body)
			}
			if _, err := scrape(addr); err != nil {
				t.Errorf("node %d: %v", i+1, err)
			}
		}
	}
	out, errOut := runDevUntilReady(t, "3", checkAdmins, "--dir", dir)
	for _, want := range []string{"ClusterId:              ", "Directory:              " + dir + " (kept at exit)\n", "QuorumVoters:           1@127.0.0.1:", "BootstrapControllers:   127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	checkDevReport(t, out, 3)
	if strings.Contains(errOut, `"level":"INFO"`) {
		t.Errorf("INFO logs without --verbose:\n%s", errOut)
	}
	first := readMeta(t, filepath.Join(dir, "node-2"))
	// A second run in the same directory restarts the same cluster; with
	// --verbose the nodes log their elections.
	out2, errOut2 := runDevUntilReady(t, "3", nil, "--dir", dir, "--verbose")
	checkDevReport(t, out2, 3)
	if !strings.Contains(errOut2, `"msg":"became Leader"`) {
		t.Errorf("--verbose run did not log the election:\n%s", errOut2)
	}
	if again := readMeta(t, filepath.Join(dir, "node-2")); again.ClusterID != first.ClusterID || again.DirectoryID != first.DirectoryID {
		t.Errorf("restart changed meta.properties: %+v -> %+v", first, again)
	}
	if !strings.Contains(out, "ClusterId:              "+first.ClusterID+"\n") {
		t.Errorf("printed cluster id differs from meta.properties %s:\n%s", first.ClusterID, out)
	}
	mustFail(t, "--nodes 0: want 1 to 9", "dev", "--nodes", "0")
	mustFail(t, "--summary-interval 0s: must be positive", "dev", "--summary-interval", "0s")
	mustFail(t, "--keep applies to the temporary directory", "dev", "--dir", dir, "--keep")
}

// TestDevTemporaryDirectory: without --dir, krabka dev says its
// directory is temporary and removes it at exit, or keeps it with
// --keep.
func TestDevTemporaryDirectory(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dirLine := regexp.MustCompile(`(?m)^Directory: +(\S+) \((.*)\)$`)
	out, _ := runDevUntilReady(t, "1", nil)
	m := dirLine.FindStringSubmatch(out)
	if m == nil || m[2] != "temporary, removed at exit" {
		t.Fatalf("no temporary directory line:\n%s", out)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after exit: %v, want it removed", m[1], err)
	}
	if !strings.HasSuffix(out, "removed "+m[1]+"\n") {
		t.Errorf("exit does not say it removed %s:\n%s", m[1], out)
	}
	out, _ = runDevUntilReady(t, "1", nil, "--keep")
	m = dirLine.FindStringSubmatch(out)
	if m == nil || m[2] != "temporary, kept at exit (--keep)" {
		t.Fatalf("no kept temporary directory line:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(m[1], "node-1", "meta.properties")); err != nil {
		t.Errorf("--keep: %v", err)
	}
}
