// Package bugzoo is the bug zoo: bugs that real systems shipped, each
// re-injected into this code base behind a hook so that the tests and
// fault campaigns meant to catch it can be shown to do so. [Catalogue]
// is the one list of the entries: the bug, where it shipped, where its
// hook is, which tests must catch it and what their failure must say.
// scripts/bugzoo.sh and scripts/bugzoo-faults.sh read it through
// cmd/zoo, and docs/reliability.md points at it.
//
// # Hooks
//
// A hook is a guarded faulty path at the place the bug lives:
//
//	if bugzoo.Active(bugzoo.Z4) {
//		// the shipped bug's behaviour
//	}
//
// In a normal build (without the build tag bugzoo) [Active] is a function
// that returns the constant false; it is inlined and the compiler drops
// the guarded code, so a normal build runs exactly as if the hook were not
// there (TestActiveFoldsAway checks this).
//
// # Selecting an entry
//
// A build with the tag bugzoo re-injects at most one entry, chosen at
// link time:
//
//	go test -tags bugzoo -ldflags=-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z4 ./internal/kraft
//
// [LinkFlag] returns that -X flag. Nothing selected means no entry is
// active, so a tagged build without the flag behaves as a normal one (the
// gate's baseline runs so). A selection that names no hooked entry makes
// the program panic at start, so that a misspelt selection never passes
// for a caught bug. The selection is baked into the binary, so a binary
// run on another host (the multi-host fault campaigns) carries it with no
// environment to pass along.
package bugzoo

import (
	"fmt"
	"strconv"
	"strings"
)

// ID names an entry of the zoo: Z1 to Z27.
type ID int

// The entries of the zoo.
const (
	Z1 ID = iota + 1
	Z2
	Z3
	Z4
	Z5
	Z6
	Z7
	Z8
	Z9
	Z10
	Z11
	Z12
	Z13
	Z14
	Z15
	Z16
	Z17
	Z18
	Z19
	Z20
	Z21
	Z22
	Z23
	Z24
	Z25
	Z26
	Z27
)

// String returns the entry's name as the scripts and the selection spell
// it: z4 for Z4.
func (id ID) String() string { return "z" + strconv.Itoa(int(id)) }

// Parse reads an entry's name, z4 or Z4.
func Parse(s string) (ID, error) {
	if len(s) < 2 || (s[0] != 'z' && s[0] != 'Z') {
		return 0, fmt.Errorf("bugzoo: %q is not an entry (z1 to z%d)", s, len(catalogue))
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 1 || n > len(catalogue) {
		return 0, fmt.Errorf("bugzoo: %q is not an entry (z1 to z%d)", s, len(catalogue))
	}
	return ID(n), nil
}

// Tag is the build tag under which the hooks can be active.
const Tag = "bugzoo"

// LinkFlag returns the go build -ldflags argument that selects id in a
// build with [Tag].
func LinkFlag(id ID) string {
	return "-X=github.com/krabka-go/krabka/internal/bugzoo.selected=" + id.String()
}

// Entry is one bug of the zoo.
type Entry struct {
	ID ID
	// Bug is what the shipped bug did, as a tester sees it.
	Bug string
	// Source is where it shipped: the system and its issue, commit or
	// advisory.
	Source string
	// Hooks are the files, relative to the module root, that hold the
	// entry's `bugzoo.Active(bugzoo.Z<n>)` calls; empty for a pending
	// entry.
	Hooks []string
	// Reinjection says what the hook changes in this code base.
	Reinjection string
	// Pending, when not empty, says why the entry has no hook yet; a
	// pending entry has no hooks, checks or campaigns.
	Pending string
	// Checks are the go tests that must fail with the entry selected
	// (scripts/bugzoo.sh).
	Checks []Check
	// Campaigns are the multi-host fault campaigns (test/faults) that must
	// fail with the entry selected (scripts/bugzoo-faults.sh).
	Campaigns []Campaign
}

// Check is a go test that must catch an entry.
type Check struct {
	// Package is the package path relative to the module root, ./raft.
	Package string
	// Run is the -run pattern.
	Run string
	// Args are flags for the test binary.
	Args []string
	// SimSeeds, when above 0, makes this a simulator campaign: it runs
	// at least this many seeds, or more if the gate asks for more.
	SimSeeds int
	// Invariant names the invariant the test guards.
	Invariant string
	// Pattern is an extended regular expression (grep -E) that the
	// failing test's output must match: it shows that the test failed for
	// the invariant named, not for another reason.
	Pattern string
}

// Campaign is a short fault campaign of test/faults' TestCampaign that
// must catch an entry.
type Campaign struct {
	// Tags are build tags of the binaries besides [Tag] (writeback).
	Tags string
	// Kinds are the fault kinds (-faults.kinds).
	Kinds string
	// Duration is the campaign's length (-faults.duration).
	Duration string
	// Invariant names the client-visible invariant that catches it.
	Invariant string
	// Pattern is an extended regular expression the failing campaign's
	// output must match.
	Pattern string
}

// Catalogue returns every entry, Z1 first.
func Catalogue() []Entry {
	out := make([]Entry, len(catalogue))
	copy(out, catalogue)
	return out
}

// Lookup returns the entry id.
func Lookup(id ID) (Entry, bool) {
	if id < 1 || int(id) > len(catalogue) {
		return Entry{}, false
	}
	return catalogue[id-1], true
}

// Hooked reports whether the entry has hooks (it is not pending).
func (e Entry) Hooked() bool { return e.Pending == "" }

// selection parses a link-time selection: the entry named, or 0 for none.
// It fails for a name that is not a hooked entry.
func selection(s string) (ID, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	id, err := Parse(s)
	if err != nil {
		return 0, err
	}
	if e, _ := Lookup(id); !e.Hooked() {
		return 0, fmt.Errorf("bugzoo: %v is pending and has no hook: %s", id, e.Pending)
	}
	return id, nil
}
