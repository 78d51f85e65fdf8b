package sim

import (
	"fmt"
	"strings"
	"testing"
)

// TestTrace prints the whole trace of the seed given with -seed (lines
// containing -grep only): the tool for reading a failure.
func TestTrace(t *testing.T) {
	if *flagSeed == 0 {
		t.Skip("prints the trace of one seed: go test ./internal/sim -run TestTrace -seed=N [-grep=WORD]")
	}
	steps := ciSteps
	if *flagSteps > 0 {
		steps = *flagSteps
	}
	o := optionsFor(*flagSeed, steps)
	o.KeepTrace = true
	res := Simulate(o)
	for _, l := range res.Trace {
		if *flagGrep == "" || strings.Contains(l, *flagGrep) {
			fmt.Println(l)
		}
	}
	if res.Err != nil {
		t.Errorf("seed %d: %v", res.Seed, res.Err)
	}
}
