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

// upgradeKRaft upgrades the running static quorum to kraft.version 1
// with krabka features and waits until every running node reports it.
func (q *quorum) upgradeKRaft() {
	q.t.Helper()
	q.retry("kraft.version was upgraded to 1.\n", "features", "--bootstrap-controller", q.bootstrap(), "--timeout", "10s",
		"upgrade", "--feature", "kraft.version=1")
	for id := 1; id <= len(q.nodes); id++ {
		if q.nodes[id].cmd == nil {
			continue
		}
		var last string
		waitFor(q.t, 30*time.Second, fmt.Sprintf("kraft.version 1 on node %d", id), func() bool {
			last, _ = q.krabka("features", "--bootstrap-controller", q.nodes[id].addr, "describe")
			return kraftVersion1.MatchString(last)
		}, func() string { return last })
	}
}

// addController runs metadata-quorum add-controller with node id's
// server.properties until it succeeds, and returns what it printed.
func (q *quorum) addController(id int) string {
	q.t.Helper()
	var out string
	waitFor(q.t, 30*time.Second, fmt.Sprintf("add-controller %d", id), func() bool {
		var err error
		out, err = q.krabka("metadata-quorum", "--bootstrap-controller", q.bootstrap(), "--timeout", "10s", "add-controller", "--command-config", q.nodes[id].props)
		if err != nil {
			out = err.Error()
			return false
		}
		return true
	}, func() string { return out })
	return out
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

	q.upgradeKRaft()
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
	added := q.addController(3)
	out = q.status("node 3 a voter again", func(out string) bool { return strings.Join(votersOf(out), ",") == "1,2,3" })
	if newDir := directoryIDOf(out, 3); newDir == oldDir || !strings.Contains(added, newDir) {
		t.Errorf("node 3 added with directory id %q (was %q): %s", newDir, oldDir, added)
	}
	q.submit(1, "d", topicRecord(t, "d"))

	q.killLeader("e", []string{"a", "b", "c", "d", "e"})
}

// TestRemovedVoterKeepsStaticConfig: a static quorum of three is
// upgraded to kraft.version 1, gains node 4 (formatted
// --no-initial-controllers, added with add-controller) and loses node 3
// (remove-controller). Node 3 is stopped after it fetched the
// VotersRecord that removes it, or before the removal. While it is down
// its last leader is killed and the other two voters elect a new one.
// Node 3 restarts with its old server.properties, which still list it in
// controller.quorum.voters and name no bootstrap servers; its fetches to
// the dead leader fail.
//
// Knowing its removal, it is an observer: the voter set in force is its
// log's, 1, 2 and 4, and it asks those voters instead (as an observer
// asks bootstrap servers), at the endpoints the log gives them, node 4's
// among them. Not knowing it, it counts itself a voter of 1 to 4 and
// asks the others of that set the same way (a pre-vote, should its fetch
// timer run out first, is refused by voters that hear their leader);
// the VotersRecord it then fetches makes it an observer. Either way it
// finds the new leader and follows it, catching up and taking new
// writes, and never disturbs the quorum: the leader and its epoch stay,
// and the voters stay 1, 2 and 4 with node 3 an observer
// (docs/operations.md, "Upgrade a static quorum to a dynamic one").
func TestRemovedVoterKeepsStaticConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Run("knows its removal", func(t *testing.T) { removedVoterRestarts(t, false) })
	t.Run("stopped before its removal", func(t *testing.T) { removedVoterRestarts(t, true) })
}

// removedVoterRestarts runs TestRemovedVoterKeepsStaticConfig, node 3
// stopped before remove-controller when stopFirst is set.
func removedVoterRestarts(t *testing.T, stopFirst bool) {
	q := newNodes(t, 4)
	clusterID := strings.TrimSpace(q.mustKrabka("storage", "random-uuid"))
	for id := 1; id <= 3; id++ {
		q.writeProps(id, q.votersLine(1, 2, 3))
		q.mustKrabka("storage", "format", "-t", clusterID, "-c", q.nodes[id].props)
		q.start(id)
	}
	q.writeProps(4, "controller.quorum.bootstrap.servers="+q.bootstrap())
	q.mustKrabka("storage", "format", "-t", clusterID, "-c", q.nodes[4].props, "--no-initial-controllers")
	q.submit(1, "metadata.version", metadataVersionRecord(t))
	q.submit(1, "a", topicRecord(t, "a"))
	q.upgradeKRaft()

	q.start(4)
	q.addController(4)
	out := q.status("four voters", func(out string) bool { return strings.Join(votersOf(out), ",") == "1,2,3,4" })
	q.hasAll(3, []string{"a"})
	if stopFirst {
		stopGracefully(q, 3)
	}
	q.retry("Removed  KRaft controller 3 with directory id "+directoryIDOf(out, 3)+"\n", "metadata-quorum", "--bootstrap-controller", q.bootstrap(),
		"--timeout", "10s", "remove-controller", "--controller-id", "3", "--controller-directory-id", directoryIDOf(out, 3))
	q.status("voters 1, 2 and 4", func(out string) bool { return strings.Join(votersOf(out), ",") == "1,2,4" })
	q.submit(1, "b", topicRecord(t, "b"))
	if !stopFirst {
		// Node 3 holds what follows the VotersRecord that removes it.
		q.hasAll(3, []string{"a", "b"})
		stopGracefully(q, 3)
	}
	dead, _ := q.leader(-1)
	if err := q.stop(dead, syscall.SIGKILL); err == nil {
		t.Fatalf("node %d exited cleanly after SIGKILL", dead)
	}
	leader, epoch := q.leader(dead)
	q.submit(leader, "c", topicRecord(t, "c"))

	props, err := os.ReadFile(q.nodes[3].props)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(props), "\ncontroller.quorum.voters=1@") || strings.Contains(string(props), "bootstrap.servers") {
		t.Fatalf("node 3 does not restart on its static configuration:\n%s", props)
	}
	q.start(3)
	q.hasAll(3, []string{"a", "b", "c"})
	q.submit(leader, "d", topicRecord(t, "d"))
	q.hasAll(3, []string{"a", "b", "c", "d"})
	out = q.status("node 3 an observer", func(out string) bool {
		return strings.Join(votersOf(out), ",") == "1,2,4" && regexp.MustCompile(`(?m)^CurrentObservers: +\[\{"id": 3, `).MatchString(out)
	})
	if id, e := q.leader(-1); id != leader || e != epoch {
		t.Errorf("node %d leads in epoch %d after node 3 came back, want node %d in epoch %d:\n%s", id, e, leader, epoch, out)
	}
}
