package raft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

const dynamicClusterID = "dyn-cluster-id-000001"

// dirID is node id's directory id in these tests.
func dirID(id NodeID) [16]byte { return [16]byte{0xd1, byte(id), 0x5e} }

// newDynamicCluster prepares n controllers of a dynamic quorum on
// loopback ports, none started: no controller.quorum.voters, every
// node's endpoint as a bootstrap server, and every directory formatted as
// krabka storage format does. initial lists the voters of the bootstrap
// snapshot (--standalone is one, --initial-controllers several) written
// into their own directories; the others are formatted with
// --no-initial-controllers. adjust, if not nil, changes every Config.
func newDynamicCluster(t testing.TB, n int, initial []NodeID, adjust func(*Config)) (*testCluster, []net.Listener) {
	t.Helper()
	c := &testCluster{t: t}
	var lns []net.Listener
	for range n {
		lns = append(lns, sharedtest.ListenFixed(t))
	}
	port := func(i int) uint16 { return uint16(lns[i].Addr().(*net.TCPAddr).Port) }
	voters := control.NewVotersRecord()
	for _, id := range initial {
		voters.Voters = append(voters.Voters, votersRecordVoter(id, port(int(id-1))))
	}
	for i := range n {
		id := NodeID(i + 1)
		cfg := ForTests(id, t.TempDir())
		cfg.Listeners[0].Port = port(i)
		cfg.QuorumVoters = nil
		for j := range n {
			cfg.QuorumBootstrapServers = append(cfg.QuorumBootstrapServers, HostPort{Host: "127.0.0.1", Port: port(j)})
		}
		if adjust != nil {
			adjust(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		formatDynamic(t, vfs.OS(), cfg, slices.Contains(initial, id), voters, time.Now())
	}
	c.nodes = make([]*Controller, n)
	c.cancels = make([]context.CancelFunc, n)
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(NodeID(i + 1))
		}
		for _, ln := range lns {
			if ln != nil {
				_ = ln.Close()
			}
		}
	})
	return c, lns
}

// votersRecordVoter is the VotersRecord entry of node id at port.
func votersRecordVoter(id NodeID, port uint16) control.VotersRecordVoter {
	return control.VotersRecordVoter{
		VoterId: int32(id), VoterDirectoryId: dirID(id),
		Endpoints:           []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: port}},
		KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1},
	}
}

// formatDynamic writes meta.properties into fsys and, for an initial
// voter, the bootstrap snapshot 0-0 with voters, as of now.
func formatDynamic(t testing.TB, fsys vfs.FS, cfg Config, initial bool, voters *control.VotersRecord, now time.Time) {
	t.Helper()
	if err := logstore.MkdirAllDurable(fsys, cfg.MetadataLogDir); err != nil {
		t.Fatal(err)
	}
	mp := logstore.MetaProperties{Version: 1, ClusterID: dynamicClusterID, NodeID: kraft.NodeID(cfg.NodeID), DirectoryID: kraft.UUID(dirID(cfg.NodeID))}
	if err := logstore.WriteMetaProperties(fsys, cfg.MetadataLogDir, mp, now); err != nil {
		t.Fatal(err)
	}
	if !initial {
		return
	}
	dir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
	if err := logstore.MkdirAllDurable(fsys, dir); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.WriteBootstrapSnapshot(fsys, dir, 1, now.UnixMilli(), voters); err != nil {
		t.Fatal(err)
	}
}

// startNode starts node id, on its reserved listener the first time.
func (c *testCluster) startNode(id NodeID, lns []net.Listener) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.t.Context())
	c.cancels[id-1] = cancel
	var ln net.Listener
	if lns != nil {
		ln, lns[id-1] = lns[id-1], nil
	}
	node, err := start(ctx, c.cfgs[id-1], startOptions{listener: ln})
	if err != nil {
		c.t.Fatalf("start node %d: %v", id, err)
	}
	c.nodes[id-1] = node
}

// describe asks node id's engine for DescribeQuorum.
func (c *testCluster) describe(id NodeID) (QuorumDescription, error) {
	ctx, cancel := context.WithTimeout(c.t.Context(), 5*time.Second)
	defer cancel()
	return c.node(id).DescribeQuorum(ctx)
}

// replicaIDs lists the ids of rs.
func replicaIDs(rs []ReplicaState) []NodeID {
	var ids []NodeID
	for _, r := range rs {
		ids = append(ids, r.ReplicaID)
	}
	slices.Sort(ids)
	return ids
}

// waitMembers waits until the leader's DescribeQuorum lists exactly these
// voters and at least these observers, and returns the leader.
func (c *testCluster) waitMembers(voters, observers []NodeID) NodeID {
	c.t.Helper()
	var leader NodeID
	waitFor(c.t, "voters "+nodeList(voters)+" and observers "+nodeList(observers), func() bool {
		leader = c.leader()
		d, err := c.describe(leader)
		if err != nil || !slices.Equal(replicaIDs(d.Voters), voters) {
			return false
		}
		got := replicaIDs(d.Observers)
		for _, o := range observers {
			if !slices.Contains(got, o) {
				return false
			}
		}
		return true
	})
	return leader
}

func nodeList(ids []NodeID) string {
	s := "["
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += id.String()
	}
	return s + "]"
}

// votersInLog lists the voter ids of every VotersRecord in the committed
// log of cfg below hw.
func votersInLog(t testing.TB, cfg Config, hw int64) [][]int32 {
	t.Helper()
	var out [][]int32
	it := recordbatch.NewIterator(nil, readCommitted(t, cfg, hw))
	for it.Next() {
		if !it.Batch().IsControl() {
			continue
		}
		rec, err := votersRecordOf(it.Batch().Raw)
		if err != nil {
			continue
		}
		var ids []int32
		for _, v := range rec.Voters {
			ids = append(ids, v.VoterId)
		}
		out = append(out, ids)
	}
	return out
}

// TestDynamicInitialControllers: three nodes formatted with the same
// --initial-controllers form a quorum from the bootstrap snapshot, the
// first leader copies the voter set into the log, and DescribeQuorum
// names every voter with its directory id.
func TestDynamicInitialControllers(t *testing.T) {
	c, lns := newDynamicCluster(t, 3, []NodeID{1, 2, 3}, nil)
	for id := NodeID(1); id <= 3; id++ {
		c.startNode(id, lns)
	}
	res := c.submitRetrying(metadataVersionRecord(), topicRecord("a"))
	c.waitApplied(res.LastOffset + 1)
	leader := c.waitMembers([]NodeID{1, 2, 3}, nil)
	d, err := c.describe(leader)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Voters {
		if v.DirectoryID != dirID(v.ReplicaID) {
			t.Errorf("voter %d: directory id %x, want %x", v.ReplicaID, v.DirectoryID, dirID(v.ReplicaID))
		}
	}
	if level, ok := finalizedLevel(t, c.node(leader).Addr().String(), "kraft.version"); !ok || level != 1 {
		t.Errorf("ApiVersions finalizes kraft.version %d (%v), want 1", level, ok)
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.SetVersion(2)
	dqt := kmsg.NewDescribeQuorumRequestTopic()
	dqt.Topic = "__cluster_metadata"
	dqt.Partitions = append(dqt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, dqt)
	nodes := roundTrip(t, c.node(leader).Addr().String(), dq).(*kmsg.DescribeQuorumResponse).Nodes
	if len(nodes) != 3 {
		t.Fatalf("DescribeQuorum v2 names %d nodes, want the 3 voters", len(nodes))
	}
	for _, n := range nodes {
		want := c.cfgs[n.NodeID-1].Listeners[0]
		if len(n.Listeners) != 1 || n.Listeners[0].Name != want.Name || n.Listeners[0].Port != want.Port {
			t.Errorf("DescribeQuorum node %d: listeners %+v, want %s", n.NodeID, n.Listeners, want)
		}
	}
	// The quorum survives the leader's shutdown.
	c.stop(leader)
	if got := votersInLog(t, c.cfgs[leader-1], res.LastOffset+1); len(got) != 1 || !slices.Equal(got[0], []int32{1, 2, 3}) {
		t.Fatalf("Voters records in the log: %v, want one with [1 2 3]", got)
	}
	res = c.submitRetrying(topicRecord("b"))
	// Restarted, the old leader reads the voter set from its log.
	c.restart(leader)
	c.waitApplied(res.LastOffset + 1)
	c.waitMembers([]NodeID{1, 2, 3}, nil)
}

// TestDynamicObserversCatchUp: node 1, formatted --standalone, commits
// alone; nodes 2 and 3, formatted --no-initial-controllers, start as
// observers through the bootstrap server, replicate and apply everything,
// and the leader reports them as observers.
func TestDynamicObserversCatchUp(t *testing.T) {
	c, lns := newDynamicCluster(t, 3, []NodeID{1}, nil)
	c.startNode(1, lns)
	res := submit(t, c.node(c.leader()), metadataVersionRecord(), topicRecord("a"))
	c.startNode(2, lns)
	c.startNode(3, lns)
	c.waitApplied(res.LastOffset + 1)
	c.waitMembers([]NodeID{1}, []NodeID{2, 3})
	for _, id := range []NodeID{2, 3} {
		if _, ok := c.node(id).CurrentImage().Topics().ByName("a"); !ok {
			t.Errorf("observer %d has not applied topic a", id)
		}
		if st := c.node(id).QuorumState(); st.Role != RoleFollower || st.LeaderID != 1 {
			t.Errorf("observer %d: %+v, want a follower of 1", id, st)
		}
	}
	// A restarted observer finds the leader again.
	c.stop(3)
	c.restart(3)
	res = submit(t, c.node(1), topicRecord("b"))
	c.waitApplied(res.LastOffset + 1)
}

// voterOf is node id of cluster c as AddVoter names it.
func (c *testCluster) voterOf(id NodeID) Voter {
	cfg := c.cfgs[id-1]
	return Voter{ID: id, DirectoryID: dirID(id), Endpoints: cfg.AdvertisedControllerEndpoints()}
}

// changeVoters runs AddVoter (add) or RemoveVoter through node via,
// retrying while the quorum is busy (a leader change, the previous change
// not yet committed), and fails the test on any other error.
func (c *testCluster) changeVoters(via func() NodeID, add bool, id NodeID) {
	c.t.Helper()
	waitFor(c.t, "a voter change", func() bool {
		ctx, cancel := context.WithTimeout(c.t.Context(), 5*time.Second)
		defer cancel()
		var err error
		if add {
			err = c.node(via()).AddVoter(ctx, c.voterOf(id))
		} else {
			err = c.node(via()).RemoveVoter(ctx, id, dirID(id))
		}
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrChangeUnavailable), errors.Is(err, ErrLeaderUnknown), errors.Is(err, ErrShuttingDown):
			return false
		}
		c.t.Fatalf("change voter %d (add %v): %v", id, add, err)
		return false
	})
}

// TestDynamicAddRemoveVoters: a standalone node and two observers become
// a three-voter quorum by two AddVoter calls (the second through a
// follower, forwarded to the leader); the quorum commits and survives the
// leader's shutdown; a follower is removed, then the leader removes
// itself, resigns once that commits, and the remaining voter leads.
func TestDynamicAddRemoveVoters(t *testing.T) {
	c, lns := newDynamicCluster(t, 3, []NodeID{1}, nil)
	for id := NodeID(1); id <= 3; id++ {
		c.startNode(id, lns)
	}
	res := c.submitRetrying(metadataVersionRecord(), topicRecord("a"))
	c.waitApplied(res.LastOffset + 1)
	c.waitMembers([]NodeID{1}, []NodeID{2, 3})

	c.changeVoters(c.leader, true, 2)
	c.waitMembers([]NodeID{1, 2}, []NodeID{3})
	c.changeVoters(func() NodeID { return c.follower(c.leader()) }, true, 3)
	leader := c.waitMembers([]NodeID{1, 2, 3}, nil)
	res = c.submitRetrying(topicRecord("b"))
	c.waitApplied(res.LastOffset + 1)

	c.stop(leader)
	res = c.submitRetrying(topicRecord("c"))
	c.restart(leader)
	c.waitApplied(res.LastOffset + 1)

	// Remove a follower: it stays up as an observer.
	leader = c.leader()
	gone := c.follower(leader)
	c.changeVoters(c.leader, false, gone)
	c.waitMembers(slices.DeleteFunc([]NodeID{1, 2, 3}, func(id NodeID) bool { return id == gone }), []NodeID{gone})

	// The leader removes itself and resigns once that commits.
	leader = c.leader()
	c.changeVoters(func() NodeID { return leader }, false, leader)
	var last NodeID
	for _, id := range []NodeID{1, 2, 3} {
		if id != leader && id != gone {
			last = id
		}
	}
	waitFor(t, "the last voter to lead", func() bool { return c.node(last).QuorumState().Role == RoleLeader })
	c.waitMembers([]NodeID{last}, nil)
	res = submit(t, c.node(last), topicRecord("d"))
	c.waitApplied(res.LastOffset + 1)
}

// TestDynamicAutoJoin: with controller.quorum.auto.join.enable an observer
// adds itself to the voter set once it has caught up, naming the port its
// listener got when it asked for port 0.
func TestDynamicAutoJoin(t *testing.T) {
	c, lns := newDynamicCluster(t, 2, []NodeID{1}, func(cfg *Config) {
		if cfg.NodeID == 2 {
			cfg.AutoJoin = true
			cfg.Listeners[0].Port = 0
		}
	})
	c.startNode(1, lns)
	c.startNode(2, lns)
	c.submitRetrying(metadataVersionRecord())
	c.waitMembers([]NodeID{1, 2}, nil)
	res := c.submitRetrying(topicRecord("a"))
	c.waitApplied(res.LastOffset + 1)
	ep, ok := c.node(1).eng.pub.voterEndpoint(2, "CONTROLLER")
	if want := c.node(2).Addr().String(); !ok || ep.Address() != want {
		t.Errorf("node 2's endpoint in the voter set: %v %v, want %s", ep, ok, want)
	}
}

// TestDynamicUpdateVoter: a voter whose entry in the voter set differs
// from what it advertises sends UpdateRaftVoter, and the leader writes
// its entry anew.
func TestDynamicUpdateVoter(t *testing.T) {
	c, lns := newDynamicCluster(t, 2, []NodeID{1, 2}, nil)
	// Rewrite node 2's bootstrap entry in both directories with a
	// kraft.version range it does not advertise.
	for _, id := range []NodeID{1, 2} {
		dir := filepath.Join(c.cfgs[id-1].MetadataLogDir, PartitionDirName)
		if err := vfs.OS().Remove(filepath.Join(dir, snapshot.FileName(snapshot.Bootstrap))); err != nil {
			t.Fatal(err)
		}
		voters := control.NewVotersRecord()
		for _, v := range []NodeID{1, 2} {
			voters.Voters = append(voters.Voters, votersRecordVoter(v, c.cfgs[v-1].Listeners[0].Port))
		}
		voters.Voters[1].KRaftVersionFeature.MinSupportedVersion = 1
		if err := snapshot.WriteBootstrapSnapshot(vfs.OS(), dir, 2, time.Now().UnixMilli(), voters); err != nil {
			t.Fatal(err)
		}
	}
	c.startNode(1, lns)
	c.startNode(2, lns)
	c.submitRetrying(metadataVersionRecord())
	waitFor(t, "node 2's entry to be rewritten", func() bool {
		var min int16 = -1
		onEngine(t, c.node(c.leader()), func(e *engine) {
			if h, ok := e.voters.latest(); ok && !h.bootstrap {
				for _, v := range h.rec.Voters {
					if v.VoterId == 2 {
						min = v.KRaftVersionFeature.MinSupportedVersion
					}
				}
			}
		})
		return min == 0
	})
}

// TestDynamicVoterChangeErrors: Kafka's refusals. A second change while
// one is in flight is REQUEST_TIMED_OUT; an add whose node never answers
// ApiVersions times out; a duplicate add is DUPLICATE_VOTER; removing a
// replica that is not a voter (or the last voter) is VOTER_NOT_FOUND; an
// observer that never fetched cannot be added.
func TestDynamicVoterChangeErrors(t *testing.T) {
	// A change may take the request timeout: a long one keeps the add
	// that never gets an answer in flight while the test asks for more.
	c, lns := newDynamicCluster(t, 3, []NodeID{1}, func(cfg *Config) { cfg.RequestTimeout = 4 * time.Second })
	c.startNode(1, lns)
	c.startNode(2, lns)
	res := c.submitRetrying(metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	c.waitMembers([]NodeID{1}, []NodeID{2})
	leader := c.node(1)
	ctx := t.Context()

	// A node that accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Close() }()
	port := uint16(silent.Addr().(*net.TCPAddr).Port)
	first := make(chan error, 1)
	go func() {
		first <- leader.AddVoter(ctx, Voter{ID: 9, DirectoryID: dirID(9), Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: port}}})
	}()
	waitFor(t, "the add of node 9 in flight", func() bool {
		pending := false
		onEngine(t, leader, func(e *engine) { pending = e.change != nil })
		return pending
	})
	if err := leader.AddVoter(ctx, c.voterOf(2)); !errors.Is(err, ErrChangeInFlight) || !errors.Is(err, ErrChangeUnavailable) {
		t.Errorf("add during another change: %v, want ErrChangeInFlight", err)
	}
	// The probe's request timeout and the change's deadline are both the
	// request timeout: whichever passes first answers.
	if err := <-first; !(errors.Is(err, ErrChangeTimedOut) || errors.Is(err, ErrVoterUnreachable)) || !errors.Is(err, ErrChangeUnavailable) {
		t.Errorf("add of a node that never answers: %v, want ErrChangeTimedOut or ErrVoterUnreachable", err)
	}
	// Node 3 never started, so nothing answers at its endpoint: the
	// ApiVersions request fails (ErrVoterUnreachable) or the deadline
	// passes first (ErrChangeTimedOut).
	if err := leader.AddVoter(ctx, c.voterOf(3)); !errors.Is(err, ErrChangeUnavailable) {
		t.Errorf("add of a node that is not running: %v, want ErrChangeUnavailable", err)
	}
	if err := leader.AddVoter(ctx, c.voterOf(1)); !errors.Is(err, ErrDuplicateVoter) {
		t.Errorf("add of a voter: %v, want ErrDuplicateVoter", err)
	}
	if err := leader.RemoveVoter(ctx, 2, dirID(2)); !errors.Is(err, ErrVoterNotFound) {
		t.Errorf("remove of an observer: %v, want ErrVoterNotFound", err)
	}
	if err := leader.RemoveVoter(ctx, 1, dirID(9)); !errors.Is(err, ErrVoterNotFound) {
		t.Errorf("remove with another directory id: %v, want ErrVoterNotFound", err)
	}
	if err := leader.RemoveVoter(ctx, 1, dirID(1)); !errors.Is(err, ErrVoterNotFound) {
		t.Errorf("remove of the last voter: %v, want ErrVoterNotFound", err)
	}
	if err := leader.AddVoter(ctx, Voter{ID: 2, DirectoryID: dirID(2), Endpoints: []Endpoint{{Name: "OTHER", Host: "127.0.0.1", Port: 1}}}); !errors.Is(err, ErrInvalidVoter) || !errors.Is(err, ErrInvalidChange) {
		t.Errorf("add without the controller listener: %v, want ErrInvalidVoter", err)
	}
	// The observer itself can be added.
	c.changeVoters(c.leader, true, 2)
	c.waitMembers([]NodeID{1, 2}, nil)
}

// finalizedLevel asks the node at addr for ApiVersions v4 and returns the
// finalized level of feature name.
func finalizedLevel(t *testing.T, addr, name string) (int16, bool) {
	t.Helper()
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	for _, f := range roundTrip(t, addr, av).(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel, true
		}
	}
	return 0, false
}

// TestStaticQuorumRefusesVoterChanges: a static quorum (kraft.version 0)
// answers AddVoter and RemoveVoter with UNSUPPORTED_VERSION and finalizes
// no kraft.version.
func TestStaticQuorumRefusesVoterChanges(t *testing.T) {
	c := newFormattedCluster(t, 1, "static-cluster-id-0001")
	leader := c.node(c.leader())
	c.submitRetrying(metadataVersionRecord())
	if level, ok := finalizedLevel(t, leader.Addr().String(), "kraft.version"); ok {
		t.Errorf("a static quorum finalizes kraft.version %d", level)
	}
	if err := leader.AddVoter(t.Context(), Voter{ID: 2, DirectoryID: dirID(2), Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}}); !errors.Is(err, ErrStaticQuorum) {
		t.Errorf("AddVoter on a static quorum: %v, want ErrStaticQuorum", err)
	}
	if err := leader.RemoveVoter(t.Context(), 1, [16]byte{0xd1, 1}); !errors.Is(err, ErrStaticQuorum) {
		t.Errorf("RemoveVoter on a static quorum: %v, want ErrStaticQuorum", err)
	}
}

// TestDynamicSnapshotsCarryVoters: once the leader has compacted its log
// past the Voters record, the voter set lives only in its snapshots. A
// new observer that catches up by FetchSnapshot learns the set from the
// installed snapshot (and can be added), and a restarted node reads it
// from its own snapshot.
func TestDynamicSnapshotsCarryVoters(t *testing.T) {
	c, lns := newDynamicCluster(t, 2, []NodeID{1}, snapshotConfig)
	c.startNode(1, lns)
	submit(t, c.node(c.leader()), metadataVersionRecord())
	var last SubmitResult
	for i := range 40 {
		var recs []metadata.Record
		for j := range 5 {
			recs = append(recs, topicRecord(fmt.Sprintf("topic-%d-%d", i, j)))
		}
		last = submit(t, c.node(1), recs...)
	}
	waitFor(t, "node 1 to compact its log", func() bool { return c.node(1).eng.log.LogStartOffset() > 3 })

	c.startNode(2, lns)
	c.waitApplied(last.LastOffset + 1)
	if start := c.node(2).eng.log.LogStartOffset(); start == 0 {
		t.Fatalf("node 2 caught up without a snapshot")
	}
	var voters []int32
	onEngine(t, c.node(2), func(e *engine) {
		if h, ok := e.voters.latest(); ok {
			for _, v := range h.rec.Voters {
				voters = append(voters, v.VoterId)
			}
		}
	})
	if !slices.Equal(voters, []int32{1}) {
		t.Fatalf("observer's voter set after the snapshot install: %v, want [1]", voters)
	}
	c.changeVoters(c.leader, true, 2)
	c.waitMembers([]NodeID{1, 2}, nil)

	for _, id := range []NodeID{1, 2} {
		c.stop(id)
	}
	c.restart(1)
	c.restart(2)
	c.waitMembers([]NodeID{1, 2}, nil)
	res := c.submitRetrying(topicRecord("after"))
	c.waitApplied(res.LastOffset + 1)
}

// TestDynamicNeedsDirectoryID: a dynamic quorum keys replicas by node id
// and directory id, so a node without meta.properties does not start.
func TestDynamicNeedsDirectoryID(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.QuorumVoters = nil
	cfg.QuorumBootstrapServers = []HostPort{{Host: "127.0.0.1", Port: 9}}
	_, err := Start(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "must give this node's directory.id") {
		t.Fatalf("Start without meta.properties: %v, want the directory.id error", err)
	}
}

// TestDynamicChangeMembership: ChangeMembership turns a one-voter
// difference into AddVoter or RemoveVoter, leaves an equal set alone and
// refuses a target two changes away.
func TestDynamicChangeMembership(t *testing.T) {
	c, lns := newDynamicCluster(t, 3, []NodeID{1}, nil)
	for id := NodeID(1); id <= 3; id++ {
		c.startNode(id, lns)
	}
	res := c.submitRetrying(metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	c.waitMembers([]NodeID{1}, []NodeID{2, 3})
	leader := c.node(1)
	change := func(ids ...NodeID) error {
		var vs []Voter
		for _, id := range ids {
			vs = append(vs, c.voterOf(id))
		}
		var err error
		waitFor(t, "a membership change", func() bool {
			err = leader.ChangeMembership(t.Context(), vs)
			return !errors.Is(err, ErrChangeUnavailable)
		})
		return err
	}
	if err := change(1, 2, 3); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("two voters at once: %v, want ErrInvalidChange", err)
	}
	if err := change(1, 2); err != nil {
		t.Fatalf("add 2: %v", err)
	}
	c.waitMembers([]NodeID{1, 2}, []NodeID{3})
	if err := change(1, 2); err != nil {
		t.Errorf("the set itself: %v", err)
	}
	if err := change(1); err != nil {
		t.Fatalf("remove 2: %v", err)
	}
	c.waitMembers([]NodeID{1}, []NodeID{2, 3})
}

// TestDynamicObserverFollowsLearnedLeader: an observer whose only
// bootstrap server is another observer learns the leader's id and
// endpoint from that server's answer (NodeEndpoints) and follows the
// leader, which it has never been told about.
func TestDynamicObserverFollowsLearnedLeader(t *testing.T) {
	c, lns := newDynamicCluster(t, 3, []NodeID{1}, nil)
	c.cfgs[1].QuorumBootstrapServers = c.cfgs[1].QuorumBootstrapServers[:1]  // node 1
	c.cfgs[2].QuorumBootstrapServers = c.cfgs[2].QuorumBootstrapServers[1:2] // node 2
	c.startNode(1, lns)
	res := submit(t, c.node(c.leader()), metadataVersionRecord(), topicRecord("a"))
	c.startNode(2, lns)
	c.waitApplied(res.LastOffset + 1)
	c.startNode(3, lns)
	c.waitApplied(res.LastOffset + 1)
	c.waitMembers([]NodeID{1}, []NodeID{2, 3})
	if st := c.node(3).QuorumState(); st.Role != RoleFollower || st.LeaderID != 1 {
		t.Errorf("node 3: %+v, want a follower of node 1", st)
	}
}
