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

	// --release-version never upgrades kraft.version, and says so; the
	// release's levels are the ones in force.
	r = runKrabka(t, "features", "--bootstrap-controller", via, "upgrade", "--release-version", "4.3", "--dry-run")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "--release-version does not change kraft.version; to make a static quorum dynamic, upgrade it by name: --feature kraft.version=1\n") ||
		strings.Contains(r.stdout, "kraft.version can") || !strings.Contains(r.stdout, "\nmetadata.version can be upgraded to 30.\n") {
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

// TestDowngradeAndDisableFeatures runs features downgrade and disable
// against a single in-process controller formatted at 4.3's defaults: a
// dry run changes nothing, a downgrade and a disable change the finalized
// levels, and the downgrades Kafka's controller refuses are refused with
// its reasons and exit 1, changing nothing.
func TestDowngradeAndDisableFeatures(t *testing.T) {
	features, ctl := startFeaturesNode(t)
	level := func(name string) int16 { return ctl.CurrentImage().Features().Level(name) }
	finalized := func(name string, want int) { t.Helper(); checkFinalized(t, features, name, fmt.Sprint(want)) }

	// The first command waits for the leader's bootstrap records.
	retryCLI(t, "transaction.version can be downgraded to 1.\n", append(features, "downgrade", "--feature", "transaction.version=1", "--dry-run")...)
	finalized("transaction.version", 2)
	if r := mustSucceed(t, append(features, "downgrade", "--feature", "transaction.version=1")...); r.stdout != "transaction.version was downgraded to 1.\n" {
		t.Errorf("downgrade: stdout %q", r.stdout)
	}
	finalized("transaction.version", 1)
	if r := mustSucceed(t, append(features, "disable", "--feature", "group.version", "--dry-run")...); r.stdout != "group.version can be disabled.\n" || level("group.version") != 1 {
		t.Errorf("disable --dry-run: stdout %q, group.version %d", r.stdout, level("group.version"))
	}
	if r := mustSucceed(t, append(features, "disable", "--feature", "group.version", "--unsafe")...); r.stdout != "group.version was disabled.\n" {
		t.Errorf("disable: stdout %q", r.stdout)
	}
	finalized("group.version", 0)

	// kraft.version 0 is the level in force, so disabling it changes
	// nothing; once it is 1 it cannot be disabled (below).
	if r := mustSucceed(t, append(features, "disable", "--feature", "kraft.version", "--dry-run")...); r.stdout != "kraft.version can be disabled.\n" {
		t.Errorf("disable kraft.version at 0: stdout %q", r.stdout)
	}
	retryCLI(t, "kraft.version was upgraded to 1.\n", append(features, "upgrade", "--feature", "kraft.version=1")...)

	refused := []refusal{
		{[]string{"downgrade", "--feature", "metadata.version=29"},
			"Could not downgrade metadata.version to 29. " + allFailed + "Unsupported metadata.version downgrade from 30 to 29. Refusing to perform the requested downgrade because it might delete metadata information.\n"},
		{[]string{"downgrade", "--feature", "metadata.version=22", "--unsafe", "--dry-run"},
			"Can not downgrade metadata.version to 22. " + allFailed + "Unsupported metadata.version downgrade from 30 to 22. Unsafe metadata downgrade is not supported in this version.\n"},
		{[]string{"disable", "--feature", "kraft.version"},
			"Could not disable kraft.version. " + allFailed + "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature.\n"},
		{[]string{"downgrade", "--feature", "group.version=1"},
			"Could not downgrade group.version to 1. " + allFailed + "Invalid update version 1 for feature group.version. Can't downgrade to a newer version.\n"},
		{[]string{"upgrade", "--feature", "streams.version=0"},
			"Could not upgrade streams.version to 0. " + allFailed + "Invalid update version 0 for feature streams.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.\n"},
		{[]string{"disable", "--feature", "no.such.version"},
			"Could not disable no.such.version. " + allFailed + "Invalid update version 0 for feature no.such.version. Feature no.such.version not found.\n"},
	}
	checkRefused(t, features, refused)
	if mv, tv, gv := ctl.CurrentImage().Features().MetadataVersion(), level("transaction.version"), level("group.version"); mv != 30 || tv != 1 || gv != 0 {
		t.Errorf("after the refusals: metadata.version %d, transaction.version %d, group.version %d; want 30, 1, 0", mv, tv, gv)
	}
}

// startFeaturesNode formats a single static controller on a free port,
// with formatArgs added to storage format, starts it in process and
// returns the features command's first arguments for it and the
// controller.
func startFeaturesNode(t *testing.T, formatArgs ...string) ([]string, *raft.Controller) {
	t.Helper()
	via := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// Advertised as it listens: after a kraft.version upgrade the voter
	// set holds the advertised endpoint.
	n := newTestNode(t, 1, "listeners=CONTROLLER://"+via, "advertised.listeners=CONTROLLER://"+via,
		"controller.quorum.voters=1@"+via)
	mustSucceed(t, append([]string{"storage", "format", "-t", testClusterID, "-c", n.props}, formatArgs...)...)
	return []string{"features", "--bootstrap-controller", via}, launchNode(t, n.props)
}

// checkFinalized fails the test unless features describe shows feature
// name finalized at want (a metadata.version by its release name).
func checkFinalized(t *testing.T, features []string, name, want string) {
	t.Helper()
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^Feature: %s\t.*\tFinalizedVersionLevel: %s\t`, regexp.QuoteMeta(name), regexp.QuoteMeta(want)))
	if r := mustSucceed(t, append(features, "describe")...); !re.MatchString(r.stdout) {
		t.Errorf("describe: want %s at %s:\n%s", name, want, r.stdout)
	}
}

// allFailed begins the reason of every refused UpdateFeatures request.
const allFailed = "The update failed for all features since the following feature had an error: "

// refusal is a features command the leader refuses and what it prints.
type refusal struct {
	args []string
	out  string
}

// checkRefused runs each refused command with features' first arguments
// and fails the test unless it prints its refusal and fails with Kafka's
// tool's last line.
func checkRefused(t *testing.T, features []string, refused []refusal) {
	t.Helper()
	for _, c := range refused {
		if r := runKrabka(t, append(features, c.args...)...); r.code != 1 || r.stdout != c.out || r.stderr != "Error: 1 out of 1 operation(s) failed\n" {
			t.Errorf("features %s: exit %d, stdout %q, stderr %q; want exit 1, stdout %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.out)
		}
	}
}

// TestDowngradeMetadataVersion runs features downgrade and upgrade of
// metadata.version against a controller formatted at 4.2 (4.2-IV1, 29),
// as Kafka's FeatureControlManager takes them: dry runs, by level and
// with --release-version 4.1, change nothing; a downgrade to 4.0-IV2
// (24), past no level that changed the metadata, commits; one past
// 4.0-IV1 (23), which changed it, is refused with Kafka's reason, safe
// or unsafe, and changes nothing; an upgrade to 4.3-IV0 (30) commits,
// after which even one level down is refused.
func TestDowngradeMetadataVersion(t *testing.T) {
	features, ctl := startFeaturesNode(t, "--release-version", "4.2")
	mv := func() int16 { return ctl.CurrentImage().Features().MetadataVersion() }
	// The first command waits for the leader's bootstrap records.
	retryCLI(t, "metadata.version can be downgraded to 24.\n", append(features, "downgrade", "--feature", "metadata.version=24", "--dry-run")...)
	checkFinalized(t, features, "metadata.version", "4.2-IV1")
	// 4.1's levels: metadata.version 27 (4.1-IV1) and the other
	// features' defaults, kraft.version left out.
	release := "--release-version does not change kraft.version; to make a static quorum dynamic, upgrade it by name: --feature kraft.version=1\n" +
		"eligible.leader.replicas.version can be downgraded to 1.\ngroup.version can be downgraded to 1.\nmetadata.version can be downgraded to 27.\n" +
		"share.version can be downgraded to 0.\nstreams.version can be downgraded to 0.\ntransaction.version can be downgraded to 2.\n"
	if r := mustSucceed(t, append(features, "downgrade", "--release-version", "4.1", "--dry-run")...); r.stdout != release || mv() != 29 {
		t.Errorf("downgrade --release-version 4.1 --dry-run: stdout %q, metadata.version %d; want stdout %q and 29", r.stdout, mv(), release)
	}
	if r := mustSucceed(t, append(features, "downgrade", "--feature", "metadata.version=24")...); r.stdout != "metadata.version was downgraded to 24.\n" || mv() != 24 {
		t.Errorf("downgrade to 24: stdout %q, metadata.version %d", r.stdout, mv())
	}
	checkFinalized(t, features, "metadata.version", "4.0-IV2")

	refused := []refusal{
		{[]string{"downgrade", "--feature", "metadata.version=22"},
			"Could not downgrade metadata.version to 22. " + allFailed + "Unsupported metadata.version downgrade from 24 to 22. Refusing to perform the requested downgrade because it might delete metadata information.\n"},
		{[]string{"downgrade", "--feature", "metadata.version=22", "--unsafe"},
			"Could not downgrade metadata.version to 22. " + allFailed + "Unsupported metadata.version downgrade from 24 to 22. Unsafe metadata downgrade is not supported in this version.\n"},
		{[]string{"downgrade", "--feature", "metadata.version=25"},
			"Could not downgrade metadata.version to 25. " + allFailed + "Invalid update version 25 for feature metadata.version. Can't downgrade to a newer version.\n"},
	}
	checkRefused(t, features, refused)
	if mv() != 24 {
		t.Errorf("after the refusals metadata.version is %d, want 24", mv())
	}

	if r := mustSucceed(t, append(features, "upgrade", "--feature", "metadata.version=30")...); r.stdout != "metadata.version was upgraded to 30.\n" || mv() != 30 {
		t.Errorf("upgrade to 30: stdout %q, metadata.version %d", r.stdout, mv())
	}
	checkFinalized(t, features, "metadata.version", "4.3-IV0")
	checkRefused(t, features, []refusal{{[]string{"downgrade", "--feature", "metadata.version=29"},
		"Could not downgrade metadata.version to 29. " + allFailed + "Unsupported metadata.version downgrade from 30 to 29. Refusing to perform the requested downgrade because it might delete metadata information.\n"}})
}
