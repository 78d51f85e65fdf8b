package sim

import (
	"slices"
	"syscall"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// The nemesis: the faults a run injects between client proposals, each
// chosen by its weight in the run's Faults.

func (w *world) nemesis() error {
	kinds := []struct {
		weight int
		do     func() error
	}{
		{w.f.Partition, w.partition},
		{w.f.OneWay, w.oneWay},
		{w.f.IsolateLeader, w.isolateLeader},
		{w.f.Partition + w.f.OneWay + w.f.IsolateLeader, w.heal},
		{w.f.Crash, w.crashRandom},
		{w.f.VoterChange, w.voterChange},
		{w.f.DiskFault, w.diskFault},
		{w.f.ConnReset, w.connReset},
		{w.wipeWeight(), w.wipeObserver},
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	if total == 0 {
		return nil
	}
	r := w.rng.IntN(total)
	for _, k := range kinds {
		if r < k.weight {
			return k.do()
		}
		r -= k.weight
	}
	return nil
}

func (w *world) block(a, b kraft.NodeID) { w.blocked[a][b] = true }

func (w *world) partition() error {
	n := len(w.nodes)
	side := make([]bool, n+1)
	for i := 1; i <= n; i++ {
		side[i] = w.rng.IntN(2) == 0
	}
	for a := 1; a <= n; a++ {
		for b := 1; b <= n; b++ {
			if side[a] != side[b] {
				w.block(kraft.NodeID(a), kraft.NodeID(b))
			}
		}
	}
	w.witness.Partitions++
	w.tracef("nemesis: partition %v", side[1:])
	return nil
}

func (w *world) oneWay() error {
	n := len(w.nodes)
	a := kraft.NodeID(1 + w.rng.IntN(n))
	b := kraft.NodeID(1 + w.rng.IntN(n))
	if a == b {
		return nil
	}
	w.block(a, b)
	w.witness.OneWayPartitions++
	w.tracef("nemesis: one-way cut %d->%d", a, b)
	return nil
}

func (w *world) isolateLeader() error {
	l := w.leader()
	if l == nil {
		return nil
	}
	for _, n := range w.nodes {
		if n.id != l.id {
			w.block(l.id, n.id)
			w.block(n.id, l.id)
		}
	}
	w.witness.LeaderIsolations++
	w.tracef("nemesis: isolate leader %d", l.id)
	return nil
}

func (w *world) heal() error {
	for _, row := range w.blocked {
		clear(row)
	}
	w.witness.Heals++
	w.tracef("nemesis: heal")
	return nil
}

func (w *world) crashRandom() error {
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	if !n.up() {
		return nil
	}
	if err := w.crashAtRest(n); err != nil {
		return err
	}
	w.touch(n)
	if w.f.ConnReset == 0 {
		return nil
	}
	// The crashed node's connections reset: its followers hear of it.
	for _, m := range w.nodes {
		if m.up() && m.core.Status().Role == kraft.Follower && m.core.Status().Leader.LeaderID == n.id {
			if err := w.reportReset(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// connReset reports a reset of the leader's connection to a random
// follower, whether or not the leader is down.
func (w *world) connReset() error {
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	if !n.up() || n.core.Status().Role != kraft.Follower {
		return nil
	}
	return w.reportReset(n)
}

// reportReset tells follower n that its connection to its leader reset.
func (w *world) reportReset(n *simNode) error {
	l := n.core.Status().Leader.LeaderID
	if m := w.node(l); m != nil && m.up() {
		w.witness.SpuriousResets++
		w.tracef("nemesis: node %d: connection to live leader %d reset", n.id, l)
	} else {
		w.witness.GenuineResets++
		w.tracef("nemesis: node %d: connection to down leader %d reset", n.id, l)
	}
	if err := w.connectionLost(n, l); err != nil {
		return err
	}
	w.touch(n)
	return nil
}

// wipeWeight is the weight of wiping an observer: in snapshot runs with
// observers, as often as a crash (at least 1).
func (w *world) wipeWeight() int {
	if w.snapEvery == 0 || w.opts.Observers == 0 {
		return 0
	}
	return max(1, w.f.Crash)
}

// wipeObserver crashes a random observer and erases its disk; it restarts
// later from nothing and catches up, through a snapshot when the leader's
// log no longer starts at 0. A replica that any node counts as a voter
// (KIP-853 may have added it) is left alone.
func (w *world) wipeObserver() error {
	n := w.nodes[w.opts.Voters+w.rng.IntN(w.opts.Observers)]
	for _, m := range w.nodes {
		if slices.ContainsFunc(w.chk.latestVoters(m), func(v kraft.ReplicaKey) bool { return v.ID == n.id }) {
			return nil
		}
	}
	if n.up() {
		if err := w.crashAtRest(n); err != nil {
			return err
		}
	}
	if err := w.wipe(n); err != nil {
		return err
	}
	if w.wiped == nil {
		w.wiped = map[kraft.NodeID]bool{}
	}
	w.wiped[n.id] = true
	w.touch(n)
	return nil
}

// diskFault arms a one-shot EIO or ENOSPC on the next write or fsync of a
// random node's disk.
func (w *world) diskFault() error {
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	if n.disk == nil || !n.up() {
		return nil
	}
	f := vfs.Fault{Ops: vfs.OpWrite, Err: syscall.EIO, Count: 1}
	if w.rng.IntN(2) == 0 {
		f.Ops = vfs.OpSync
	}
	if f.Ops == vfs.OpWrite && w.rng.IntN(2) == 0 {
		f.Err, f.ShortWrite = syscall.ENOSPC, w.rng.IntN(100)
	}
	n.disk.fs.InjectFault(f)
	w.witness.DiskFaultsArmed++
	w.tracef("nemesis: node %d: next %v fails with %v", n.id, map[vfs.Op]string{vfs.OpWrite: "write", vfs.OpSync: "fsync"}[f.Ops], f.Err)
	return nil
}

// voterChange makes the leader change the voter set by one (KIP-853, one
// change at a time): add or remove the first observer, or remove or re-add
// one of the initial voters, itself too once its whole log has committed. As Kafka's AddRaftVoter
// handler does, it adds a replica only once the leader has seen it fetch
// recently and reach the high watermark; it never shrinks the set below
// three voters.
func (w *world) voterChange() error {
	l := w.leader()
	if l == nil {
		return nil
	}
	st := l.core.Status()
	cur := st.Voters.Keys()
	var cand kraft.ReplicaKey
	switch {
	case len(cur) > 3 && st.HighWatermark == st.LogEndOffset && w.rng.IntN(3) == 0:
		// A leader removing itself is the change with the most rules
		// (docs/decisions.md, "The vote of a removed voter, and a leader
		// that removes itself"); a random pick among the voters makes it
		// too rare to exercise in a short campaign.
		cand = kraft.ReplicaKey{ID: l.id}
	case w.opts.Observers > 0 && w.rng.IntN(2) == 0:
		cand = kraft.ReplicaKey{ID: kraft.NodeID(w.opts.Voters + 1)}
	default:
		cand = kraft.ReplicaKey{ID: kraft.NodeID(1 + w.rng.IntN(w.opts.Voters))}
	}
	if cand.ID == l.id && st.HighWatermark < st.LogEndOffset {
		// A leader removes itself only over a committed log, as the
		// runtime's appendOwnRemoval does (docs/decisions.md, "The vote
		// of a removed voter, and a leader that removes itself").
		return nil
	}
	if w.wiped[cand.ID] {
		// A wiped replica would come back under a new directory id that
		// the leader must see catch up first (invariant R3 in
		// docs/reliability.md); the
		// simulator's replica keys carry no directory id, so it is never
		// added.
		return nil
	}
	var next []kraft.ReplicaKey
	if i := slices.Index(cur, cand); i >= 0 {
		if len(cur) <= 3 {
			return nil
		}
		next = slices.Delete(cur, i, i+1)
	} else {
		i := slices.IndexFunc(st.Replicas, func(r kraft.ReplicaStatus) bool { return r.Key.ID == cand.ID })
		if i < 0 {
			return nil
		}
		r := st.Replicas[i]
		if r.LastFetch < 0 || w.now-r.LastFetch > kraft.Instant(l.cfg.FetchTimeout.Milliseconds()) || r.LogEndOffset < st.HighWatermark {
			return nil
		}
		next = append(cur, cand)
		slices.SortFunc(next, func(a, b kraft.ReplicaKey) int { return int(a.ID) - int(b.ID) })
	}
	ok, err := w.proposeVoters(l, next)
	if ok && cand.ID == l.id {
		w.witness.SelfRemovals++
	}
	w.touch(l)
	return err
}
