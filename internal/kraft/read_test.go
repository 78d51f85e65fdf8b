package kraft_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Random schedules (delivery order, drops, duplicates, ticks, proposals,
// crashes) with reads registered on whichever node leads: every confirmed
// read's offset covers everything committed anywhere in the cluster when the
// read was registered (linearizability, K5 in docs/reliability.md), and every
// read resolves at most once.
func TestRandomSchedulesReadsAreLinearizable(t *testing.T) {
	forEachShape(t, 10, readSchedule)
}

func readSchedule(t *testing.T, voters, observers int, seed uint64) {
	c := newCluster(t, voters, observers, seed)
	r := rand.New(rand.NewPCG(seed, 11))
	// committedEnd is the end of the longest prefix any node has seen
	// committed (durable and below its high watermark).
	committedEnd := func() kraft.Offset {
		end := kraft.Offset(0)
		for i, n := range c.nodes {
			end = max(end, min(n.Status().HighWatermark, c.logs[i].EndOffset()))
		}
		return end
	}
	floor := map[kraft.ReadID]kraft.Offset{} // committed end at registration
	resolved := map[kraft.ReadID]bool{}
	next := kraft.ReadID(0)
	confirmed, failed := 0, 0
	check := func(step int) {
		for _, res := range c.reads {
			if resolved[res.ID] {
				t.Fatalf("step %d: read %d resolved twice", step, res.ID)
			}
			resolved[res.ID] = true
			if res.Offset < 0 {
				failed++
				if !errors.Is(res.Err(), kraft.ErrNotLeader) {
					t.Fatalf("step %d: failed read %d: error %v is not ErrNotLeader", step, res.ID, res.Err())
				}
				continue
			}
			confirmed++
			if res.Offset < floor[res.ID] {
				t.Fatalf("step %d: K5: read %d confirmed at offset %d, but offsets below %d were committed before it was registered",
					step, res.ID, res.Offset, floor[res.ID])
			}
		}
		c.reads = nil
	}
	// Windows of a few hundred steps cut one node off: a leader that
	// keeps leading in its own view while the others move on is what a
	// read must not be fooled by.
	isolated := kraft.NoNode
	for step := range 3000 {
		if r.IntN(150) == 0 {
			id := kraft.NodeID(r.IntN(len(c.nodes)) + 1)
			c.restart(id)
		}
		if step%300 == 0 {
			isolated = kraft.NoNode
			if r.IntN(2) == 0 {
				isolated = kraft.NodeID(r.IntN(len(c.nodes)) + 1)
			}
		}
		if isolated != kraft.NoNode {
			c.net = slices.DeleteFunc(c.net, func(m kraft.Message) bool {
				h := kraft.HeaderOf(m)
				return h.From == isolated || h.To == isolated
			})
		}
		if r.IntN(8) == 0 {
			for i, n := range c.nodes {
				if n.Status().Role != kraft.Leader || n.HasReady() {
					continue
				}
				next++
				floor[next] = committedEnd()
				if err := n.ReadIndex(c.now[i], next); err != nil {
					t.Fatalf("step %d: ReadIndex on leader %d: %v", step, i+1, err)
				}
			}
		}
		c.randomStep(r)
		check(step)
	}
	if !c.converge(300) {
		t.Fatal("the cluster did not converge after the faults stopped")
	}
	check(-1)
	if confirmed == 0 {
		t.Errorf("%d reads registered, none confirmed: the schedule tests too little", next)
	}
	t.Logf("%d reads registered, %d confirmed, %d failed", next, confirmed, failed)
}

// The leader of a quorum of three confirms a read only after fetches from
// a majority that its own post-read answers triggered; the fetches that
// were in flight when the read was registered do not count, even when
// they arrive after it.
func TestReadNotConfirmedByInFlightFetches(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	// Let the parked fetches expire so that the followers fetch again:
	// those fetches are in flight when the read is registered.
	c.now[0] += 500
	leader.Tick(c.now[0])
	c.readyAll() // the leader answers the expired fetches
	for len(c.net) > 0 {
		c.deliver(0)
	}
	c.readyAll() // the followers send their next fetches
	if n := len(c.net); n != 2 {
		t.Fatalf("%d messages in flight, want the two followers' fetches", n)
	}
	if err := leader.ReadIndex(c.now[0], 1); err != nil {
		t.Fatal(err)
	}
	for len(c.net) > 0 {
		c.deliver(0) // the in-flight fetches arrive after the read
	}
	rd := c.ready(1)
	if len(rd.Reads) != 0 {
		t.Fatalf("read confirmed by fetches sent before it: %v", rd.Reads)
	}
	if got := len(messagesOf[*kraft.FetchResponse](rd)); got != 2 {
		t.Fatalf("the leader answered %d of the in-flight fetches at once, want 2 (not parked while a read waits)", got)
	}
	c.stabilize()
	if len(c.reads) != 1 || c.reads[0].ID != 1 || c.reads[0].Offset != 1 {
		t.Fatalf("reads = %v, want read 1 confirmed at offset 1", c.reads)
	}
}

// ReadIndex refuses on a follower (naming the leader), while a Ready is
// outstanding, and on a leader that is shutting down; resigning fails the
// pending reads.
func TestReadIndexRefusals(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	var nl *kraft.NotLeaderError
	if err := c.node(2).ReadIndex(c.now[1], 1); !errors.As(err, &nl) || nl.Leader.LeaderID != 1 {
		t.Fatalf("ReadIndex on a follower = %v, want NotLeaderError naming leader 1", err)
	}
	leader := c.node(1)
	if err := leader.ReadIndex(c.now[0], 2); err != nil {
		t.Fatal(err)
	}
	rd := leader.Ready()
	if err := leader.ReadIndex(c.now[0], 3); !errors.Is(err, kraft.ErrReadyOutstanding) {
		t.Fatalf("ReadIndex with a Ready outstanding = %v, want ErrReadyOutstanding", err)
	}
	advance(leader, rd)
	c.net = nil // the round's answers are lost
	leader.Resign(c.now[0])
	rd = c.ready(1)
	if len(rd.Reads) != 1 || rd.Reads[0].ID != 2 || rd.Reads[0].Offset != -1 || rd.Reads[0].Leader.LeaderID != kraft.NoNode {
		t.Fatalf("reads after resigning = %v, want read 2 failed with no leader known", rd.Reads)
	}
	if err := leader.ReadIndex(c.now[0], 4); !errors.Is(err, kraft.ErrNotLeader) {
		t.Fatalf("ReadIndex after resigning = %v, want ErrNotLeader", err)
	}
}
