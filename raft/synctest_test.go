package raft

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/krabka-go/krabka/internal/transport"
)

// newMemCluster starts n voters on an in-memory network inside a synctest
// bubble: timers run on the bubble's fake clock, so timing is exact.
func newMemCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	mem := transport.NewMemNetwork()
	c := &testCluster{t: t, nodes: make([]*Controller, n), cancels: make([]context.CancelFunc, n)}
	var voters []QuorumVoter
	for i := range n {
		voters = append(voters, QuorumVoter{ID: NodeID(i + 1), Host: "127.0.0.1", Port: uint16(9091 + i)})
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(NodeID(i + 1))
		}
	})
	for i := range n {
		cfg := ForTests(NodeID(i+1), t.TempDir())
		cfg.Listeners[0].Port = voters[i].Port
		cfg.QuorumVoters = voters
		c.cfgs = append(c.cfgs, cfg)
		ln, err := mem.Listen(voters[i].Address())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		c.cancels[i] = cancel
		node, err := start(ctx, cfg, startOptions{listener: ln, dial: mem.Dial})
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
		c.nodes[i] = node
	}
	return c
}

// TestResignVersusCrashTiming: when the leader shuts down gracefully it
// resigns with EndQuorumEpoch, and a successor is elected well before the
// fetch timeout; when it crashes, the followers notice only once their
// fetch timeout has passed (KRAFT.md §2.8, §2.4). Fake time makes both
// bounds exact.
func TestResignVersusCrashTiming(t *testing.T) {
	for _, graceful := range []bool{true, false} {
		t.Run(fmt.Sprintf("graceful=%t", graceful), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newMemCluster(t, 3)
				first := c.leader()
				res := submit(t, c.node(first), metadataVersionRecord())
				c.waitApplied(res.LastOffset + 1)
				fetchTimeout := c.cfgs[0].FetchTimeout

				start := time.Now()
				if graceful {
					c.stop(first)
				} else {
					c.crash(first)
				}
				second := c.leader()
				took := time.Since(start)
				t.Logf("node %d took over from node %d after %v", second, first, took)
				if second == first {
					t.Fatalf("node %d still leads", first)
				}
				if graceful && took >= fetchTimeout {
					t.Errorf("successor elected %v after a graceful shutdown, want under the fetch timeout %v", took, fetchTimeout)
				}
				if !graceful && took < fetchTimeout {
					t.Errorf("successor elected %v after a crash, before the fetch timeout %v", took, fetchTimeout)
				}
				submit(t, c.node(second), topicRecord("after"))
			})
		})
	}
}
