package raft

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// healthOpts are the bounds of the health tests: a turn far above any
// turn of a test quorum, no lag, and a read bound far above a test
// quorum's read.
func healthOpts(exclude ...string) HealthOptions {
	return HealthOptions{MaxTurn: 5 * time.Second, MaxLag: 0, ReadTimeout: 5 * time.Second, Exclude: exclude}
}

// newHealthCluster is a quorum of n whose leader appends NoOpRecords
// every 100 ms, so that the committing check watches the high watermark.
func newHealthCluster(t *testing.T, n int) *testCluster {
	return newTestClusterWith(t, n, "", func(cfg *Config) { cfg.MaxIdleInterval = 100 * time.Millisecond })
}

// checkErr returns the error of the check called name in rs, and
// whether rs holds it.
func checkErr(rs []CheckResult, name string) (error, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r.Err, true
		}
	}
	return nil, false
}

// readyChecks runs n's readiness checks with opts.
func readyChecks(t *testing.T, n *Controller, opts HealthOptions) []CheckResult {
	t.Helper()
	rs, err := n.ReadyChecks(t.Context(), opts)
	if err != nil {
		t.Fatalf("ReadyChecks: %v", err)
	}
	return rs
}

// failedWith reports whether the check called name failed in rs with an
// error saying want.
func failedWith(rs []CheckResult, name, want string) bool {
	err, ok := checkErr(rs, name)
	return ok && err != nil && strings.Contains(err.Error(), want)
}

// TestReadyChecksOfAWorkingQuorum: every node of a working quorum passes
// every readiness check, in ReadyCheckNames's order; excluded checks are
// not run.
func TestReadyChecksOfAWorkingQuorum(t *testing.T) {
	c := newHealthCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	for id := NodeID(1); id <= 3; id++ {
		waitFor(t, "every node to be ready", func() bool { return c.node(id).Ready(t.Context(), healthOpts()) == nil })
		rs := readyChecks(t, c.node(id), healthOpts())
		var names []string
		for _, r := range rs {
			names = append(names, r.Name)
			if r.Err != nil {
				t.Errorf("node %d: %s failed: %v", id, r.Name, r.Err)
			}
		}
		if got, want := strings.Join(names, ","), strings.Join(ReadyCheckNames(), ","); got != want {
			t.Errorf("node %d ran %s, want %s", id, got, want)
		}
	}
	rs := readyChecks(t, c.node(leader), healthOpts(CheckLinearizableRead, CheckLeader))
	if len(rs) != len(ReadyCheckNames())-2 {
		t.Errorf("with two checks excluded: %v", rs)
	}
	for _, x := range []string{CheckLinearizableRead, CheckLeader} {
		if _, ok := checkErr(rs, x); ok {
			t.Errorf("excluded check %s ran", x)
		}
	}
}

// TestCaughtUpCheckOfALaggingFollower: a follower whose high watermark
// trails the leader's by more than the bound, and one that last caught
// up with the leader more than controller.quorum.fetch.timeout.ms ago
// (a partitioned follower), fail caught-up and pass the rest.
func TestCaughtUpCheckOfALaggingFollower(t *testing.T) {
	c := newHealthCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	f := c.follower(leader)
	n := c.node(f)
	waitFor(t, "the follower to be ready", func() bool { return n.Ready(t.Context(), healthOpts()) == nil })
	onEngine(t, n, func(e *engine) {
		// No Fetch answer can arrive while the engine runs this.
		hw := n.QuorumState().HighWatermark
		e.pub.health.leaderHW.Store(hw + 5)
		lag := healthOpts(CheckLinearizableRead)
		lag.MaxLag = 4
		rs := readyChecks(t, n, lag)
		if !failedWith(rs, CheckCaughtUp, "5 behind") {
			t.Errorf("follower 5 offsets behind with a bound of 4: %v, want caught-up failing 5 behind", rs)
		}
		lag.MaxLag = 5
		if err := n.Ready(t.Context(), lag); err != nil {
			t.Errorf("follower 5 offsets behind with a bound of 5: %v, want ready", err)
		}
		e.pub.health.leaderHW.Store(hw)

		e.pub.health.caughtUpAt.Store(e.clock.Now().Add(-2 * e.rc.core.FetchTimeout).UnixNano())
		rs = readyChecks(t, n, healthOpts(CheckLinearizableRead))
		if !failedWith(rs, CheckCaughtUp, "last caught up with leader") {
			t.Errorf("follower caught up two fetch timeouts ago: %v, want caught-up failing", rs)
		}
		for _, r := range rs {
			if r.Name != CheckCaughtUp && r.Err != nil {
				t.Errorf("follower caught up two fetch timeouts ago: %s failed: %v", r.Name, r.Err)
			}
		}
		if err := n.Ready(t.Context(), healthOpts(CheckLinearizableRead)); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), CheckCaughtUp+": ") {
			t.Errorf("Ready = %v, want ErrNotReady naming %s", err, CheckCaughtUp)
		}
	})
	waitFor(t, "the follower to catch up again", func() bool { return n.Ready(t.Context(), healthOpts()) == nil })
}

// TestReadyChecksWithoutALeader: the node left alone of a three-node
// quorum comes to know no leader: leader, caught-up and
// linearizable-read fail, while it stays live.
func TestReadyChecksWithoutALeader(t *testing.T) {
	c := newHealthCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	last := c.follower(leader)
	for id := NodeID(1); id <= 3; id++ {
		if id != last {
			c.stop(id)
		}
	}
	n := c.node(last)
	opts := healthOpts()
	opts.ReadTimeout = time.Second
	var rs []CheckResult
	waitFor(t, "the node left alone to know no leader", func() bool {
		rs = readyChecks(t, n, opts)
		return failedWith(rs, CheckLeader, "no leader known")
	})
	if !failedWith(rs, CheckCaughtUp, "no leader known") {
		t.Errorf("caught-up without a leader: %v", rs)
	}
	if err, _ := checkErr(rs, CheckLinearizableRead); err == nil {
		t.Errorf("linearizable-read passed without a leader")
	}
	if err := n.Live(time.Second); err != nil {
		t.Errorf("the node left alone is not live: %v", err)
	}
}

// TestReadyChecksOfALeaderAlone: a leader whose followers are gone fails
// committing or linearizable-read: its high watermark no longer moves
// and it cannot confirm its leadership, until it loses it.
func TestReadyChecksOfALeaderAlone(t *testing.T) {
	c := newHealthCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	waitFor(t, "the leader to be ready", func() bool { return c.node(leader).Ready(t.Context(), healthOpts()) == nil })
	for id := NodeID(1); id <= 3; id++ {
		if id != leader {
			c.stop(id)
		}
	}
	opts := healthOpts()
	opts.ReadTimeout = 200 * time.Millisecond
	waitFor(t, "the lone leader's linearizable read to fail", func() bool {
		err, _ := checkErr(readyChecks(t, c.node(leader), opts), CheckLinearizableRead)
		return err != nil
	})
}

// TestLinearizableReadCheckSharesOneRead: while a read is in flight,
// concurrent readiness probes wait for it and take its result instead of
// starting their own (a scrape storm costs the quorum one read).
func TestLinearizableReadCheckSharesOneRead(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.node(c.leader())
	submit(t, n, metadataVersionRecord())
	only := healthOpts(CheckEngineLoop, CheckFatalFault, CheckLeader, CheckCaughtUp, CheckCommitting)
	// Far above the time the probes take to join: the read in flight
	// must not end before they all wait for it.
	only.ReadTimeout = time.Minute
	if rs := readyChecks(t, n, only); len(rs) != 1 || rs[0].Name != CheckLinearizableRead || rs[0].Err != nil {
		t.Fatalf("linearizable-read alone: %v", rs)
	}
	started, shared := n.probes.started.Load(), n.probes.shared.Load()

	release := holdEngine(t, n)
	const probes = 8
	results := make([][]CheckResult, probes)
	errs := make([]error, probes)
	var wg sync.WaitGroup
	for i := range probes {
		wg.Go(func() { results[i], errs[i] = n.ReadyChecks(t.Context(), only) })
	}
	waitFor(t, "every probe but one to wait for the read in flight", func() bool {
		return n.probes.shared.Load()-shared == probes-1
	})
	release()
	wg.Wait()
	if got := n.probes.started.Load() - started; got != 1 {
		t.Errorf("%d concurrent probes started %d reads, want 1", probes, got)
	}
	for i, rs := range results {
		if errs[i] != nil || len(rs) != 1 || rs[0].Err != nil {
			t.Errorf("probe %d: %v, %v", i, rs, errs[i])
		}
	}
}

// TestHealthOptionsAreChecked: bounds out of range and an excluded name
// that is not a check are refused, every problem named.
func TestHealthOptionsAreChecked(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.node(c.leader())
	bad := HealthOptions{MaxTurn: 0, MaxLag: -1, ReadTimeout: -time.Second, Exclude: []string{"leader", "nope"}}
	_, err := n.ReadyChecks(t.Context(), bad)
	for _, want := range []string{"MaxTurn (0s) must be positive", "MaxLag (-1) must not be negative", "ReadTimeout (-1s) must be positive", `unknown health check "nope"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadyChecks(%+v) = %v, want an error saying %s", bad, err, want)
		}
	}
	if !errors.Is(err, ErrUnknownCheck) {
		t.Errorf("ReadyChecks error %v does not match ErrUnknownCheck", err)
	}
	if _, err := n.LiveChecks(healthOpts(CheckLeader)); !errors.Is(err, ErrUnknownCheck) {
		t.Errorf("LiveChecks excluding %s (a readiness check): %v, want ErrUnknownCheck", CheckLeader, err)
	}
}

// TestLiveEngine: the engine is live while it waits for input, not live
// while one turn runs past the bound, and not live once it stopped.
func TestLiveEngine(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.node(c.leader())
	if err := n.Live(time.Second); err != nil {
		t.Fatalf("idle engine: %v", err)
	}
	release := holdEngine(t, n)
	waitFor(t, "the stuck engine to be not live", func() bool { return errors.Is(n.Live(20*time.Millisecond), ErrNotLive) })
	stuck := healthOpts(CheckLinearizableRead)
	stuck.MaxTurn = 20 * time.Millisecond
	if err := n.Ready(t.Context(), stuck); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), CheckEngineLoop+": the engine has been in one turn") {
		t.Errorf("Ready of a stuck engine: %v, want ErrNotReady naming %s", err, CheckEngineLoop)
	}
	release()
	waitFor(t, "the engine to be live again", func() bool { return n.Live(20*time.Millisecond) == nil })
	c.stop(c.leader())
	rs, err := n.LiveChecks(healthOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !failedWith(rs, CheckEngineLoop, "the engine stopped") {
		t.Errorf("stopped engine: %v, want engine-loop failing", rs)
	}
	if err, _ := checkErr(rs, CheckFatalFault); err != nil {
		t.Errorf("a clean stop is no fatal fault: %v", err)
	}
	if err := n.Live(time.Second); !errors.Is(err, ErrNotLive) {
		t.Errorf("stopped engine: %v, want ErrNotLive", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err, _ := checkErr(readyChecks(t, n, healthOpts()), CheckLinearizableRead); !errors.Is(err, ErrShuttingDown) || ctx.Err() != nil {
		t.Errorf("linearizable-read of a stopped node: %v, want ErrShuttingDown at once", err)
	}
}

// holdEngine keeps n's engine in one turn until the returned release is
// called, or the test ends (so that a failing test still shuts down).
func holdEngine(t *testing.T, n *Controller) (release func()) {
	t.Helper()
	held := make(chan struct{})
	entered := make(chan struct{})
	if err := n.enqueue(t.Context(), event{call: func(*engine) { close(entered); <-held }}); err != nil {
		t.Fatal(err)
	}
	<-entered
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	return release
}
