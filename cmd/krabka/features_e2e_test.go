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

// retryCLI runs args until its stdout is want, and fails the test when it
// never is. A leader answers an upgrade only once every voter has
// reported to it (UpdateRaftVoter), shortly after it was elected.
func retryCLI(t *testing.T, want string, args ...string) {
	t.Helper()
	var r result
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r = runKrabka(t, args...); r.code == 0 && r.stdout == want {
			return
		}
	}
	t.Fatalf("krabka %s never printed %q: exit %d, stdout %q, stderr %q", strings.Join(args, " "), want, r.code, r.stdout, r.stderr)
}

// kraftVersionLine matches describe's kraft.version line at level.
func kraftVersionLine(level int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`(?m)^Feature: kraft\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: %d\tEpoch: \d+$`, level))
}

// TestUpgradeStaticQuorumToDynamic is the runbook of docs/operations.md
// ("Upgrade a static quorum to a dynamic one") on three static controllers
// over loopback: describe shows kraft.version 0, add-controller is refused
// with the command that fixes it, --release-version leaves kraft.version
// alone and says so, a dry run and then the upgrade make kraft.version 1;
// a fourth controller joins as an observer and is added as a voter, a
// voter is removed, a node moves to controller.quorum.bootstrap.servers,
// and every committed topic is still there.
func TestUpgradeStaticQuorumToDynamic(t *testing.T) {
	nodes, ctls, ports, leader := startStaticQuorum(t, 3)
	submitTopics(t, ctls[leader], 0, 5)
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	via := addrs[0]

	r := mustSucceed(t, "features", "--bootstrap-controller", via, "describe")
	// Every feature Kafka 4.3.1 knows, by name, at the levels a 4.3
	// format finalizes.
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	wantLines := []string{
		"Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: ",
		"Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: ",
		"", // kraft.version, below
		"Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.3-IV0\tFinalizedVersionLevel: 4.3-IV0\tEpoch: ",
		"Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: ",
		"Feature: streams.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: ",
		"Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2\tEpoch: ",
	}
	ok := len(lines) == len(wantLines) && kraftVersionLine(0).MatchString(lines[2])
	for i := range wantLines {
		ok = ok && i < len(lines) && strings.HasPrefix(lines[i], wantLines[i])
	}
	if !ok {
		t.Fatalf("features describe:\n%s", r.stdout)
	}

	// The fourth controller, formatted to join a dynamic quorum.
	port4 := freePort(t)
	n4 := newTestNode(t, 4, fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", port4),
		fmt.Sprintf("advertised.listeners=CONTROLLER://127.0.0.1:%d", port4),
		"controller.quorum.bootstrap.servers="+strings.Join(addrs, ","))
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n4.props, "--no-initial-controllers")

	// Before the upgrade add-controller says why not and what to run, once.
	r = runKrabka(t, "metadata-quorum", "--bootstrap-controller", via, "add-controller", "-c", n4.props)
	fix := "krabka features --bootstrap-controller " + via + " upgrade --feature kraft.version=1"
	if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || strings.Count(r.stderr, "UNSUPPORTED_VERSION") != 1 ||
		strings.Count(r.stderr, "The version of API is not supported") != 1 || !strings.Contains(r.stderr, fix) {
		t.Errorf("add-controller on a static quorum: exit %d, stderr %q; want one line naming %q", r.code, r.stderr, fix)
	}

	// --release-version never upgrades kraft.version, and says so.
	r = runKrabka(t, "features", "--bootstrap-controller", via, "upgrade", "--release-version", "4.3", "--dry-run")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "--release-version does not change kraft.version; to make a static quorum dynamic, upgrade it by name: --feature kraft.version=1\n") ||
		strings.Contains(r.stdout, "kraft.version can") || !strings.Contains(r.stdout, "Can not upgrade metadata.version to 30. ") {
		t.Errorf("upgrade --release-version: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	upgrade := []string{"features", "--bootstrap-controller", strings.Join(addrs, ","), "upgrade", "--feature", "kraft.version=1"}
	retryCLI(t, "kraft.version can be upgraded to 1.\n", append(upgrade, "--dry-run")...)
	if r := mustSucceed(t, "features", "--bootstrap-controller", via, "describe"); !kraftVersionLine(0).MatchString(r.stdout) {
		t.Fatalf("describe after the dry run:\n%s", r.stdout)
	}
	retryCLI(t, "kraft.version was upgraded to 1.\n", upgrade...)
	for _, a := range addrs {
		if r := mustSucceed(t, "features", "--bootstrap-controller", a, "describe"); !kraftVersionLine(1).MatchString(r.stdout) {
			// Followers apply the upgrade a fetch later.
			retryDescribe(t, a)
		}
	}

	// The fourth controller joins as an observer, then as a voter.
	ctl4 := launchNode(t, n4.props)
	entry := func(id int, n testNode, addr string) string {
		return fmt.Sprintf(`{"id": %d, "directoryId": "%s", "endpoints": ["CONTROLLER://%s"]}`, id, readMeta(t, n.meta).DirectoryID, addr)
	}
	describeStatus(t, via, "node 4 as an observer", func(out string) bool {
		return strings.Contains(out, `CurrentObservers:       [{"id": 4, "directoryId": "`+readMeta(t, n4.meta).DirectoryID.String()+`"`)
	})
	r = mustSucceed(t, "metadata-quorum", "--bootstrap-controller", via, "add-controller", "-c", n4.props)
	if want := fmt.Sprintf("Added controller 4 with directory id %s and endpoints: CONTROLLER://127.0.0.1:%d\n", readMeta(t, n4.meta).DirectoryID, port4); r.stdout != want {
		t.Errorf("add-controller: stdout %q, want %q", r.stdout, want)
	}
	describeStatus(t, via, "four voters", func(out string) bool {
		return strings.Contains(out, "CurrentVoters:          ["+entry(1, nodes[0], addrs[0])+", "+entry(2, nodes[1], addrs[1])+", "+
			entry(3, nodes[2], addrs[2])+", "+entry(4, n4, fmt.Sprintf("127.0.0.1:%d", port4))+"]\n")
	})

	// Voter 3 leaves.
	dir3 := readMeta(t, nodes[2].meta).DirectoryID.String()
	mustSucceed(t, "metadata-quorum", "--bootstrap-controller", via, "remove-controller", "--controller-id", "3", "--controller-directory-id", dir3)
	describeStatus(t, via, "voters 1, 2 and 4", func(out string) bool {
		return strings.Contains(out, "CurrentVoters:          ["+entry(1, nodes[0], addrs[0])+", "+entry(2, nodes[1], addrs[1])+", "+
			entry(4, n4, fmt.Sprintf("127.0.0.1:%d", port4))+"]\n")
	})
	shutdown(t, ctls[2])
	submitTopics(t, ctl4, 5, 5)

	// Node 1 moves to controller.quorum.bootstrap.servers; node 2 keeps
	// controller.quorum.voters.
	shutdown(t, ctls[0])
	data, err := os.ReadFile(nodes[0].props)
	if err != nil {
		t.Fatal(err)
	}
	props := regexp.MustCompile(`(?m)^controller\.quorum\.voters=.*$`).ReplaceAllString(string(data),
		"controller.quorum.bootstrap.servers="+addrs[0]+","+addrs[1]+fmt.Sprintf(",127.0.0.1:%d", port4))
	writeFile(t, nodes[0].props, []byte(props))
	ctl1 := launchNode(t, nodes[0].props)
	submitTopics(t, ctl1, 10, 5)
	for _, c := range []*raft.Controller{ctl1, ctls[1], ctl4} {
		waitTopics(t, c, 15)
	}
}

// retryDescribe waits until describe on addr shows kraft.version 1.
func retryDescribe(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r := runKrabka(t, "features", "--bootstrap-controller", addr, "describe"); r.code == 0 && kraftVersionLine(1).MatchString(r.stdout) {
			return
		}
	}
	t.Fatalf("controller %s never reported kraft.version 1", addr)
}

// waitTopics waits until c has applied topic-0 .. topic-(n-1), then checks
// them.
func waitTopics(t *testing.T, c *raft.Controller, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && c.CurrentImage().Topics().Len() < n; time.Sleep(10 * time.Millisecond) {
	}
	checkTopics(t, c, n)
}
