package raft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// dialFunc is how a node dials its peers (startOptions.dial).
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// partitionNet is a loopback network the test can cut: isolating a node
// closes every connection to or from it and refuses new ones until heal.
// Node ids are found by listener address.
type partitionNet struct {
	mu       sync.Mutex
	ids      map[string]NodeID
	isolated NodeID // 0: none
	conns    []netConn
}

type netConn struct {
	from, to NodeID
	conn     net.Conn
}

func (p *partitionNet) cut(a, b NodeID) bool {
	return p.isolated != 0 && (a == p.isolated) != (b == p.isolated)
}

// dialer returns node from's dial function.
func (p *partitionNet) dialer(from NodeID) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		p.mu.Lock()
		to, cut := p.ids[addr], p.cut(from, p.ids[addr])
		p.mu.Unlock()
		if cut {
			return nil, fmt.Errorf("partitioned: %d cannot reach %d", from, to)
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.cut(from, to) {
			_ = conn.Close()
			return nil, fmt.Errorf("partitioned: %d cannot reach %d", from, to)
		}
		p.conns = append(p.conns, netConn{from, to, conn})
		return conn, nil
	}
}

// isolate cuts node id off from the others.
func (p *partitionNet) isolate(id NodeID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isolated = id
	keep := p.conns[:0]
	for _, c := range p.conns {
		if p.cut(c.from, c.to) {
			_ = c.conn.Close()
			continue
		}
		keep = append(keep, c)
	}
	p.conns = keep
}

// heal removes the partition.
func (p *partitionNet) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isolated = 0
}

// newPartitionableCluster starts three voters on a partitionNet, with
// node 1 made the leader: it campaigns long before the others, and its
// fetch timeout (which sets its check-quorum timeout) is so long that,
// once cut off, it keeps believing it leads while nodes 2 and 3 elect a
// successor within a second.
func newPartitionableCluster(t *testing.T) (*testCluster, *partitionNet) {
	t.Helper()
	p := &partitionNet{ids: map[string]NodeID{}}
	c := newTestClusterDial(t, 3, "", func(cfg *Config) {
		for _, v := range cfg.QuorumVoters {
			p.ids[net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port)))] = v.ID
		}
		if cfg.NodeID == 1 {
			cfg.ElectionTimeout = 10 * time.Millisecond
			cfg.FetchTimeout = time.Minute
		} else {
			cfg.ElectionTimeout = time.Second
		}
	}, p.dialer)
	if l := c.leader(); l != 1 {
		t.Fatalf("node %d leads, want node 1 (it campaigns first)", l)
	}
	return c, p
}

// successor waits until a node other than old leads an epoch after
// epoch, and returns it.
func (c *testCluster) successor(old NodeID, epoch int32) NodeID {
	c.t.Helper()
	var leader NodeID
	waitFor(c.t, "a new leader", func() bool {
		for i, n := range c.nodes {
			if st := n.QuorumState(); NodeID(i+1) != old && st.Role == RoleLeader && st.Epoch > epoch {
				leader = NodeID(i + 1)
				return true
			}
		}
		return false
	})
	return leader
}

func readImage(t *testing.T, c *Controller) *metadata.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	img, err := c.ReadImage(ctx)
	if err != nil {
		t.Fatalf("ReadImage: %v", err)
	}
	return img
}

// TestReadImageSeesEveryCompletedWrite: on a quorum of three voters and
// an observer, a ReadImage on any node returns an image holding the topic
// a SubmitChange created through any node before the read started. The
// followers and the observer get the offset from the leader and wait for
// their own image to apply it: their CurrentImage may still lack it when
// the read starts, their ReadImage never does.
func TestReadImageSeesEveryCompletedWrite(t *testing.T) {
	c, lns := newDynamicCluster(t, 4, []NodeID{1, 2, 3}, nil)
	for id := NodeID(1); id <= 4; id++ {
		c.startNode(id, lns)
	}
	leader := c.waitMembers([]NodeID{1, 2, 3}, []NodeID{4})
	submit(t, c.node(leader), metadataVersionRecord())
	n := 0
	for writer := NodeID(1); writer <= 4; writer++ {
		for reader := NodeID(1); reader <= 4; reader++ {
			n++
			name := fmt.Sprintf("t%d-%d", writer, reader)
			res := submit(t, c.node(writer), topicRecord(name))
			img := readImage(t, c.node(reader))
			if _, ok := img.Topics().ByName(name); !ok {
				t.Errorf("ReadImage on node %d after a submit through node %d: no topic %s", reader, writer, name)
			}
			if img.Offset() < res.LastOffset {
				t.Errorf("ReadImage on node %d: image offset %d below the submitted record at %d", reader, img.Offset(), res.LastOffset)
			}
		}
	}
	if got := readImage(t, c.node(4)).Topics().Len(); got != n {
		t.Errorf("observer's ReadImage holds %d topics, want %d", got, n)
	}
}

// TestReadImagePartitionedLeaderNeverStale: a leader cut off from the
// quorum, while it still believes it leads and a successor has committed
// a change, never answers a linearizable read with its stale image (K5):
// the read times out. CurrentImage on it is stale, as documented. Once
// the partition heals it follows the new leader and reads see the change.
func TestReadImagePartitionedLeaderNeverStale(t *testing.T) {
	c, p := newPartitionableCluster(t)
	submit(t, c.node(1), metadataVersionRecord(), topicRecord("before"))
	epoch := c.node(1).QuorumState().Epoch

	p.isolate(1)
	next := c.successor(1, epoch)
	res := submit(t, c.node(next), topicRecord("after"))
	if st := c.node(1).QuorumState(); st.Role != RoleLeader || st.Epoch != epoch {
		t.Fatalf("the cut-off node: %+v, want it still Leader of epoch %d", st, epoch)
	}
	if _, ok := c.node(1).CurrentImage().Topics().ByName("after"); ok {
		t.Fatal("the cut-off leader's image holds a change it cannot have replicated")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	img, err := c.node(1).ReadImage(ctx)
	if err == nil {
		_, ok := img.Topics().ByName("after")
		t.Fatalf("K5: the deposed leader answered a linearizable read (image offset %d, has the successor's change: %v) after node %d committed offset %d",
			img.Offset(), ok, next, res.LastOffset)
	}
	if !errors.Is(err, ErrReadTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ReadImage on the cut-off leader: %v, want ErrReadTimeout", err)
	}
	// Over the wire (a client still reaches the cut-off node) the read
	// times out after controller.quorum.request.timeout.ms.
	req := wire.NewReadImageRequest()
	req.Linearizable = true
	if r := roundTrip(t, c.node(1).Addr().String(), req).(*wire.ReadImageResponse); r.ErrorCode != kerr.RequestTimedOut.Code {
		t.Errorf("K5: linearizable ReadImage RPC on the cut-off leader = %+v, want REQUEST_TIMED_OUT", r)
	}

	p.heal()
	waitFor(t, "the old leader to follow", func() bool {
		st := c.node(1).QuorumState()
		return st.Role == RoleFollower && st.LeaderID == next
	})
	if _, ok := readImage(t, c.node(1)).Topics().ByName("after"); !ok {
		t.Error("after healing, ReadImage on node 1 lacks the successor's change")
	}
}

// TestReadImageLeaderLosesLeadershipWhileWaiting: a read pending on a
// leader that learns of a higher epoch fails with a NotLeaderError naming
// the new leader, and a read on a leader that resigns fails.
func TestReadImageLeaderLosesLeadershipWhileWaiting(t *testing.T) {
	c, p := newPartitionableCluster(t)
	submit(t, c.node(1), metadataVersionRecord())
	epoch := c.node(1).QuorumState().Epoch
	p.isolate(1)
	next := c.successor(1, epoch)
	errc := make(chan error, 1)
	go func() {
		_, err := c.node(1).ReadImage(t.Context())
		errc <- err
	}()
	// The read is registered on the cut-off leader; healing lets the new
	// leader's BeginQuorumEpoch through.
	waitFor(t, "the read to be registered", func() bool { return pendingReads(t, c.node(1)) > 0 })
	p.heal()
	select {
	case err := <-errc:
		var nl *NotLeaderError
		if !errors.As(err, &nl) || nl.LeaderID != next {
			t.Errorf("pending read after the leader was replaced: %v, want a NotLeaderError naming %d", err, next)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the pending read did not fail")
	}
}

// TestSubmitNeverAcknowledgedWithoutCommit: a leader cut off from both
// followers appends a submission but cannot commit it, so the submission
// is never acknowledged (K1; bug-zoo Z22 acknowledges at append).
func TestSubmitNeverAcknowledgedWithoutCommit(t *testing.T) {
	c, p := newPartitionableCluster(t)
	submit(t, c.node(1), metadataVersionRecord())
	p.isolate(1)
	before := c.node(1).QuorumState().LogEndOffset
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	res, err := c.node(1).SubmitChange(ctx, []metadata.Record{topicRecord("lonely")})
	if err == nil {
		t.Fatalf("K1: a submission was acknowledged without a majority: %+v (high watermark %d)", res, c.node(1).QuorumState().HighWatermark)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SubmitChange on the cut-off leader: %v, want the deadline", err)
	}
	if after := c.node(1).QuorumState().LogEndOffset; after <= before {
		t.Errorf("the leader did not append the submission (log end %d, was %d)", after, before)
	}
}

// TestWireReadImage: the ReadImage RPC over the real listener. A plain
// read answers from the node's image; a linearizable read on a follower
// forwards the barrier and holds the change submitted before it; topics
// and configs come back as the schema says; a node that is not the leader
// answers a barrier arriving on a forwarding connection with
// NOT_LEADER_OR_FOLLOWER and the leader hint instead of forwarding it
// again.
func TestWireReadImage(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	f := c.follower(leader)
	cfg := metadata.NewConfigRecord()
	cfg.ResourceType, cfg.ResourceName, cfg.Name, cfg.Value = metadata.ConfigResourceTopic, "orders", "retention.ms", strp("1000")
	cfg2 := metadata.NewConfigRecord()
	cfg2.ResourceType, cfg2.ResourceName, cfg2.Name, cfg2.Value = metadata.ConfigResourceTopic, "orders", "cleanup.policy", strp("compact")
	part := metadata.NewPartitionRecord()
	part.TopicId, part.PartitionId, part.Replicas, part.Isr, part.Leader = topicRecord("orders").(*metadata.TopicRecord).TopicId, 0, []int32{1}, []int32{1}, 1
	part.LeaderEpoch, part.PartitionEpoch = 0, 0
	res := submit(t, c.node(leader), metadataVersionRecord(), topicRecord("orders"), part, cfg, cfg2)

	req := wire.NewReadImageRequest()
	req.Linearizable = true
	req.ConfigResources = []wire.ReadImageResource{{ResourceType: metadata.ConfigResourceTopic, ResourceName: "orders"}, {ResourceType: metadata.ConfigResourceBroker, ResourceName: ""}}
	req.TopicNames = []string{"orders", "missing"}
	resp := roundTrip(t, c.node(f).Addr().String(), req).(*wire.ReadImageResponse)
	if resp.ErrorCode != 0 || resp.Offset < res.LastOffset || resp.LeaderID != int32(leader) {
		t.Fatalf("linearizable ReadImage on follower %d = %+v, want no error, offset ≥ %d, leader %d", f, resp, res.LastOffset, leader)
	}
	wantTopics := []wire.ReadImageTopic{
		{Name: "orders", TopicID: topicRecord("orders").(*metadata.TopicRecord).TopicId, PartitionCount: 1},
		{Name: "missing", PartitionCount: -1},
	}
	if fmt.Sprint(resp.Topics) != fmt.Sprint(wantTopics) {
		t.Errorf("topics = %+v, want %+v", resp.Topics, wantTopics)
	}
	if len(resp.ConfigResources) != 2 || len(resp.ConfigResources[1].Configs) != 0 {
		t.Fatalf("config resources = %+v, want two, the second without configs", resp.ConfigResources)
	}
	got := resp.ConfigResources[0]
	if got.ResourceType != metadata.ConfigResourceTopic || got.ResourceName != "orders" || len(got.Configs) != 2 ||
		got.Configs[0].Name != "cleanup.policy" || *got.Configs[0].Value != "compact" ||
		got.Configs[1].Name != "retention.ms" || *got.Configs[1].Value != "1000" {
		t.Errorf("topic configs = %+v, want cleanup.policy=compact, retention.ms=1000 sorted by name", got)
	}

	plain := wire.NewReadImageRequest()
	plain.TopicNames = []string{"orders"}
	pr := roundTrip(t, c.node(leader).Addr().String(), plain).(*wire.ReadImageResponse)
	if pr.ErrorCode != 0 || pr.Topics[0].PartitionCount != 1 || pr.Offset != c.node(leader).CurrentImage().Offset() {
		t.Errorf("plain ReadImage on the leader = %+v", pr)
	}

	// A barrier on a follower's forwarding connection is not forwarded
	// again.
	nr := roundTripAs(t, c.node(f).Addr().String(), forwardClientPrefix+"9", req).(*wire.ReadImageResponse)
	if nr.ErrorCode != kerr.NotLeaderForPartition.Code || nr.LeaderID != int32(leader) {
		t.Errorf("forwarded barrier on a follower = %+v, want NOT_LEADER_OR_FOLLOWER naming %d", nr, leader)
	}
}

func strp(s string) *string { return &s }

// pendingReads asks c's engine how many reads wait for the core.
func pendingReads(t *testing.T, c *Controller) int {
	n := make(chan int, 1)
	if err := c.enqueue(t.Context(), event{call: func(e *engine) { n <- len(e.reads.barriers) }}); err != nil {
		t.Fatal(err)
	}
	return <-n
}

// TestForwardFailureIsReportedNotResent: a follower that forwards a
// submission to a leader it cannot reach reports ErrOutcomeUnknown (also
// ErrLeaderUnknown) to the caller and never sends the records again on
// its own, so the change is not applied behind the caller's back when a
// new leader takes over (K7; bug-zoo Z21 resends it internally).
func TestForwardFailureIsReportedNotResent(t *testing.T) {
	c, p := newPartitionableCluster(t)
	submit(t, c.node(1), metadataVersionRecord())
	epoch := c.node(1).QuorumState().Epoch
	p.isolate(1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := c.node(2).SubmitChange(ctx, []metadata.Record{topicRecord("once")})
	if err == nil {
		t.Fatal("K7: a submission forwarded to an unreachable leader succeeded: the follower sent it again on its own")
	}
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrLeaderUnknown) {
		t.Fatalf("K7: forwarding to an unreachable leader: %v, want ErrOutcomeUnknown and ErrLeaderUnknown", err)
	}
	next := c.successor(1, epoch)
	res := submit(t, c.node(next), topicRecord("marker"))
	img := readImage(t, c.node(next))
	if img.Offset() < res.LastOffset {
		t.Fatalf("image offset %d below %d", img.Offset(), res.LastOffset)
	}
	if _, ok := img.Topics().ByName("once"); ok {
		t.Error("K7: the change whose forwarding failed was applied: the follower resent it")
	}
}

// TestReadErrorCodes: the answer codes of ReadImage for each runtime
// error, and the errors a follower makes of the leader's answer to its
// read barrier.
func TestReadErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err      error
		code     int16
		leaderID int32
	}{
		{&NotLeaderError{LeaderID: 3, Epoch: 7}, kerr.NotLeaderForPartition.Code, 3},
		{ErrLeaderUnknown, kerr.NotLeaderForPartition.Code, -1},
		{fmt.Errorf("%w (%w): lost", ErrOutcomeUnknown, ErrLeaderUnknown), kerr.NotLeaderForPartition.Code, -1},
		{ErrShuttingDown, kerr.BrokerNotAvailable.Code, -1},
		{fmt.Errorf("%w: %w", ErrReadTimeout, context.DeadlineExceeded), kerr.RequestTimedOut.Code, -1},
		{errors.New("disk on fire"), kerr.UnknownServerError.Code, -1},
	} {
		r := readImageAnswer(wire.NewReadImageRequest(), nil, QuorumState{}, tc.err)
		if r.ErrorCode != tc.code || r.LeaderID != tc.leaderID || r.ErrorMessage == nil || r.Offset != -1 {
			t.Errorf("answer for %v = code %d leader %d message %v offset %d; want code %d leader %d, a message, offset -1",
				tc.err, r.ErrorCode, r.LeaderID, r.ErrorMessage, r.Offset, tc.code, tc.leaderID)
		}
	}
	answer := func(code int16, leader int32) *wire.ReadImageResponse {
		r := wire.NewReadImageResponse()
		r.ErrorCode, r.LeaderID, r.LeaderEpoch, r.ErrorMessage = code, leader, 4, strp("x")
		return r
	}
	for _, tc := range []struct {
		resp *wire.ReadImageResponse
		err  error
		want error
	}{
		{answer(kerr.NotLeaderForPartition.Code, 2), nil, ErrNotLeader},
		{answer(kerr.NotLeaderForPartition.Code, -1), nil, ErrLeaderUnknown},
		{answer(kerr.RequestTimedOut.Code, -1), nil, ErrReadTimeout},
		{answer(kerr.BrokerNotAvailable.Code, -1), nil, ErrLeaderUnknown},
		{nil, errors.New("connection reset"), ErrLeaderUnknown},
		{nil, context.DeadlineExceeded, ErrReadTimeout},
	} {
		if _, err := readBarrierOutcome(tc.resp, tc.err); !errors.Is(err, tc.want) {
			t.Errorf("barrier answer %+v / %v: %v, want %v", tc.resp, tc.err, err, tc.want)
		}
	}
	ok := wire.NewReadImageResponse()
	ok.Offset = 41
	if off, err := readBarrierOutcome(ok, nil); err != nil || off != 41 {
		t.Errorf("barrier answer with offset 41: %d, %v", off, err)
	}
}

// TestReadImageAfterShutdown: a stopped controller refuses reads.
func TestReadImageAfterShutdown(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.node(1)
	readImage(t, n)
	c.stop(1)
	if _, err := n.ReadImage(t.Context()); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("ReadImage after Shutdown: %v, want ErrShuttingDown", err)
	}
}
