package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runDevUntilLeader runs krabka dev in dir until a leader is elected, then
// stops it and returns what it printed.
func runDevUntilLeader(t *testing.T, dir string, nodes string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"--log-format", "json", "dev", "--nodes", nodes, "--dir", dir}, &out, &errOut)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errOut.String(), `"msg":"became Leader"`) || !strings.Contains(out.String(), "Configs:") {
		select {
		case code := <-done:
			t.Fatalf("dev exited with %d: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader after 20s: %s", errOut.String())
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

func TestDevRunsAQuorum(t *testing.T) {
	dir := t.TempDir()
	out, _ := runDevUntilLeader(t, dir, "3")
	for _, want := range []string{"ClusterId:              ", "Directory:              " + dir, "QuorumVoters:           1@127.0.0.1:", "BootstrapControllers:   127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	first := readMeta(t, filepath.Join(dir, "node-2"))
	// A second run in the same directory restarts the same cluster.
	runDevUntilLeader(t, dir, "3")
	if again := readMeta(t, filepath.Join(dir, "node-2")); again.ClusterID != first.ClusterID || again.DirectoryID != first.DirectoryID {
		t.Errorf("restart changed meta.properties: %+v -> %+v", first, again)
	}
	if !strings.Contains(out, "ClusterId:              "+first.ClusterID+"\n") {
		t.Errorf("printed cluster id differs from meta.properties %s:\n%s", first.ClusterID, out)
	}
	mustFail(t, "--nodes 0: want 1 to 9", "dev", "--nodes", "0")
}
