package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writer and a concurrent reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestServerStartRunsAFormattedNode(t *testing.T) {
	port := freePort(t)
	n := newTestNode(t, 1,
		fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", port),
		fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", port))
	mustFail(t, "no meta.properties in "+n.meta+": format the directory first with krabka storage format", "server-start", n.props)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"--log-format", "json", "server-start", n.props}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	// A lone voter leads as soon as its core starts, before its listener
	// is bound; "controller started" comes once it serves.
	for !strings.Contains(stderr.String(), `"msg":"became Leader"`) || !strings.Contains(stderr.String(), `"msg":"controller started"`) {
		select {
		case code := <-done:
			t.Fatalf("server-start exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader after 10s: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the node does not listen: %v", err)
	}
	conn.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("server-start did not stop")
	}
	if !strings.Contains(stderr.String(), `"msg":"controller stopped"`) {
		t.Errorf("stderr lacks the stop: %s", stderr.String())
	}
	// --log-format json: every line is one JSON object with slog's keys.
	for _, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line %q lacks %q", line, k)
			}
		}
	}
	if stdout.String() != "" {
		t.Errorf("stdout %q", stdout.String())
	}
	mustFail(t, "accepts 1 arg(s), received 0", "server-start")
	mustFail(t, "config", "server-start", n.root+"/missing.properties")
}
