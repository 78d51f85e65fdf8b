package kraft_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/kraft/krafttest"
)

// cluster is a minimal in-test driver: nodes, their logs and durable
// states, and one message queue. Unlike krafttest.InteractionEnv it prints
// nothing, so tests can assert on values.
type cluster struct {
	t      testing.TB
	nodes  []*kraft.Node // index = id-1
	logs   []*krafttest.MemLog
	states []kraft.ElectionState
	now    []kraft.Instant
	net    []kraft.Message
	handle kraft.RecordsHandle
	cfgs   []kraft.Config
	// reads collects the read outcomes of every Ready, in order.
	reads []kraft.ReadResult
}

func keys(ids ...kraft.NodeID) []kraft.ReplicaKey {
	ks := make([]kraft.ReplicaKey, len(ids))
	for i, id := range ids {
		ks[i] = kraft.ReplicaKey{ID: id}
	}
	return ks
}

func config(id kraft.NodeID, voters []kraft.ReplicaKey, seed uint64) kraft.Config {
	cfg := kraft.DefaultConfig()
	cfg.ID = id
	cfg.Voters = voters
	cfg.Seed = seed
	return cfg
}

func emptyState() kraft.ElectionState {
	return kraft.ElectionState{LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
}

// newCluster starts n voters 1..n (plus observers ids n+1..n+observers).
func newCluster(t testing.TB, n, observers int, seed uint64) *cluster {
	c := &cluster{t: t}
	catalog := map[kraft.OffsetAndEpoch][]kraft.ReplicaKey{}
	var voters []kraft.NodeID
	for i := 1; i <= n; i++ {
		voters = append(voters, kraft.NodeID(i))
	}
	for i := 1; i <= n+observers; i++ {
		log := &krafttest.MemLog{Catalog: catalog}
		cfg := config(kraft.NodeID(i), keys(voters...), seed)
		node, err := kraft.NewNode(0, cfg, emptyState(), log)
		if err != nil {
			t.Fatal(err)
		}
		c.cfgs = append(c.cfgs, cfg)
		c.nodes = append(c.nodes, node)
		c.logs = append(c.logs, log)
		c.states = append(c.states, emptyState())
		c.now = append(c.now, 0)
	}
	return c
}

func (c *cluster) node(id kraft.NodeID) *kraft.Node { return c.nodes[id-1] }

// clone copies the whole cluster, each node bound to its cloned log.
func (c *cluster) clone() *cluster {
	d := &cluster{t: c.t, handle: c.handle, states: slices.Clone(c.states), now: slices.Clone(c.now), cfgs: c.cfgs}
	for i, n := range c.nodes {
		log := c.logs[i].Clone()
		d.logs = append(d.logs, log)
		d.nodes = append(d.nodes, n.Clone(log))
	}
	for _, m := range c.net {
		d.net = append(d.net, copyMessage(m))
	}
	return d
}

func copyMessage(m kraft.Message) kraft.Message {
	switch m := m.(type) {
	case *kraft.VoteRequest:
		c := *m
		return &c
	case *kraft.VoteResponse:
		c := *m
		return &c
	case *kraft.BeginQuorumEpochRequest:
		c := *m
		return &c
	case *kraft.BeginQuorumEpochResponse:
		c := *m
		return &c
	case *kraft.EndQuorumEpochRequest:
		c := *m
		return &c
	case *kraft.EndQuorumEpochResponse:
		c := *m
		return &c
	case *kraft.FetchRequest:
		c := *m
		return &c
	case *kraft.FetchResponse:
		c := *m
		return &c
	case *kraft.FetchSnapshotRequest:
		c := *m
		return &c
	case *kraft.FetchSnapshotResponse:
		c := *m
		return &c
	}
	panic(fmt.Sprintf("unknown message %T", m))
}

// ready runs one Ready of node id through the contract and returns it.
func (c *cluster) ready(id kraft.NodeID) kraft.Ready {
	n := c.node(id)
	rd := n.Ready()
	if rd.State != nil {
		c.states[id-1] = *rd.State
	}
	if err := c.logs[id-1].ApplyReady(rd); err != nil {
		c.t.Fatalf("node %d: apply ready: %v", id, err)
	}
	for _, m := range rd.Messages {
		c.handle++
		c.logs[id-1].Fill(m, 0, c.handle)
		c.net = append(c.net, m)
	}
	c.reads = append(c.reads, rd.Reads...)
	advance(n, rd)
	return rd
}

// readyAll processes every pending Ready once; it reports whether any.
func (c *cluster) readyAll() bool {
	any := false
	for i, n := range c.nodes {
		if n.HasReady() {
			c.ready(kraft.NodeID(i + 1))
			any = true
		}
	}
	return any
}

// deliver steps the i-th queued message into its target.
func (c *cluster) deliver(i int) {
	m := c.net[i]
	c.net = slices.Delete(c.net, i, i+1)
	to := kraft.HeaderOf(m).To
	if to < 1 || int(to) > len(c.nodes) {
		return // addressed to a node that does not exist: lost
	}
	if err := c.node(to).Step(c.now[to-1], m); err != nil {
		c.t.Fatalf("step %s: %v", m, err)
	}
}

// stabilize delivers everything until quiet.
func (c *cluster) stabilize() {
	for range 10000 {
		progressed := c.readyAll()
		for len(c.net) > 0 {
			c.deliver(0)
			progressed = true
		}
		if !progressed {
			return
		}
	}
	c.t.Fatal("cluster does not stabilize")
}

// campaign fires id's timers until its role changes.
func (c *cluster) campaign(id kraft.NodeID) {
	n := c.node(id)
	role := n.Status().Role
	for range 20 {
		c.now[id-1] = max(c.now[id-1], n.NextDeadline())
		n.Tick(c.now[id-1])
		if n.Status().Role != role {
			return
		}
	}
	c.t.Fatalf("node %d: role did not change", id)
}

// elect makes id the leader of a fresh cluster and stabilizes.
func (c *cluster) elect(id kraft.NodeID) {
	c.campaign(id)
	c.stabilize()
	if st := c.node(id).Status(); st.Role != kraft.Leader {
		c.t.Fatalf("node %d is %v, want Leader", id, st.Role)
	}
}

// randomStep performs one random action chosen by r: deliver a message,
// drop one, process a Ready, tick a node, or propose on a leader.
func (c *cluster) randomStep(r *rand.Rand) {
	switch k := r.IntN(10); {
	case k < 4 && len(c.net) > 0:
		c.deliver(r.IntN(len(c.net)))
	case k == 4 && len(c.net) > 0:
		i := r.IntN(len(c.net))
		if r.IntN(2) == 0 {
			c.net = slices.Delete(c.net, i, i+1) // drop
		} else {
			c.net = append(c.net, copyMessage(c.net[i])) // duplicate
		}
	case k < 8:
		c.readyAll()
	case k == 8 && r.IntN(20) == 0:
		// Compaction (KIP-630): a node snapshots a committed prefix at a
		// batch boundary and drops it from its log.
		i := r.IntN(len(c.nodes))
		log, hw := c.logs[i], c.nodes[i].Status().HighWatermark
		var ends []kraft.Offset
		for _, b := range log.Batches {
			if b.LastOffset+1 <= hw {
				ends = append(ends, b.LastOffset+1)
			}
		}
		if len(ends) > 0 {
			if _, err := log.CreateSnapshot(ends[r.IntN(len(ends))], 1+r.Int64N(3<<20)); err != nil {
				c.t.Fatal(err)
			}
		}
	case k == 8 && r.IntN(10) == 0:
		// A connection reset reported for a random peer: genuine or not,
		// it must never break safety.
		id := kraft.NodeID(r.IntN(len(c.nodes)) + 1)
		c.node(id).ConnectionLost(c.now[id-1], kraft.NodeID(r.IntN(len(c.nodes))+1))
	case k == 8:
		id := kraft.NodeID(r.IntN(len(c.nodes)) + 1)
		c.now[id-1] += kraft.Instant(r.IntN(700))
		c.node(id).Tick(c.now[id-1])
		// After a Tick nothing is due: a runtime sleeping until
		// NextDeadline must not spin.
		if d := c.node(id).NextDeadline(); d <= c.now[id-1] {
			c.t.Fatalf("node %d: NextDeadline %d not after now %d (%+v)", id, d, c.now[id-1], c.node(id).Status())
		}
	default:
		for i, n := range c.nodes {
			st := n.Status()
			if st.Role != kraft.Leader {
				continue
			}
			c.handle++
			if r.IntN(8) == 0 && st.HighWatermark > 0 && !n.PendingVoterChange() {
				// KIP-853: one voter added or removed, only once the leader
				// has committed in its epoch and no change is pending.
				id := kraft.NodeID(r.IntN(len(c.nodes)) + 1)
				next := st.Voters.Keys()
				if st.Voters.ContainsID(id) {
					// Never shrink to nothing. Never remove the leader of a
					// two-voter set either: if it crashes before the other
					// voter fetches the record, that voter needs the removed
					// node's vote, which its longer log refuses — a liveness
					// hole of KIP-853 itself, not of this core.
					if len(next) == 1 || (len(next) == 2 && id == st.ID) {
						continue
					}
					next = slices.DeleteFunc(next, func(k kraft.ReplicaKey) bool { return k.ID == id })
				} else {
					next = append(next, kraft.ReplicaKey{ID: id})
				}
				if _, err := n.Propose(c.now[i], kraft.Proposal{Records: 1, Handle: c.handle, Voters: next}); err != nil {
					c.t.Fatalf("propose voters %v: %v", next, err)
				}
				continue
			}
			_, _ = n.Propose(c.now[i], kraft.Proposal{Records: 1 + r.IntN(3), Handle: c.handle})
		}
	}
}

// restart rebuilds node id from its durable state and log, losing the
// work it had not handed out yet (a crash).
func (c *cluster) restart(id kraft.NodeID) {
	n, err := kraft.NewNode(c.now[id-1], c.cfgs[id-1], c.states[id-1], c.logs[id-1])
	if err != nil {
		c.t.Fatalf("restart %d: %v", id, err)
	}
	c.nodes[id-1] = n
}

// converge runs the cluster without faults, advancing every clock by
// 100ms between quiet rounds, until one leader exists and every live node
// has its high watermark at the leader's log end. It reports whether that
// happened within rounds rounds.
func (c *cluster) converge(rounds int) bool {
	for range rounds {
		c.stabilize()
		leader := -1
		for i, n := range c.nodes {
			if n.Status().Role == kraft.Leader {
				leader = i
			}
		}
		if leader >= 0 {
			end := c.nodes[leader].Status().LogEndOffset
			done := true
			for _, n := range c.nodes {
				if st := n.Status(); st.HighWatermark != end || st.LogEndOffset != end {
					done = false
				}
			}
			if done {
				return true
			}
		}
		for i, n := range c.nodes {
			c.now[i] += 100
			n.Tick(c.now[i])
		}
	}
	return false
}

// messagesOf returns the messages of type T in rd.
func messagesOf[T kraft.Message](rd kraft.Ready) []T {
	var out []T
	for _, m := range rd.Messages {
		if t, ok := m.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// advance calls Advance and, for a SyncLater Ready, reports the whole log
// synced at once, as a runtime whose fsync is done by then would.
func advance(n *kraft.Node, rd kraft.Ready) {
	n.Advance(rd)
	if rd.SyncLater {
		if err := n.LogSynced(0, n.Status().LogEndOffset); err != nil {
			panic(err)
		}
	}
}

// followerFetch is a Fetch from follower id to leader 1 in epoch, which
// waits up to 500 ms for records at offset 0.
func followerFetch(id kraft.NodeID, epoch kraft.Epoch) *kraft.FetchRequest {
	return &kraft.FetchRequest{
		Header: kraft.Header{From: id, To: 1}, Replica: kraft.ReplicaKey{ID: id}, CurrentLeaderEpoch: epoch,
		LastFetchedEpoch: epoch, MaxWait: 500e6, MaxBytes: 1 << 20,
	}
}
