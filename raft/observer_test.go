package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// TestObserversFollowAcrossLeaderKill: observers started with
// StartObserver follow a 3-node quorum that takes forwarded writes from
// them while its leader is killed, twice (the first leader is restarted
// before its successor is killed); each observer's leadership
// subscription reports the new leader, its ReadImage sees the last write,
// and once writes stop every observer holds the same image at the same
// offset as the voters.
func TestObserversFollowAcrossLeaderKill(t *testing.T) {
	followAcrossLeaderKill(t, 6)
}

// TestFiftyObserversFollowAcrossLeaderKill is the same with 50
// observers.
func TestFiftyObserversFollowAcrossLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("50 observers: skipped with -short")
	}
	followAcrossLeaderKill(t, 50)
}

func followAcrossLeaderKill(t *testing.T, n int) {
	c := newTestCluster(t, 3)
	first := c.leader()
	submit(t, c.node(first), metadataVersionRecord())

	observers := make([]*Observer, n)
	for i := range observers {
		cfg := ForTests(NodeID(100+i), t.TempDir())
		cfg.QuorumVoters = c.cfgs[0].QuorumVoters
		observers[i] = startTestObserver(t, cfg)
	}
	subs := make([]*LeadershipSubscription, n)
	for i, o := range observers {
		s, err := o.SubscribeLeadership(t.Context(), 64)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs[i] = s
	}

	// Writers submit through the observers, which forward to the leader.
	var committed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				o := observers[(w+i)%n]
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				_, err := o.SubmitChange(ctx, []metadata.Record{topicRecord(fmt.Sprintf("load-%d-%d", w, i))})
				cancel()
				switch {
				case err == nil:
					committed.Add(1)
				case errors.Is(err, ErrNotLeader), errors.Is(err, ErrLeaderUnknown), errors.Is(err, ErrOutcomeUnknown):
					time.Sleep(5 * time.Millisecond) // the quorum is electing; a name is never resubmitted
				default:
					t.Errorf("SubmitChange through observer %d: %v", 100+(w+i)%n, err)
					return
				}
			}
		})
	}
	waitFor(t, "40 writes through the observers", func() bool { return committed.Load() >= 40 })
	// Two kills: the first leader, then (once it is back) its successor.
	var epoch int32
	second := first
	for kill := range 2 {
		if kill > 0 {
			c.restart(first)
		}
		epoch = c.node(second).QuorumState().Epoch
		killed := second
		c.crash(killed)
		second = c.leader()
		target := committed.Load() + 40
		waitFor(t, fmt.Sprintf("40 more writes after killing node %d", killed), func() bool { return committed.Load() >= target })
	}
	close(stop)
	wg.Wait()

	for i, s := range subs {
		waitForLeadership(t, s, 100+i, second, epoch)
	}
	last := c.submitRetrying(topicRecord("last"))
	for i, o := range observers {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		img, err := o.ReadImage(ctx)
		cancel()
		if err != nil {
			t.Fatalf("observer %d: ReadImage: %v", 100+i, err)
		}
		if _, ok := img.Topics().ByName("last"); !ok || img.Offset() < last.LastOffset {
			t.Errorf("observer %d: ReadImage at offset %d (topic found %v), want the write at %d", 100+i, img.Offset(), ok, last.LastOffset)
		}
	}

	want := c.node(second).CurrentImage()
	wantRecords := snapshotBytes(t, want)
	waitFor(t, "every node at the leader's image offset", func() bool {
		for _, v := range c.nodes {
			if v != nil && v.CurrentImage().Offset() != want.Offset() {
				return false
			}
		}
		for _, o := range observers {
			if o.CurrentImage().Offset() != want.Offset() {
				return false
			}
		}
		return true
	})
	for id, v := range c.nodes {
		if v != nil && !bytes.Equal(snapshotBytes(t, v.CurrentImage()), wantRecords) {
			t.Errorf("voter %d: image at offset %d differs from the leader's", id+1, want.Offset())
		}
	}
	for i, o := range observers {
		if !bytes.Equal(snapshotBytes(t, o.CurrentImage()), wantRecords) {
			t.Errorf("observer %d: image at offset %d differs from the leader's", 100+i, want.Offset())
		}
		if st := o.QuorumState(); st.Role != RoleFollower || st.LeaderID != second {
			t.Errorf("observer %d: role %s following %d, want %s following %d", 100+i, st.Role, st.LeaderID, RoleFollower, second)
		}
	}
	d, err := c.node(second).DescribeQuorum(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Voters) != 3 || len(d.Observers) < n {
		t.Errorf("DescribeQuorum: %d voters and %d observers, want 3 and at least %d", len(d.Voters), len(d.Observers), n)
	}
	t.Logf("%d writes committed through %d observers; images equal at offset %d", committed.Load(), n, want.Offset())
}

// waitForLeadership reads s until it reports leader in an epoch after
// epoch.
func waitForLeadership(t *testing.T, s *LeadershipSubscription, id int, leader NodeID, epoch int32) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case l, ok := <-s.Changes():
			if !ok {
				t.Fatalf("observer %d: leadership subscription ended: %v", id, s.Err())
			}
			if l.LeaderID == leader && l.Epoch > epoch {
				return
			}
		case <-deadline.C:
			t.Fatalf("observer %d: no leadership change to node %d after epoch %d", id, leader, epoch)
		}
	}
}

// snapshotBytes returns the records a snapshot of img would hold, joined.
func snapshotBytes(t *testing.T, img *metadata.Image) []byte {
	t.Helper()
	var out []byte
	if err := img.AppendSnapshotRecords(func(v []byte) error {
		out = append(out, v...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStartObserverRefusesVoterIDAndAutoJoin: an observer's id must stay
// out of the static voter set, and it must not auto-join; both problems
// are reported at once.
func TestStartObserverRefusesVoterIDAndAutoJoin(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.AutoJoin = true
	_, err := StartObserver(t.Context(), cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("StartObserver with a voter's id: %v, want a *ConfigError", err)
	}
	for _, want := range []string{"must not be one of the voters", "never joins the voter set"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("StartObserver error %q lacks %q", err, want)
		}
	}
}

// TestObserverCatchesUpBySnapshot (KIP-630): an observer that starts
// after the leader compacted its log past offset 0 downloads the leader's
// snapshot with FetchSnapshot, installs it and follows the log from
// there, ending with the leader's image.
func TestObserverCatchesUpBySnapshot(t *testing.T) {
	c := newTestClusterWith(t, 3, "", snapshotConfig)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	var last SubmitResult
	for i := range 40 {
		var recs []metadata.Record
		for j := range 5 {
			recs = append(recs, topicRecord(fmt.Sprintf("topic-%d-%d", i, j)))
		}
		last = c.submitRetrying(recs...)
	}
	leader = c.leader()
	waitFor(t, "the leader to compact its log", func() bool {
		return c.node(leader).eng.log.LogStartOffset() > 0
	})

	cfg := ForTests(100, t.TempDir())
	cfg.QuorumVoters = c.cfgs[0].QuorumVoters
	o := startTestObserver(t, cfg)
	waitFor(t, "the observer to apply the last write", func() bool { return o.QuorumState().AppliedOffset > last.LastOffset })
	if start := o.c.eng.log.LogStartOffset(); start == 0 {
		t.Errorf("the observer caught up without a snapshot (its log starts at 0)")
	}
	want := c.node(leader).CurrentImage()
	waitFor(t, "the observer at the leader's image offset", func() bool { return o.CurrentImage().Offset() == want.Offset() })
	if !bytes.Equal(snapshotBytes(t, o.CurrentImage()), snapshotBytes(t, want)) {
		t.Errorf("the observer's image at offset %d differs from the leader's", want.Offset())
	}
	if got := o.CurrentImage().Topics().Len(); got != 200 {
		t.Errorf("the observer holds %d topics, want 200", got)
	}
}

// TestObserverOfDynamicQuorum: an observer of a dynamic quorum (KIP-853),
// formatted --no-initial-controllers, finds the leader through
// controller.quorum.bootstrap.servers, follows it across a leader kill
// and stays out of the voter set.
func TestObserverOfDynamicQuorum(t *testing.T) {
	c, lns := newDynamicCluster(t, 3, []NodeID{1, 2, 3}, nil)
	for id := NodeID(1); id <= 3; id++ {
		c.startNode(id, lns)
	}
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())

	cfg := ForTests(100, t.TempDir())
	cfg.QuorumVoters = nil
	cfg.QuorumBootstrapServers = c.cfgs[0].QuorumBootstrapServers
	formatDynamic(t, vfs.OS(), cfg, false, nil, time.Now())
	o := startTestObserver(t, cfg)
	first := submit(t, c.node(leader), topicRecord("before"))
	waitFor(t, "the observer to apply the first topic", func() bool { return o.QuorumState().AppliedOffset > first.LastOffset })

	c.crash(leader)
	res := c.submitRetrying(topicRecord("after"))
	// Until the observer learns the new leader its reads fail with a
	// condition the caller retries on, as documented.
	var img *metadata.Image
	waitFor(t, "a linearizable read on the observer", func() bool {
		var err error
		img, err = o.ReadImage(t.Context())
		if err != nil && !errors.Is(err, ErrLeaderUnknown) && !errors.Is(err, ErrNotLeader) {
			t.Fatalf("ReadImage: %v", err)
		}
		return err == nil
	})
	if _, ok := img.Topics().ByName("after"); !ok || img.Offset() < res.LastOffset {
		t.Errorf("the observer's ReadImage at offset %d lacks the write at %d", img.Offset(), res.LastOffset)
	}
	d, err := c.node(c.leader()).DescribeQuorum(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(d.Observers, func(r ReplicaState) bool { return r.ReplicaID == 100 }) || slices.ContainsFunc(d.Voters, func(r ReplicaState) bool { return r.ReplicaID == 100 }) {
		t.Errorf("DescribeQuorum: voters %+v, observers %+v; want node 100 among the observers only", d.Voters, d.Observers)
	}
}

// startTestObserver starts an observer with cfg and shuts it down when
// the test ends.
func startTestObserver(t *testing.T, cfg Config) *Observer {
	t.Helper()
	o, err := StartObserver(t.Context(), cfg)
	if err != nil {
		t.Fatalf("StartObserver %d: %v", cfg.NodeID, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Errorf("shutdown observer %d: %v", cfg.NodeID, err)
		}
	})
	return o
}
