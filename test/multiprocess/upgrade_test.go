package multiprocess

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	statusClusterID = regexp.MustCompile(`(?m)^ClusterId: +(\S+)$`)
	kraftVersion1   = regexp.MustCompile(`(?m)^Feature: kraft\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: \d+$`)
)

// retry runs the binary with args until its output is want.
func (q *quorum) retry(want string, args ...string) {
	q.t.Helper()
	var last string
	waitFor(q.t, 30*time.Second, strings.Join(args, " "), func() bool {
		out, err := q.krabka(args...)
		if err != nil {
			last = err.Error()
			return false
		}
		last = out
		return out == want
	}, func() string { return last })
}

// directoryIDOf is node id's directory id as describe --status lists it.
func directoryIDOf(out string, id int) string {
	m := regexp.MustCompile(fmt.Sprintf(`\{"id": %d, "directoryId": "([A-Za-z0-9_-]{22})"`, id)).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestUpgradeStaticQuorumThenChangeVoters runs the runbook of
// docs/operations.md ("Upgrade a static quorum to a dynamic one") on three
// processes: a static quorum commits, krabka features upgrades it to
// kraft.version 1, each node restarts in turn on
// controller.quorum.bootstrap.servers, a voter's disk is replaced (removed,
// wiped, formatted --no-initial-controllers, started as an observer and
// added with its new directory id), the leader is killed, and every
// acknowledged topic is on every node.
func TestUpgradeStaticQuorumThenChangeVoters(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q := newQuorum(t)
	for id := 1; id <= 3; id++ {
		q.start(id)
	}
	q.submit(1, "metadata.version", metadataVersionRecord(t))
	q.submit(1, "a", topicRecord(t, "a"))

	q.retry("kraft.version was upgraded to 1.\n", "features", "--bootstrap-controller", q.bootstrap(), "--timeout", "10s",
		"upgrade", "--feature", "kraft.version=1")
	for id := 1; id <= 3; id++ {
		var last string
		waitFor(t, 30*time.Second, fmt.Sprintf("kraft.version 1 on node %d", id), func() bool {
			last, _ = q.krabka("features", "--bootstrap-controller", q.nodes[id].addr, "describe")
			return kraftVersion1.MatchString(last)
		}, func() string { return last })
	}
	q.submit(2, "b", topicRecord(t, "b"))

	// Each node in turn moves to controller.quorum.bootstrap.servers.
	for id := 1; id <= 3; id++ {
		if err := q.stop(id, syscall.SIGTERM); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		q.writeProps(id, "controller.quorum.bootstrap.servers="+q.bootstrap())
		q.start(id)
		q.status(fmt.Sprintf("node %d back among three voters", id), func(out string) bool {
			return strings.Join(votersOf(out), ",") == "1,2,3" && statusLeader.MatchString(out)
		})
	}
	q.submit(3, "c", topicRecord(t, "c"))

	// Node 3's disk is replaced.
	out := q.status("three voters", func(out string) bool { return directoryIDOf(out, 3) != "" })
	oldDir, clusterID := directoryIDOf(out, 3), statusClusterID.FindStringSubmatch(out)[1]
	q.retry("Removed  KRaft controller 3 with directory id "+oldDir+"\n", "metadata-quorum", "--bootstrap-controller", q.bootstrap(),
		"--timeout", "10s", "remove-controller", "--controller-id", "3", "--controller-directory-id", oldDir)
	if err := q.stop(3, syscall.SIGTERM); err != nil {
		t.Fatalf("node 3: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(q.dir, "node-3")); err != nil {
		t.Fatal(err)
	}
	q.mustKrabka("storage", "format", "-t", clusterID, "-c", q.nodes[3].props, "--no-initial-controllers")
	q.start(3)
	var added string
	waitFor(t, 30*time.Second, "add-controller 3", func() bool {
		var err error
		added, err = q.krabka("metadata-quorum", "--bootstrap-controller", q.bootstrap(), "--timeout", "10s", "add-controller", "--command-config", q.nodes[3].props)
		if err != nil {
			added = err.Error()
			return false
		}
		return true
	}, func() string { return added })
	out = q.status("node 3 a voter again", func(out string) bool { return strings.Join(votersOf(out), ",") == "1,2,3" })
	if newDir := directoryIDOf(out, 3); newDir == oldDir || !strings.Contains(added, newDir) {
		t.Errorf("node 3 added with directory id %q (was %q): %s", newDir, oldDir, added)
	}
	q.submit(1, "d", topicRecord(t, "d"))

	q.killLeader("e", []string{"a", "b", "c", "d", "e"})
}
