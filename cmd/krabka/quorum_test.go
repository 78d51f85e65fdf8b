package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// devQuorum is a krabka dev run in the background.
type devQuorum struct {
	dir     string
	out     *syncBuffer
	errOut  *syncBuffer
	servers []string
}

// startDev runs krabka dev with n nodes until it reports a leader that
// has committed and every node ready; the run stops when the test ends.
func startDev(t *testing.T, n int) *devQuorum {
	t.Helper()
	d := &devQuorum{dir: t.TempDir(), out: &syncBuffer{}, errOut: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"dev", "--nodes", strconv.Itoa(n), "--dir", d.dir, "--summary-interval", "300ms"}, d.out, d.errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Error("dev did not stop")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !allReady(d.out.String()) {
		select {
		case code := <-done:
			t.Fatalf("dev exited with %d: %s", code, d.errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader after 20s: %s\n%s", d.out.String(), d.errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := regexp.MustCompile(`(?m)^BootstrapControllers: +(\S+)$`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no BootstrapControllers line:\n%s", d.out.String())
	}
	d.servers = strings.Split(m[1], ",")
	return d
}

// lastChange returns the leader and the epoch of the last change line.
func (d *devQuorum) lastChange(t *testing.T) (leader, epoch string) {
	t.Helper()
	all := changeLine.FindAllStringSubmatch(d.out.String(), -1)
	last := all[len(all)-1]
	return last[1], last[2]
}

func TestMetadataQuorumDescribeStatus(t *testing.T) {
	d := startDev(t, 3)
	clusterID := readMeta(t, filepath.Join(d.dir, "node-1")).ClusterID
	// A static quorum's voter set names no directory ids, so the entries
	// have none.
	var voters []string
	for i, s := range d.servers {
		voters = append(voters, fmt.Sprintf(`{"id": %d, "endpoints": ["CONTROLLER://%s"]}`, i+1, s))
	}
	status := regexp.MustCompile(`^ClusterId:              (\S+)
LeaderId:               (\d+)
LeaderEpoch:            (\d+)
HighWatermark:          (\d+)
MaxFollowerLag:         (\d+)
MaxFollowerLagTimeMs:   (-?\d+)
CurrentVoters:          (.*)
CurrentObservers:       \[\]
$`)
	// Every node leads the tool to the leader: the leader itself answers
	// DescribeCluster with its own id, a follower with the leader's.
	for _, s := range d.servers {
		r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", s, "describe", "--status")
		m := status.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("via %s: stdout not in Kafka's layout:\n%s", s, r.stdout)
		}
		leader, epoch := d.lastChange(t)
		if m[1] != clusterID || m[2] != leader || m[3] != epoch {
			t.Errorf("via %s: cluster %s leader %s epoch %s, want %s %s %s", s, m[1], m[2], m[3], clusterID, leader, epoch)
		}
		if hw, _ := strconv.Atoi(m[4]); hw < 1 {
			t.Errorf("via %s: high watermark %d", s, hw)
		}
		if got, want := m[7], "["+strings.Join(voters, ", ")+"]"; got != want {
			t.Errorf("via %s: voters\n got %s\nwant %s", s, got, want)
		}
	}
	r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", "127.0.0.1:1,"+d.servers[1], "describe", "--replication")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("replication table of %d lines:\n%s", len(lines), r.stdout)
	}
	header := regexp.MustCompile(`^NodeId\t+DirectoryId +\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t$`)
	if !header.MatchString(lines[0]) {
		t.Errorf("header %q", lines[0])
	}
	leader, _ := d.lastChange(t)
	for i, line := range lines[1:] {
		cells := strings.Split(line, "\t")
		if len(cells) != 8 || cells[7] != "" {
			t.Fatalf("row %q: want 7 tab-terminated cells", line)
		}
		for j, c := range cells[:7] {
			if len(c) != len(strings.Split(lines[0], "\t")[j]) {
				t.Errorf("row %q: cell %d is %q, not padded to the column", line, j, c)
			}
		}
		id := strings.TrimSpace(cells[0])
		status := strings.TrimSpace(cells[6])
		switch {
		case i == 0 && (id != leader || status != "Leader"):
			t.Errorf("first row %q, want the leader %s", line, leader)
		case i > 0 && (id == leader || status != "Follower"):
			t.Errorf("row %q, want a follower", line)
		}
		if cells[1] != "AAAAAAAAAAAAAAAAAAAAAA" {
			t.Errorf("row %q: directory id, want the zero Uuid of a static voter", line)
		}
	}
	human := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", d.servers[0], "describe", "--replication", "--human-readable")
	if !regexp.MustCompile(`(?m)^\S+ +\t\S+\t\d+ *\t\d+ *\t\d+ ms ago *\t\d+ ms ago *\tLeader  \t$`).MatchString(human.stdout) {
		t.Errorf("--human-readable:\n%s", human.stdout)
	}
}

// sampleQuorum is a DescribeQuorum answer with a lagging follower, a
// follower whose progress is unknown and an observer.
func sampleQuorum() quorumInfo {
	dir := func(b byte) [16]byte { var u [16]byte; u[15] = b; return u }
	rs := func(id int32, d [16]byte, leo, fetch, caught int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		return kmsg.DescribeQuorumResponseTopicPartitionReplicaState{ReplicaID: id, ReplicaDirectoryID: d, LogEndOffset: leo, LastFetchTimestamp: fetch, LastCaughtUpTimestamp: caught}
	}
	return quorumInfo{
		clusterID: "4L6g3nShT-eMCtK--X86sw",
		partition: kmsg.DescribeQuorumResponseTopicPartition{
			LeaderID: 2, LeaderEpoch: 7, HighWatermark: 18342,
			CurrentVoters: []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{
				rs(1, dir(1), 18300, 1700000000500, 1700000000100),
				rs(2, dir(2), 18345, 1700000001000, 1700000001000),
				rs(3, [16]byte{}, 18345, -1, -1),
			},
			Observers: []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{rs(4, dir(4), 18345, 1700000000900, 1700000000900)},
		},
		nodes: []kmsg.DescribeQuorumResponseNode{
			{NodeID: 1, Listeners: []kmsg.DescribeQuorumResponseNodeListener{{Name: "CONTROLLER", Host: "controller-1", Port: 9093}}},
			{NodeID: 2, Listeners: []kmsg.DescribeQuorumResponseNodeListener{{Name: "CONTROLLER", Host: "::1", Port: 9094}, {Name: "SSL", Host: "c2", Port: 9095}}},
		},
	}
}

func TestQuorumStatusLayout(t *testing.T) {
	var b strings.Builder
	if err := printQuorumStatus(&b, sampleQuorum()); err != nil {
		t.Fatal(err)
	}
	want := `ClusterId:              4L6g3nShT-eMCtK--X86sw
LeaderId:               2
LeaderEpoch:            7
HighWatermark:          18342
MaxFollowerLag:         45
MaxFollowerLagTimeMs:   900
CurrentVoters:          [{"id": 1, "directoryId": "AAAAAAAAAAAAAAAAAAAAAQ", "endpoints": ["CONTROLLER://controller-1:9093"]}, {"id": 2, "directoryId": "AAAAAAAAAAAAAAAAAAAAAg", "endpoints": ["CONTROLLER://[::1]:9094", "SSL://c2:9095"]}, {"id": 3}]
CurrentObservers:       [{"id": 4, "directoryId": "AAAAAAAAAAAAAAAAAAAABA"}]
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	// The leader as the laggiest voter gives a lag time of 0; a laggiest
	// voter that never caught up gives -1.
	q := sampleQuorum()
	q.partition.CurrentVoters[0].LogEndOffset = 18345
	q.partition.CurrentVoters[1].LogEndOffset = 18000
	if got := statusLine(t, q, "MaxFollowerLagTimeMs"); got != "0" {
		t.Errorf("leader laggiest: MaxFollowerLagTimeMs %s, want 0", got)
	}
	q = sampleQuorum()
	q.partition.CurrentVoters[2].LogEndOffset = 10
	if got := statusLine(t, q, "MaxFollowerLagTimeMs"); got != "-1" {
		t.Errorf("laggiest voter never caught up: MaxFollowerLagTimeMs %s, want -1", got)
	}
	q.partition.LeaderID = 9
	if err := printQuorumStatus(&b, q); err == nil {
		t.Error("a leader missing from the voters was accepted")
	}
}

// statusLine returns the value of label in the status of q.
func statusLine(t *testing.T, q quorumInfo, label string) string {
	t.Helper()
	var b strings.Builder
	if err := printQuorumStatus(&b, q); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, label+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s line:\n%s", label, b.String())
	return ""
}

func TestReplicationLayout(t *testing.T) {
	now := time.UnixMilli(1700000002000)
	var b strings.Builder
	if err := printReplication(&b, sampleQuorum(), false, now); err != nil {
		t.Fatal(err)
	}
	want := "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n" +
		"2     \tAAAAAAAAAAAAAAAAAAAAAg\t18345       \t0  \t1700000001000     \t1700000001000        \tLeader  \t\n" +
		"1     \tAAAAAAAAAAAAAAAAAAAAAQ\t18300       \t45 \t1700000000500     \t1700000000100        \tFollower\t\n" +
		"3     \tAAAAAAAAAAAAAAAAAAAAAA\t18345       \t0  \t-1                \t-1                   \tFollower\t\n" +
		"4     \tAAAAAAAAAAAAAAAAAAAABA\t18345       \t0  \t1700000000900     \t1700000000900        \tObserver\t\n"
	if b.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", b.String(), want)
	}
	b.Reset()
	if err := printReplication(&b, sampleQuorum(), true, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1     \tAAAAAAAAAAAAAAAAAAAAAQ\t18300       \t45 \t1500 ms ago       \t1900 ms ago          \tFollower\t\n") ||
		!strings.Contains(b.String(), "\t-1                \t-1                   \tFollower\t\n") {
		t.Errorf("--human-readable:\n%q", b.String())
	}
	if err := printReplication(&b, sampleQuorum(), true, time.UnixMilli(1700000000000)); err == nil || !strings.Contains(err.Error(), "clocks") {
		t.Errorf("a timestamp in the future: %v", err)
	}
}

func TestMetadataQuorumUsageErrors(t *testing.T) {
	mustFail(t, "exactly one of --status and --replication", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "describe")
	mustFail(t, "exactly one of --status and --replication", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "describe", "--status", "--replication")
	mustFail(t, "--human-readable is only for --replication", "metadata-quorum", "--bootstrap-controller", "localhost:9093", "describe", "--status", "--human-readable")
	mustFail(t, "--bootstrap-controller is required", "metadata-quorum", "describe", "--status")
	mustFail(t, "krabka runs controllers only", "metadata-quorum", "--bootstrap-server", "localhost:9092", "describe", "--status")
	mustFail(t, `--bootstrap-controller "localhost"`, "metadata-quorum", "--bootstrap-controller", "localhost", "describe", "--status")
	mustFail(t, "needs a subcommand", "metadata-quorum", "--bootstrap-controller", "localhost:9093")
}

func TestMetadataQuorumUnreachable(t *testing.T) {
	ports, err := freeLocalPorts(2)
	if err != nil {
		t.Fatal(err)
	}
	a, b := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	start := time.Now()
	mustFail(t, "no controller of --bootstrap-controller "+a+","+b+" answered: "+a+" (connect: connection refused), "+b+" (connect: connection refused)",
		"metadata-quorum", "--bootstrap-controller", a+","+b, "describe", "--status")
	if time.Since(start) > 5*time.Second {
		t.Errorf("unreachable controllers took %v to report", time.Since(start))
	}
}

// fakeController serves one answer per API on a loopback port: ApiVersions
// as a controller does, and whatever answer gives for the others.
func fakeController(t *testing.T, answer func(kmsg.Request) kmsg.Response) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				for {
					frame, err := wire.ReadFrame(conn, nil, wire.DefaultMaxFrameSize)
					if err != nil {
						return
					}
					req, err := wire.DecodeRequest(frame)
					if err != nil {
						return
					}
					var resp kmsg.Response
					if av, ok := req.Body.(*kmsg.ApiVersionsRequest); ok {
						resp = wire.AnswerAPIVersions(av, wire.FeatureState{FinalizedEpoch: -1})
					} else {
						resp = answer(req.Body)
					}
					resp.SetVersion(req.Header.APIVersion)
					if _, err := conn.Write(wire.AppendResponse(nil, req.Header.CorrelationID, resp)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestMetadataQuorumErrorCodes(t *testing.T) {
	var self string
	self = fakeController(t, func(r kmsg.Request) kmsg.Response {
		switch r := r.(type) {
		case *kmsg.DescribeClusterRequest:
			host, port, _ := net.SplitHostPort(self)
			p, _ := strconv.Atoi(port)
			return wire.AnswerDescribeCluster(r, "cluster", 1, []wire.ClusterNode{{ID: 1, Host: host, Port: int32(p)}})
		default:
			resp := kmsg.NewPtrDescribeQuorumResponse()
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
	})
	mustFail(t, "controller "+self+": DescribeQuorum: CLUSTER_AUTHORIZATION_FAILED", "metadata-quorum", "--bootstrap-controller", self, "describe", "--status")

	// A quorum without a leader is asked again until --timeout.
	leaderless := fakeController(t, func(r kmsg.Request) kmsg.Response {
		if dc, ok := r.(*kmsg.DescribeClusterRequest); ok {
			return wire.AnswerDescribeCluster(dc, "cluster", -1, nil)
		}
		// As Kafka's controller answers when it does not lead: no view.
		resp := kmsg.NewPtrDescribeQuorumResponse()
		topic := kmsg.NewDescribeQuorumResponseTopic()
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.ErrorCode = kerr.NotLeaderForPartition.Code
		topic.Partitions = append(topic.Partitions, p)
		resp.Topics = append(resp.Topics, topic)
		return resp
	})
	r := runKrabka(t, "metadata-quorum", "--bootstrap-controller", leaderless, "--timeout", "100ms", "describe", "--status")
	if want := "Controller " + leaderless + ": answers without a view of its own (DescribeQuorum: "; r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("a controller without a view: exit %d, stdout %q, stderr %q, want it to say %q", r.code, r.stdout, r.stderr, want)
	}
	start := time.Now()
	mustFail(t, "no answer from a quorum leader in time: "+leaderless+" (knows no quorum leader yet)",
		"metadata-quorum", "--bootstrap-controller", leaderless, "--timeout", "500ms", "describe", "--status")
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Errorf("gave up after %v, before --timeout", el)
	}
}

// TestMetadataQuorumDescribeWithoutALeader: with two of three
// controllers stopped, describe --status prints the view of the one left
// (its id, role, epoch, the leader it believes in, its log end) and fails
// naming every address it tried once.
func TestMetadataQuorumDescribeWithoutALeader(t *testing.T) {
	admins, voters, stops := startAdminQuorum(t, 3)
	for i := range admins {
		waitUntil(t, "every node to be ready", func() bool { return get(admins[i], "/readyz") == http.StatusOK })
	}
	stops[0]()
	stops[1]()
	// Node 3 may lead, or win an election as node 2 stops: a leader
	// resigns once check-quorum sees no majority. Only a node that does
	// not lead fails caught-up.
	waitUntil(t, "node 3 not to lead", func() bool {
		_, body := getBody(admins[2], "/readyz?exclude=linearizable-read")
		return strings.Contains(body, "[-]caught-up failed")
	})
	r := runKrabka(t, "metadata-quorum", "--bootstrap-controller", strings.Join(voters, ","), "--timeout", "1500ms", "describe", "--status")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s%s", r.code, r.stdout, r.stderr)
	}
	view := regexp.MustCompile(`(?m)^Controller ` + regexp.QuoteMeta(voters[2]) + `: NodeId 3, Role (\w+), Epoch (\d+), Leader (\w+), LogEndOffset (\d+), HighWatermark (-?\d+)$`)
	m := view.FindStringSubmatch(r.stdout)
	if m == nil || !strings.HasPrefix(r.stdout, "No quorum leader answered.") {
		t.Fatalf("stdout lacks the view of node 3:\n%s", r.stdout)
	}
	if m[1] == "Leader" || m[4] == "0" {
		t.Errorf("node 3's view %q: want no leadership and a log with records", m[0])
	}
	for _, v := range voters[:2] {
		if strings.Contains(r.stdout, "Controller "+v) {
			t.Errorf("a view of stopped %s:\n%s", v, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "no answer from a quorum leader in time: ") {
		t.Errorf("stderr: %s", r.stderr)
	}
	for _, v := range voters {
		if n := strings.Count(r.stderr, v); n != 1 {
			t.Errorf("stderr names %s %d times, want once: %s", v, n, r.stderr)
		}
	}
}
