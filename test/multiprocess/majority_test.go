package multiprocess

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLoseMajorityStaticQuorum: a three-process static quorum commits
// writes under load, then loses two voters for good (kill -9, their disks
// gone). The operator picks the survivor by storage log-end, lists it
// alone in controller.quorum.voters and runs storage
// unsafe-force-standalone; it leads alone with every write acknowledged
// before the loss and takes new ones. The lost nodes come back wiped and
// formatted again, one at a time, and the quorum of three has every
// write and takes more (docs/operations.md, "Losing a majority").
func TestLoseMajorityStaticQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q := newQuorum(t)
	for id := 1; id <= 3; id++ {
		q.start(id)
	}
	leader, _ := q.leader(-1)
	q.submit(leader, "metadata.version", metadataVersionRecord(t))
	l := q.startLoader(leader)
	waitFor(t, time.Minute, "40 acknowledged writes under load", func() bool { return l.count() >= 40 }, func() string { return fmt.Sprint(l.count()) })
	acked := l.halt()

	// The survivor is a follower that holds every acknowledged write; the
	// leader and the other follower are lost.
	survivor := leader%3 + 1
	q.hasAll(survivor, acked)
	lost := []int{leader, survivor%3 + 1}
	for _, id := range lost {
		_ = q.stop(id, syscall.SIGKILL) // killed: its exit status says so
		if err := os.RemoveAll(filepath.Join(q.dir, fmt.Sprintf("node-%d", id))); err != nil {
			t.Fatal(err)
		}
	}
	stopGracefully(q, survivor)

	props := q.nodes[survivor].props
	var end struct {
		ClusterID    string `json:"clusterId"`
		LogEndOffset int64  `json:"logEndOffset"`
	}
	if err := json.Unmarshal([]byte(q.mustKrabka("storage", "log-end", "-c", props, "--json")), &end); err != nil {
		t.Fatal(err)
	}
	if end.LogEndOffset <= int64(len(acked)) || end.ClusterID == "" {
		t.Fatalf("storage log-end of the survivor: %+v, want the log of %d writes and a cluster id", end, len(acked))
	}
	if _, err := q.krabka("storage", "unsafe-force-standalone", "-c", props); err == nil {
		t.Fatal("unsafe-force-standalone ran while controller.quorum.voters listed the lost voters")
	}
	q.writeProps(survivor, fmt.Sprintf("controller.quorum.voters=%d@%s", survivor, q.nodes[survivor].addr))
	q.mustKrabka("storage", "unsafe-force-standalone", "-c", props)
	q.start(survivor)
	if id, _ := q.leader(-1); id != survivor {
		t.Fatalf("node %d leads, want the survivor %d", id, survivor)
	}
	q.hasAll(survivor, acked)
	for i := range 3 {
		name := fmt.Sprintf("alone-%d", i)
		q.submit(survivor, name, topicRecord(t, name))
		acked = append(acked, name)
	}
	q.hasAll(survivor, acked)

	// Back to three voters, one wiped node at a time: first the survivor
	// and one node formatted again with the cluster id, a two-voter
	// quorum whose majority needs the survivor; once that node has caught
	// up, the third. Both at once would be two empty logs, a majority of
	// three that elects an empty leader, which truncates the survivor.
	voters := func(ids ...int) string {
		line := "controller.quorum.voters="
		for i, id := range ids {
			if i > 0 {
				line += ","
			}
			line += fmt.Sprintf("%d@%s", id, q.nodes[id].addr)
		}
		return line
	}
	first, second := lost[0], lost[1]
	stopGracefully(q, survivor)
	q.writeProps(survivor, voters(survivor, first))
	q.writeProps(first, voters(survivor, first))
	q.mustKrabka("storage", "format", "-t", end.ClusterID, "-c", q.nodes[first].props)
	q.start(survivor)
	q.start(first)
	q.hasAll(first, acked)

	all := voters(1, 2, 3)
	for _, id := range []int{first, survivor} {
		stopGracefully(q, id)
		q.writeProps(id, all)
		q.start(id)
		q.hasAll(id, acked)
	}
	q.writeProps(second, all)
	q.mustKrabka("storage", "format", "-t", end.ClusterID, "-c", q.nodes[second].props)
	q.start(second)
	leader, _ = q.leader(-1)
	for i := range 3 {
		name := fmt.Sprintf("three-%d", i)
		q.submit(leader, name, topicRecord(t, name))
		acked = append(acked, name)
	}
	for id := 1; id <= 3; id++ {
		q.hasAll(id, acked)
	}
}

// stopGracefully stops node id with SIGTERM and fails the test unless it
// exits cleanly.
func stopGracefully(q *quorum, id int) {
	q.t.Helper()
	if err := q.stop(id, syscall.SIGTERM); err != nil {
		q.t.Fatalf("node %d after SIGTERM: %v", id, err)
	}
}
