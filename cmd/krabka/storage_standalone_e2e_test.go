package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/raft"
)

// startStaticQuorum formats and starts n voters of a static quorum on
// loopback ports and returns them with their controllers and the index of
// the leader.
func startStaticQuorum(t *testing.T, n int) (nodes []testNode, ctls []*raft.Controller, ports []int, leader int) {
	t.Helper()
	var voters []string
	for i := range n {
		ports = append(ports, freePort(t))
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[i]))
	}
	for i := range n {
		tn := newTestNode(t, i+1, fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", ports[i]),
			fmt.Sprintf("advertised.listeners=CONTROLLER://127.0.0.1:%d", ports[i]),
			"controller.quorum.voters="+strings.Join(voters, ","), "controller.quorum.election.timeout.ms=300")
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", tn.props)
		nodes, ctls = append(nodes, tn), append(ctls, launchNode(t, tn.props))
	}
	return nodes, ctls, ports, waitLeader(t, ctls)
}

// waitLeader waits until one of ctls leads and returns its index.
func waitLeader(t *testing.T, ctls []*raft.Controller) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 20s")
		}
		for i, c := range ctls {
			if c != nil && c.QuorumState().Role == raft.RoleLeader {
				return i
			}
		}
	}
}

// stopBehind has the leader commit topics 0..before-1, stops the follower
// after the leader, has the leader commit after more topics and stops every
// other node. It returns the index of the follower stopped early.
func stopBehind(t *testing.T, ctls []*raft.Controller, leader, before, after int) int {
	t.Helper()
	submitTopics(t, ctls[leader], 0, before)
	early := (leader + 1) % len(ctls)
	shutdown(t, ctls[early])
	submitTopics(t, ctls[leader], before, after)
	for i := range ctls {
		if i != early {
			shutdown(t, ctls[i])
		}
	}
	return early
}

// chooseSurvivor runs log-end on every node of props and returns the index
// of the one whose log is furthest ahead (epoch, then offset), as the
// runbook chooses it, with its report.
func chooseSurvivor(t *testing.T, props []string) (int, logEnd) {
	t.Helper()
	best := -1
	var bestEnd logEnd
	for i, p := range props {
		r := logEndJSON(t, p)
		if best < 0 || r.LogEndEpoch > bestEnd.LogEndEpoch || r.LogEndEpoch == bestEnd.LogEndEpoch && r.LogEndOffset > bestEnd.LogEndOffset {
			best, bestEnd = i, r
		}
	}
	return best, bestEnd
}

// setVoters rewrites the controller.quorum.voters line of props.
func setVoters(t *testing.T, props, voters string) {
	t.Helper()
	data, err := os.ReadFile(props)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^controller\.quorum\.voters=.*$`)
	writeFile(t, props, re.ReplaceAll(data, []byte("controller.quorum.voters="+voters)))
}

// checkTopics fails unless c's image holds topic-0 .. topic-(n-1).
func checkTopics(t *testing.T, c *raft.Controller, n int) {
	t.Helper()
	img := c.CurrentImage()
	for i := range n {
		if _, ok := img.Topics().ByName(fmt.Sprintf("topic-%d", i)); !ok {
			t.Errorf("node %d lost topic-%d (image has %d topics)", c.QuorumState().NodeID, i, img.Topics().Len())
		}
	}
}

// TestForceStandaloneStaticQuorum: a three-voter static quorum commits
// writes and loses two voters for good; the survivor log-end ranks first is
// forced standalone, leads alone and keeps every acknowledged write. An old
// voter restarted with its old directory and configuration does not lead
// and does not truncate the survivor's new writes. Wiped, formatted again
// and listed in controller.quorum.voters with the survivor, it catches up.
func TestForceStandaloneStaticQuorum(t *testing.T) {
	nodes, ctls, ports, leader := startStaticQuorum(t, 3)
	behind := stopBehind(t, ctls, leader, 5, 5)
	// Choose the survivor by log end: the two that stayed are equal or
	// one is ahead; the one stopped early is behind.
	var props []string
	for i, n := range nodes {
		if i != behind {
			props = append(props, n.props)
		}
	}
	best, bestEnd := chooseSurvivor(t, props)
	if best >= behind {
		best++
	}
	s := nodes[best]
	mustFail(t, "controller.quorum.voters still lists voters", "storage", "unsafe-force-standalone", "-c", s.props)
	setVoters(t, s.props, fmt.Sprintf("%d@127.0.0.1:%d", best+1, ports[best]))
	out := mustSucceed(t, "storage", "unsafe-force-standalone", "-c", s.props).stdout
	if !strings.Contains(out, fmt.Sprintf("log end offset %d at epoch %d", bestEnd.LogEndOffset, bestEnd.LogEndEpoch)) {
		t.Errorf("output:\n%s", out)
	}

	c := startNode(t, s.props)
	if e := c.QuorumState().Epoch; e < bestEnd.LogEndEpoch+standaloneEpochJump {
		t.Errorf("survivor leads epoch %d, want at least %d", e, bestEnd.LogEndEpoch+standaloneEpochJump)
	}
	submitTopics(t, c, 10, 5)
	checkTopics(t, c, 15)
	end := c.QuorumState().LogEndOffset

	// The voter stopped early comes back with its old directory and its
	// old three-voter configuration.
	var oldLogs syncBuffer
	old := launchNodeLogging(t, nodes[behind].props, &oldLogs)
	time.Sleep(3 * time.Second)
	if st := old.QuorumState(); st.Role == raft.RoleLeader {
		t.Errorf("the old voter leads: %+v", st)
	}
	if st := c.QuorumState(); st.Role != raft.RoleLeader || st.NodeID != raft.NodeID(best+1) {
		t.Errorf("the survivor no longer leads: %+v", st)
	}
	submitTopics(t, c, 15, 2)
	checkTopics(t, c, 17)
	if got := c.QuorumState().LogEndOffset; got < end {
		t.Errorf("survivor log end %d, below %d before the old voter came back", got, end)
	}
	// The old voter learnt the survivor's epoch and follows it; the
	// survivor's LeaderChange, naming voters {survivor}, made it an
	// observer (internal/kraft noteLeaderChange) the survivor never
	// counts.
	if st := old.QuorumState(); st.Epoch < bestEnd.LogEndEpoch+standaloneEpochJump || st.LeaderID != raft.NodeID(best+1) {
		t.Errorf("old voter %+v, want a follower of node %d", st, best+1)
	}

	if !strings.Contains(oldLogs.String(), "level=ERROR msg=\"removed from the quorum: the leader's LeaderChange names a voter set without this node") {
		t.Errorf("the old voter did not log that it was removed:\n%s", tail(oldLogs.String(), 20))
	}
	// Restarted with the same directory, it starts excluded: the latest
	// LeaderChange in its log is the record of its exclusion.
	shutdown(t, old)
	var againLogs syncBuffer
	old = launchNodeLogging(t, nodes[behind].props, &againLogs)
	if !strings.Contains(againLogs.String(), "level=ERROR msg=\"starting removed from the quorum: the latest LeaderChange in the log names a voter set without this node") {
		t.Errorf("the restarted old voter did not start excluded:\n%s", tail(againLogs.String(), 20))
	}
	if st := old.QuorumState(); st.Role == raft.RoleLeader || st.Role == raft.RoleCandidate || st.Role == raft.RoleProspective {
		t.Errorf("the restarted old voter campaigns: %+v", st)
	}

	// Re-adding in a static quorum: the old node is wiped and formatted
	// again, and both nodes list the two voters.
	shutdown(t, old)
	shutdown(t, c)
	w := nodes[behind]
	for _, d := range []string{w.meta, w.data1, w.data2} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", w.props)
	two := fmt.Sprintf("%d@127.0.0.1:%d,%d@127.0.0.1:%d", min(best, behind)+1, ports[min(best, behind)], max(best, behind)+1, ports[max(best, behind)])
	setVoters(t, s.props, two)
	setVoters(t, w.props, two)
	pair := []*raft.Controller{launchNode(t, s.props), launchNode(t, w.props)}
	l := pair[waitLeader(t, pair)]
	submitTopics(t, l, 17, 2)
	for deadline := time.Now().Add(20 * time.Second); pair[1].QuorumState().AppliedOffset < l.QuorumState().HighWatermark; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the re-added node did not catch up: %+v, leader %+v", pair[1].QuorumState(), l.QuorumState())
		}
	}
	checkTopics(t, pair[0], 19)
	checkTopics(t, pair[1], 19)
}

// TestForceStandaloneDynamicQuorum: a three-voter dynamic quorum commits
// writes and loses two voters; the survivor is forced standalone and leads
// alone with every acknowledged write. An old voter restarted with its old
// directory does not lead nor truncate the survivor; a wiped and
// re-formatted node is added back with add-controller and catches up.
func TestForceStandaloneDynamicQuorum(t *testing.T) {
	nodes := newDynamicNodes(t, 3)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", nodes[0].props, "--standalone")
	for _, n := range nodes[1:] {
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "--no-initial-controllers")
	}
	var ctls []*raft.Controller
	for _, n := range nodes {
		ctls = append(ctls, launchNode(t, n.props))
	}
	waitLeader(t, ctls[:1])
	for _, n := range nodes[1:] {
		mustSucceed(t, "metadata-quorum", "--bootstrap-controller", nodes[0].addr, "add-controller", "--command-config", n.props)
	}
	describeStatus(t, nodes[0].addr, "three voters", func(out string) bool { return strings.Count(out, `"endpoints"`) == 3 })
	submitTopics(t, ctls[waitLeader(t, ctls)], 0, 8)
	for _, c := range ctls {
		shutdown(t, c)
	}
	var props []string
	for _, n := range nodes {
		props = append(props, n.props)
	}
	best, bestEnd := chooseSurvivor(t, props)
	old, wiped := nodes[(best+1)%3], nodes[(best+2)%3]
	s := nodes[best]
	mustSucceed(t, "storage", "unsafe-force-standalone", "-c", s.props)
	c := startNode(t, s.props)
	if e := c.QuorumState().Epoch; e < bestEnd.LogEndEpoch+standaloneEpochJump {
		t.Errorf("survivor leads epoch %d, want at least %d", e, bestEnd.LogEndEpoch+standaloneEpochJump)
	}
	submitTopics(t, c, 8, 4)
	checkTopics(t, c, 12)

	o := launchNode(t, old.props)
	time.Sleep(3 * time.Second)
	if st := o.QuorumState(); st.Role == raft.RoleLeader {
		t.Errorf("the old voter leads: %+v", st)
	}
	if st := c.QuorumState(); st.Role != raft.RoleLeader {
		t.Errorf("the survivor no longer leads: %+v", st)
	}
	submitTopics(t, c, 12, 2)
	checkTopics(t, c, 14)
	shutdown(t, o)

	for _, d := range []string{wiped.meta, wiped.data1, wiped.data2} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", wiped.props, "--no-initial-controllers")
	w := launchNode(t, wiped.props)
	mustSucceed(t, "metadata-quorum", "--bootstrap-controller", s.addr, "add-controller", "--command-config", wiped.props)
	describeStatus(t, s.addr, "two voters", func(out string) bool { return strings.Count(out, `"endpoints"`) == 2 })
	submitTopics(t, c, 14, 2)
	for deadline := time.Now().Add(20 * time.Second); w.QuorumState().AppliedOffset < c.QuorumState().HighWatermark; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the re-added node did not catch up: %+v, leader %+v", w.QuorumState(), c.QuorumState())
		}
	}
	checkTopics(t, w, 16)
}

// TestForceStandaloneFiveLoseThree: a five-voter static quorum loses three
// voters, the leader among them; of the two survivors the one log-end
// ranks first is forced standalone and keeps every acknowledged write.
func TestForceStandaloneFiveLoseThree(t *testing.T) {
	nodes, ctls, ports, leader := startStaticQuorum(t, 5)
	submitTopics(t, ctls[leader], 0, 6)
	hw := ctls[leader].QuorumState().HighWatermark
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		caughtUp := 0
		for _, c := range ctls {
			if c.QuorumState().AppliedOffset >= hw {
				caughtUp++
			}
		}
		if caughtUp == len(ctls) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the followers did not catch up")
		}
	}
	for _, c := range ctls {
		shutdown(t, c)
	}
	survivors := []int{(leader + 1) % 5, (leader + 3) % 5}
	best, end := chooseSurvivor(t, []string{nodes[survivors[0]].props, nodes[survivors[1]].props})
	best = survivors[best]
	setVoters(t, nodes[best].props, fmt.Sprintf("%d@127.0.0.1:%d", best+1, ports[best]))
	mustSucceed(t, "storage", "unsafe-force-standalone", "-c", nodes[best].props)
	c := startNode(t, nodes[best].props)
	if e := c.QuorumState().Epoch; e < end.LogEndEpoch+standaloneEpochJump {
		t.Errorf("survivor leads epoch %d, want at least %d", e, end.LogEndEpoch+standaloneEpochJump)
	}
	submitTopics(t, c, 6, 3)
	checkTopics(t, c, 9)
}
