package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testCluster is a quorum of real controllers on loopback TCP, each with
// its own directory.
type testCluster struct {
	t     testing.TB
	cfgs  []Config
	nodes []*Controller // nil while a node is stopped
	// cancels ends each node's Start context: a crash.
	cancels []context.CancelFunc
}

// newTestCluster binds n loopback ports, then starts n voters that name
// each other's ports.
func newTestCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	return newTestClusterWith(t, n, "", nil)
}

// newFormattedCluster is newTestCluster with every directory formatted
// for cluster clusterID.
func newFormattedCluster(t testing.TB, n int, clusterID string) *testCluster {
	t.Helper()
	return newTestClusterWith(t, n, clusterID, nil)
}

// newTestClusterWith is newTestCluster with every directory formatted for
// cluster clusterID ("" leaves them unformatted) and every Config passed
// through adjust (if not nil) before the nodes start.
func newTestClusterWith(t testing.TB, n int, clusterID string, adjust func(*Config)) *testCluster {
	t.Helper()
	return newTestClusterDial(t, n, clusterID, adjust, nil)
}

// newTestClusterDial is newTestClusterWith where node id dials its peers
// with dialFor(id) when dialFor is not nil (a network the test controls).
func newTestClusterDial(t testing.TB, n int, clusterID string, adjust func(*Config), dialFor func(NodeID) dialFunc) *testCluster {
	t.Helper()
	return newTestClusterOpts(t, n, clusterID, adjust, func(id NodeID, o *startOptions) {
		if dialFor != nil {
			o.dial = dialFor(id)
		}
	})
}

// newTestClusterOpts is newTestClusterWith where tune (if not nil) sets
// node id's start options (its listener is set already).
func newTestClusterOpts(t testing.TB, n int, clusterID string, adjust func(*Config), tune func(NodeID, *startOptions)) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	var lns []net.Listener
	var voters []QuorumVoter
	for i := range n {
		ln := sharedtest.ListenFixed(t)
		lns = append(lns, ln)
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		voters = append(voters, QuorumVoter{ID: NodeID(i + 1), Host: "127.0.0.1", Port: port})
	}
	for i := range n {
		cfg := ForTests(NodeID(i+1), t.TempDir())
		cfg.Listeners[0].Port = voters[i].Port
		cfg.QuorumVoters = voters
		if adjust != nil {
			adjust(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		if clusterID != "" {
			mp := logstore.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: kraft.NodeID(i + 1), DirectoryID: kraft.UUID{0xd1, byte(i + 1)}}
			if err := logstore.WriteMetaProperties(vfs.OS(), cfg.MetadataLogDir, mp, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.nodes = make([]*Controller, n)
	c.cancels = make([]context.CancelFunc, n)
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(NodeID(i + 1))
		}
	})
	for i := range n {
		ctx, cancel := context.WithCancel(t.Context())
		c.cancels[i] = cancel
		opts := startOptions{listener: lns[i]}
		if tune != nil {
			tune(NodeID(i+1), &opts)
		}
		node, err := start(ctx, c.cfgs[i], opts)
		if err != nil {
			for _, ln := range lns[i+1:] {
				_ = ln.Close()
			}
			t.Fatalf("start node %d: %v", i+1, err)
		}
		c.nodes[i] = node
	}
	return c
}

func (c *testCluster) node(id NodeID) *Controller { return c.nodes[id-1] }

// stop shuts node id down gracefully.
func (c *testCluster) stop(id NodeID) {
	c.t.Helper()
	n := c.nodes[id-1]
	if n == nil {
		return
	}
	c.nodes[id-1] = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		c.t.Errorf("shutdown node %d: %v", id, err)
	}
}

// crash stops node id without resigning: its context ends, so every
// goroutine stops where it is; what was fsynced stays.
func (c *testCluster) crash(id NodeID) {
	c.t.Helper()
	n := c.nodes[id-1]
	c.cancels[id-1]()
	<-n.Done()
	c.stop(id)
}

// restart starts node id again on its directory and port.
func (c *testCluster) restart(id NodeID) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.t.Context())
	c.cancels[id-1] = cancel
	node, err := Start(ctx, c.cfgs[id-1])
	if err != nil {
		c.t.Fatalf("restart node %d: %v", id, err)
	}
	c.nodes[id-1] = node
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// leader waits until every running node agrees on one leader in one
// epoch, and returns it.
func (c *testCluster) leader() NodeID {
	c.t.Helper()
	var leader NodeID
	waitFor(c.t, "an agreed leader", func() bool {
		leader = -1
		var epoch int32 = -1
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			st := n.QuorumState()
			if st.LeaderID < 0 || (leader >= 0 && (st.LeaderID != leader || st.Epoch != epoch)) {
				return false
			}
			leader, epoch = st.LeaderID, st.Epoch
		}
		return leader > 0 && c.node(leader) != nil && c.node(leader).QuorumState().Role == RoleLeader
	})
	return leader
}

// follower returns a running node other than the leader.
func (c *testCluster) follower(leader NodeID) NodeID {
	for i, n := range c.nodes {
		if n != nil && NodeID(i+1) != leader {
			return NodeID(i + 1)
		}
	}
	c.t.Fatal("no follower running")
	return -1
}

// waitApplied waits until every running node has applied everything up
// to offset (exclusive).
func (c *testCluster) waitApplied(offset int64) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("every node to apply up to %d", offset), func() bool {
		for _, n := range c.nodes {
			if n != nil && n.QuorumState().AppliedOffset < offset {
				return false
			}
		}
		return true
	})
}

func metadataVersionRecord() metadata.Record {
	r := metadata.NewFeatureLevelRecord()
	r.Name = metadata.FeatureMetadataVersion
	r.FeatureLevel = metadata.MaxMetadataVersion
	return r
}

func topicRecord(name string) metadata.Record {
	r := metadata.NewTopicRecord()
	r.Name = name
	h := fnv.New128a()
	h.Write([]byte(name))
	copy(r.TopicId[:], h.Sum(nil))
	return r
}

func submit(t testing.TB, c *Controller, recs ...metadata.Record) SubmitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := c.SubmitChange(ctx, recs)
	if err != nil {
		t.Fatalf("SubmitChange: %v", err)
	}
	return res
}

// submitRetrying submits through any running node, retrying while the
// quorum has no leader.
func (c *testCluster) submitRetrying(recs ...metadata.Record) SubmitResult {
	c.t.Helper()
	var res SubmitResult
	waitFor(c.t, "a committed submission", func() bool {
		ctx, cancel := context.WithTimeout(c.t.Context(), 5*time.Second)
		defer cancel()
		var err error
		res, err = c.node(c.leader()).SubmitChange(ctx, recs)
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrNotLeader), errors.Is(err, ErrLeaderUnknown), errors.Is(err, ErrShuttingDown):
			return false
		}
		c.t.Fatalf("SubmitChange: %v", err)
		return false
	})
	return res
}

// TestClusterCommitsAndForwards: three voters over TCP elect a leader;
// SubmitChange on the leader commits and reports its offsets and epoch;
// SubmitChange on a follower is forwarded and commits; every node applies
// every record.
func TestClusterCommitsAndForwards(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	epoch := c.node(leader).QuorumState().Epoch

	res := submit(t, c.node(leader), metadataVersionRecord())
	if res.Epoch != epoch || res.Offset < 1 || res.LastOffset != res.Offset {
		t.Errorf("SubmitChange on the leader = %+v, want one record after the LeaderChange in epoch %d", res, epoch)
	}
	if st := c.node(leader).QuorumState(); st.HighWatermark <= res.Offset || st.AppliedOffset <= res.Offset {
		t.Errorf("after SubmitChange the leader has HW %d, applied %d; want both past %d", st.HighWatermark, st.AppliedOffset, res.Offset)
	}

	f := c.follower(leader)
	fres := submit(t, c.node(f), topicRecord("orders"), topicRecord("payments"))
	if fres.Offset <= res.LastOffset || fres.LastOffset != fres.Offset+1 || fres.Epoch != epoch {
		t.Errorf("forwarded SubmitChange = %+v, want two records after %d in epoch %d", fres, res.LastOffset, epoch)
	}
	// The forwarding node answers once its own image holds the change.
	if _, ok := c.node(f).CurrentImage().Topics().ByName("payments"); !ok {
		t.Errorf("forwarding node %d: image lacks the topic its SubmitChange created", f)
	}
	c.waitApplied(fres.LastOffset + 1)
	for i, n := range c.nodes {
		img := n.CurrentImage()
		if _, ok := img.Topics().ByName("payments"); !ok {
			t.Errorf("node %d: image has no topic payments", i+1)
		}
		if got := img.Features().MetadataVersion(); got != metadata.MaxMetadataVersion {
			t.Errorf("node %d: metadata.version %d, want %d", i+1, got, metadata.MaxMetadataVersion)
		}
	}

	// A record the image rejects fails the submission, on the leader and
	// through a follower, and nothing is appended for it.
	before := c.node(leader).QuorumState().LogEndOffset
	for _, id := range []NodeID{leader, f} {
		_, err := c.node(id).SubmitChange(t.Context(), []metadata.Record{topicRecord("orders")})
		if !errors.Is(err, ErrInvalidChange) {
			t.Errorf("node %d: duplicate topic: err = %v, want ErrInvalidChange", id, err)
		}
	}
	if after := c.node(leader).QuorumState().LogEndOffset; after != before {
		t.Errorf("rejected submissions moved the log end from %d to %d", before, after)
	}

	d, err := c.node(leader).DescribeQuorum(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d.LeaderID != leader || len(d.Voters) != 3 || d.HighWatermark <= fres.LastOffset {
		t.Errorf("DescribeQuorum = %+v, want leader %d, 3 voters, HW past %d", d, leader, fres.LastOffset)
	}
	if _, err := c.node(f).DescribeQuorum(t.Context()); !errors.Is(err, ErrNotLeader) {
		t.Errorf("DescribeQuorum on a follower: err = %v, want ErrNotLeader", err)
	}
}

// TestClusterGroupCommit: concurrent submissions all commit, each with its
// own offsets.
func TestClusterGroupCommit(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	const n = 50
	results := make(chan SubmitResult, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			res, err := c.node(leader).SubmitChange(t.Context(), []metadata.Record{topicRecord("t" + strconv.Itoa(i))})
			if err != nil {
				errs <- err
				return
			}
			results <- res
		}()
	}
	seen := map[int64]bool{}
	for range n {
		select {
		case err := <-errs:
			t.Fatalf("SubmitChange: %v", err)
		case res := <-results:
			if seen[res.Offset] {
				t.Errorf("offset %d reported twice", res.Offset)
			}
			seen[res.Offset] = true
		}
	}
	if got := c.node(leader).CurrentImage().Topics().Len(); got != n {
		t.Errorf("leader image holds %d topics, want %d", got, n)
	}
}

// TestClusterFailoverAndRestart: the leader's graceful shutdown leads to a
// new leader that commits; the old leader, restarted, catches up; every
// log holds the same bytes up to the common high watermark.
func TestClusterFailoverAndRestart(t *testing.T) {
	c := newTestCluster(t, 3)
	first := c.leader()
	submit(t, c.node(first), metadataVersionRecord(), topicRecord("before"))

	c.stop(first)
	second := c.leader()
	if second == first {
		t.Fatalf("leader %d still leads after its shutdown", first)
	}
	res := c.submitRetrying(topicRecord("during"))
	if res.Epoch <= 0 {
		t.Errorf("commit after failover = %+v", res)
	}

	c.restart(first)
	c.leader()
	after := c.submitRetrying(topicRecord("after"))
	c.waitApplied(after.LastOffset + 1)
	img := c.node(first).CurrentImage()
	for _, name := range []string{"before", "during", "after"} {
		if _, ok := img.Topics().ByName(name); !ok {
			t.Errorf("restarted node %d: image has no topic %q", first, name)
		}
	}

	var hws []int64
	for i := range c.nodes {
		hws = append(hws, c.node(NodeID(i+1)).QuorumState().HighWatermark)
	}
	for i := range c.nodes {
		c.stop(NodeID(i + 1))
	}
	common := min(hws[0], hws[1], hws[2])
	if common <= after.LastOffset {
		t.Fatalf("common high watermark %d does not cover offset %d", common, after.LastOffset)
	}
	var want []byte
	for i, cfg := range c.cfgs {
		got := readCommitted(t, cfg, common)
		if i == 0 {
			want = got
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("node %d: committed log bytes differ from node 1's", i+1)
		}
	}
}

// readCommitted returns the bytes of the whole batches below hw in the
// node's log, read with the log store.
func readCommitted(t testing.TB, cfg Config, hw int64) []byte {
	t.Helper()
	return readCommittedFrom(t, cfg, 0, hw)
}

// readCommittedFrom is readCommitted from the batch holding offset from.
func readCommittedFrom(t testing.TB, cfg Config, from, hw int64) []byte {
	t.Helper()
	log, _, err := logstore.Open(vfs.OS(), cfg.MetadataLogDir+"/"+PartitionDirName, logstore.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	var out []byte
	for off := from; off < hw; {
		rr, err := log.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		b := rr.Batches
		for len(b) > 0 && off < hw {
			h, err := recordbatch.PeekHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.NextOffset() > hw {
				t.Fatalf("batch [%d, %d) straddles the high watermark %d", h.BaseOffset, h.NextOffset(), hw)
			}
			out = append(out, b[:h.Size()]...)
			b, off = b[h.Size():], h.NextOffset()
		}
	}
	return out
}

// TestClusterLeaderCrash: after the leader crashes (no resignation) the
// others elect a leader once their fetch timeout passes, and commit; the
// crashed node restarts, follows and catches up, and every log holds the
// same committed bytes.
func TestClusterLeaderCrash(t *testing.T) {
	c := newTestCluster(t, 3)
	first := c.leader()
	submit(t, c.node(first), metadataVersionRecord(), topicRecord("before"))
	oldEpoch := c.node(first).QuorumState().Epoch

	c.crash(first)
	second := c.leader()
	if second == first || c.node(second).QuorumState().Epoch <= oldEpoch {
		t.Fatalf("after the crash of %d: leader %d in epoch %d", first, second, c.node(second).QuorumState().Epoch)
	}
	c.submitRetrying(topicRecord("during"))

	c.restart(first)
	c.leader()
	after := c.submitRetrying(topicRecord("after"))
	c.waitApplied(after.LastOffset + 1)
	for _, name := range []string{"before", "during", "after"} {
		if _, ok := c.node(first).CurrentImage().Topics().ByName(name); !ok {
			t.Errorf("restarted node %d: image has no topic %q", first, name)
		}
	}
	var hws []int64
	for _, n := range c.nodes {
		hws = append(hws, n.QuorumState().HighWatermark)
	}
	for i := range c.nodes {
		c.stop(NodeID(i + 1))
	}
	common := min(hws[0], hws[1], hws[2])
	want := readCommitted(t, c.cfgs[0], common)
	for i, cfg := range c.cfgs[1:] {
		if got := readCommitted(t, cfg, common); !bytes.Equal(got, want) {
			t.Errorf("node %d: committed log bytes differ from node 1's", i+2)
		}
	}
}

// TestClusterIdleNoOps: with metadata.max.idle.interval.ms set, an idle
// leader appends NoOpRecords (KIP-835), so the high watermark moves on
// every node without submissions, and the image ignores them.
func TestClusterIdleNoOps(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) { cfg.MaxIdleInterval = 20 * time.Millisecond })
	leader := c.leader()
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 5)
	if got := c.node(leader).CurrentImage().Topics().Len(); got != 0 {
		t.Errorf("image holds %d topics after NoOps, want 0", got)
	}
}

// TestFiveNodesToleratesTwoDown: a 5-voter quorum commits with two voters
// stopped, and the stopped voters catch up on their return.
func TestFiveNodesToleratesTwoDown(t *testing.T) {
	c := newTestCluster(t, 5)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	var down []NodeID
	for id := NodeID(1); id <= 5 && len(down) < 2; id++ {
		if id != leader {
			c.stop(id)
			down = append(down, id)
		}
	}
	res := c.submitRetrying(topicRecord("three-of-five"))
	for _, id := range down {
		c.restart(id)
	}
	c.waitApplied(res.LastOffset + 1)
	for _, id := range down {
		if _, ok := c.node(id).CurrentImage().Topics().ByName("three-of-five"); !ok {
			t.Errorf("node %d did not catch up", id)
		}
	}
}
