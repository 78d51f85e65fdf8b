package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// faultKind names one fault of the nemesis.
type faultKind string

const (
	faultKill          faultKind = "kill-9"         // SIGKILL, restart at heal
	faultPause         faultKind = "pause"          // SIGSTOP, SIGCONT at heal
	faultRestart       faultKind = "restart"        // SIGTERM and start again at once
	faultPartition     faultKind = "partition"      // one node cut off both ways
	faultOneWay        faultKind = "one-way"        // a node's frames to its peers dropped; it still hears them
	faultIsolateLeader faultKind = "isolate-leader" // the leader cut off both ways
	faultBridge        faultKind = "bridge"         // two halves that only one node joins
	faultSlow          faultKind = "delay-loss"     // every link delayed with jitter (reordering across links) and lossy
	faultKillLeader    faultKind = "kill-9-leader"  // SIGKILL of the leader
	faultPauseLeader   faultKind = "pause-leader"   // SIGSTOP of the leader
	faultKillAll       faultKind = "kill-9-all"     // SIGKILL of every node at once: a power failure
	faultLeaderLink    faultKind = "one-way-link"   // the leader's frames to one follower dropped: its answers to that follower's requests vanish
	faultEmbeddedLink  faultKind = "embedded-link"  // the leader's frames to the embedded host dropped: the answers to the submissions it forwards vanish
)

// allFaults is the nemesis's menu.
var allFaults = []faultKind{faultKill, faultPause, faultRestart, faultPartition, faultOneWay,
	faultIsolateLeader, faultBridge, faultSlow, faultKillLeader, faultPauseLeader, faultKillAll, faultLeaderLink, faultEmbeddedLink}

// faultWindow is one injected fault: when it started, when it was healed.
type faultWindow struct {
	kind          faultKind
	desc          string
	start, healed time.Time
}

// nemesis injects faults into a cluster on a schedule drawn from a seed.
type nemesis struct {
	t       *testing.T
	c       *cluster
	rnd     *rand.Rand
	windows []faultWindow
	// heal undoes the current fault.
	heal func()
}

func newNemesis(t *testing.T, c *cluster, seed uint64) *nemesis {
	return &nemesis{t: t, c: c, rnd: rand.New(rand.NewPCG(seed, 1))}
}

// leaderOr returns the quorum's leader, or a random node when none is
// known at once (during an election).
func (n *nemesis) leaderOr() int {
	if id, _, err := n.c.describeLeader(); err == nil && id > 0 {
		return id
	}
	return 1 + n.rnd.IntN(n.c.n)
}

// isolate drops every frame between node id and the others, the
// embedded host included.
func (n *nemesis) isolate(id int) {
	for j := 1; j <= n.c.n+n.c.embedded; j++ {
		if j != id {
			n.c.net.set(id, j, linkFault{drop: true})
			n.c.net.set(j, id, linkFault{drop: true})
		}
	}
}

// inject starts a fault of kind and returns its description; n.heal undoes
// it.
func (n *nemesis) inject(kind faultKind) string {
	c := n.c
	victim := 1 + n.rnd.IntN(c.n)
	switch kind {
	case faultKillLeader, faultPauseLeader, faultIsolateLeader, faultLeaderLink, faultEmbeddedLink:
		victim = n.leaderOr()
	}
	must := func(err error) {
		if err != nil {
			n.t.Fatalf("%s of node %d: %v", kind, victim, err)
		}
	}
	switch kind {
	case faultKill, faultKillLeader:
		must(c.h.kill(victim))
		n.heal = func() { must(c.h.start(victim, c.cmds[victim])) }
	case faultKillAll:
		c.eachNode(c.h.kill)
		n.heal = func() { c.eachNode(func(id int) error { return c.h.start(id, c.cmds[id]) }) }
		return string(kind)
	case faultPause, faultPauseLeader:
		must(c.h.pause(victim))
		n.heal = func() { must(c.h.resume(victim)) }
	case faultRestart:
		must(c.h.stop(victim))
		must(c.h.start(victim, c.cmds[victim]))
		n.heal = func() {}
	case faultPartition, faultIsolateLeader:
		n.isolate(victim)
		n.heal = c.net.heal
	case faultOneWay:
		for j := 1; j <= c.n; j++ {
			if j != victim {
				c.net.set(victim, j, linkFault{drop: true})
			}
		}
		n.heal = c.net.heal
	case faultLeaderLink:
		to := 1 + (victim+n.rnd.IntN(c.n-1))%c.n
		c.net.set(victim, to, linkFault{drop: true})
		n.heal = c.net.heal
		return fmt.Sprintf("%s: %d -> %d dropped", kind, victim, to)
	case faultEmbeddedLink:
		n.heal = c.net.heal
		if c.embedded == 0 {
			return string(kind) + ": no embedded host"
		}
		c.net.set(victim, c.n+1, linkFault{drop: true})
		return fmt.Sprintf("%s: %d -> %d dropped", kind, victim, c.n+1)
	case faultBridge:
		// The bridge node sees both halves; the halves do not see each
		// other, so each half plus the bridge can be a majority.
		perm := n.rnd.Perm(c.n)
		bridge := perm[0] + 1
		var left, right []int
		for i, p := range perm[1:] {
			if i%2 == 0 {
				left = append(left, p+1)
			} else {
				right = append(right, p+1)
			}
		}
		for _, a := range left {
			for _, b := range right {
				c.net.set(a, b, linkFault{drop: true})
				c.net.set(b, a, linkFault{drop: true})
			}
		}
		n.heal = c.net.heal
		slices.Sort(left)
		slices.Sort(right)
		return fmt.Sprintf("%s: %v | %d | %v", kind, left, bridge, right)
	case faultSlow:
		for a := 1; a <= c.n; a++ {
			for b := 1; b <= c.n; b++ {
				if a != b {
					c.net.set(a, b, linkFault{delay: 60 * time.Millisecond, jitter: 50 * time.Millisecond, loss: 0.05})
				}
			}
		}
		n.heal = c.net.heal
		return string(kind) + ": all links 60±50 ms, 5% loss"
	default:
		n.t.Fatalf("unknown fault %q", kind)
	}
	return fmt.Sprintf("%s: node %d", kind, victim)
}

// run injects a fault every interval until the deadline, holding each for
// half to three quarters of the interval, after a quiet half interval.
func (n *nemesis) run(deadline time.Time, interval time.Duration, kinds []faultKind) {
	// Half an interval of quiet first: the clients' first writes are
	// acknowledged before anything can lose them.
	time.Sleep(interval / 2)
	for time.Now().Add(interval).Before(deadline) || len(n.windows) == 0 {
		cycle := time.Now()
		kind := kinds[n.rnd.IntN(len(kinds))]
		w := faultWindow{kind: kind, start: time.Now()}
		w.desc = n.inject(kind)
		hold := interval/2 + time.Duration(n.rnd.Int64N(int64(interval/4)))
		time.Sleep(time.Until(w.start.Add(hold)))
		n.heal()
		w.healed = time.Now()
		n.windows = append(n.windows, w)
		n.t.Logf("fault %d at %v: %s, healed after %v", len(n.windows), w.start.Sub(n.windows[0].start).Round(time.Millisecond), w.desc, w.healed.Sub(w.start).Round(time.Millisecond))
		time.Sleep(time.Until(cycle.Add(interval)))
	}
}

// parseFaults reads a comma-separated fault list, or all of them for "".
func parseFaults(s string) ([]faultKind, error) {
	if s == "" {
		return allFaults, nil
	}
	var out []faultKind
	for f := range strings.SplitSeq(s, ",") {
		k := faultKind(strings.TrimSpace(f))
		if !slices.Contains(allFaults, k) {
			return nil, fmt.Errorf("unknown fault %q; known: %v", k, allFaults)
		}
		out = append(out, k)
	}
	return out, nil
}
