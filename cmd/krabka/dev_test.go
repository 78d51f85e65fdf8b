package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// changeLine matches a line krabka dev prints when the quorum changes.
var changeLine = regexp.MustCompile(`(?m)^leader=(-?\d+) epoch=(\d+) high_watermark=(-?\d+)$`)

// runDevUntilLeader runs krabka dev in dir with the extra flags until it
// reports a leader that has committed, then stops it and returns what it
// printed.
func runDevUntilLeader(t *testing.T, dir string, nodes string, flags ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	args := append([]string{"--log-format", "json", "dev", "--nodes", nodes, "--dir", dir}, flags...)
	go func() {
		done <- runContext(ctx, args, &out, &errOut)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !committedLeader(out.String()) {
		select {
		case code := <-done:
			t.Fatalf("dev exited with %d: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader after 20s: %s\n%s", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
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

// committedLeader reports whether out has a change line with a leader
// and a high watermark.
func committedLeader(out string) bool {
	for _, m := range changeLine.FindAllStringSubmatch(out, -1) {
		if m[1] != "-1" && m[3] != "-1" {
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

func TestDevRunsAQuorum(t *testing.T) {
	dir := t.TempDir()
	out, errOut := runDevUntilLeader(t, dir, "3")
	for _, want := range []string{"ClusterId:              ", "Directory:              " + dir, "QuorumVoters:           1@127.0.0.1:", "BootstrapControllers:   127.0.0.1:"} {
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
	out2, errOut2 := runDevUntilLeader(t, dir, "3", "--verbose")
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
}
