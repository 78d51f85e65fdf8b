package raft

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/vfs"
)

// errorLines returns the ERROR lines of a JSON log with message msg.
func errorLines(t *testing.T, l *logBuffer, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	out := l.b.String()
	l.mu.Unlock()
	var lines []map[string]any
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "ERROR" && strings.HasPrefix(m["msg"].(string), msg) {
			lines = append(lines, m)
		}
	}
	return lines
}

// TestNodeOfAnotherClusterIsReportedAtError: node 3 formatted with
// another cluster id than nodes 1 and 2 logs an ERROR naming both ids
// for each peer that refuses it, and so do the peers that refuse it,
// once each while the nodes keep retrying (not once per request).
func TestNodeOfAnotherClusterIsReportedAtError(t *testing.T) {
	const ours, theirs = "cluster-id-of-the-two", "cluster-id-of-node-3"
	logs := map[NodeID]*logBuffer{1: {}, 2: {}, 3: {}}
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		id := ours
		if cfg.NodeID == 3 {
			id = theirs
		}
		mp := logstore.MetaProperties{Version: 1, ClusterID: id, NodeID: kraft.NodeID(cfg.NodeID), DirectoryID: kraft.UUID{0xd1, byte(cfg.NodeID)}}
		if err := logstore.WriteMetaProperties(vfs.OS(), cfg.MetadataLogDir, mp, time.Now()); err != nil {
			t.Fatal(err)
		}
		cfg.Logger = slog.New(slog.NewJSONHandler(logs[cfg.NodeID], nil))
	})
	const refused, refusing = "a peer refuses this node as one of another cluster", "refused a request from a node of another cluster"
	waitFor(t, "node 3 to report both of its peers", func() bool { return len(errorLines(t, logs[3], refused)) >= 2 })
	waitFor(t, "nodes 1 and 2 to report node 3", func() bool {
		return len(errorLines(t, logs[1], refusing))+len(errorLines(t, logs[2], refusing)) >= 2
	})
	// The quorum of the two goes on: a leader commits.
	leader := NodeID(-1)
	waitFor(t, "a leader among nodes 1 and 2", func() bool {
		for _, id := range []NodeID{1, 2} {
			if q := c.node(id).QuorumState(); q.Role == RoleLeader {
				leader = id
				return true
			}
		}
		return false
	})
	submit(t, c.node(leader), metadataVersionRecord())

	peers := map[float64]int{}
	for _, m := range errorLines(t, logs[3], refused) {
		if m[logKeyClusterID] != theirs || m[logKeyPeerClusterID] != ours {
			t.Errorf("node 3: %v, want cluster_id %s and peer_cluster_id %s", m, theirs, ours)
		}
		peers[m[logKeyPeer].(float64)]++
	}
	if peers[1] != 1 || peers[2] != 1 {
		t.Errorf("node 3 reported its peers %v times, want each once", peers)
	}
	for _, id := range []NodeID{1, 2} {
		lines := errorLines(t, logs[id], refusing)
		if len(lines) != 1 {
			t.Errorf("node %d reported node 3 %d times, want once", id, len(lines))
		}
		for _, m := range lines {
			if m[logKeyClusterID] != ours || m[logKeyPeerClusterID] != theirs || m[logKeyPeer] != float64(3) {
				t.Errorf("node %d: %v, want peer 3, cluster_id %s and peer_cluster_id %s", id, m, ours, theirs)
			}
		}
	}
}

// TestForeignRequestsAreRateLimited: a sender of another cluster is
// reported once per foreignReportEvery, and senders past
// maxForeignSenders share one report, so that a flood of made-up ids
// neither floods the log nor grows the memory without bound.
func TestForeignRequestsAreRateLimited(t *testing.T) {
	var f foreignRequests
	now := time.Unix(1000, 0)
	if !f.due(3, "x", now) || f.due(3, "x", now.Add(time.Second)) {
		t.Error("the first request of a sender is not reported alone")
	}
	if !f.due(3, "x", now.Add(foreignReportEvery)) {
		t.Error("a sender is not reported again after foreignReportEvery")
	}
	reported := 0
	for i := range 1000 {
		if f.due(kraft.NodeID(100+i), "flood", now) {
			reported++
		}
	}
	// Sender 3 holds one of the places: 63 senders are reported apart,
	// the rest once together.
	if want := maxForeignSenders; reported != want {
		t.Errorf("%d reports for 1000 senders, want %d", reported, want)
	}
	if n := f.n.Load(); n != maxForeignSenders+1 {
		t.Errorf("%d keys remembered, want %d senders and the shared one", n, maxForeignSenders)
	}
}
