package raft

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/vfs"
)

// newMemCluster starts n voters on an in-memory network inside a synctest
// bubble: timers run on the bubble's fake clock, so timing is exact.
// adjust changes every Config before its node starts.
func newMemCluster(t *testing.T, n int, adjust ...func(*Config)) *testCluster {
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
		for _, f := range adjust {
			f(&cfg)
		}
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
// hands off and resigns with EndQuorumEpoch (KafkaRaftClient.maybeSendEndQuorumEpoch); when it
// crashes, its connections reset and the followers learn it at once
// (kraft.Node.ConnectionLost) instead of when their fetch timeout has
// passed (Kafka's FollowerState fetch timeout). Either way a successor is elected
// before the fetch timeout; fake time makes the bound exact.
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
				if took >= fetchTimeout {
					t.Errorf("successor elected %v after the leader stopped (graceful %t), want under the fetch timeout %v", took, graceful, fetchTimeout)
				}
				submit(t, c.node(second), topicRecord("after"))
			})
		})
	}
}

// TestRetentionTimeRuleOnIdleNode (KIP-630; Kafka's SnapshotGenerator and KafkaRaftLog.maybeClean): retention runs every
// 60 s without new snapshots or records, so on an idle node a snapshot
// whose records are older than metadata.max.retention.ms is deleted (the
// newest never) and the log start follows. Fake time makes the wait exact.
func TestRetentionTimeRuleOnIdleNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemCluster(t, 1, func(cfg *Config) {
			cfg.MaxRecordBytesBetweenSnapshots = 1 << 40
			cfg.MaxSnapshotInterval = 0
			cfg.MaxRetentionBytes = -1
			cfg.MaxRetentionTime = 10 * time.Minute
		})
		n := c.node(c.leader())
		submit(t, n, metadataVersionRecord())
		older, err := n.TriggerSnapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		submit(t, n, topicRecord("idle"))
		newer, err := n.TriggerSnapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, snaps := checkLogStartCovered(t, n); len(snaps) != 2 {
			t.Fatalf("snapshots %v, want %s and %s kept while young", snaps, older, newer)
		}
		// Nothing happens on the node for 11 minutes of fake time.
		<-time.After(11 * time.Minute)
		synctest.Wait()
		start, snaps := checkLogStartCovered(t, n)
		if len(snaps) != 1 || int64(snaps[0].ID.Offset) != newer.EndOffset {
			t.Errorf("snapshots %v after 11 idle minutes, want only %s", snaps, newer)
		}
		if start != newer.EndOffset {
			t.Errorf("log start %d, want %d", start, newer.EndOffset)
		}
	})
}

// TestRecoveryPointCheckpoint (docs/storage.md): a commit's fsync leaves
// the log's recovery point behind; the engine checkpoints it once
// recoveryCheckpointInterval has passed, and a clean Shutdown leaves it
// at the log end offset. Fake time makes the interval exact.
func TestRecoveryPointCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemCluster(t, 1)
		id := c.leader()
		n := c.node(id)
		log := n.eng.log
		submit(t, n, metadataVersionRecord())
		synctest.Wait()
		synced := log.SyncedOffset()
		if rp := log.RecoveryPoint(); rp >= synced {
			t.Fatalf("recovery point %d right after a commit, synced offset %d: the commit checkpointed it", rp, synced)
		}
		time.Sleep(recoveryCheckpointInterval)
		synctest.Wait()
		if rp := log.RecoveryPoint(); rp != synced {
			t.Fatalf("recovery point %d after %v idle, want the synced offset %d", rp, recoveryCheckpointInterval, synced)
		}

		submit(t, n, topicRecord("before-shutdown"))
		leo := log.LogEndOffset()
		if rp := log.RecoveryPoint(); rp >= leo {
			t.Fatalf("recovery point %d right after a commit, log end %d", rp, leo)
		}
		c.stop(id)
		l, rep, err := logstore.Open(vfs.OS(), filepath.Join(c.cfgs[0].MetadataLogDir, PartitionDirName), logstore.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if rep.RecoveryPoint != rep.LogEndOffset || rep.LogEndOffset < leo || rep.Truncation != nil {
			t.Fatalf("after a clean shutdown: recovery point %d, log end %d (at least %d), cut %+v; want the recovery point at the log end", rep.RecoveryPoint, rep.LogEndOffset, leo, rep.Truncation)
		}
	})
}
