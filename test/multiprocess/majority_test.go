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
	q, leader, l := loadedQuorum(t, 3, 40)
	acked := l.halt()

	// The survivor is a follower that holds every acknowledged write; the
	// leader and the other follower are lost.
	survivor := q.next(leader)
	q.hasAll(survivor, acked)
	lost := []int{leader, q.next(survivor)}
	q.lose(lost...)
	stopGracefully(q, survivor)

	end := q.logEnd(survivor)
	if end.LogEndOffset <= int64(len(acked)) || end.ClusterID == "" {
		t.Fatalf("storage log-end of the survivor: %+v, want the log of %d writes and a cluster id", end, len(acked))
	}
	acked = q.forceStandalone(survivor, acked)
	q.readd(end.ClusterID, survivor, lost, acked)
	q.writeAndCheck("three", acked)
}

// TestLoseMajorityFiveVoters: a five-process static quorum under load
// loses three voters for good, the leader among them (kill -9, their
// disks gone). One of the two survivors stopped while the load went on,
// so storage log-end ranks the other first (a higher LogEndOffset at the
// same epoch, or a higher epoch); the operator forces that one standalone,
// wipes and formats the other survivor like the lost nodes, and re-adds
// the four one at a time. Every write acknowledged before the loss is
// kept, and the five voters take new ones (docs/operations.md, "Losing a
// majority").
func TestLoseMajorityFiveVoters(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q, leader, l := loadedQuorum(t, 5, 30)

	// Two followers survive. One stops under load and falls behind; the
	// other, a follower of the leader at the loss, holds every
	// acknowledged write. The leader and the two other followers are
	// lost.
	behind := q.next(leader)
	stopGracefully(q, behind)
	stoppedAt := l.count()
	waitFor(t, time.Minute, "20 acknowledged writes with a survivor down", func() bool { return l.count() >= stoppedAt+20 }, func() string { return fmt.Sprint(l.count()) })
	acked := l.halt()
	leader, _ = q.leader(-1)
	ahead := q.next(leader)
	if ahead == behind {
		ahead = q.next(ahead)
	}
	q.hasAll(ahead, acked)
	var lost []int
	for id := 1; id <= 5; id++ {
		if id != ahead && id != behind {
			lost = append(lost, id)
		}
	}
	q.lose(lost...)
	stopGracefully(q, ahead)

	// The operator ranks the survivors as a vote would: LogEndEpoch, then
	// LogEndOffset.
	ends := map[int]logEnd{ahead: q.logEnd(ahead), behind: q.logEnd(behind)}
	best := behind
	if a, b := ends[ahead], ends[behind]; a.LogEndEpoch > b.LogEndEpoch || a.LogEndEpoch == b.LogEndEpoch && a.LogEndOffset > b.LogEndOffset {
		best = ahead
	}
	if best != ahead || ends[ahead].ClusterID == "" {
		t.Fatalf("storage log-end ranks node %d first (%+v), want node %d, which holds the writes acknowledged after node %d stopped", best, ends, ahead, behind)
	}
	t.Logf("survivors' log ends: node %d %+v, node %d %+v", ahead, ends[ahead], behind, ends[behind])
	acked = q.forceStandalone(ahead, acked)

	// The other survivor is an old node: wiped and formatted, then
	// re-added first, then the lost ones.
	if err := os.RemoveAll(filepath.Join(q.dir, fmt.Sprintf("node-%d", behind))); err != nil {
		t.Fatal(err)
	}
	q.readd(ends[ahead].ClusterID, ahead, append([]int{behind}, lost...), acked)
	q.writeAndCheck("five", acked)
}

// loadedQuorum starts a static quorum of size processes, sets
// metadata.version through the leader and starts a loader, which has had
// n writes acknowledged when it returns them; a test that fails before
// it halts the loader halts it as it ends.
func loadedQuorum(t *testing.T, size, n int) (q *quorum, leader int, l *loader) {
	t.Helper()
	q = newQuorumOf(t, size)
	for id := 1; id <= size; id++ {
		q.start(id)
	}
	leader, _ = q.leader(-1)
	q.submit(leader, "metadata.version", metadataVersionRecord(t))
	l = q.startLoader(leader)
	t.Cleanup(func() {
		select {
		case <-l.stop: // halted
		default:
			l.halt()
		}
	})
	waitFor(t, time.Minute, fmt.Sprintf("%d acknowledged writes under load", n), func() bool { return l.count() >= n }, func() string { return fmt.Sprint(l.count()) })
	return q, leader, l
}

// lose kills nodes ids with SIGKILL and deletes their metadata log
// directories: they are lost for good.
func (q *quorum) lose(ids ...int) {
	q.t.Helper()
	for _, id := range ids {
		_ = q.stop(id, syscall.SIGKILL) // killed: its exit status says so
		if err := os.RemoveAll(filepath.Join(q.dir, fmt.Sprintf("node-%d", id))); err != nil {
			q.t.Fatal(err)
		}
	}
}

// logEnd is what a recovery reads of storage log-end --json.
type logEnd struct {
	ClusterID    string `json:"clusterId"`
	LogEndOffset int64  `json:"logEndOffset"`
	LogEndEpoch  int32  `json:"logEndEpoch"`
}

// logEnd runs storage log-end --json on stopped node id.
func (q *quorum) logEnd(id int) logEnd {
	q.t.Helper()
	var end logEnd
	if err := json.Unmarshal([]byte(q.mustKrabka("storage", "log-end", "-c", q.nodes[id].props, "--json")), &end); err != nil {
		q.t.Fatal(err)
	}
	return end
}

// forceStandalone runs steps 2 to 4 of "Losing a majority" on stopped
// node survivor of a static quorum: unsafe-force-standalone refuses while
// controller.quorum.voters lists the lost voters; with the survivor
// listed alone it runs, and the survivor, started, leads with every
// topic of acked and commits three more, alone-N. It returns acked with
// them.
func (q *quorum) forceStandalone(survivor int, acked []string) []string {
	q.t.Helper()
	props := q.nodes[survivor].props
	if _, err := q.krabka("storage", "unsafe-force-standalone", "-c", props); err == nil {
		q.t.Fatal("unsafe-force-standalone ran while controller.quorum.voters listed the lost voters")
	}
	q.writeProps(survivor, q.votersLine(survivor))
	q.mustKrabka("storage", "unsafe-force-standalone", "-c", props)
	q.start(survivor)
	if id, _ := q.leader(-1); id != survivor {
		q.t.Fatalf("node %d leads, want the survivor %d", id, survivor)
	}
	q.hasAll(survivor, acked)
	for i := range 3 {
		name := fmt.Sprintf("alone-%d", i)
		q.submit(survivor, name, topicRecord(q.t, name))
		acked = append(acked, name)
	}
	q.hasAll(survivor, acked)
	return acked
}

// readd runs step 6 of "Losing a majority" for a static quorum: it adds
// the wiped nodes back to the survivor's quorum one at a time. For each,
// every running voter in turn stops, gets the grown
// controller.quorum.voters and restarts (and, once its quorum can commit
// without the new node, catches up); then the new node is formatted with
// clusterID, started with the same list, and catches up to acked. Two
// formatted nodes started at once could be a majority of empty logs
// that elects an empty leader, which truncates the survivor.
func (q *quorum) readd(clusterID string, survivor int, wiped []int, acked []string) {
	q.t.Helper()
	voters := []int{survivor}
	for _, id := range wiped {
		grown := append(append([]int(nil), voters...), id)
		for _, v := range voters {
			stopGracefully(q, v)
			q.writeProps(v, q.votersLine(grown...))
			q.start(v)
			if len(voters) > 1 {
				q.hasAll(v, acked)
			}
		}
		q.writeProps(id, q.votersLine(grown...))
		q.mustKrabka("storage", "format", "-t", clusterID, "-c", q.nodes[id].props)
		q.start(id)
		q.hasAll(id, acked)
		voters = grown
	}
}

// writeAndCheck commits three topics named prefix-N through the leader
// and waits until every node holds them and every topic of acked.
func (q *quorum) writeAndCheck(prefix string, acked []string) {
	q.t.Helper()
	leader, _ := q.leader(-1)
	for i := range 3 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		q.submit(leader, name, topicRecord(q.t, name))
		acked = append(acked, name)
	}
	for id := 1; id <= len(q.nodes); id++ {
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
