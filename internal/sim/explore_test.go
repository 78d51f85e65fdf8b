package sim

import (
	"flag"
	"testing"
	"time"
)

var flagLarge = flag.Bool("exhaustive-large", false, "TestExhaustive: add one message loss to the scope (minutes)")

// TestExhaustive enumerates every interleaving of three voters within
// small budgets and checks every invariant in every state. It fails if
// the search caps cut it (it would not be complete within its scope) or
// if a "sometimes" property was never reached.
func TestExhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s (40 s under -race)")
	}
	b := Bounds{Voters: 3, Proposals: 1, Crashes: 1, Ticks: 3, MaxEpoch: 2, InFlight: 2, MaxDepth: 80, MaxStates: 200_000}
	if *flagLarge {
		// Also one message loss: about 660,000 states.
		b.Drops, b.MaxStates = 1, 2_000_000
	}
	start := time.Now()
	res := Explore(b)
	el := time.Since(start)
	t.Logf("bounds %+v: %d unique states, %d transitions, max depth %d, in %v (%.0f states/s)",
		b, res.States, res.Transitions, res.MaxDepthSeen, el.Round(time.Millisecond), float64(res.States)/el.Seconds())
	t.Logf("scope edges: epoch %d, in-flight %d; caps: depth %d, states %d; sometimes: %v",
		res.EpochCut, res.InFlightCut, res.DepthCut, res.StateCut, res.Sometimes)
	checkExplored(t, res)
}

// TestExhaustiveConnectionResets enumerates every interleaving of three
// voters in which one follower is told, at any point, that its leader's
// connection reset: genuinely after the leader crashed, or spuriously. The
// report must never break an invariant, and a second leader must still
// be reachable.
func TestExhaustiveConnectionResets(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s (40 s under -race)")
	}
	b := Bounds{Voters: 3, Proposals: 1, Crashes: 1, Resets: 1, Ticks: 2, MaxEpoch: 2, InFlight: 2, MaxDepth: 80, MaxStates: 200_000}
	start := time.Now()
	res := Explore(b)
	t.Logf("bounds %+v: %d unique states, %d transitions, max depth %d, in %v; sometimes: %v",
		b, res.States, res.Transitions, res.MaxDepthSeen, time.Since(start).Round(time.Millisecond), res.Sometimes)
	checkExplored(t, res)
}

// TestExhaustiveRemovals enumerates every interleaving of two voters in
// which the leader may propose one voter set without one voter, itself
// included, and a node may crash at any point. It covers the vote of a
// restarted leader that its own latest voter set leaves out
// (docs/decisions.md, "The vote of a removed voter, and a leader that
// removes itself"): every invariant holds in every state, and a leader is
// elected after a self-removal.
func TestExhaustiveRemovals(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s")
	}
	b := Bounds{Voters: 2, Crashes: 1, Removals: 1, Ticks: 3, MaxEpoch: 2, InFlight: 2, MaxDepth: 80, MaxStates: 400_000}
	start := time.Now()
	res := Explore(b)
	t.Logf("bounds %+v: %d unique states, %d transitions, max depth %d, in %v; sometimes: %v",
		b, res.States, res.Transitions, res.MaxDepthSeen, time.Since(start).Round(time.Millisecond), res.Sometimes)
	checkExplored(t, res)
}

// checkExplored fails t when the search found a violation, was cut by its
// caps, or never reached one of its sometimes properties.
func checkExplored(t *testing.T, res ExploreResult) {
	t.Helper()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !res.Complete() {
		t.Errorf("the search was cut by its caps (depth %d times, states %d times): not complete within the scope", res.DepthCut, res.StateCut)
	}
	for p, ok := range res.Sometimes {
		if !ok {
			t.Errorf("sometimes property %q never reached", p)
		}
	}
}
