package raft

import (
	"errors"
	"testing"
)

// nextLeadership reads the next value of s, failing the test if none
// comes within the deadline or the subscription ends.
func nextLeadership(t *testing.T, s *LeadershipSubscription) Leadership {
	t.Helper()
	return receive(t, s.Changes(), s.Err, "a leadership change")
}

// TestSubscribeLeadershipAcrossKills: a leadership subscription on every
// node starts with the leadership the node knows, then follows each
// change in order: epochs never go back, no value repeats the one before
// it, and every node that survives a leader's crash sees the new leader
// of a later epoch, the last value agreeing with QuorumState.
func TestSubscribeLeadershipAcrossKills(t *testing.T) {
	c := newTestCluster(t, 3)
	first := c.leader()
	subs := map[NodeID]*LeadershipSubscription{}
	for id := NodeID(1); id <= 3; id++ {
		before := c.node(id).QuorumState()
		s, err := c.node(id).SubscribeLeadership(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		got := nextLeadership(t, s)
		after := c.node(id).QuorumState()
		if (got != Leadership{Epoch: before.Epoch, LeaderID: before.LeaderID}) && (got != Leadership{Epoch: after.Epoch, LeaderID: after.LeaderID}) {
			t.Fatalf("node %d: first value %+v, want the leadership current at Subscribe (%d in epoch %d)", id, got, before.LeaderID, before.Epoch)
		}
		subs[id] = s
		if id == first && got.LeaderID != first {
			t.Errorf("leader %d: first value %+v does not name itself", id, got)
		}
	}
	last := map[NodeID]Leadership{}
	for id := range subs {
		q := c.node(id).QuorumState()
		last[id] = Leadership{Epoch: q.Epoch, LeaderID: q.LeaderID}
	}
	leader := first
	for round := range 2 {
		epoch := c.node(leader).QuorumState().Epoch
		c.crash(leader)
		var next NodeID
		waitFor(t, "a new leader", func() bool { next = c.newLeaderAfter(epoch); return next != 0 })
		for id, s := range subs {
			if id == leader {
				continue
			}
			for {
				l := nextLeadership(t, s)
				if l.Epoch < last[id].Epoch || l == last[id] {
					t.Fatalf("round %d, node %d: %+v after %+v", round, id, l, last[id])
				}
				last[id] = l
				if l.Epoch > epoch && l.LeaderID != -1 {
					break
				}
			}
			if q := c.node(id).QuorumState(); q.LeaderID != last[id].LeaderID && q.Epoch == last[id].Epoch {
				t.Errorf("round %d, node %d: last value %+v, QuorumState leader %d in epoch %d", round, id, last[id], q.LeaderID, q.Epoch)
			}
		}
		// The crashed node's subscription ended with the controller.
		if err := subs[leader].Err(); !errors.Is(err, ErrShuttingDown) {
			t.Errorf("round %d: the crashed leader's subscription ended with %v, want ErrShuttingDown", round, err)
		}
		delete(subs, leader)
		c.restart(leader)
		s, err := c.node(leader).SubscribeLeadership(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		last[leader] = nextLeadership(t, s)
		subs[leader] = s
		leader = next
	}
}

// TestSubscribeLeadershipCutsOffSlowReader: a leadership subscriber that
// reads nothing while more changes come than its buffer holds ends with
// ErrSlowSubscriber, after the values it did queue, in order.
func TestSubscribeLeadershipCutsOffSlowReader(t *testing.T) {
	var f feed[Leadership]
	var cur Leadership
	slow, err := f.open(t.Context(), 2, func() Leadership { return cur })
	if err != nil {
		t.Fatal(err)
	}
	for e := int32(1); e <= 3; e++ {
		f.publish(Leadership{Epoch: e, LeaderID: 1}, func(l Leadership) { cur = l })
	}
	if err := slow.Err(); !errors.Is(err, ErrSlowSubscriber) {
		t.Fatalf("Err() = %v, want ErrSlowSubscriber", err)
	}
	var got []int32
	for l := range slow.c {
		got = append(got, l.Epoch)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Errorf("queued epochs %v, want [0 1]: the first value, then the changes that fit", got)
	}
	fresh, err := f.open(t.Context(), 0, func() Leadership { return cur })
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if l := <-fresh.c; l.Epoch != 3 {
		t.Errorf("a fresh subscription starts at epoch %d, want 3", l.Epoch)
	}
}
