package multiprocess

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/internal/wire/wiretest"
	"github.com/krabka-go/krabka/metadata"
)

// node is one controller process of the quorum under test.
type node struct {
	id    int
	addr  string
	props string
	log   string
	cmd   *exec.Cmd
	exit  chan error
}

// quorum is a quorum of processes (three unless newQuorumOf names
// another size) run from a freshly built binary, its nodes numbered from
// 1.
type quorum struct {
	t     *testing.T
	bin   string
	dir   string
	nodes map[int]*node
}

// buildBinary builds cmd/krabka into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "krabka")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/krabka")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// krabka runs the binary with args and returns its stdout.
func (q *quorum) krabka(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(q.bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("krabka %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// mustKrabka is krabka that fails the test on an error.
func (q *quorum) mustKrabka(args ...string) string {
	q.t.Helper()
	out, err := q.krabka(args...)
	if err != nil {
		q.t.Fatal(err)
	}
	return out
}

// newQuorum is newQuorumOf three controllers.
func newQuorum(t *testing.T) *quorum { return newQuorumOf(t, 3) }

// newQuorumOf builds the binary, writes the server.properties of size
// controllers of a static quorum on free loopback ports and formats
// their directories with krabka storage random-uuid and krabka storage
// format.
func newQuorumOf(t *testing.T, size int) *quorum {
	q := newNodes(t, size)
	var ids []int
	for id := 1; id <= size; id++ {
		ids = append(ids, id)
	}
	clusterID := strings.TrimSpace(q.mustKrabka("storage", "random-uuid"))
	for id, n := range q.nodes {
		q.writeProps(id, q.votersLine(ids...))
		out := q.mustKrabka("storage", "format", "-t", clusterID, "-c", n.props)
		if !strings.HasPrefix(out, "Formatting metadata directory ") {
			t.Fatalf("format node %d printed %q", id, out)
		}
	}
	return q
}

// newNodes builds the binary and names size controllers on free
// loopback ports, with their properties and log files under one
// directory; it writes nothing else. The processes still running when
// the test ends are killed.
func newNodes(t *testing.T, size int) *quorum {
	dir := t.TempDir()
	q := &quorum{t: t, dir: dir, nodes: map[int]*node{}}
	q.bin = buildBinary(t, dir)
	var lns []net.Listener
	for id := 1; id <= size; id++ {
		ln := sharedtest.ListenFixed(t)
		lns = append(lns, ln)
		q.nodes[id] = &node{id: id, addr: ln.Addr().String(),
			props: filepath.Join(dir, fmt.Sprintf("node-%d.properties", id)),
			log:   filepath.Join(dir, fmt.Sprintf("node-%d.log", id))}
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	t.Cleanup(func() {
		for _, n := range q.nodes {
			if n.cmd != nil {
				_ = n.cmd.Process.Kill()
				<-n.exit
			}
		}
		if t.Failed() {
			t.Logf("files under %s", dir)
			for id := 1; id <= len(q.nodes); id++ {
				b, _ := os.ReadFile(q.nodes[id].log)
				t.Logf("node %d log:\n%s", id, tail(string(b), 60))
			}
		}
	})
	return q
}

// writeProps writes the server.properties of node id, with quorum as its
// controller.quorum.voters or controller.quorum.bootstrap.servers line.
func (q *quorum) writeProps(id int, quorum string) {
	q.t.Helper()
	n := q.nodes[id]
	props := strings.Join([]string{
		"process.roles=controller",
		"node.id=" + strconv.Itoa(id),
		"controller.listener.names=CONTROLLER",
		"listeners=CONTROLLER://" + n.addr,
		quorum,
		"metadata.log.dir=" + filepath.Join(q.dir, fmt.Sprintf("node-%d", id)),
	}, "\n") + "\n"
	if err := os.WriteFile(n.props, []byte(props), 0o644); err != nil {
		q.t.Fatal(err)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// start runs krabka server-start for node id, appending its output to its
// log file.
func (q *quorum) start(id int) {
	q.t.Helper()
	n := q.nodes[id]
	f, err := os.OpenFile(n.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		q.t.Fatal(err)
	}
	fmt.Fprintf(f, "---- krabka server-start %s\n", n.props)
	n.cmd = exec.Command(q.bin, "server-start", n.props)
	n.cmd.Stdout, n.cmd.Stderr = f, f
	if err := n.cmd.Start(); err != nil {
		_ = f.Close()
		q.t.Fatal(err)
	}
	n.exit = make(chan error, 1)
	go func() {
		n.exit <- n.cmd.Wait()
		_ = f.Close()
	}()
}

// stop sends sig to node id and waits for the process to exit.
func (q *quorum) stop(id int, sig os.Signal) error {
	q.t.Helper()
	n := q.nodes[id]
	if err := n.cmd.Process.Signal(sig); err != nil {
		q.t.Fatal(err)
	}
	select {
	case err := <-n.exit:
		n.cmd = nil
		return err
	case <-time.After(40 * time.Second):
		q.t.Fatalf("node %d did not exit after %v", id, sig)
		return nil
	}
}

// bootstrap returns every node's address, comma-separated.
func (q *quorum) bootstrap() string {
	var addrs []string
	for id := 1; id <= len(q.nodes); id++ {
		addrs = append(addrs, q.nodes[id].addr)
	}
	return strings.Join(addrs, ",")
}

// next is the node after id, 1 after the last.
func (q *quorum) next(id int) int { return id%len(q.nodes) + 1 }

// votersLine is the controller.quorum.voters line listing nodes ids.
func (q *quorum) votersLine(ids ...int) string {
	var voters []string
	for _, id := range ids {
		voters = append(voters, fmt.Sprintf("%d@%s", id, q.nodes[id].addr))
	}
	return "controller.quorum.voters=" + strings.Join(voters, ",")
}

var statusLeader = regexp.MustCompile(`(?m)^LeaderId: +(\d+)\nLeaderEpoch: +(\d+)\nHighWatermark: +(-?\d+)$`)

// leader runs krabka metadata-quorum describe --status until it names a
// leader other than not, and returns it and its epoch.
func (q *quorum) leader(not int) (id int, epoch int) {
	q.t.Helper()
	var last string
	waitFor(q.t, 30*time.Second, "a leader", func() bool {
		out, err := q.krabka("metadata-quorum", "--bootstrap-controller", q.bootstrap(), "--timeout", "5s", "describe", "--status")
		if err != nil {
			last = err.Error()
			return false
		}
		last = out
		m := statusLeader.FindStringSubmatch(out)
		if m == nil {
			q.t.Fatalf("describe --status printed:\n%s", out)
		}
		id, _ = strconv.Atoi(m[1])
		epoch, _ = strconv.Atoi(m[2])
		return id != not
	}, func() string { return last })
	return id, epoch
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v: %s", what, timeout, detail())
		}
		<-tick.C
	}
}

// call sends one request to addr on a new connection and returns the
// answer, within 10 seconds.
func call(addr string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return wiretest.Call(ctx, addr, req)
}

// topicRecord is a TopicRecord with an id derived from its name.
func topicRecord(t *testing.T, name string) []byte {
	t.Helper()
	r := metadata.NewTopicRecord()
	r.Name = name
	h := fnv.New128a()
	h.Write([]byte(name))
	copy(r.TopicId[:], h.Sum(nil))
	b, err := metadata.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// metadataVersionRecord sets metadata.version, which must come before
// any other metadata record of a new cluster.
func metadataVersionRecord(t *testing.T) []byte {
	t.Helper()
	r := metadata.NewFeatureLevelRecord()
	r.Name = metadata.FeatureMetadataVersion
	r.FeatureLevel = metadata.MaxMetadataVersion
	b, err := metadata.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// submit sends rec (a topic record for topic) through SubmitChange (1003)
// to node id, following NOT_LEADER_OR_FOLLOWER hints, until it is
// acknowledged or the deadline passes. It returns the epoch that
// committed it.
func (q *quorum) submit(id int, topic string, rec []byte) int32 {
	q.t.Helper()
	var last string
	var epoch int32
	waitFor(q.t, 20*time.Second, "acknowledgement of "+topic, func() bool {
		n := q.nodes[id]
		req := wire.NewSubmitChangeRequest()
		req.Records = [][]byte{rec}
		resp, err := call(n.addr, req)
		if err != nil {
			last = fmt.Sprintf("node %d: %v", id, err)
			id = q.next(id) // a node that is down: try the next one
			return false
		}
		r := resp.(*wire.SubmitChangeResponse)
		switch {
		case r.ErrorCode == 0:
			epoch = r.Epoch
			return true
		case r.ErrorCode == kerr.NotLeaderForPartition.Code && r.LeaderID > 0:
			id = int(r.LeaderID)
		case !wire.Retriable(r.ErrorCode):
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			q.t.Fatalf("SubmitChange of %s to node %d: %v: %s", topic, id, wire.ErrorForCode(r.ErrorCode), msg)
		}
		last = fmt.Sprintf("node %d: %v", n.id, wire.ErrorForCode(r.ErrorCode))
		return false
	}, func() string { return last })
	return epoch
}

// committedTopics reads every committed record of node id through
// MetadataFetch (1004) and returns the topics created.
func (q *quorum) committedTopics(id int) ([]string, error) {
	var topics []string
	var offset int64
	for {
		req := wire.NewMetadataFetchRequest()
		req.FetchOffset, req.MaxBytes, req.ReplicaID = offset, 1<<20, -1
		resp, err := call(q.nodes[id].addr, req)
		if err != nil {
			return nil, err
		}
		r := resp.(*wire.MetadataFetchResponse)
		if err := wire.ErrorForCode(r.ErrorCode); err != nil {
			return nil, err
		}
		if r.SnapshotID.EndOffset >= 0 {
			return nil, fmt.Errorf("node %d wants snapshot %+v loaded first", id, r.SnapshotID)
		}
		if len(r.Records) == 0 {
			sort.Strings(topics)
			return topics, nil
		}
		it := recordbatch.NewIterator(nil, r.Records)
		for it.Next() {
			b := it.Batch()
			offset = b.NextOffset()
			if b.IsControl() {
				continue
			}
			for _, rec := range b.Records {
				m, err := metadata.Decode(rec.Value)
				if err != nil {
					return nil, err
				}
				if tr, ok := m.(*metadata.TopicRecord); ok {
					topics = append(topics, tr.Name)
				}
			}
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
	}
}

// hasAll waits until node id has committed every topic of want.
func (q *quorum) hasAll(id int, want []string) {
	q.t.Helper()
	var got []string
	var err error
	waitFor(q.t, 20*time.Second, fmt.Sprintf("catch-up of node %d", id), func() bool {
		got, err = q.committedTopics(id)
		if err != nil {
			return false
		}
		// A retried submission may have been committed twice; the set of
		// topics must be exactly the acknowledged ones.
		have := map[string]bool{}
		for _, g := range got {
			have[g] = true
		}
		for _, w := range want {
			if !have[w] {
				return false
			}
		}
		return len(have) == len(want)
	}, func() string { return fmt.Sprintf("committed %v, err %v; want %v", got, err, want) })
}

func TestLeaderCrashAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q := newQuorum(t)
	for id := 1; id <= 3; id++ {
		q.start(id)
	}
	first, epoch := q.leader(-1)
	t.Logf("leader %d in epoch %d", first, epoch)

	var acked []string
	submitAll := func(prefix string, via int) {
		for i := range 5 {
			name := fmt.Sprintf("%s-%d", prefix, i)
			q.submit(via, name, topicRecord(t, name))
			acked = append(acked, name)
		}
	}
	q.submit(first, "metadata.version", metadataVersionRecord(t))
	// Followers send the submitter to the leader.
	submitAll("before", first%3+1)

	if err := q.stop(first, syscall.SIGKILL); err == nil {
		t.Fatalf("node %d exited cleanly after SIGKILL", first)
	}
	second, epoch2 := q.leader(first)
	if epoch2 <= epoch {
		t.Errorf("new leader %d in epoch %d, not after epoch %d", second, epoch2, epoch)
	}
	t.Logf("leader %d in epoch %d after the crash of %d", second, epoch2, first)
	submitAll("during", second)

	q.start(first)
	sort.Strings(acked)
	q.hasAll(first, acked)
	submitAll("after", first)
	sort.Strings(acked)
	for id := 1; id <= 3; id++ {
		q.hasAll(id, acked)
	}
	for id := 1; id <= 3; id++ {
		if err := q.stop(id, syscall.SIGTERM); err != nil {
			t.Errorf("node %d exited with %v after SIGTERM", id, err)
		}
	}
}
