package sim

import (
	"flag"
	"math/rand/v2"
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
// observers, a swarm fault mix.
func optionsFor(seed uint64, steps int) Options {
	r := rand.New(rand.NewPCG(seed, 0xC0FFEE))
	return Options{Seed: seed, Voters: []int{3, 5}[r.IntN(2)], Observers: r.IntN(3), Steps: steps}
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
	start := time.Now()
	for _, s := range seeds {
		res := Run(t, optionsFor(s, steps))
		total.Add(res.Witness)
		events += res.Steps
		if t.Failed() {
			break
		}
	}
	el := time.Since(start)
	t.Logf("%d seeds × %d fault-phase steps: %d events in %v (%.1f seeds/s, %.0f events/s)",
		len(seeds), steps, events, el.Round(time.Millisecond), float64(len(seeds))/el.Seconds(), float64(events)/el.Seconds())
	t.Logf("witness: %s", total)
}

