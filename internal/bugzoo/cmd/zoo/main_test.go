package main

import (
	"strings"
	"testing"
)

func output(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	if err := run(args, &b); err != nil {
		t.Fatalf("zoo %v: %v", args, err)
	}
	return b.String()
}

// checks prints one line per check with the selection's link flag first
// and the pattern last; a simulator check runs at least its own minimum of
// seeds and the steps asked for.
func TestChecksFormat(t *testing.T) {
	out := output(t, "checks", "-seeds=300", "-steps=900", "z3", "z4")
	want := []string{
		"z3|-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z3|./internal/sim|^TestSim$|-seeds=1000 -steps=900|",
		"z3|-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z3|./raft|^TestSimulatedEngines$||",
		"z4|-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z4|./internal/kraft|^TestCheckQuorumResignsLeader$|-rapid.nofailfile|E6 check-quorum|want Resigned",
		"z4|-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z4|./internal/sim|^TestSim$|-seeds=300 -steps=900|E6 check-quorum|E6 check-quorum",
		"z4|-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z4|./raft|^TestSimulatedEngines$||E6 check-quorum|E6 check-quorum",
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("zoo checks z3 z4:\n%s", out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

// entries, campaigns and pending agree with the catalogue's shape.
func TestEntriesCampaignsPending(t *testing.T) {
	if got := output(t, "entries", "z2", "z4", "z11"); got != "z2|1|1|0\nz4|3|0|0\nz11|0|0|1\n" {
		t.Errorf("zoo entries z2 z4 z11 = %q", got)
	}
	if got := output(t, "campaigns", "z2"); got != "z2|-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z2|writeback|kill-9-all|15s|K1 acknowledged writes survive a power failure|lost: .* is not in the committed log\n" {
		t.Errorf("zoo campaigns z2 = %q", got)
	}
	if got := output(t, "pending", "z4", "z11"); !strings.HasPrefix(got, "z11|not reachable as shipped:") || strings.Count(got, "\n") != 1 {
		t.Errorf("zoo pending z4 z11 = %q", got)
	}
	if got := output(t, "list", "z4"); !strings.Contains(got, "go test -count=1 -tags bugzoo -ldflags=-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z4 ./internal/kraft -run '^TestCheckQuorumResignsLeader$' -args -rapid.nofailfile") {
		t.Errorf("zoo list z4 lacks its test command:\n%s", got)
	}
}

func TestRejects(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"checks", "z99"}, {"checks", "-bogus"}} {
		if err := run(args, &strings.Builder{}); err == nil {
			t.Errorf("zoo %v succeeded", args)
		}
	}
}
