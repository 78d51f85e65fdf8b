package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
)

// Options configures one simulated run. Everything random in the run is
// drawn from Seed.
type Options struct {
	// Seed drives virtual time, the network, the faults, the clients and
	// the nodes' own random sources.
	Seed uint64
	// Voters is the size of the initial voter set (3 or 5 in the
	// campaigns; any positive number works).
	Voters int
	// Observers is the number of replicas outside the voter set.
	Observers int
	// Steps is the number of events in the fault phase. The liveness
	// phase that follows has its own bound in virtual time.
	Steps int
	// Faults are the fault kinds and rates; nil picks a swarm mix from
	// Seed with [SwarmFaults].
	Faults *Faults
	// TraceTail is how many trace events a failure prints (default 40).
	TraceTail int
	// KeepTrace keeps every trace event in [Result.Trace].
	KeepTrace bool
	// Disk runs every node over the real log store and quorum-state file
	// on its own in-memory file system, so that crashes lose unsynced
	// writes and tear tails in the file system and recovery is the log
	// store's own. Without it the log is in memory and a crash inside a
	// Ready is modelled on the list of log operations.
	Disk bool
	// Snapshots makes the nodes take snapshots of their committed prefix
	// and apply retention, so that lagging, crashed and wiped replicas
	// catch up through FetchSnapshot; in disk mode the log store's own
	// AdvanceLogStart and TruncateFullyAndStartAt move the log start, and
	// go through power losses. The seed draws the snapshot interval, how many
	// snapshots retention keeps and the FetchSnapshot chunk size, and
	// adds a nemesis action that wipes an observer.
	Snapshots bool

	mutation mutation // a deliberate runtime bug (tests only)
}

// Faults are the fault kinds of a run and their rates. A zero rate
// disables the kind.
type Faults struct {
	// Drop and Duplicate are per-message probabilities.
	Drop, Duplicate float64
	// DelayMax is the largest network delay in milliseconds; each message
	// takes a uniform delay in [1, DelayMax], which also reorders them.
	DelayMax int
	// Nemesis actions: relative weights of the kinds picked at each
	// nemesis event.
	Partition, OneWay, IsolateLeader, Crash, VoterChange int
	// DiskFault is the weight of a nemesis action that makes the next
	// write or fsync of a node's disk fail with EIO or ENOSPC (disk mode
	// only); the node must stop and recover.
	DiskFault int
	// ConnReset is the weight of a nemesis action that reports to a
	// random follower that its connection to the leader was reset
	// (kraft.Node.ConnectionLost): genuinely when the leader is down,
	// spuriously when it is alive. With it, a crash also reports a reset
	// to every follower of the crashed node, as a runtime would see.
	ConnReset int
	// CrashInReady is the probability that a node crashes in the middle
	// of carrying out a Ready (before or after its fsync), losing unsynced
	// writes; it applies only when Crash is enabled.
	CrashInReady float64
	// NemesisEvery is the mean virtual time between nemesis events (ms).
	NemesisEvery int
	// ProposeEvery is the mean virtual time between client proposals (ms).
	ProposeEvery int
}

// SwarmFaults picks a fault mix for a seed (swarm testing): every kind is
// on or off by a coin flip, and the rates vary, so that across seeds
// every combination of faults meets every other.
func SwarmFaults(r *rand.Rand) Faults {
	coin := func() bool { return r.IntN(2) == 0 }
	f := Faults{
		DelayMax:     []int{2, 10, 50, 200}[r.IntN(4)],
		NemesisEvery: 200 + r.IntN(2000),
		ProposeEvery: 5 + r.IntN(200),
	}
	if coin() {
		f.Drop = []float64{0.01, 0.05, 0.2}[r.IntN(3)]
	}
	if coin() {
		f.Duplicate = []float64{0.01, 0.05, 0.2}[r.IntN(3)]
	}
	weight := func() int {
		if coin() {
			return 1 + r.IntN(4)
		}
		return 0
	}
	f.Partition, f.OneWay, f.IsolateLeader, f.Crash, f.VoterChange = weight(), weight(), weight(), weight(), weight()
	f.DiskFault = weight()
	if f.Crash > 0 {
		f.CrashInReady = []float64{0, 0.001, 0.01}[r.IntN(3)]
	}
	f.ConnReset = weight()
	return f
}

// String prints the enabled fault kinds and their rates.
func (f Faults) String() string {
	var parts []string
	add := func(on bool, s string, args ...any) {
		if on {
			parts = append(parts, fmt.Sprintf(s, args...))
		}
	}
	add(f.Drop > 0, "drop=%.2f", f.Drop)
	add(f.Duplicate > 0, "dup=%.2f", f.Duplicate)
	add(true, "delay<=%dms", f.DelayMax)
	add(f.Partition > 0, "partition=%d", f.Partition)
	add(f.OneWay > 0, "oneway=%d", f.OneWay)
	add(f.IsolateLeader > 0, "isolate-leader=%d", f.IsolateLeader)
	add(f.Crash > 0, "crash=%d", f.Crash)
	add(f.CrashInReady > 0, "crash-in-ready=%.3f", f.CrashInReady)
	add(f.VoterChange > 0, "voter-change=%d", f.VoterChange)
	add(f.DiskFault > 0, "disk-fault=%d", f.DiskFault)
	add(f.ConnReset > 0, "conn-reset=%d", f.ConnReset)
	add(true, "nemesis~%dms propose~%dms", f.NemesisEvery, f.ProposeEvery)
	return strings.Join(parts, " ")
}

// Witness counts what a run exercised. A campaign whose counter for a
// fault or event is zero did not test what it claims to.
type Witness struct {
	LeaderChanges, Elections, PreVotes, Resignations, Truncations int
	VoterChanges, Crashes, Restarts, TornTails, UnsyncedLost      int
	LostAfterSend                                                 int // a leader crashed before its fsync, its messages out, and lost appends
	BackgroundSyncs                                               int // a leader's background fsyncs completed (SyncLater)
	LostBeforeLogSynced                                           int // a crash lost appends whose Ready was advanced, before their background fsync completed
	DiskFaultsArmed, DiskFaults                                   int
	Dropped, Duplicated, PartitionDrops, DownDrops                int
	Partitions, OneWayPartitions, LeaderIsolations, Heals         int
	Isolations                                                    int // a node cut off from all others (L4)
	GenuineResets, SpuriousResets                                 int // connection-lost reports: leader down, leader alive
	Proposals, Acked                                              int
	Snapshots, SnapshotInstalls, SnapshotChunks, SnapshotRestarts int
	LogStartAdvances, Wipes                                       int
	StoreStartMoves                                               int // disk mode: AdvanceLogStart and TruncateFullyAndStartAt
	SelfRemovals                                                  int // Voters records a leader proposed without itself
}

// Add adds o's counters to w.
func (w *Witness) Add(o Witness) {
	w.LeaderChanges += o.LeaderChanges
	w.Elections += o.Elections
	w.PreVotes += o.PreVotes
	w.Resignations += o.Resignations
	w.Truncations += o.Truncations
	w.VoterChanges += o.VoterChanges
	w.Crashes += o.Crashes
	w.Restarts += o.Restarts
	w.TornTails += o.TornTails
	w.UnsyncedLost += o.UnsyncedLost
	w.LostAfterSend += o.LostAfterSend
	w.BackgroundSyncs += o.BackgroundSyncs
	w.LostBeforeLogSynced += o.LostBeforeLogSynced
	w.DiskFaultsArmed += o.DiskFaultsArmed
	w.DiskFaults += o.DiskFaults
	w.Dropped += o.Dropped
	w.Duplicated += o.Duplicated
	w.PartitionDrops += o.PartitionDrops
	w.DownDrops += o.DownDrops
	w.Partitions += o.Partitions
	w.OneWayPartitions += o.OneWayPartitions
	w.LeaderIsolations += o.LeaderIsolations
	w.Heals += o.Heals
	w.Isolations += o.Isolations
	w.GenuineResets += o.GenuineResets
	w.SpuriousResets += o.SpuriousResets
	w.Proposals += o.Proposals
	w.Acked += o.Acked
	w.Snapshots += o.Snapshots
	w.SnapshotInstalls += o.SnapshotInstalls
	w.SnapshotChunks += o.SnapshotChunks
	w.SnapshotRestarts += o.SnapshotRestarts
	w.LogStartAdvances += o.LogStartAdvances
	w.Wipes += o.Wipes
	w.StoreStartMoves += o.StoreStartMoves
	w.SelfRemovals += o.SelfRemovals
}

// String prints the counters one "name=value" each.
func (w Witness) String() string {
	return fmt.Sprintf("leader_changes=%d elections=%d prevotes=%d resignations=%d truncations=%d voter_changes=%d "+
		"crashes=%d restarts=%d torn_tails=%d unsynced_ops_lost=%d lost_after_send=%d background_syncs=%d lost_before_log_synced=%d disk_faults_armed=%d disk_fail_stops=%d dropped=%d duplicated=%d partition_drops=%d down_drops=%d "+
		"partitions=%d oneway=%d leader_isolations=%d isolated_nodes=%d heals=%d genuine_resets=%d spurious_resets=%d proposals=%d acked=%d "+
		"snapshots=%d snapshot_installs=%d snapshot_chunks=%d snapshot_restarts=%d log_start_advances=%d wipes=%d store_start_moves=%d self_removals=%d",
		w.LeaderChanges, w.Elections, w.PreVotes, w.Resignations, w.Truncations, w.VoterChanges,
		w.Crashes, w.Restarts, w.TornTails, w.UnsyncedLost, w.LostAfterSend, w.BackgroundSyncs, w.LostBeforeLogSynced, w.DiskFaultsArmed, w.DiskFaults, w.Dropped, w.Duplicated, w.PartitionDrops, w.DownDrops,
		w.Partitions, w.OneWayPartitions, w.LeaderIsolations, w.Isolations, w.Heals, w.GenuineResets, w.SpuriousResets, w.Proposals, w.Acked,
		w.Snapshots, w.SnapshotInstalls, w.SnapshotChunks, w.SnapshotRestarts, w.LogStartAdvances, w.Wipes, w.StoreStartMoves, w.SelfRemovals)
}

// Result is the outcome of one run.
type Result struct {
	Seed      uint64
	Voters    int
	Observers int
	Faults    Faults
	// FaultSteps is Options.Steps, the length of the fault phase.
	FaultSteps int
	// Steps is the number of events processed, both phases.
	Steps int
	// VirtualTime is the simulated time at the end, in milliseconds.
	VirtualTime kraft.Instant
	// TimeToLeader and TimeToCommit are measured in the liveness phase,
	// from the heal (ms).
	TimeToLeader, TimeToCommit kraft.Instant
	// TraceHash hashes every trace event: equal seeds give equal hashes.
	TraceHash uint64
	Witness   Witness
	// Tail is the last trace events; Trace is all of them if kept.
	Tail, Trace []string
	// Err is the violation or runtime failure that ended the run, if any.
	Err error
}

// Replay returns the command that runs this seed again (TestSim derives
// the voters, observers, mode and faults from the seed).
func (r Result) Replay() string {
	return fmt.Sprintf("go test ./internal/sim -run 'TestSim$' -seed=%d -steps=%d", r.Seed, r.FaultSteps)
}

// Run simulates one seed and fails t with the replay command and the
// trace tail if an invariant breaks.
func Run(t testing.TB, opts Options) Result {
	t.Helper()
	res := Simulate(opts)
	if res.Err != nil {
		t.Errorf("seed %d (voters=%d observers=%d disk=%t faults: %s): %v\nreplay: %s\nlast %d events:\n  %s",
			res.Seed, res.Voters, res.Observers, opts.Disk, res.Faults, res.Err, res.Replay(), len(res.Tail), strings.Join(res.Tail, "\n  "))
	}
	return res
}

type evKind uint8

const (
	evDeliver evKind = iota
	evTick
	evPropose
	evNemesis
	evRestart
	evSync
)

type event struct {
	at   kraft.Instant
	seq  uint64
	kind evKind
	node kraft.NodeID
	gen  uint64
	msg  kraft.Message
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// world is one random run: the cluster plus the scheduler, the network
// and the nemesis.
type world struct {
	*cluster
	opts     Options
	f        Faults
	rng      *rand.Rand
	now      kraft.Instant
	queue    eventQueue
	seq      uint64
	tickGen  []uint64
	tickAt   []kraft.Instant
	spins    int           // events in a row at the same virtual instant
	blocked  [][]bool      // blocked[from][to]
	down     []bool        // crashed and awaiting restart
	isoEpoch []kraft.Epoch // L4: durable epoch when the node was cut off from all, -1 if not
	isoLed   []bool        // L4: the node led or resigned during the cut
	calm     bool          // liveness phase: no more faults
	steps    int
	ttl      kraft.Instant // liveness: time to a leader
	ttc      kraft.Instant // liveness: time to a committed proposal
	gotL     bool          // ttl is set
	gotC     bool          // ttc is set
	wiped    map[kraft.NodeID]bool

	hash    uint64
	tail    []string
	tailPos int
	all     []string
}

// Simulate runs one seed and returns its result; Result.Err is set if an
// invariant broke or the run failed.
func Simulate(opts Options) Result {
	if opts.TraceTail <= 0 {
		opts.TraceTail = 40
	}
	if opts.Voters <= 0 {
		opts.Voters = 3
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5157))
	var f Faults
	if opts.Faults != nil {
		f = *opts.Faults
	} else {
		f = SwarmFaults(rng)
	}
	if f.DelayMax < 1 {
		f.DelayMax = 1
	}
	w := &world{opts: opts, f: f, rng: rng, tail: make([]string, 0, opts.TraceTail)}
	h := fnv.New64a()
	w.hash = h.Sum64()
	res := Result{Seed: opts.Seed, FaultSteps: opts.Steps, Voters: opts.Voters, Observers: opts.Observers, Faults: f}
	err := w.run()
	res.Steps = w.steps
	res.VirtualTime = w.now
	res.TraceHash = w.hash
	if w.cluster != nil {
		res.Witness = *w.witness
		res.TimeToLeader, res.TimeToCommit = w.ttl, w.ttc
	}
	res.Tail = w.tailLines()
	res.Trace = w.all
	res.Err = err
	return res
}

func (w *world) tracef(format string, args ...any) {
	line := fmt.Sprintf("%8d ", w.now) + fmt.Sprintf(format, args...)
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s", w.hash, line)
	w.hash = h.Sum64()
	if len(w.tail) < cap(w.tail) {
		w.tail = append(w.tail, line)
	} else {
		w.tail[w.tailPos] = line
		w.tailPos = (w.tailPos + 1) % len(w.tail)
	}
	if w.opts.KeepTrace {
		w.all = append(w.all, line)
	}
}

func (w *world) tailLines() []string {
	out := slices.Clone(w.tail[w.tailPos:])
	return append(out, w.tail[:w.tailPos]...)
}

func (w *world) push(e *event) {
	w.seq++
	e.seq = w.seq
	heap.Push(&w.queue, e)
}

func (w *world) jitter(mean int) kraft.Instant {
	return kraft.Instant(1 + w.rng.IntN(2*mean+1))
}

func (w *world) run() error {
	var diskRng *rand.Rand
	if w.opts.Disk {
		diskRng = w.rng
	}
	seed := w.rng.Uint64()
	var tune func(*kraft.Config)
	snapEvery, snapKeep := 0, 0
	if w.opts.Snapshots {
		snapEvery, snapKeep = 2+w.rng.IntN(15), 1+w.rng.IntN(3)
		maxBytes := []int32{64, 256, 1024}[w.rng.IntN(3)]
		tune = func(cfg *kraft.Config) { cfg.FetchSnapshotMaxBytes = maxBytes }
		w.tracef("snapshots every %d committed batches, keep %d, FetchSnapshot chunks of %d bytes", snapEvery, snapKeep, maxBytes)
	}
	c, err := newClusterWith(w.opts.Voters, w.opts.Observers, seed, diskRng, tune)
	if err != nil {
		return err
	}
	c.snapEvery, c.snapKeep = snapEvery, snapKeep
	w.cluster = c
	c.mutation = w.opts.mutation
	if c.mutation == 0 && bugzoo.Active(bugzoo.Z1) {
		c.mutation = mutAppendNotDurable
	}
	if c.mutation == 0 && bugzoo.Active(bugzoo.Z3) {
		c.mutation = mutVoteNotDurable
	}
	c.trace = w.tracef
	c.send = w.sendMsg
	c.maxFetch = 1 + w.rng.IntN(4)
	n := len(c.nodes)
	w.tickGen, w.tickAt, w.down = make([]uint64, n), make([]kraft.Instant, n), make([]bool, n)
	w.isoEpoch, w.isoLed = make([]kraft.Epoch, n), make([]bool, n)
	for i := range w.isoEpoch {
		w.isoEpoch[i] = -1
	}
	w.blocked = make([][]bool, n+1)
	for i := range w.blocked {
		w.blocked[i] = make([]bool, n+1)
	}
	c.drainPlan = w.crashPlan
	c.scheduleSync = w.scheduleSync
	w.tracef("start seed=%d voters=%d observers=%d disk=%t faults: %s", w.opts.Seed, w.opts.Voters, w.opts.Observers, w.opts.Disk, w.f)
	for _, nd := range c.nodes {
		if err := c.drain(nd); err != nil {
			return err
		}
		w.touch(nd)
	}
	w.push(&event{at: w.jitter(w.f.ProposeEvery), kind: evPropose})
	w.push(&event{at: w.jitter(w.f.NemesisEvery), kind: evNemesis})
	for w.steps < w.opts.Steps {
		if err := w.step(); err != nil {
			return err
		}
	}
	return w.liveness()
}

// step processes the next event and checks the per-step invariants.
func (w *world) step() error {
	if len(w.queue) == 0 {
		return errors.New("no events left: the cluster stopped")
	}
	e := heap.Pop(&w.queue).(*event)
	if e.at == w.now {
		// A core whose deadline does not move after Tick would spin here
		// forever without virtual time passing.
		if w.spins++; w.spins > 100_000 {
			return fmt.Errorf("virtual time stuck at %s: %d events in a row", w.now, w.spins)
		}
	} else {
		w.spins = 0
	}
	w.now = e.at
	w.steps++
	for _, n := range w.nodes {
		n.now = w.now
	}
	if err := w.handle(e); err != nil {
		return err
	}
	if err := w.checkIsolated(); err != nil {
		return err
	}
	if w.snapEvery > 0 {
		if err := w.chk.checkSnapshots(); err != nil {
			return err
		}
	}
	return w.chk.checkQuorum(w.now)
}

// checkIsolated checks L4 (docs/reliability.md): a node cut off from every
// other node in both directions cannot raise its epoch, because its
// pre-votes never reach anybody. The one exception is Kafka's own: a
// leader that resigns (check-quorum) goes from Resigned to Unattached in
// the next epoch when its election timer fires, so a node that led or
// resigned during the cut may be one epoch higher.
func (w *world) checkIsolated() error {
	for _, n := range w.nodes {
		i := n.id - 1
		alone := len(w.nodes) > 1
		for _, m := range w.nodes {
			if m.id != n.id && (!w.blocked[n.id][m.id] || !w.blocked[m.id][n.id]) {
				alone = false
				break
			}
		}
		if !alone {
			w.isoEpoch[i] = -1
			continue
		}
		if w.isoEpoch[i] < 0 {
			w.isoEpoch[i], w.isoLed[i] = n.qs.Epoch, false
			w.witness.Isolations++
		}
		if n.up() && (n.role == kraft.Leader || n.role == kraft.Resigned) {
			w.isoLed[i] = true
		}
		allowed := w.isoEpoch[i]
		if w.isoLed[i] {
			allowed++
		}
		if n.qs.Epoch > allowed {
			return violation(invNoDisruption, "node %d raised its epoch from %d to %d while cut off from every other node", n.id, w.isoEpoch[i], n.qs.Epoch)
		}
	}
	return nil
}

func (w *world) handle(e *event) error {
	switch e.kind {
	case evDeliver:
		h := kraft.HeaderOf(e.msg)
		to := w.node(h.To)
		switch {
		case to == nil || !to.up():
			w.witness.DownDrops++
			return nil
		case w.blocked[h.From][h.To]:
			w.witness.PartitionDrops++
			w.tracef("drop (partition) %s", e.msg)
			return nil
		}
		w.tracef("deliver %s", e.msg)
		if err := w.cluster.step(to, e.msg); err != nil {
			return err
		}
		w.touch(to)
	case evTick:
		n := w.node(e.node)
		if !n.up() || e.gen != w.tickGen[n.id-1] {
			return nil
		}
		w.tickAt[n.id-1] = kraft.Never
		if err := w.cluster.tick(n); err != nil {
			return err
		}
		w.touch(n)
	case evPropose:
		if w.calm {
			return nil
		}
		w.push(&event{at: w.now + w.jitter(w.f.ProposeEvery), kind: evPropose})
		return w.clientPropose()
	case evNemesis:
		if w.calm {
			return nil
		}
		w.push(&event{at: w.now + w.jitter(w.f.NemesisEvery), kind: evNemesis})
		return w.nemesis()
	case evSync:
		n := w.node(e.node)
		if err := w.syncDone(n, e.gen); err != nil {
			return err
		}
		w.touch(n)
	case evRestart:
		n := w.node(e.node)
		if n.up() {
			return nil
		}
		w.down[n.id-1] = false
		if err := w.restart(n); err != nil {
			return err
		}
		w.touch(n)
	}
	return nil
}

// touch reschedules n's timer after the core moved.
func (w *world) touch(n *simNode) {
	i := n.id - 1
	if !n.up() {
		w.tickGen[i]++
		w.tickAt[i] = kraft.Never
		if !w.down[i] {
			w.scheduleRestart(n)
		}
		return
	}
	d := n.core.NextDeadline()
	if d == w.tickAt[i] {
		return
	}
	w.tickGen[i]++
	w.tickAt[i] = d
	if d == kraft.Never {
		return
	}
	w.push(&event{at: max(d, w.now), kind: evTick, node: n.id, gen: w.tickGen[i]})
}

// scheduleSync completes n's background fsync after a random time in
// which the network delivers messages to it (Fetches to a leader).
func (w *world) scheduleSync(n *simNode) {
	w.push(&event{at: w.now + kraft.Instant(w.rng.IntN(2*w.f.DelayMax+1)), kind: evSync, node: n.id, gen: n.syncGen})
}

// scheduleRestart brings a crashed node back after a random downtime.
func (w *world) scheduleRestart(n *simNode) {
	w.down[n.id-1] = true
	w.push(&event{at: w.now + 1 + kraft.Instant(w.rng.IntN(5000)), kind: evRestart, node: n.id})
}

// sendMsg puts m on the network: dropped, delayed, maybe duplicated.
func (w *world) sendMsg(from *simNode, m kraft.Message) {
	if !w.calm && w.f.Drop > 0 && w.rng.Float64() < w.f.Drop {
		w.witness.Dropped++
		w.tracef("lose %s", m)
		return
	}
	w.push(&event{at: w.now + 1 + kraft.Instant(w.rng.IntN(w.f.DelayMax)), kind: evDeliver, msg: m})
	if !w.calm && w.f.Duplicate > 0 && w.rng.Float64() < w.f.Duplicate {
		w.witness.Duplicated++
		w.push(&event{at: w.now + 1 + kraft.Instant(w.rng.IntN(2*w.f.DelayMax)), kind: evDeliver, msg: copyMessage(m)})
	}
}

// crashPlan decides whether n crashes inside the Ready it is about to
// carry out.
func (w *world) crashPlan(n *simNode, rd kraft.Ready) crashPlan {
	if w.calm || w.f.Crash == 0 || w.f.CrashInReady == 0 || w.rng.Float64() >= w.f.CrashInReady {
		return crashPlan{}
	}
	ops := len(rd.Appends)
	if rd.TruncateTo >= 0 {
		ops++
	}
	if rd.InstallSnapshot.Valid() {
		ops++
	}
	if ops > 0 && w.rng.IntN(3) > 0 {
		modes := 3
		if w.opts.Disk {
			modes = 4
		}
		cp := crashPlan{at: beforeSync, mode: CrashMode(w.rng.IntN(modes)), keep: w.rng.IntN(ops + 1)}
		if rd.SyncLater && len(rd.Appends) > 0 {
			// A leader's messages leave before its fsync: some are out
			// when it crashes.
			cp.sendOut = w.rng.IntN(len(rd.Messages) + 1)
		}
		return cp
	}
	return crashPlan{at: afterSync, sendOut: w.rng.IntN(len(rd.Messages) + 1)}
}

// leader returns an up node that is leader with the highest epoch, or nil.
func (w *world) leader() *simNode {
	var best *simNode
	for _, n := range w.nodes {
		if n.up() && n.role == kraft.Leader && (best == nil || n.epoch > best.epoch) {
			best = n
		}
	}
	return best
}

// clientPropose sends a proposal to a random node and follows its
// redirect once, as a client does.
func (w *world) clientPropose() error {
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	if !n.up() {
		return nil
	}
	if n.role != kraft.Leader {
		l := n.core.Status().Leader.LeaderID
		if m := w.node(l); m != nil && m.up() && !w.blocked[n.id][l] {
			n = m
		} else {
			return nil
		}
	}
	ok, err := w.propose(n, 1+w.rng.IntN(3))
	if ok {
		w.witness.Proposals++
		w.touch(n)
	}
	return err
}

// liveness heals everything, restarts the crashed nodes, and requires a
// leader, a committed new proposal and every node caught up within a
// bound of virtual time (L1–L3 in docs/reliability.md).
func (w *world) liveness() error {
	w.calm = true
	w.maxFetch = 0 // a fetch-size cap is no fault: let the backlog drain
	w.tracef("liveness: heal all, restart crashed nodes")
	for _, row := range w.blocked {
		clear(row)
	}
	for _, n := range w.nodes {
		if !n.up() {
			w.down[n.id-1] = false
			if err := w.restart(n); err != nil {
				return err
			}
			w.touch(n)
		}
	}
	start := w.now
	const bound = 30_000
	deadline := start + bound
	var tried []Payload
	nextTry := w.now
	for {
		if w.now > deadline {
			return fmt.Errorf("L1-L3 liveness: %s after healing at %s, %s", kraft.Instant(bound), start, w.progress(tried))
		}
		if l := w.leader(); l != nil && !w.gotL {
			w.ttl, w.gotL = w.now-start, true
		}
		// Propose until one of the liveness proposals commits; one may be
		// truncated away by a leader change, so retry every 2 s.
		if !w.gotC && w.now >= nextTry {
			if l := w.leader(); l != nil {
				p := Payload(w.proposed + 1)
				ok, err := w.propose(l, 1)
				if err != nil {
					return err
				}
				w.touch(l)
				if ok {
					tried = append(tried, p)
					nextTry = w.now + 2000
				}
			}
		}
		for _, p := range tried {
			o, ok := w.chk.commitPay[p]
			if !ok {
				continue
			}
			if !w.gotC {
				w.ttc, w.gotC = w.now-start, true
			}
			caught := true
			for _, n := range w.nodes {
				if n.hw <= o {
					caught = false
				}
			}
			if caught {
				w.tracef("liveness: proposal %s committed at %d and replicated everywhere", p, o)
				if err := w.chk.checkHeld(); err != nil {
					return err
				}
				return w.chk.checkAcked()
			}
		}
		if err := w.step(); err != nil {
			return err
		}
	}
}

func (w *world) progress(tried []Payload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "proposals %v, committed prefix ends at %d;", tried, w.chk.committedEnd())
	for _, n := range w.nodes {
		if !n.up() {
			fmt.Fprintf(&b, " %d:down", n.id)
			continue
		}
		st := n.core.Status()
		fmt.Fprintf(&b, " %d:%s/e%d/leader=%d/hw=%d/leo=%d", n.id, st.Role, st.Epoch, st.Leader.LeaderID, st.HighWatermark, st.LogEndOffset)
	}
	return b.String()
}
