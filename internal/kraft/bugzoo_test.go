package kraft_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/kraft/krafttest"
)

// These tests pin invariants that the scripted scenarios only show in a
// transcript and that the random schedules cannot reach with correct
// peers; scripts/bugzoo.sh runs them against the bug zoo's re-injected
// bugs (package bugzoo).

// Invariant C7 (KAFKA-12460; docs/reliability.md): a follower never
// truncates below its high watermark, whatever diverging epoch a Fetch
// response names. A correct leader never asks for that, so only a
// response from a faulty or corrupted peer can: the follower refuses it
// and keeps its committed prefix (and its high watermark stays within its
// log, C1).
func TestFollowerNeverTruncatesBelowHighWatermark(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n, epochs, log := followerOfEpoch3(rt, 8)
		fetchID := func(rd kraft.Ready) uint64 {
			fs := messagesOf[*kraft.FetchRequest](rd)
			if len(fs) != 1 {
				rt.Fatalf("Ready has %d fetches, want 1: %v", len(fs), rd.Messages)
			}
			return fs[0].RequestID
		}
		rd := n.Ready()
		advance(n, rd)
		answer := func(id uint64) *kraft.FetchResponse {
			return &kraft.FetchResponse{
				Header: kraft.Header{From: 1, To: 2, RequestID: id}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 3},
				HighWatermark: -1, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
			}
		}
		// The leader reports a high watermark within the log: it commits a
		// prefix.
		resp := answer(fetchID(rd))
		resp.HighWatermark = kraft.Offset(rapid.IntRange(1, len(epochs)).Draw(rt, "high watermark"))
		if err := n.Step(1, resp); err != nil {
			rt.Fatal(err)
		}
		rd = n.Ready()
		advance(n, rd)
		hw := n.Status().HighWatermark
		if hw != resp.HighWatermark {
			rt.Fatalf("high watermark %d after the leader reported %d", hw, resp.HighWatermark)
		}
		// Then it names any diverging epoch.
		resp = answer(fetchID(rd))
		resp.DivergingEpoch = kraft.OffsetAndEpoch{
			Offset: kraft.Offset(rapid.IntRange(0, len(epochs)+1).Draw(rt, "diverging offset")),
			Epoch:  kraft.Epoch(rapid.IntRange(0, 3).Draw(rt, "diverging epoch")),
		}
		if err := n.Step(2, resp); err != nil {
			rt.Fatal(err)
		}
		rd = n.Ready()
		if rd.TruncateTo >= 0 && rd.TruncateTo < hw {
			rt.Fatalf("C7: follower with high watermark %d truncates to %d on diverging epoch %v (log epochs %v)",
				hw, rd.TruncateTo, resp.DivergingEpoch, epochs)
		}
		if err := log.ApplyReady(rd); err != nil {
			rt.Fatal(err)
		}
		advance(n, rd)
		if st := n.Status(); st.HighWatermark > st.LogEndOffset {
			rt.Fatalf("C1: high watermark %d beyond the log end %d", st.HighWatermark, st.LogEndOffset)
		}
	})
}

// Invariant C4 (Raft §5.4.2, "figure 8";
// LeaderState.maybeUpdateHighWatermark): a new leader exposes no high
// watermark until an entry of its own epoch (its LeaderChange at the epoch
// start offset) is on a majority, even though every earlier entry already
// is. The old leader vanishes; whichever of
// the other two wins is checked after every delivery.
func TestNewLeaderCommitsOnlyPastEpochStart(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	for range 3 {
		c.handle++
		if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 2, Handle: c.handle}); err != nil {
			t.Fatal(err)
		}
		c.stabilize()
	}
	start := c.node(1).Status().LogEndOffset
	for _, id := range []kraft.NodeID{2, 3} {
		if st := c.node(id).Status(); st.LogEndOffset != start || st.HighWatermark != start {
			t.Fatalf("node %d: log end %d, high watermark %d; want both %d", id, st.LogEndOffset, st.HighWatermark, start)
		}
	}
	// Node 1 is gone: its followers' fetch timers expire.
	c.campaign(2)
	c.campaign(3)
	committed := false
	for step := 0; step < 5000 && !committed; step++ {
		c.readyAll()
		c.net = slices.DeleteFunc(c.net, func(m kraft.Message) bool {
			h := kraft.HeaderOf(m)
			return h.From == 1 || h.To == 1
		})
		if len(c.net) > 0 {
			c.deliver(0)
		} else {
			for _, id := range []kraft.NodeID{2, 3} {
				c.now[id-1] += 50
				c.node(id).Tick(c.now[id-1])
			}
		}
		for _, id := range []kraft.NodeID{2, 3} {
			st := c.node(id).Status()
			if st.Role != kraft.Leader {
				continue
			}
			if st.HighWatermark >= 0 && st.HighWatermark <= start {
				t.Fatalf("C4: leader %d of epoch %d sets high watermark %d, not above its epoch start offset %d",
					id, st.Epoch, st.HighWatermark, start)
			}
			committed = st.HighWatermark > start
		}
	}
	if !committed {
		t.Fatal("no new leader committed past its epoch start: the test shows nothing")
	}
}

// Invariant E4 (QuorumState.initialize): a replica
// whose durable state says it led an epoch restarts Resigned and never
// leads that epoch again: whatever it wrote before the crash may be lost,
// and a second leadership of the epoch could reuse an (offset, epoch) pair
// for other bytes. Its work is carried out like any other (the first Ready
// applied to its log), and it keeps refusing proposals in that epoch.
func TestRestartedLeaderNeverLeadsItsEpochAgain(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	c.handle++
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 2, Handle: c.handle}); err != nil {
		t.Fatal(err)
	}
	c.stabilize()
	epoch := c.node(1).Status().Epoch
	c.restart(1)
	for range 3 {
		c.readyAll()
		if st := c.node(1).Status(); st.Role == kraft.Leader && st.Epoch == epoch {
			t.Fatalf("E4: node 1 restarted with durable state %+v and is Leader of epoch %d again", c.states[0], epoch)
		}
		c.handle++
		if b, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Handle: c.handle}); err == nil && b.Epoch == epoch {
			t.Fatalf("E4: node 1 accepted a proposal in epoch %d after restarting: %v", epoch, b)
		}
	}
	if st := c.node(1).Status(); st.Role != kraft.Resigned || st.Epoch != epoch {
		t.Errorf("after restart node 1 is %v in epoch %d, want Resigned in %d", st.Role, st.Epoch, epoch)
	}
}

// Invariant E6 for a leader outside its voter set (KAFKA-16531;
// LeaderState.updateCheckQuorumForFollowingVoter): a leader that removed
// itself keeps leading until the removal commits, but its check-quorum
// counts only the voters of the new set, without itself. Here only node
// 2 of the set (2,3) fetches, which is not a majority of it: the leader
// must resign within a check-quorum timeout (1.5 × the 2 s fetch timeout).
func TestRemovedLeaderCheckQuorumCountsOnlyVoters(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	b, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Voters: keys(2, 3)})
	if err != nil {
		t.Fatal(err)
	}
	epoch := leader.Status().Epoch
	for elapsed := 0; elapsed <= 6000; elapsed += 50 {
		c.readyAll()
		c.net = slices.DeleteFunc(c.net, func(m kraft.Message) bool {
			h := kraft.HeaderOf(m)
			return h.From == 3 || h.To == 3
		})
		for len(c.net) > 0 {
			c.deliver(0)
			c.readyAll()
			c.net = slices.DeleteFunc(c.net, func(m kraft.Message) bool {
				h := kraft.HeaderOf(m)
				return h.From == 3 || h.To == 3
			})
		}
		if st := leader.Status(); st.Role != kraft.Leader || st.Epoch != epoch {
			if st.HighWatermark > b.BaseOffset {
				t.Fatalf("the removal at %d committed without node 3: high watermark %d", b.BaseOffset, st.HighWatermark)
			}
			return
		}
		for _, id := range []kraft.NodeID{1, 2} {
			c.now[id-1] += 50
			c.node(id).Tick(c.now[id-1])
		}
	}
	t.Fatalf("E6: leader 1, outside its voter set (2,3), heard only from node 2 for 6000ms and still leads epoch %d", epoch)
}

// Invariant G2 on what a follower appends (KAFKA-18723;
// KafkaRaftClient.handleFetchResponse): whatever batches a Fetch response
// carries, a follower appends only those that continue its log with an
// epoch between its last one and its current epoch. A correct leader never
// sends others, so only a corrupted or forged response can.
func TestFollowerAppendsOnlyBatchesWithinItsEpochs(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n, epochs, _ := followerOfEpoch3(rt, 6)
		rd := n.Ready()
		fs := messagesOf[*kraft.FetchRequest](rd)
		if len(fs) != 1 {
			rt.Fatalf("Ready has %d fetches, want 1: %v", len(fs), rd.Messages)
		}
		advance(n, rd)
		resp := &kraft.FetchResponse{
			Header: kraft.Header{From: 1, To: 2, RequestID: fs[0].RequestID}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 3},
			HighWatermark: -1, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
		}
		next := kraft.Offset(len(epochs))
		for i := range rapid.IntRange(1, 3).Draw(rt, "batches") {
			be := kraft.Epoch(rapid.IntRange(0, 6).Draw(rt, "batch epoch"))
			resp.Batches = append(resp.Batches, kraft.BatchInfo{
				BaseOffset: next + kraft.Offset(i), LastOffset: next + kraft.Offset(i), Epoch: be,
				KRaftVersion: -1, LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode},
			})
		}
		if err := n.Step(1, resp); err != nil {
			rt.Fatal(err)
		}
		rd = n.Ready()
		last := epochs[len(epochs)-1]
		for _, a := range rd.Appends {
			if a.Batch.Epoch > 3 || a.Batch.Epoch < last {
				rt.Fatalf("G2: follower in epoch 3 with last epoch %d appends %v (response batches %v)", last, a.Batch, resp.Batches)
			}
			last = a.Batch.Epoch
		}
	})
}

// Liveness L5 (KAFKA-17030; KafkaRaftClient.pollUnattachedAsObserver): an
// observer looks for the leader through its bootstrap servers, not
// through its own voter set, which may be stale: here its set (1,2,3) is
// gone, the leader is node 7, and only the bootstrap server 5 knows it.
func TestObserverFindsLeaderThroughBootstrapServers(t *testing.T) {
	cfg := config(4, keys(1, 2, 3), 1)
	cfg.BootstrapServers = []kraft.NodeID{5}
	n, err := kraft.NewNode(0, cfg, emptyState(), logWith())
	if err != nil {
		t.Fatal(err)
	}
	now := kraft.Instant(0)
	for range 50 {
		rd := n.Ready()
		advance(n, rd)
		for _, f := range messagesOf[*kraft.FetchRequest](rd) {
			if f.To != 5 {
				t.Fatalf("L5: observer 4 with the stale voter set (1,2,3) fetches from %d, not from its bootstrap server 5", f.To)
			}
			resp := &kraft.FetchResponse{
				Header: kraft.Header{From: 5, To: 4, RequestID: f.RequestID}, Error: kraft.CodeNotLeaderOrFollower,
				Leader: kraft.LeaderAndEpoch{LeaderID: 7, Epoch: 3}, HighWatermark: -1,
				DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
			}
			if err := n.Step(now, resp); err != nil {
				t.Fatal(err)
			}
		}
		if st := n.Status(); st.Role == kraft.Follower && st.Leader.LeaderID == 7 {
			return
		}
		now += 100
		n.Tick(now)
	}
	t.Fatalf("L5: observer 4 never found leader 7 through its bootstrap server: %+v", n.Status())
}

// followerOfEpoch3 draws a log of at most maxLen batches with epochs 1..3,
// non-decreasing, and returns node 2 as a follower of leader 1 in epoch 3
// over it, the epochs drawn and the log.
func followerOfEpoch3(rt *rapid.T, maxLen int) (*kraft.Node, []kraft.Epoch, *krafttest.MemLog) {
	var epochs []kraft.Epoch
	e := kraft.Epoch(1)
	for range rapid.IntRange(1, maxLen).Draw(rt, "log length") {
		e = min(3, e+kraft.Epoch(rapid.IntRange(0, 1).Draw(rt, "epoch step")))
		epochs = append(epochs, e)
	}
	log := logWith(epochs...)
	st := kraft.ElectionState{Epoch: 3, LeaderID: 1, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	n, err := kraft.NewNode(0, config(2, keys(1, 2, 3), 1), st, log)
	if err != nil {
		rt.Fatal(err)
	}
	return n, epochs, log
}
