// Command zoo prints the bug zoo's catalogue (package bugzoo) for people
// and for the gate scripts.
//
//	zoo list [ids]                        the entries, each with its test commands
//	zoo checks [-seeds N] [-steps S] [ids] one go test per line (scripts/bugzoo.sh)
//	zoo campaigns [ids]                   one fault campaign per line (scripts/bugzoo-faults.sh)
//	zoo pending [ids]                     the entries without a hook, and why
//	zoo entries [ids]                     each entry's numbers of checks and campaigns
//
// ids are entry names (z4 z17); none means every entry. The machine
// formats are '|'-separated fields, one record per line:
//
//	checks:    id|ldflags|package|run|test flags|invariant|pattern
//	campaigns: id|ldflags|tags|kinds|duration|invariant|pattern
//	pending:   id|reason|bug
//	entries:   id|checks|campaigns|pending (1 or 0)
//
// where ldflags is the -ldflags value that selects the entry and tags
// exclude bugzoo itself. Only the last field may hold a '|' (a pattern's
// alternatives): read -r assigns it the rest of the line.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/krabka-go/krabka/internal/bugzoo"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "zoo:", err)
		os.Exit(2)
	}
}

func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: zoo list|checks|campaigns|pending [flags] [ids]")
	}
	fs := flag.NewFlagSet("zoo "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	seeds := fs.Int("seeds", 200, "simulator seeds of a check (at least the entry's own minimum)")
	steps := fs.Int("steps", 1500, "simulator steps per seed")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	entries, err := selectEntries(fs.Args())
	if err != nil {
		return err
	}
	sim := simArgs{seeds: *seeds, steps: *steps}
	switch args[0] {
	case "list":
		for _, e := range entries {
			printEntry(w, e, sim)
		}
	case "checks":
		for _, e := range entries {
			for _, c := range e.Checks {
				fmt.Fprintf(w, "%v|%s|%s|%s|%s|%s|%s\n", e.ID, bugzoo.LinkFlag(e.ID), c.Package, c.Run,
					strings.Join(sim.args(c), " "), c.Invariant, c.Pattern)
			}
		}
	case "campaigns":
		for _, e := range entries {
			for _, c := range e.Campaigns {
				fmt.Fprintf(w, "%v|%s|%s|%s|%s|%s|%s\n", e.ID, bugzoo.LinkFlag(e.ID), c.Tags, c.Kinds, c.Duration, c.Invariant, c.Pattern)
			}
		}
	case "pending":
		for _, e := range entries {
			if !e.Hooked() {
				fmt.Fprintf(w, "%v|%s|%s\n", e.ID, e.Pending, e.Bug)
			}
		}
	case "entries":
		for _, e := range entries {
			p := 0
			if !e.Hooked() {
				p = 1
			}
			fmt.Fprintf(w, "%v|%d|%d|%d\n", e.ID, len(e.Checks), len(e.Campaigns), p)
		}
	default:
		return fmt.Errorf("unknown command %q: list, checks, campaigns, pending or entries", args[0])
	}
	return nil
}

// selectEntries returns the entries named, or every entry.
func selectEntries(names []string) ([]bugzoo.Entry, error) {
	if len(names) == 0 {
		return bugzoo.Catalogue(), nil
	}
	var out []bugzoo.Entry
	for _, s := range names {
		id, err := bugzoo.Parse(s)
		if err != nil {
			return nil, err
		}
		e, _ := bugzoo.Lookup(id)
		out = append(out, e)
	}
	return out, nil
}

// simArgs is the length of the simulator campaigns the gate asks for.
type simArgs struct{ seeds, steps int }

// args returns a check's test flags: its own, and for a simulator
// campaign its seeds (at least the check's minimum) and steps.
func (s simArgs) args(c bugzoo.Check) []string {
	out := append([]string(nil), c.Args...)
	if c.SimSeeds > 0 {
		out = append(out, fmt.Sprintf("-seeds=%d", max(s.seeds, c.SimSeeds)), fmt.Sprintf("-steps=%d", s.steps))
	}
	return out
}

// printEntry writes one entry for people: what it is and how to run its
// checks and campaigns.
func printEntry(w io.Writer, e bugzoo.Entry, sim simArgs) {
	fmt.Fprintf(w, "%s  %s\n", strings.ToUpper(e.ID.String()), e.Bug)
	fmt.Fprintf(w, "     shipped in: %s\n", e.Source)
	if !e.Hooked() {
		fmt.Fprintf(w, "     pending: %s\n\n", e.Pending)
		return
	}
	fmt.Fprintf(w, "     re-injected: %s\n", e.Reinjection)
	fmt.Fprintf(w, "     hooks: %s\n", strings.Join(e.Hooks, ", "))
	for _, c := range e.Checks {
		flags := ""
		if a := sim.args(c); len(a) > 0 {
			flags = " -args " + strings.Join(a, " ")
		}
		fmt.Fprintf(w, "     caught by %s (/%s/):\n       go test -count=1 -tags %s -ldflags=%s %s -run '%s'%s\n",
			c.Invariant, c.Pattern, bugzoo.Tag, bugzoo.LinkFlag(e.ID), c.Package, c.Run, flags)
	}
	for _, c := range e.Campaigns {
		tags := ""
		if c.Tags != "" {
			tags = " -faults.tags=" + c.Tags
		}
		fmt.Fprintf(w, "     caught by %s (/%s/), multi-host:\n       go test -count=1 ./test/faults -run '^TestCampaign$' -args%s -faults.bugzoo=%v -faults.kinds=%s -faults.duration=%s\n",
			c.Invariant, c.Pattern, tags, e.ID, c.Kinds, c.Duration)
	}
	fmt.Fprintln(w)
}
