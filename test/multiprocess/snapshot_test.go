package multiprocess

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// partitionDir is the metadata partition directory of node id.
func (q *quorum) partitionDir(id int) string {
	return filepath.Join(q.dir, fmt.Sprintf("node-%d", id), "__cluster_metadata-0")
}

// firstSegmentBase returns the base offset of the oldest log segment in
// dir, or -1 if there is none.
func firstSegmentBase(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	for _, e := range entries { // sorted: the oldest segment first
		if base, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			if b, err := strconv.ParseInt(base, 10, 64); err == nil {
				return b
			}
		}
	}
	return -1
}

// newestSnapshot returns the newest snapshot (not the bootstrap one) in
// dir.
func newestSnapshot(dir string) (kraft.OffsetAndEpoch, bool) {
	l, err := snapshot.List(vfs.OS(), dir)
	if err != nil {
		return kraft.OffsetAndEpoch{}, false
	}
	for i := len(l.Snapshots) - 1; i >= 0; i-- {
		if id := l.Snapshots[i].ID; id != snapshot.Bootstrap {
			return id, true
		}
	}
	return kraft.OffsetAndEpoch{}, false
}

// loader submits topics load-N to the quorum until stopped, following
// leader hints and retrying through the other nodes, and records the
// topics acknowledged.
type loader struct {
	q     *quorum
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	acked []string
	via   int
}

func (q *quorum) startLoader(via int) *loader {
	l := &loader{q: q, stop: make(chan struct{}), done: make(chan struct{}), via: via}
	go l.run()
	return l
}

func (l *loader) run() {
	defer close(l.done)
	for i := 0; ; {
		select {
		case <-l.stop:
			return
		default:
		}
		name := "load-" + strconv.Itoa(i)
		if l.submitOnce(name) {
			l.mu.Lock()
			l.acked = append(l.acked, name)
			l.mu.Unlock()
			i++
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// submitOnce sends one SubmitChange of topic name; a failed one is sent
// again under the same name, and one the image refuses (the topic exists:
// an earlier try committed) counts as acknowledged.
func (l *loader) submitOnce(name string) bool {
	n := l.q.nodes[l.via]
	rec := metadata.NewTopicRecord()
	rec.Name = name
	copy(rec.TopicId[:], name) // unique per name: load-N fits in 16 bytes
	value, err := metadata.Encode(rec)
	if err != nil {
		return false
	}
	req := wire.NewSubmitChangeRequest()
	req.Records = [][]byte{value}
	resp, err := call(n.addr, req)
	if err != nil {
		l.via = l.q.next(l.via)
		return false
	}
	r := resp.(*wire.SubmitChangeResponse)
	switch {
	case r.ErrorCode == 0:
		return true
	case r.ErrorCode == kerr.InvalidRequest.Code:
		// The topic exists: an earlier try committed and its answer
		// was lost (its node stopped). Sending it again would be
		// refused forever.
		return true
	case r.ErrorCode == kerr.NotLeaderForPartition.Code && r.LeaderID > 0:
		l.via = int(r.LeaderID)
	default:
		l.via = l.q.next(l.via)
	}
	return false
}

// halt stops the loader and returns the topics acknowledged.
func (l *loader) halt() []string {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

func (l *loader) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// replicationLag returns node id's lag in the leader's replication table
// (krabka metadata-quorum describe --replication), or -1.
func (q *quorum) replicationLag(id int) int64 {
	out, err := q.krabka("metadata-quorum", "--bootstrap-controller", q.bootstrap(), "--timeout", "5s", "describe", "--replication")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && f[0] == strconv.Itoa(id) {
			lag, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				return -1
			}
			return lag
		}
	}
	return -1
}

// storedTopics reads a stopped node's partition directory: the topics
// of its newest snapshot plus those of the log after it.
func storedTopics(t *testing.T, dir string) map[string]bool {
	t.Helper()
	topics := map[string]bool{}
	add := func(value []byte) {
		rec, err := metadata.Decode(value)
		if err != nil {
			t.Fatalf("%s: decode record: %v", dir, err)
		}
		if tr, ok := rec.(*metadata.TopicRecord); ok {
			topics[tr.Name] = true
		}
	}
	from := int64(0)
	if id, ok := newestSnapshot(dir); ok {
		r, err := snapshot.Open(vfs.OS(), filepath.Join(dir, snapshot.FileName(id)), snapshot.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: open snapshot %s: %v", dir, id, err)
		}
		for r.Next() {
			for _, rec := range r.Batch().Records {
				add(rec.Value)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: read snapshot %s: %v", dir, id, err)
		}
		_ = r.Close()
		from = int64(id.Offset)
	}
	l, _, err := logstore.Open(vfs.OS(), dir, logstore.DefaultOptions())
	if err != nil {
		t.Fatalf("%s: open log: %v", dir, err)
	}
	defer func() { _ = l.Close() }()
	for off := max(from, l.LogStartOffset()); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("%s: read log at %d: %v", dir, off, err)
		}
		it := recordbatch.NewIterator(nil, res.Batches)
		for it.Next() {
			b := it.Batch()
			off = b.NextOffset()
			if b.IsControl() {
				continue
			}
			for _, rec := range b.Records {
				add(rec.Value)
			}
		}
		if err := it.Err(); err != nil {
			t.Fatalf("%s: log batches at %d: %v", dir, off, err)
		}
	}
	return topics
}

// TestWipedFollowerRejoinsThroughSnapshot (KIP-630): under a loaded
// three-process quorum with small snapshot triggers and retention, so
// that the leader's log no longer starts at 0, a follower is killed, its
// metadata directory wiped and formatted again with krabka storage format
// (as an operator replaces a disk), and restarted while submissions go
// on. It can only catch up through FetchSnapshot: it installs a snapshot,
// its log starts at that snapshot, it reaches the leader's log end, and
// at the end every acknowledged submission is in every node's snapshot or
// log.
func TestWipedFollowerRejoinsThroughSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q := newQuorum(t)
	for id := 1; id <= 3; id++ {
		f, err := os.OpenFile(q.nodes[id].props, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(strings.Join([]string{
			"metadata.log.max.record.bytes.between.snapshots=2048",
			"metadata.max.retention.bytes=1",
			"internal.metadata.log.segment.bytes=8192",
			"controller.quorum.fetch.snapshot.max.bytes=4096",
		}, "\n") + "\n")
		if err2 := f.Close(); err == nil {
			err = err2
		}
		if err != nil {
			t.Fatal(err)
		}
		q.start(id)
	}
	lead, _ := q.leader(-1)
	q.submit(lead, "metadata.version", metadataVersionRecord(t))
	load := q.startLoader(lead)
	stopped := false
	defer func() {
		if !stopped {
			load.halt()
		}
	}()
	waitFor(t, 60*time.Second, "the leader to trim its log", func() bool {
		return firstSegmentBase(q.partitionDir(lead)) > 0
	}, func() string {
		return fmt.Sprintf("first segment at %d after %d submissions", firstSegmentBase(q.partitionDir(lead)), load.count())
	})

	wiped := lead%3 + 1
	if err := q.stop(wiped, syscall.SIGKILL); err == nil {
		t.Fatalf("node %d exited cleanly on SIGKILL", wiped)
	}
	props, err := os.ReadFile(filepath.Join(q.dir, fmt.Sprintf("node-%d", wiped), "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	var clusterID string
	for _, line := range strings.Split(string(props), "\n") {
		if v, ok := strings.CutPrefix(line, "cluster.id="); ok {
			clusterID = strings.TrimSpace(v)
		}
	}
	if err := os.RemoveAll(filepath.Join(q.dir, fmt.Sprintf("node-%d", wiped))); err != nil {
		t.Fatal(err)
	}
	q.mustKrabka("storage", "format", "-t", clusterID, "-c", q.nodes[wiped].props)
	// The quorum goes on without it; then it comes back while the load
	// continues.
	before := load.count()
	waitFor(t, 60*time.Second, "submissions while the follower is down", func() bool { return load.count() >= before+50 }, func() string {
		return fmt.Sprintf("%d acknowledged", load.count())
	})
	lead, _ = q.leader(-1)
	leaderStart := firstSegmentBase(q.partitionDir(lead))
	if leaderStart <= 0 {
		t.Fatalf("the leader's log starts at %d: the wiped node could fetch it from 0", leaderStart)
	}
	q.start(wiped)
	dir := q.partitionDir(wiped)
	var installed kraft.OffsetAndEpoch
	waitFor(t, 60*time.Second, "the wiped node to install a snapshot", func() bool {
		id, ok := newestSnapshot(dir)
		installed = id
		return ok && firstSegmentBase(dir) > 0
	}, func() string {
		return fmt.Sprintf("snapshot %v, first segment %d", installed, firstSegmentBase(dir))
	})
	before = load.count()
	waitFor(t, 60*time.Second, "submissions after the rejoin", func() bool { return load.count() >= before+50 }, func() string {
		return fmt.Sprintf("%d acknowledged", load.count())
	})
	acked := load.halt()
	stopped = true

	// Everything acknowledged reaches the rejoined node too.
	last := "after-rejoin"
	q.submit(lead, last, topicRecord(t, last))
	acked = append(acked, last)
	waitFor(t, 60*time.Second, "the wiped node to catch up", func() bool { return q.replicationLag(wiped) == 0 }, func() string {
		return fmt.Sprintf("lag %d", q.replicationLag(wiped))
	})
	b, err := os.ReadFile(q.nodes[wiped].log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "snapshot downloaded") {
		t.Error("the wiped node's log does not say it downloaded a snapshot")
	}
	for id := 1; id <= 3; id++ {
		if err := q.stop(id, syscall.SIGTERM); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
	}
	for id := 1; id <= 3; id++ {
		have := storedTopics(t, q.partitionDir(id))
		missing := 0
		for _, name := range acked {
			if !have[name] {
				if missing < 5 {
					t.Errorf("node %d lacks acknowledged topic %s", id, name)
				}
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("node %d lacks %d of %d acknowledged topics", id, missing, len(acked))
		}
	}
	t.Logf("%d acknowledged submissions; node %d rejoined through snapshot %s; the leader's log started at %d", len(acked), wiped, installed, leaderStart)
}
