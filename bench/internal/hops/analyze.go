package hops

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The steps of one write, in the order they happen: each hop of the
// breakdown is the time from one to the next. With one client the
// leader appends one write per cycle, and the cycle ends with the next
// write's append.
const (
	stAppend         = iota // the leader's append (its pwrite starts)
	stLeaderWrite           // the leader's first socket write after it (a fetch answer)
	stFollowerRead          // the follower's last socket read before its append ends
	stFollowerAppend        // the follower's append starts
	stFsyncStart            // the follower's fsync starts
	stFsyncEnd              // the follower's fsync ends
	stFetchSent             // the follower's next socket write (its next fetch) starts
	stLeaderRead            // the leader's first socket read ending after that
	stReply                 // the leader's next socket write (the answer to the client)
	stNext                  // the leader's next append
	numSteps
)

// hopNames name the hops between consecutive steps: hopNames[i] is
// step i to step i+1.
var hopNames = [numSteps - 1]string{
	"leader append → leader's first socket write",
	"leader socket write → follower read done",
	"follower read done → follower append",
	"follower append → follower fsync start",
	"follower fsync",
	"follower fsync end → fetch sent",
	"fetch sent → leader read done",
	"leader read done → leader's next socket write",
	"that socket write → next leader append",
}

// Row is one line of the breakdown: a distribution over the cycles.
type Row struct {
	Name          string
	N             int // cycles that had it
	P50, P90, P99 time.Duration
}

// Slow is a cycle longer than the slow threshold, with the syscalls of
// every node that took more than a millisecond during it.
type Slow struct {
	Start    int64 // the leader's append, CLOCK_MONOTONIC ns
	Cycle    time.Duration
	Hop      string        // the cycle's longest hop, "" if none was measured
	HopTaken time.Duration // and its length
	Long     []string      // e.g. "F1 fsync 9.12 ms at +0.35 ms"
}

// Breakdown is the result of [Analyze].
type Breakdown struct {
	Appends int // the leader's appends in the traces
	Cycles  int // the cycles measured (an append to the next, with a follower's append and fsync in between)
	Rows    []Row
	Slow    []Slow // every cycle over SlowCycle, in time order
	// SlowWithDisk counts the slow cycles in which some node had a pwrite
	// or fsync longer than half the cycle.
	SlowWithDisk int
}

// SlowCycle is the cycle length above which a cycle is listed in
// [Breakdown.Slow].
const SlowCycle = 4 * time.Millisecond

// longSyscall is the least length of a syscall listed in a slow cycle.
const longSyscall = int64(time.Millisecond)

// firstFrom returns the first span of s (sorted by start) that starts at
// or after t.
func firstFrom(s []Span, t int64) (Span, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].Start >= t })
	if i == len(s) {
		return Span{}, false
	}
	return s[i], true
}

// firstEndingFrom returns the span of s that ends first at or after t
// among those that start before limit.
func firstEndingFrom(s []Span, t, limit int64) (Span, bool) {
	var best Span
	found := false
	for _, x := range s[:sort.Search(len(s), func(i int) bool { return s[i].Start >= limit })] {
		if x.End >= t && (!found || x.End < best.End) {
			best, found = x, true
		}
	}
	return best, found
}

// lastEndingBefore returns the span of s starting at or after from that
// ends last no later than t.
func lastEndingBefore(s []Span, from, t int64) (Span, bool) {
	var best Span
	found := false
	for i := sort.Search(len(s), func(i int) bool { return s[i].Start >= from }); i < len(s) && s[i].Start < t; i++ {
		if x := s[i]; x.End <= t && (!found || x.End > best.End) {
			best, found = x, true
		}
	}
	return best, found
}

// followerSteps are one follower's steps for the leader append at a,
// the next being at next; ok is false if the follower did not append
// and fsync in between.
func followerSteps(f *Node, a, next int64) (st [numSteps]int64, ok bool) {
	fa, ok := firstFrom(f.Spans[Append], a)
	if !ok || fa.Start >= next {
		return st, false
	}
	fs, ok := firstFrom(f.Spans[Fsync], fa.Start)
	if !ok || fs.Start >= next {
		return st, false
	}
	st[stFollowerAppend], st[stFsyncStart], st[stFsyncEnd] = fa.Start, fs.Start, fs.End
	if w, ok := firstFrom(f.Spans[SockWrite], fs.End); ok {
		st[stFetchSent] = w.Start
	}
	return st, true
}

// Analyze measures the cycles of the leader's appends. For each, the
// follower that completes the quorum is the one whose fsync after its
// own append of the write ends first; the hops follow that follower.
// The leader's own fsync, not on that path when a follower is faster,
// is a row of its own.
func Analyze(leader *Node, followers []*Node) Breakdown {
	appends := leader.Spans[Append]
	b := Breakdown{Appends: len(appends)}
	hops := make([][]int64, numSteps-1)
	var leaderFsync, quorumToNext, followerPwrite, cycles []int64
	for i := 0; i+1 < len(appends); i++ {
		a, next := appends[i].Start, appends[i+1].Start
		var st [numSteps]int64
		found := false
		var quorum *Node
		for _, f := range followers {
			fst, ok := followerSteps(f, a, next)
			if ok && (!found || fst[stFsyncEnd] < st[stFsyncEnd]) {
				st, found, quorum = fst, true, f
			}
		}
		if !found {
			continue
		}
		st[stAppend], st[stNext] = a, next
		if w, ok := firstFrom(leader.Spans[SockWrite], a); ok && w.Start < st[stFollowerAppend] {
			st[stLeaderWrite] = w.Start
			if r, ok := lastEndingBefore(quorum.Spans[SockRead], w.Start, st[stFollowerAppend]); ok {
				st[stFollowerRead] = r.End
			}
		}
		if st[stFetchSent] != 0 && st[stFetchSent] < next {
			if r, ok := firstEndingFrom(leader.Spans[SockRead], st[stFetchSent], next); ok && r.End < next {
				st[stLeaderRead] = r.End
				if w, ok := firstFrom(leader.Spans[SockWrite], r.End); ok && w.Start < next {
					st[stReply] = w.Start
				}
			}
		}
		b.Cycles++
		cycles = append(cycles, next-a)
		// A hop is measured between the nearest known steps: a step
		// not found leaves its two hops out for this cycle.
		longest := -1
		for h := range hops {
			if st[h] != 0 && st[h+1] != 0 && st[h+1] >= st[h] {
				hops[h] = append(hops[h], st[h+1]-st[h])
				if longest < 0 || st[h+1]-st[h] > st[longest+1]-st[longest] {
					longest = h
				}
			}
		}
		quorumToNext = append(quorumToNext, next-st[stFsyncEnd])
		if fa, ok := firstFrom(quorum.Spans[Append], a); ok {
			followerPwrite = append(followerPwrite, fa.Dur())
		}
		if fs, ok := firstFrom(leader.Spans[Fsync], a); ok && fs.Start < next {
			leaderFsync = append(leaderFsync, fs.Dur())
		}
		if time.Duration(next-a) > SlowCycle {
			sl := b.slow(leader, followers, a, next)
			if longest >= 0 {
				sl.Hop, sl.HopTaken = hopNames[longest], time.Duration(st[longest+1]-st[longest])
			}
			b.Slow = append(b.Slow, sl)
		}
	}
	slices.SortStableFunc(b.Slow, func(x, y Slow) int { return cmp.Compare(y.Cycle, x.Cycle) })
	b.Rows = append(b.Rows, row("cycle: leader append → next leader append", cycles))
	for h, name := range hopNames {
		b.Rows = append(b.Rows, row(name, hops[h]))
	}
	b.Rows = append(b.Rows,
		row("follower fsync end → next leader append", quorumToNext),
		row("follower pwrite (the append's syscall)", followerPwrite),
		row("leader fsync", leaderFsync),
		row("leader pwrite (the append's syscall)", durs(appends)),
	)
	return b
}

func durs(s []Span) []int64 {
	out := make([]int64, len(s))
	for i, x := range s {
		out[i] = x.Dur()
	}
	return out
}

// slow describes the slow cycle from a to next, and counts it in
// SlowWithDisk if a pwrite or fsync took more than half of it.
func (b *Breakdown) slow(leader *Node, followers []*Node, a, next int64) Slow {
	sl := Slow{Start: a, Cycle: time.Duration(next - a)}
	disk := false
	nodes := append([]*Node{leader}, followers...)
	for n, node := range nodes {
		name := "L"
		if n > 0 {
			name = fmt.Sprintf("F%d", n)
		}
		for k, spans := range node.Spans {
			for _, s := range spans {
				if s.End <= a || s.Start >= next || s.Dur() < longSyscall {
					continue
				}
				sl.Long = append(sl.Long, fmt.Sprintf("%s %s %.2f ms at %+.2f ms", name, Kind(k), float64(s.Dur())/1e6, float64(s.Start-a)/1e6))
				if (Kind(k) == Append || Kind(k) == Fsync) && 2*s.Dur() > next-a {
					disk = true
				}
			}
		}
	}
	if disk {
		b.SlowWithDisk++
	}
	return sl
}

// row summarises ds (nanoseconds) by nearest-rank percentiles.
func row(name string, ds []int64) Row {
	r := Row{Name: name, N: len(ds)}
	if len(ds) == 0 {
		return r
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	pct := func(p int) time.Duration {
		k := (len(s)*p + 99) / 100 // nearest rank, 1-based
		return time.Duration(s[max(k, 1)-1])
	}
	r.P50, r.P90, r.P99 = pct(50), pct(90), pct(99)
	return r
}

// maxSlowListed bounds the slow cycles [Breakdown.Markdown] lists.
const maxSlowListed = 10

// Markdown renders the breakdown as a table, then the slow cycles.
func (b Breakdown) Markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d leader appends, %d cycles measured (the follower that completes the quorum: the first whose fsync ends)\n\n", b.Appends, b.Cycles)
	sb.WriteString("| hop | cycles | p50 µs | p90 µs | p99 µs |\n|---|--:|--:|--:|--:|\n")
	us := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e3) }
	for _, r := range b.Rows {
		if r.N == 0 {
			fmt.Fprintf(&sb, "| %s | 0 | | | |\n", r.Name)
			continue
		}
		fmt.Fprintf(&sb, "| %s | %d | %s | %s | %s |\n", r.Name, r.N, us(r.P50), us(r.P90), us(r.P99))
	}
	fmt.Fprintf(&sb, "\n%d cycles over %v; %d of them with a pwrite or fsync longer than half the cycle\n", len(b.Slow), SlowCycle, b.SlowWithDisk)
	for i, s := range b.Slow {
		if i == maxSlowListed {
			fmt.Fprintf(&sb, "- ... %d more\n", len(b.Slow)-i)
			break
		}
		long := "no syscall over 1 ms"
		if len(s.Long) > 0 {
			long = strings.Join(s.Long, "; ")
		}
		hop := ""
		if s.Hop != "" {
			hop = fmt.Sprintf(" (longest hop: %s, %.2f ms)", s.Hop, float64(s.HopTaken)/1e6)
		}
		fmt.Fprintf(&sb, "- %.2f ms%s: %s\n", float64(s.Cycle)/1e6, hop, long)
	}
	return sb.String()
}
