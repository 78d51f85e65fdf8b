package sim

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	flagSeed  = flag.Uint64("seed", 0, "run only this seed (TestSim)")
	flagSeeds = flag.Int("seeds", 0, "number of seeds for TestSim (default: the CI size)")
	flagFirst = flag.Uint64("first-seed", 1, "first seed of a TestSim campaign")
	flagSteps = flag.Int("steps", 0, "events per seed in the fault phase (default: the CI size)")
	flagGrep  = flag.String("grep", "", "TestDebugSeed: print only trace lines containing this")
)

// The CI size of TestSim: seeds and fault-phase events per seed.
const (
	ciSeeds = 500
	ciSteps = 1500
)

// optionsFor derives a run's shape from its seed: 3 or 5 voters, 0 to 2
// observers, memory or disk mode, a swarm fault mix, and for a quarter of
// the seeds snapshots and retention.
func optionsFor(seed uint64, steps int) Options {
	r := rand.New(rand.NewPCG(seed, 0xC0FFEE))
	o := Options{Seed: seed, Voters: []int{3, 5}[r.IntN(2)], Observers: r.IntN(3), Steps: steps, Disk: r.IntN(2) == 0}
	o.Snapshots = r.IntN(4) == 0
	return o
}

// TestSim runs the seed campaign: -seed=N replays one seed, -seeds and
// -steps size a long campaign.
func TestSim(t *testing.T) {
	steps := ciSteps
	if *flagSteps > 0 {
		steps = *flagSteps
	}
	var seeds []uint64
	if *flagSeed != 0 {
		seeds = []uint64{*flagSeed}
	} else {
		n := ciSeeds
		if *flagSeeds > 0 {
			n = *flagSeeds
		}
		if testing.Short() {
			n /= 10
		}
		for i := range n {
			seeds = append(seeds, *flagFirst+uint64(i))
		}
	}
	var total Witness
	var events int
	var ttl, ttc []int
	var virtual int64
	start := time.Now()
	for _, s := range seeds {
		res := Run(t, optionsFor(s, steps))
		total.Add(res.Witness)
		events += res.Steps
		virtual += int64(res.VirtualTime)
		ttl = append(ttl, int(res.TimeToLeader))
		ttc = append(ttc, int(res.TimeToCommit))
		if t.Failed() {
			break
		}
	}
	el := time.Since(start)
	t.Logf("%d seeds × %d fault-phase steps: %d events in %v (%.1f seeds/s, %.0f events/s)",
		len(seeds), steps, events, el.Round(time.Millisecond), float64(len(seeds))/el.Seconds(), float64(events)/el.Seconds())
	t.Logf("virtual time: %.1f h in all, %.1f s per seed", float64(virtual)/3.6e6, float64(virtual)/1e3/float64(len(seeds)))
	t.Logf("after heal: time to leader p50=%dms p99=%dms max=%dms; time to commit p50=%dms p99=%dms max=%dms",
		pct(ttl, 50), pct(ttl, 99), pct(ttl, 100), pct(ttc, 50), pct(ttc, 99), pct(ttc, 100))
	t.Logf("witness: %s", total)
	if len(seeds) >= 200 && !t.Failed() {
		checkWitness(t, total)
	}
}

// pct returns the p-th percentile of xs (p = 100: the maximum).
func pct(xs []int, p int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[min(len(s)-1, len(s)*p/100)]
}

// checkWitness fails t if a campaign left a fault kind or an event the
// invariants depend on unexercised: a simulator that silently stopped
// injecting a fault would otherwise keep passing.
func checkWitness(t *testing.T, w Witness) {
	t.Helper()
	for _, c := range []struct {
		name string
		n    int
	}{
		{"leader changes", w.LeaderChanges}, {"elections", w.Elections}, {"pre-votes", w.PreVotes},
		{"resignations", w.Resignations}, {"truncations", w.Truncations}, {"voter changes", w.VoterChanges},
		{"crashes", w.Crashes}, {"restarts", w.Restarts}, {"torn tails", w.TornTails},
		{"unsynced writes lost", w.UnsyncedLost}, {"a leader's sent entries lost before its fsync", w.LostAfterSend},
		{"background fsyncs", w.BackgroundSyncs}, {"advanced appends lost before their background fsync", w.LostBeforeLogSynced}, {"disk fail-stops", w.DiskFaults}, {"messages dropped", w.Dropped}, {"messages duplicated", w.Duplicated},
		{"partition drops", w.PartitionDrops}, {"partitions", w.Partitions}, {"one-way partitions", w.OneWayPartitions},
		{"leader isolations", w.LeaderIsolations}, {"isolated nodes", w.Isolations}, {"heals", w.Heals}, {"acknowledged proposals", w.Acked},
		{"resets of a down leader's connection", w.GenuineResets}, {"resets of a live leader's connection", w.SpuriousResets},
		{"snapshots", w.Snapshots}, {"snapshot installs", w.SnapshotInstalls}, {"snapshot chunks", w.SnapshotChunks},
		{"restarted snapshot downloads", w.SnapshotRestarts}, {"log start advances", w.LogStartAdvances}, {"wiped observers", w.Wipes},
		{"log store start moves (disk mode)", w.StoreStartMoves}, {"leaders removing themselves", w.SelfRemovals},
	} {
		if c.n == 0 {
			t.Errorf("the campaign never exercised %s", c.name)
		}
	}
}

// Running a seed twice gives the same trace, event for event.
func TestDeterminism(t *testing.T) {
	for s := uint64(1); s <= 20; s++ {
		o := optionsFor(s, 800)
		o.KeepTrace = true
		a, b := Simulate(o), Simulate(o)
		if a.TraceHash != b.TraceHash || len(a.Trace) != len(b.Trace) {
			t.Fatalf("seed %d: trace hashes %x and %x, %d and %d events", s, a.TraceHash, b.TraceHash, len(a.Trace), len(b.Trace))
		}
		for i := range a.Trace {
			if a.Trace[i] != b.Trace[i] {
				t.Fatalf("seed %d: event %d differs:\n  %s\n  %s", s, i, a.Trace[i], b.Trace[i])
			}
		}
	}
	// Different seeds give different runs.
	if Simulate(optionsFor(1, 300)).TraceHash == Simulate(optionsFor(2, 300)).TraceHash {
		t.Error("seeds 1 and 2 give the same trace")
	}
}

// The checker catches a runtime that breaks the durability contract: each
// mutation must be caught, by one of the invariants that guard it, within
// a few hundred seeds.
func TestMutationsCaught(t *testing.T) {
	crashy := Faults{Drop: 0.05, DelayMax: 20, Partition: 1, IsolateLeader: 1, Crash: 4, NemesisEvery: 300, ProposeEvery: 20}
	for _, tc := range []struct {
		name  string
		mut   mutation
		snaps bool
		want  []string
	}{
		// A lost epoch also shows as an isolated node whose epoch rises when
		// it restarts and reads the later epoch from its log (L4).
		{"vote not durable (Z3)", mutVoteNotDurable, false, []string{invDurableVote, invElectionSafety, invEpochMonotonic, invNoDisruption}},
		{"append not durable (Z1, Z2)", mutAppendNotDurable, false, []string{invDurableMajority, invCommitted, invLogMatching, invLeaderComplete, invAcked, invNoTruncateCommit, invHWMonotonic}},
		// The same, but only for a leader whose messages left before its
		// fsync: its followers hold the entries it loses.
		{"leader counts its appends before the fsync (Z1)", mutLeaderCountsUnsynced, false, []string{invDurableMajority, invCommitted, invLogMatching, invLeaderComplete, invAcked, invNoTruncateCommit, invHWMonotonic}},
		{"snapshot of uncommitted batches", mutSnapshotUncommitted, true, []string{invSnapshotValid, invSnapshotContent}},
		{"log start past the oldest snapshot", mutRetentionPastSnapshot, true, []string{invLogStartCovered}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for s := uint64(1); s <= 400; s++ {
				res := Simulate(Options{Seed: s, Voters: 3, Observers: 1, Steps: 1500, Faults: &crashy, Snapshots: tc.snaps, mutation: tc.mut})
				if res.Err == nil {
					continue
				}
				var v *Violation
				if !errors.As(res.Err, &v) || !slices.Contains(tc.want, v.Invariant) {
					t.Fatalf("seed %d: %v; want a violation of one of %v", s, res.Err, tc.want)
				}
				t.Logf("caught at seed %d: %v", s, v)
				return
			}
			t.Fatalf("not caught in 400 seeds")
		})
	}
}

// recorder is a testing.TB that keeps the failure message instead of
// failing.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// A failure names the invariant and prints the command that replays the
// seed and the last trace events.
func TestFailureMessage(t *testing.T) {
	crashy := Faults{Drop: 0.05, DelayMax: 20, Partition: 1, IsolateLeader: 1, Crash: 4, NemesisEvery: 300, ProposeEvery: 20}
	rec := &recorder{TB: t}
	res := Run(rec, Options{Seed: 7, Voters: 3, Steps: 1500, Faults: &crashy, mutation: mutVoteNotDurable, TraceTail: 5})
	if res.Err == nil {
		t.Fatal("seed 7 with a non-durable vote passed")
	}
	for _, want := range []string{invDurableVote, "replay: go test ./internal/sim -run 'TestSim$' -seed=7 -steps=1500", "last 5 events:"} {
		if !strings.Contains(rec.msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, rec.msg)
		}
	}
	if len(res.Tail) != 5 {
		t.Errorf("%d tail events, want 5", len(res.Tail))
	}
}
