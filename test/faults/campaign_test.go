package faults

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

var (
	flagFaults  = flag.String("faults.kinds", "", "comma-separated faults of the campaign (default: all)")
	flagClients = flag.Int("faults.clients", 6, "concurrent clients of the campaign")
	flagEmbed   = flag.Int("faults.embedded", 1, "embedded hosts of the campaign: programs that embed the controller as an observer and forward submissions to the leader")
	flagEmbedCl = flag.Int("faults.embedclients", 2, "clients of the campaign that submit through the embedded hosts (on top of -faults.clients)")
	flagReport  = flag.String("faults.report", "", "file to write the campaign's figures to (markdown)")
	flagTimeout = flag.Duration("faults.timeout", 3*time.Second, "deadline of one client operation")
	flagRecover = flag.Duration("faults.recover", time.Minute, "how long the quorum has after the last heal to acknowledge a write")
)

// seed returns -faults.seed, or a random seed, and prints it.
func seed(t *testing.T) uint64 {
	s := *flagSeed
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("-faults.seed=%d", s)
	return s
}

// TestKillRestart starts three controllers of the writeback build (a
// SIGKILL loses unsynced writes, as a power loss does) on hosts of their
// own, kills the leader while clients write, restarts it, then kills every
// node at once and restarts them, and checks that every acknowledged write
// is in the byte-identical committed logs once, at its offset. It is also
// the baseline of scripts/bugzoo-faults.sh's Z1 and Z2 entries in CI.
func TestKillRestart(t *testing.T) { killRestart(t, plaintext, true) }

// TestKillRestartSecure is TestKillRestart with every controller listener
// on SASL_SSL (TLS with certificates of the test's own CA, SCRAM-SHA-512
// credentials bootstrapped by krabka storage format --add-scram): the
// controllers' connections, the clients' and the tools' authenticate
// through a handshake on every connection, and the quorum comes back
// through it after the leader's kill and restart and after the power loss
// of every node, when each restarted voter authenticates the others with
// the credentials of its own log until it has applied it.
func TestKillRestartSecure(t *testing.T) { killRestart(t, saslSSL, true) }

// killRestart is the scenario of TestKillRestart on listeners of the
// security protocol proto, the power loss of every node included when
// powerLoss.
func killRestart(t *testing.T, proto string, powerLoss bool) {
	if testing.Short() {
		t.Skip("runs real processes for seconds")
	}
	s := seed(t)
	tags := "writeback"
	if *flagTags != "" {
		tags += "," + *flagTags
	}
	c := newCluster(t, 3, 0, tags, s, proto)
	c.startAll()
	w := newWorkload(t, c, 2, 2)
	stop := w.start(3, 0, s)
	defer stop()
	ackedAfter := func(since time.Time, n int) func() bool { return ackedAfter(w, since, n) }
	none := func() string { return "no acknowledged write" }
	waitFor(t, time.Minute, "writes before the crash", ackedAfter(time.Time{}, 20), none)
	leader := c.leader()
	if err := c.h.kill(leader); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed the leader, node %d", leader)
	waitFor(t, time.Minute, "writes after the crash", ackedAfter(killed, 20), none)
	c.start(leader)
	restarted := time.Now()
	waitFor(t, time.Minute, "writes after the restart", ackedAfter(restarted, 20), none)
	if powerLoss {
		c.eachNode(c.h.kill)
		t.Log("killed every node")
		c.eachNode(func(id int) error { return c.h.start(id, c.cmds[id]) })
		waitFor(t, 2*time.Minute, "writes after the power failure", ackedAfter(time.Now(), 20), none)
	}
	stop()
	entries := c.finalLog(t)
	f := checkLog(t, w.hist.all(), entries)
	t.Logf("acknowledged %d, indeterminate %d (%d applied), lost %d, duplicated %d, reads %d", f.acked, f.unknown, f.unknownApplied, f.lost, f.duplicated, f.reads)
	if w.reads {
		checkLinearizable(t, w.hist.all(), entries, c.dir)
	}
}

// TestCampaign runs -faults.duration of clients under a nemesis that
// starts a fault every -faults.interval on a quorum of -faults.nodes, then
// heals, checks the history with porcupine and the logs with the log
// checker, and reports the figures docs/reliability.md tabulates for each
// campaign.
func TestCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for minutes")
	}
	kinds, err := parseFaults(*flagFaults)
	if err != nil {
		t.Fatal(err)
	}
	s := seed(t)
	c := newCluster(t, *flagNodes, *flagEmbed, *flagTags, s, *flagSecurity)
	c.startAll()
	w := newWorkload(t, c, 4, 2)
	nem := newNemesis(t, c, s)
	stopClients := w.start(*flagClients, *flagEmbedCl, s)
	defer stopClients()
	begin := time.Now()
	nem.run(begin.Add(*flagDuration), *flagInterval, kinds)
	// A last quiet stretch: the quorum must recover and serve after the
	// last heal.
	healed := time.Now()
	for !ackedSince(w, healed) && time.Since(healed) < *flagRecover {
		time.Sleep(100 * time.Millisecond)
	}
	if !ackedSince(w, healed) {
		// Not fatal: the log checker below says what was lost.
		t.Errorf("no acknowledged write in the %v after the last heal", *flagRecover)
	}
	stopClients()

	ops := w.hist.all()
	entries := c.finalLog(t)
	lf := checkLog(t, ops, entries)
	lin := "not checked (no ReadImage)"
	if w.reads {
		lin = string(checkLinearizable(t, ops, entries, c.dir))
	}
	report := campaignReport(c, nem, ops, lf, lin, s, time.Since(begin))
	t.Log("\n" + report)
	if *flagReport != "" {
		if err := os.WriteFile(*flagReport, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if lf.lost+lf.duplicated+lf.misplaced+lf.phantom > 0 {
		t.Errorf("log checker: %d lost, %d duplicated, %d misplaced, %d phantom", lf.lost, lf.duplicated, lf.misplaced, lf.phantom)
	}
}

// ackedSince reports whether a write begun after since was acknowledged.
func ackedSince(w *workload, since time.Time) bool { return ackedAfter(w, since, 1)() }

// ackedAfter reports whether n writes begun after since were acknowledged.
func ackedAfter(w *workload, since time.Time, n int) func() bool {
	return func() bool {
		k := 0
		for _, o := range w.hist.all() {
			if o.write && o.status == opOK && o.call.After(since) {
				k++
			}
		}
		return k >= n
	}
}

// campaignReport formats the figures: operation counts, and per fault
// kind the availability of writes during the fault and the time from heal
// to the first acknowledged write begun after it.
func campaignReport(c *cluster, nem *nemesis, ops []op, lf logFigures, lin string, seed uint64, took time.Duration) string {
	var b strings.Builder
	rev, err := run("git", "-C", repoRoot(), "rev-parse", "--short", "HEAD")
	if err != nil {
		rev = "unknown revision"
	}
	proto := plaintext
	if c.sec != nil {
		proto = saslSSL
	}
	fmt.Fprintf(&b, "revision %s, seed %d, %d nodes and %d embedded hosts, %s, %s listeners, %v, %d faults, binary tags %q, bug-zoo entry %q\n\n", rev, seed, c.n, c.embedded, c.h.name(), proto, took.Round(time.Second), len(nem.windows), *flagTags, *flagBugzoo)
	fmt.Fprintf(&b, "| acknowledged | indeterminate: timed out + error answer (applied) | lost | duplicated | misplaced | phantom | linearizable reads | porcupine |\n|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %d + %d (%d) | %d | %d | %d | %d | %d | %s |\n\n", lf.acked, lf.unknown-lf.unknownAnswered, lf.unknownAnswered, lf.unknownApplied, lf.lost, lf.duplicated, lf.misplaced, lf.phantom, lf.reads, lin)
	type agg struct {
		n, tried, acked int
		recover         []time.Duration
	}
	by := map[faultKind]*agg{}
	for _, win := range nem.windows {
		a := by[win.kind]
		if a == nil {
			a = &agg{}
			by[win.kind] = a
		}
		a.n++
		first := time.Duration(-1)
		for _, o := range ops {
			if !o.write {
				continue
			}
			if !o.call.Before(win.start) && o.call.Before(win.healed) {
				a.tried++
				if o.status == opOK {
					a.acked++
				}
			}
			if o.status == opOK && !o.call.Before(win.healed) {
				if d := o.ret.Sub(win.healed); first < 0 || d < first {
					first = d
				}
			}
		}
		if first >= 0 {
			a.recover = append(a.recover, first)
		}
	}
	var kinds []string
	for k := range by {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "| fault | count | writes acknowledged during the fault | recovery after heal: median / max |\n|---|---|---|---|\n")
	for _, k := range kinds {
		a := by[faultKind(k)]
		avail := "-"
		if a.tried > 0 {
			avail = fmt.Sprintf("%.0f%% (%d/%d)", 100*float64(a.acked)/float64(a.tried), a.acked, a.tried)
		}
		rec := "-"
		if len(a.recover) > 0 {
			sort.Slice(a.recover, func(i, j int) bool { return a.recover[i] < a.recover[j] })
			rec = fmt.Sprintf("%v / %v", a.recover[len(a.recover)/2].Round(time.Millisecond), a.recover[len(a.recover)-1].Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", k, a.n, avail, rec)
	}
	return b.String()
}
