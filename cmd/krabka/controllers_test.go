package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dynamicNode is a controller of a dynamic quorum run with server-start in
// this process.
type dynamicNode struct {
	testNode
	addr string
}

// newDynamicNodes writes the server.properties of n controllers of one
// dynamic quorum on free loopback ports, each naming every controller as
// a bootstrap server.
func newDynamicNodes(t *testing.T, n int) []dynamicNode {
	t.Helper()
	var addrs []string
	for range n {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	var nodes []dynamicNode
	for i := range n {
		tn := newTestNode(t, i+1,
			"listeners=CONTROLLER://"+addrs[i],
			"advertised.listeners=CONTROLLER://"+addrs[i],
			"controller.quorum.bootstrap.servers="+strings.Join(addrs, ","),
			"controller.quorum.election.timeout.ms=200",
			"controller.quorum.fetch.timeout.ms=1000")
		nodes = append(nodes, dynamicNode{testNode: tn, addr: addrs[i]})
	}
	return nodes
}

// serve runs server-start for node until the test ends.
func (n dynamicNode) serve(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, []string{"server-start", n.props}, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Errorf("server-start of %s did not stop", n.addr)
		}
	})
}

// describeStatus runs describe --status until match accepts its output.
func describeStatus(t *testing.T, via string, what string, match func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := runKrabka(t, "metadata-quorum", "--bootstrap-controller", via, "describe", "--status")
		if r.code == 0 && match(r.stdout) {
			return r.stdout
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe --status never showed %s: %s %s", what, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAddAndRemoveController: the operator's way to grow a dynamic quorum.
// Node 1 is formatted --standalone, nodes 2 and 3 --no-initial-controllers;
// add-controller with each new node's own server.properties makes it a
// voter, describe --status lists the voters with their directory ids and
// endpoints, and remove-controller turns one back into an observer.
func TestAddAndRemoveController(t *testing.T) {
	nodes := newDynamicNodes(t, 3)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", nodes[0].props, "--standalone")
	for _, n := range nodes[1:] {
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "--no-initial-controllers")
	}
	for _, n := range nodes {
		n.serve(t)
	}
	via := nodes[0].addr
	entry := func(i int) string {
		return fmt.Sprintf(`{"id": %d, "directoryId": "%s", "endpoints": ["CONTROLLER://%s"]}`, i+1, readMeta(t, nodes[i].meta).DirectoryID, nodes[i].addr)
	}
	describeStatus(t, via, "node 1 alone", func(out string) bool {
		return strings.Contains(out, "CurrentVoters:          ["+entry(0)+"]\n")
	})
	for i := 1; i < 3; i++ {
		r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", via, "add-controller", "--command-config", nodes[i].props)
		want := fmt.Sprintf("Added controller %d with directory id %s and endpoints: CONTROLLER://%s\n", i+1, readMeta(t, nodes[i].meta).DirectoryID, nodes[i].addr)
		if r.stdout != want {
			t.Errorf("add-controller: stdout %q, want %q", r.stdout, want)
		}
	}
	voters := "CurrentVoters:          [" + entry(0) + ", " + entry(1) + ", " + entry(2) + "]\n"
	describeStatus(t, nodes[2].addr, "three voters", func(out string) bool {
		return strings.Contains(out, voters) && strings.Contains(out, "CurrentObservers:       []\n")
	})
	mustFail(t, "DUPLICATE_VOTER", "metadata-quorum", "--bootstrap-controller", via, "add-controller", "-c", nodes[1].props)

	dir3 := readMeta(t, nodes[2].meta).DirectoryID.String()
	r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", via, "remove-controller", "--controller-id", "3", "--controller-directory-id", dir3)
	if want := "Removed  KRaft controller 3 with directory id " + dir3 + "\n"; r.stdout != want {
		t.Errorf("remove-controller: stdout %q, want %q", r.stdout, want)
	}
	observer := regexp.MustCompile(`CurrentObservers:       \[\{"id": 3, "directoryId": "` + dir3 + `"\}\]`)
	describeStatus(t, via, "node 3 as an observer", func(out string) bool {
		return strings.Contains(out, "CurrentVoters:          ["+entry(0)+", "+entry(1)+"]\n") && observer.MatchString(out)
	})
	mustFail(t, "VOTER_NOT_FOUND", "metadata-quorum", "--bootstrap-controller", via, "remove-controller", "-i", "3", "-d", dir3)
}

func TestAddRemoveControllerUsage(t *testing.T) {
	n := newTestNode(t, 4, dynamicServers)
	mustFail(t, "add-controller needs --command-config", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "add-controller")
	mustFail(t, "read meta.properties of the metadata log directory", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "add-controller", "-c", n.props)
	mustFail(t, "--bootstrap-controller is required", "metadata-quorum", "add-controller", "-c", n.props)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "--no-initial-controllers")
	dir := readMeta(t, n.meta).DirectoryID.String()
	r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", "localhost:9093", "add-controller", "-c", n.props, "--dry-run")
	if want := "DRY RUN of adding controller 4 with directory id " + dir + " and endpoints: CONTROLLER://localhost:9093\n"; r.stdout != want {
		t.Errorf("add-controller --dry-run: stdout %q, want %q", r.stdout, want)
	}
	r = mustSucceed(t, "metadata-quorum", "--bootstrap-controller", "localhost:9093", "remove-controller", "-i", "4", "-d", dir, "--dry-run")
	if want := "DRY RUN of removing  KRaft controller 4 with directory id " + dir + "\n"; r.stdout != want {
		t.Errorf("remove-controller --dry-run: stdout %q, want %q", r.stdout, want)
	}
	mustFail(t, "remove-controller needs --controller-id", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "remove-controller", "-d", dir)
	mustFail(t, "remove-controller needs --controller-directory-id", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "remove-controller", "-i", "4")
	mustFail(t, "--controller-id -1: must be at least 0", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "remove-controller", "-i", "-1", "-d", dir)
	mustFail(t, `--controller-directory-id "nope": not a directory id`, "metadata-quorum", "--bootstrap-controller", "localhost:9093", "remove-controller", "-i", "4", "-d", "nope")
}
