package multiprocess

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// newDynamicQuorum builds the binary and writes the server.properties of
// three controllers of a dynamic quorum (KIP-853) on free loopback ports:
// no controller.quorum.voters, every controller a bootstrap server. Node 1
// is formatted --standalone, nodes 2 and 3 --no-initial-controllers, as
// an operator grows a quorum from one controller.
func newDynamicQuorum(t *testing.T) *quorum {
	q := newNodes(t, 3)
	clusterID := strings.TrimSpace(q.mustKrabka("storage", "random-uuid"))
	for id, n := range q.nodes {
		q.writeProps(id, "controller.quorum.bootstrap.servers="+q.bootstrap())
		mode, want := "--no-initial-controllers", "Formatting metadata directory "
		if id == 1 {
			mode, want = "--standalone", "Formatting dynamic metadata voter directory "
		}
		if out := q.mustKrabka("storage", "format", "-t", clusterID, "-c", n.props, mode); !strings.HasPrefix(out, want) {
			t.Fatalf("format node %d %s printed %q", id, mode, out)
		}
	}
	return q
}

var voterIDs = regexp.MustCompile(`\{"id": (\d+), "directoryId": "[A-Za-z0-9_-]{22}", "endpoints": \["CONTROLLER://[^"]+"\]\}`)

// status runs describe --status until cond accepts its output.
func (q *quorum) status(what string, cond func(out string) bool) string {
	q.t.Helper()
	var last string
	waitFor(q.t, 30*time.Second, what, func() bool {
		out, err := q.krabka("metadata-quorum", "--bootstrap-controller", q.bootstrap(), "--timeout", "5s", "describe", "--status")
		if err != nil {
			last = err.Error()
			return false
		}
		last = out
		return cond(out)
	}, func() string { return last })
	return last
}

// votersOf lists the ids of the CurrentVoters line of describe --status.
func votersOf(out string) []string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "CurrentVoters:") {
			var ids []string
			for _, m := range voterIDs.FindAllStringSubmatch(line, -1) {
				ids = append(ids, m[1])
			}
			return ids
		}
	}
	return nil
}

// TestGrowDynamicQuorum grows a quorum from one controller to three with
// the binary, as an operator does: format one node --standalone and start
// it; format two more --no-initial-controllers and start them (they
// follow as observers); add each with metadata-quorum add-controller and
// its own server.properties; describe --status then lists three voters
// with directory ids and endpoints, the quorum commits, and it survives a
// SIGKILL of the leader.
func TestGrowDynamicQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q := newDynamicQuorum(t)
	q.start(1)
	q.submit(1, "metadata.version", metadataVersionRecord(t))
	q.submit(1, "b", topicRecord(t, "b"))
	q.start(2)
	q.start(3)
	q.status("two observers", func(out string) bool {
		return strings.Join(votersOf(out), ",") == "1" && regexp.MustCompile(`(?m)^CurrentObservers: +\[\{"id": [23], .*\{"id": [23], `).MatchString(out)
	})
	for id := 2; id <= 3; id++ {
		out := q.addController(id)
		if want := fmt.Sprintf("Added controller %d with directory id ", id); !strings.HasPrefix(out, want) || !strings.HasSuffix(out, " and endpoints: CONTROLLER://"+q.nodes[id].addr+"\n") {
			t.Fatalf("add-controller %d printed %q", id, out)
		}
	}
	out := q.status("three voters", func(out string) bool { return strings.Join(votersOf(out), ",") == "1,2,3" })
	if !strings.Contains(out, "CurrentObservers:       []\n") {
		t.Errorf("observers left after adding them:\n%s", out)
	}
	q.submit(2, "c", topicRecord(t, "c"))
	for id := 1; id <= 3; id++ {
		q.hasAll(id, []string{"b", "c"})
	}

	q.killLeader("d", []string{"b", "c", "d"})
}

// killLeader kills the leader with SIGKILL, has the next leader commit
// topic, restarts the killed node and waits until every node holds the
// topics of want.
func (q *quorum) killLeader(topic string, want []string) {
	q.t.Helper()
	leader, _ := q.leader(0)
	if err := q.stop(leader, os.Kill); err == nil {
		q.t.Fatalf("node %d exited cleanly after SIGKILL", leader)
	}
	next, _ := q.leader(leader)
	q.submit(next, topic, topicRecord(q.t, topic))
	q.start(leader)
	for id := 1; id <= 3; id++ {
		q.hasAll(id, want)
	}
}
