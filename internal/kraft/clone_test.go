package kraft_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

func (c *cluster) fingerprints() []uint64 {
	fs := make([]uint64, len(c.nodes))
	for i, n := range c.nodes {
		fs[i] = n.Fingerprint()
	}
	return fs
}

// A clone, bound to a copy of the log, evolves exactly like the original
// under the same inputs: same fingerprints after every step, same logs and
// durable states at the end. Work is outstanding in the node buffers and
// the network at the moment of the clone.
func TestCloneEvolvesIdentically(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			a := newCluster(t, 3, 1, seed)
			src := rand.NewPCG(seed, 99)
			r := rand.New(src)
			for range 200 {
				a.randomStep(r)
			}
			b := a.clone()
			srcB := *src
			rb := rand.New(&srcB)
			if fmt.Sprint(a.fingerprints()) != fmt.Sprint(b.fingerprints()) {
				t.Fatal("fingerprints differ right after Clone")
			}
			for i := range 300 {
				a.randomStep(r)
				b.randomStep(rb)
				if fa, fb := a.fingerprints(), b.fingerprints(); fmt.Sprint(fa) != fmt.Sprint(fb) {
					t.Fatalf("step %d: fingerprints %v != %v", i, fa, fb)
				}
			}
			for i := range a.nodes {
				if a.logs[i].String() != b.logs[i].String() || a.states[i] != b.states[i] {
					t.Errorf("node %d: logs or states differ", i+1)
				}
			}
		})
	}
}

// Equal states give equal fingerprints; a changed state changes it; a
// clone shares nothing with the original.
func TestFingerprint(t *testing.T) {
	a := newCluster(t, 3, 0, 4)
	b := newCluster(t, 3, 0, 4)
	if fmt.Sprint(a.fingerprints()) != fmt.Sprint(b.fingerprints()) {
		t.Fatal("two clusters built alike have different fingerprints")
	}
	a.elect(1)
	b.elect(1)
	if fmt.Sprint(a.fingerprints()) != fmt.Sprint(b.fingerprints()) {
		t.Fatal("two clusters driven alike have different fingerprints")
	}
	before := a.node(1).Fingerprint()
	clone := a.node(1).Clone(a.logs[0].Clone())
	if _, err := clone.Propose(a.now[0], kraft.Proposal{Records: 1, Handle: 1}); err != nil {
		t.Fatal(err)
	}
	if clone.Fingerprint() == before {
		t.Error("a proposal did not change the clone's fingerprint")
	}
	if a.node(1).Fingerprint() != before {
		t.Error("changing the clone changed the original")
	}
}

// Random schedules (delivery order, drops, duplicates, ticks, proposals,
// crashes) never break the safety invariants of docs/reliability.md: at
// most one leader per epoch (E1), high watermarks never move backwards
// within a process lifetime (C2), and committed prefixes agree (C5).
func TestRandomSchedulesKeepSafety(t *testing.T) {
	forEachShape(t, 15, randomSchedule)
}

// forEachShape runs schedule as a subtest for every cluster shape (voters,
// observers) and seeds 0..seeds-1.
func forEachShape(t *testing.T, seeds uint64, schedule func(t *testing.T, voters, observers int, seed uint64)) {
	shapes := []struct{ voters, observers int }{{3, 1}, {5, 0}, {2, 0}, {1, 1}}
	for _, shape := range shapes {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%d voters %d observers seed %d", shape.voters, shape.observers, seed), func(t *testing.T) {
				schedule(t, shape.voters, shape.observers, seed)
			})
		}
	}
}

func randomSchedule(t *testing.T, voters, observers int, seed uint64) {
	c := newCluster(t, voters, observers, seed)
	r := rand.New(rand.NewPCG(seed, 7))
	leaders := map[kraft.Epoch]kraft.NodeID{}
	lastHW := make([]kraft.Offset, len(c.nodes))
	committed := map[kraft.Offset]kraft.Epoch{}
	for step := range 3000 {
		if r.IntN(100) == 0 {
			// A crash: the node restarts from its durable state.
			id := kraft.NodeID(r.IntN(len(c.nodes)) + 1)
			c.restart(id)
			lastHW[id-1] = -1 // a restarted process relearns its high watermark
		}
		c.randomStep(r)
		for i, n := range c.nodes {
			st := n.Status()
			if st.Role == kraft.Leader {
				if l, ok := leaders[st.Epoch]; ok && l != st.ID {
					t.Fatalf("step %d: two leaders in epoch %d: %d and %d", step, st.Epoch, l, st.ID)
				}
				leaders[st.Epoch] = st.ID
				// C6 leader completeness: a leader holds every committed offset.
				for o := range committed {
					if o >= c.logs[i].Start && o >= c.logs[i].EndOffset() {
						t.Fatalf("step %d: leader %d (end offset %d) lacks committed offset %d", step, st.ID, c.logs[i].EndOffset(), o)
					}
				}
			}
			if st.HighWatermark >= 0 && st.HighWatermark < lastHW[i] {
				t.Fatalf("step %d: node %d high watermark %d < %d", step, st.ID, st.HighWatermark, lastHW[i])
			}
			lastHW[i] = max(lastHW[i], st.HighWatermark)
			// Only what is durable and below the HW counts as committed.
			hw := min(st.HighWatermark, c.logs[i].EndOffset())
			for _, b := range c.logs[i].Batches {
				for o := b.BaseOffset; o <= b.LastOffset && o < hw; o++ {
					if e, ok := committed[o]; ok && e != b.Epoch {
						t.Fatalf("step %d: node %d has offset %d in epoch %d, committed in epoch %d", step, st.ID, o, b.Epoch, e)
					}
					committed[o] = b.Epoch
				}
			}
		}
	}
	// Liveness (L1, L3 in docs/reliability.md): once faults stop, a leader
	// emerges and every replica catches up to it.
	if !c.converge(300) {
		for _, n := range c.nodes {
			t.Logf("%+v", n.Status())
		}
		t.Fatal("the cluster did not converge after the faults stopped")
	}
	// Anti-vacuity: the run must have elected a leader and committed
	// entries, or it tested nothing.
	if len(leaders) < 1 || len(committed) < 5 {
		t.Errorf("%d epochs with a leader, %d committed offsets: the schedule tests too little", len(leaders), len(committed))
	}
	changes := 0
	for _, l := range c.logs {
		changes = max(changes, len(l.VoterHistory()))
	}
	t.Logf("%d epochs with a leader, %d committed offsets, %d voter-set records", len(leaders), len(committed), changes)
}

// A clone's queued messages are its own: the runtime of one copy filling
// a message in (as it does for Fetch responses) must not show in the other.
func TestCloneMessagesAreIndependent(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.campaign(1) // queues pre-votes
	orig := c.node(1)
	clone := orig.Clone(c.logs[0].Clone())
	a, b := orig.Ready(), clone.Ready()
	if len(a.Messages) == 0 || len(a.Messages) != len(b.Messages) {
		t.Fatalf("messages: %d and %d", len(a.Messages), len(b.Messages))
	}
	a.Messages[0].(*kraft.VoteRequest).LastOffset = 99
	if got := b.Messages[0].(*kraft.VoteRequest).LastOffset; got == 99 {
		t.Error("changing the original's message changed the clone's")
	}
}
