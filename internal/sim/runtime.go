package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/vfs"
)

// simNode is one replica: the consensus core plus the runtime around it,
// with a live log the core reads and the durable quorum state.
type simNode struct {
	id    kraft.NodeID
	cfg   kraft.Config
	core  *kraft.Node // nil while the node is down
	log   *memLog     // live log; equal to the durable image between Readys
	dl    *download   // snapshot download in progress (lost in a crash)
	disk  *disk       // disk mode: the log store the live log mirrors
	qs    kraft.ElectionState
	now   kraft.Instant
	lives int // incarnation number, raised by every restart

	// What the last Ready wrote, for the runtime mutations that make it
	// less durable than the contract requires.
	prevQS      kraft.ElectionState
	lastAppends int

	// The background fsync of a leader's SyncLater appends: unsynced says
	// the live log holds appends beyond syncedEnd that a crash loses;
	// syncing says an fsync runs, covering up to syncTarget, whose
	// completion event carries syncGen (a stale one is ignored);
	// sentUnsynced says messages of a Ready with such appends left.
	unsynced     bool
	sentUnsynced bool
	syncedEnd    kraft.Offset
	syncing      bool
	syncTarget   kraft.Offset
	syncGen      uint64

	// Per-incarnation observations the checker compares against.
	hw        kraft.Offset // last high watermark the core handed out
	role      kraft.Role
	epoch     kraft.Epoch
	roleSince kraft.Instant
}

func (n *simNode) up() bool { return n.core != nil }

// durableEnd is the end of the part of n's live log a crash keeps.
func (n *simNode) durableEnd() kraft.Offset {
	if n.unsynced {
		return n.syncedEnd
	}
	return n.log.EndOffset()
}

func (n *simNode) clone() *simNode {
	c := *n
	c.log = n.log.clone()
	if n.core != nil {
		c.core = n.core.Clone(c.log)
	}
	return &c
}

// crashPlan says where, if anywhere, a node crashes while carrying out a
// Ready. Before the fsync the unsynced log writes are lost in one of four
// ways (and, when the Ready lets its messages leave before the fsync,
// some may be out already); after it, only the unsent messages are lost.
type crashPlan struct {
	at      crashStage
	keep    int       // keep-prefix and tear: unsynced log operations that survive
	mode    CrashMode // how the unsynced writes are lost (beforeSync)
	sendOut int       // messages sent before the crash (afterSync; beforeSync with SyncLater appends)
}

type crashStage uint8

const (
	noCrash crashStage = iota
	beforeSync
	afterSync
)

// CrashMode is how a crash treats the log writes not yet fsynced, as the
// vfs crash modes do for files.
type CrashMode uint8

// The crash modes.
const (
	// DropUnsynced loses every unsynced write.
	DropUnsynced CrashMode = iota
	// KeepPrefix keeps a prefix of the unsynced operations.
	KeepPrefix
	// TearPrefix keeps a prefix and half of the next batch; recovery finds
	// the torn batch and cuts it off.
	TearPrefix
	// Reorder keeps a random subset of the unsynced writes (disk mode;
	// the memory mode treats it as KeepPrefix).
	Reorder
)

// vfsMode maps a crash mode to the file system's.
func (m CrashMode) vfsMode() vfs.CrashMode {
	switch m {
	case KeepPrefix:
		return vfs.CrashKeepPrefix
	case TearPrefix:
		return vfs.CrashTearPrefix
	case Reorder:
		return vfs.CrashReorder
	}
	return vfs.CrashDropUnsynced
}

func (m CrashMode) String() string {
	switch m {
	case DropUnsynced:
		return "drop-unsynced"
	case KeepPrefix:
		return "keep-prefix"
	case TearPrefix:
		return "tear-prefix"
	case Reorder:
		return "reorder"
	}
	return fmt.Sprintf("CrashMode(%d)", uint8(m))
}

// handleTable maps the records handles the runtime hands to the cores to
// the entries they stand for. It is shared by every clone of a cluster
// (handles only grow), so a handle never names two contents.
type handleTable struct {
	next    kraft.RecordsHandle
	entries map[kraft.RecordsHandle][]Entry
	chunks  map[kraft.RecordsHandle][]byte // FetchSnapshot chunks
}

func (t *handleTable) put(es []Entry) kraft.RecordsHandle {
	t.next++
	t.entries[t.next] = es
	return t.next
}

// cluster is the simulated quorum without its scheduler: nodes, the ghost
// state of the checker, and the runtime half of the Ready contract. The
// random simulator and the exhaustive explorer both drive it.
type cluster struct {
	nodes    []*simNode
	voters   []kraft.ReplicaKey // the initial voter set
	chk      *checker
	handles  *handleTable
	proposed int // proposals made, the source of payload ids
	maxFetch int // most batches per Fetch response; 0 = no limit
	// snapEvery is how many committed batches after its latest snapshot
	// make a node take the next one (0: no snapshots); snapKeep is how
	// many snapshots retention keeps.
	snapEvery, snapKeep int
	witness             *Witness

	// send is where the runtime puts every message it sends.
	send func(from *simNode, m kraft.Message)
	// trace records an event; nil when not tracing.
	trace func(format string, args ...any)
	// drainPlan, if set, is consulted at the start of each Ready and may
	// crash the node inside it.
	drainPlan func(n *simNode, rd kraft.Ready) crashPlan
	// scheduleSync, if set, schedules the completion of the background
	// fsync n started (syncDone with n.syncGen), so that other input is
	// stepped while it runs; nil completes it at once.
	scheduleSync func(n *simNode)
	// infos holds the control content of every batch written in disk
	// mode, to restore it when a store is read back (shared by clones).
	infos map[infoKey]kraft.BatchInfo
	// rng draws the crash modes' random choices in disk mode.
	rng *rand.Rand
	// mutation breaks the runtime on purpose, to show that the checker
	// notices (tests only).
	mutation mutation
}

// mutation is a deliberate runtime bug: each makes the durability the
// core relies on a lie, as the bug-zoo entries of docs/reliability.md do.
type mutation uint8

const (
	// mutVoteNotDurable: a crash loses the last quorum-state write, so a
	// vote (or epoch) sent out is forgotten (Z3).
	mutVoteNotDurable mutation = iota + 1
	// mutAppendNotDurable: a crash loses the appends of the node's last
	// Ready although they were reported durable (Z1, Z2).
	mutAppendNotDurable
	// mutLeaderCountsUnsynced: the runtime reports a SyncLater Ready's
	// appends synced right at Advance, before the background fsync, as a
	// leader counting its own end offset at Advance would (Z1); a crash
	// before the fsync then loses entries the leader counted, with its
	// followers already holding them and the leader stepping their
	// Fetches meanwhile.
	mutLeaderCountsUnsynced
	// mutSnapshotUncommitted: snapshots cover the whole log, committed or
	// not (S1, S3).
	mutSnapshotUncommitted
	// mutRetentionPastSnapshot: retention moves the log start one batch
	// past the oldest snapshot it keeps (S2).
	mutRetentionPastSnapshot
)

func (c *cluster) tracef(format string, args ...any) {
	if c.trace != nil {
		c.trace(format, args...)
	}
}

// newCluster builds voters+observers nodes. With rng set the nodes run
// in disk mode, on a log store each, and rng draws the crash modes'
// choices.
func newCluster(voters, observers int, seed uint64, rng *rand.Rand) (*cluster, error) {
	return newClusterWith(voters, observers, seed, rng, nil)
}

// newClusterWith is newCluster with tune, if set, adjusting every node's
// configuration before it starts.
func newClusterWith(voters, observers int, seed uint64, rng *rand.Rand, tune func(*kraft.Config)) (*cluster, error) {
	c := &cluster{handles: &handleTable{entries: map[kraft.RecordsHandle][]Entry{}, chunks: map[kraft.RecordsHandle][]byte{}}, witness: &Witness{},
		infos: map[infoKey]kraft.BatchInfo{}, rng: rng}
	for i := 1; i <= voters; i++ {
		c.voters = append(c.voters, kraft.ReplicaKey{ID: kraft.NodeID(i)})
	}
	c.chk = newChecker(c)
	for i := 1; i <= voters+observers; i++ {
		cfg := kraft.DefaultConfig()
		cfg.ID = kraft.NodeID(i)
		cfg.Voters = c.voters
		cfg.Seed = seed
		if tune != nil {
			tune(&cfg)
		}
		n := &simNode{id: cfg.ID, cfg: cfg, log: &memLog{},
			qs: kraft.ElectionState{LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}}
		if rng != nil {
			d, err := newDisk()
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", n.id, err)
			}
			n.disk = d
		}
		c.nodes = append(c.nodes, n)
		if err := c.start(n); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *cluster) clone() *cluster {
	d := *c
	d.nodes = make([]*simNode, len(c.nodes))
	for i, n := range c.nodes {
		d.nodes[i] = n.clone()
	}
	w := *c.witness
	d.witness = &w
	d.chk = c.chk.clone(&d)
	return &d
}

func (c *cluster) node(id kraft.NodeID) *simNode {
	if id < 1 || int(id) > len(c.nodes) {
		return nil
	}
	return c.nodes[id-1]
}

// start builds the core of n from its durable state, as a process start
// does.
func (c *cluster) start(n *simNode) error {
	var view kraft.LogView = n.log
	if err := c.settle(n); err != nil {
		return err
	}
	if n.disk != nil {
		if err := checkStore(n); err != nil {
			return err
		}
		view = storeView{n}
	}
	core, err := kraft.NewNode(n.now, n.cfg, n.qs, view)
	if err != nil {
		return fmt.Errorf("node %d: start: %w", n.id, err)
	}
	n.core = core
	n.lives++
	n.hw = -1
	st := core.Status()
	n.role, n.epoch, n.roleSince = st.Role, st.Epoch, n.now
	delete(c.chk.goodFetch, n.id)
	return c.chk.onStart(n)
}

// crash stops n: the core and everything in memory are gone; the durable
// quorum state and the durable log image stay.
func (c *cluster) crash(n *simNode) {
	// The mutations rewrite the in-memory log and quorum state; a node on a
	// simulated disk keeps exactly what its store recovers instead.
	mut := c.mutation
	if n.disk != nil {
		mut = 0
	}
	switch mut {
	case mutVoteNotDurable:
		n.qs = n.prevQS
	case mutAppendNotDurable:
		if k := len(n.log.entries) - n.lastAppends; n.lastAppends > 0 && k >= 0 {
			n.log.entries = n.log.entries[:k:k]
		}
	}
	n.lastAppends = 0
	if n.unsynced && n.disk == nil {
		// The background fsync did not finish: its appends are gone.
		if n.log.EndOffset() > n.syncedEnd {
			c.witness.UnsyncedLost++
			c.witness.LostBeforeLogSynced++
			if n.sentUnsynced {
				c.witness.LostAfterSend++
			}
			c.tracef("%d loses [%d,%d), written but not yet synced", n.id, n.syncedEnd, n.log.EndOffset())
		}
		if err := n.log.truncate(n.syncedEnd); err != nil {
			panic(fmt.Sprintf("sim: node %d: drop the unsynced appends: %v", n.id, err))
		}
	}
	n.unsynced, n.sentUnsynced, n.syncing = false, false, false
	n.syncGen++
	n.core = nil
	n.dl = nil
	c.witness.Crashes++
	c.tracef("%d crash", n.id)
}

// crashDisk loses power on n's disk in mode m and recovers the log store;
// the live log and the quorum state become what recovery found. It
// reports whether recovery cut a torn or unsynced tail.
func (c *cluster) crashDisk(n *simNode, m CrashMode) (bool, error) {
	// An armed fault that has not fired is dropped: the simulator injects
	// disk errors into running nodes, not into recovery.
	n.disk.fs.ClearFaults()
	rep, err := n.disk.crash(c.rng, m.vfsMode())
	if err != nil {
		return false, fmt.Errorf("node %d: recover after a %s crash: %w", n.id, m, err)
	}
	es, err := n.disk.read(c.infos)
	if err != nil {
		return false, fmt.Errorf("node %d: read the log store after a %s crash: %w", n.id, m, err)
	}
	qs, err := n.disk.readState()
	if err != nil {
		return false, fmt.Errorf("node %d: read quorum-state after a %s crash: %w", n.id, m, err)
	}
	// Snapshot files are written whole and renamed (package snapshot's
	// own crash tests cover that): they survive the power loss.
	n.log = &memLog{start: kraft.Offset(n.disk.log.LogStartOffset()), entries: es, snaps: n.log.snaps}
	n.qs = qs
	if err := c.settle(n); err != nil {
		return false, err
	}
	return rep.Truncation != nil, nil
}

// failStop handles a storage error in disk mode as Kafka does (invariant B3
// in docs/reliability.md): the process stops at once, sending nothing of the
// Ready, and never retries the write or fsync. An injected fault (EIO,
// ENOSPC, or the log store refusing writes after one) stops the node, the
// machine then loses power, and the node restarts from what recovery finds.
// Any other error is a failure of the run.
func (c *cluster) failStop(n *simNode, err error) (bool, error) {
	if !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, logstore.ErrPoisoned) {
		return false, err
	}
	c.witness.DiskFaults++
	c.tracef("%d fail-stop: %v", n.id, err)
	if _, err := c.crashDisk(n, CrashMode(c.rng.IntN(4))); err != nil {
		return false, err
	}
	c.crash(n)
	return true, nil
}

// crashAtRest crashes n between Readys: in disk mode its file system loses
// power too, and everything synced must survive it.
func (c *cluster) crashAtRest(n *simNode) error {
	if n.disk != nil {
		before, qs := n.log, n.qs
		synced, unsynced := n.durableEnd(), n.unsynced
		m := CrashMode(c.rng.IntN(4))
		if _, err := c.crashDisk(n, m); err != nil {
			return err
		}
		// Start-up may move the log start up to the oldest snapshot; the
		// end and the last batch must be what was synced (or more, of a
		// background fsync's appends, when one had not finished).
		lost := before.EndOffset() != n.log.EndOffset()
		if unsynced {
			lost = n.log.EndOffset() < synced
			if !lost && before.EndOffset() > n.log.EndOffset() {
				c.witness.LostBeforeLogSynced++
				if n.sentUnsynced {
					c.witness.LostAfterSend++
				}
			}
		}
		if b, ok := before.holds(synced - 1); ok && !lost {
			a, ok := n.log.holds(b.Batch.BaseOffset)
			lost = !ok || !sameEntry(a, b)
		}
		if lost {
			return violation(invDurable, "node %d had log end %d synced, and after a %s crash the store holds [%d,%d)", n.id, synced, m, n.log.start, n.log.EndOffset())
		}
		if qs != n.qs {
			return violation(invDurable, "node %d had quorum-state %s durable, and after a %s crash it reads %s", n.id, qs, m, n.qs)
		}
	}
	c.crash(n)
	return nil
}

// restart brings a crashed node back.
func (c *cluster) restart(n *simNode) error {
	c.witness.Restarts++
	if err := c.start(n); err != nil {
		return err
	}
	st := n.core.Status()
	c.tracef("%d restart as %s epoch=%d leo=%d", n.id, st.Role, st.Epoch, st.LogEndOffset)
	return c.drain(n)
}

// step delivers m to n (which must be up).
func (c *cluster) step(n *simNode, m kraft.Message) error {
	c.chk.beforeDeliver(n, m)
	before := n.qs
	timerDue := n.core.NextDeadline() <= n.now
	if err := n.core.Step(n.now, m); err != nil {
		return fmt.Errorf("node %d: step %s: %w", n.id, m, err)
	}
	if err := c.drain(n); err != nil {
		return err
	}
	if v, ok := m.(*kraft.VoteRequest); ok && v.PreVote && n.up() && !timerDue {
		return c.chk.afterPreVote(n, v, before)
	}
	return nil
}

// connectionLost reports to n that its connection to peer was refused or
// reset.
func (c *cluster) connectionLost(n *simNode, peer kraft.NodeID) error {
	c.chk.connectionLost(n, peer)
	n.core.ConnectionLost(n.now, peer)
	return c.drain(n)
}

// tick runs n's timers.
func (c *cluster) tick(n *simNode) error {
	n.core.Tick(n.now)
	return c.drain(n)
}

// propose hands a new client batch to n if it leads. It reports whether
// the proposal was accepted.
func (c *cluster) propose(n *simNode, records int) (bool, error) {
	if n.core.Status().Role != kraft.Leader {
		return false, nil
	}
	p := Payload(c.proposed + 1)
	h := c.handles.put([]Entry{{Payload: p}})
	b, err := n.core.Propose(n.now, kraft.Proposal{Records: records, Handle: h})
	if errors.Is(err, kraft.ErrNotLeader) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("node %d: propose: %w", n.id, err)
	}
	c.proposed++
	c.handles.entries[h][0].Batch = b
	c.chk.onPropose(n, Entry{Batch: b, Payload: p})
	c.tracef("%d propose %s", n.id, Entry{Batch: b, Payload: p})
	return true, c.drain(n)
}

// proposeVoters hands a Voters record to the leader n.
func (c *cluster) proposeVoters(n *simNode, voters []kraft.ReplicaKey) (bool, error) {
	if n.core.Status().Role != kraft.Leader || n.core.PendingVoterChange() {
		return false, nil
	}
	b, err := n.core.Propose(n.now, kraft.Proposal{Records: 1, Voters: voters})
	if errors.Is(err, kraft.ErrNotLeader) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("node %d: propose voters: %w", n.id, err)
	}
	c.witness.VoterChanges++
	c.tracef("%d propose voters %v at %s", n.id, voters, b)
	return true, c.drain(n)
}

// drain carries out every Ready of n, crashing it inside one where
// drainPlan says so.
func (c *cluster) drain(n *simNode) error {
	for n.up() && n.core.HasReady() {
		rd := n.core.Ready()
		cp := crashPlan{}
		if c.drainPlan != nil {
			cp = c.drainPlan(n, rd)
		}
		crashed, err := c.apply(n, rd, cp)
		if err != nil {
			return err
		}
		if crashed {
			return nil
		}
		n.core.Advance(rd)
		if err := c.observe(n); err != nil {
			return err
		}
		if rd.SyncLater && n.unsynced {
			if c.mutation == mutLeaderCountsUnsynced {
				if err := n.core.LogSynced(n.now, n.log.EndOffset()); err != nil {
					return fmt.Errorf("node %d: LogSynced: %w", n.id, err)
				}
			}
			if err := c.startSync(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// startSync starts n's background fsync of its SyncLater appends unless
// one runs (the next starts when it completes: appends written meanwhile
// are fsynced together, as the runtime does).
func (c *cluster) startSync(n *simNode) error {
	if n.syncing || !n.unsynced {
		return nil
	}
	n.syncing, n.syncTarget = true, n.log.EndOffset()
	if c.scheduleSync == nil {
		return c.syncDone(n, n.syncGen)
	}
	c.scheduleSync(n)
	return nil
}

// syncDone completes n's background fsync started with generation gen:
// the log is durable up to its target, which the core learns from
// LogSynced. A completion overtaken by a crash or by a Ready that fsynced
// the whole log changes nothing.
func (c *cluster) syncDone(n *simNode, gen uint64) error {
	if !n.up() || !n.syncing || gen != n.syncGen {
		return nil
	}
	n.syncing = false
	if n.disk != nil {
		if err := n.disk.sync(); err != nil {
			_, err := c.failStop(n, fmt.Errorf("node %d: log store: sync: %w", n.id, err))
			return err
		}
	}
	target := n.syncTarget
	n.syncedEnd = max(n.syncedEnd, target)
	if target >= n.log.EndOffset() {
		n.unsynced, n.sentUnsynced = false, false
	}
	c.witness.BackgroundSyncs++
	c.tracef("%d background fsync done at %d", n.id, target)
	if err := n.core.LogSynced(n.now, target); err != nil {
		return fmt.Errorf("node %d: LogSynced: %w", n.id, err)
	}
	if err := c.drain(n); err != nil {
		return err
	}
	if !n.up() {
		return nil
	}
	return c.startSync(n)
}

// observe notes role changes after n's core moved.
func (c *cluster) observe(n *simNode) error {
	st := n.core.Status()
	if st.Role == n.role && st.Epoch == n.epoch {
		return nil
	}
	c.tracef("%d becomes %s epoch=%d leo=%d hw=%d", n.id, st.Role, st.Epoch, st.LogEndOffset, st.HighWatermark)
	prev := n.role
	n.role, n.epoch, n.roleSince = st.Role, st.Epoch, n.now
	delete(c.chk.goodFetch, n.id)
	switch st.Role {
	case kraft.Leader:
		c.witness.LeaderChanges++
		return c.chk.onLeader(n)
	case kraft.Candidate:
		c.witness.Elections++
	case kraft.Prospective:
		c.witness.PreVotes++
	case kraft.Resigned:
		if prev == kraft.Leader {
			c.witness.Resignations++
		}
	}
	return nil
}

// apply carries out rd on n in contract order, crashing where cp says.
// It reports whether the node crashed.
func (c *cluster) apply(n *simNode, rd kraft.Ready, cp crashPlan) (bool, error) {
	if rd.SyncLater && (rd.TruncateTo >= 0 || len(rd.SnapshotWrites) > 0 || rd.InstallSnapshot.Valid()) {
		return false, fmt.Errorf("node %d: a Ready without an fsync first although it truncates or writes a snapshot", n.id)
	}
	// Every earlier Ready ended with an fsync (or a crash), except for the
	// appends of SyncLater Readys whose background fsync has not
	// finished: durableEnd is what a crash keeps.
	syncedEnd := n.durableEnd()
	var before *memLog
	// pre are the unsynced appends of earlier SyncLater Readys: a crash
	// before this Ready's fsync may lose them too.
	var pre []Entry
	if cp.at == beforeSync {
		before = n.log.clone()
		if n.unsynced {
			pre = slices.Clone(n.log.entries[n.log.find(syncedEnd):])
			if err := before.truncate(syncedEnd); err != nil {
				return false, fmt.Errorf("node %d: %w", n.id, err)
			}
		}
	}
	if rd.State != nil {
		if n.disk != nil {
			if err := n.disk.writeState(*rd.State); err != nil {
				return c.failStop(n, fmt.Errorf("node %d: write quorum-state: %w", n.id, err))
			}
		}
		if err := c.chk.onPersist(n, *rd.State); err != nil {
			return false, err
		}
		n.prevQS, n.qs = n.qs, *rd.State
	}
	// The log operations: an optional truncation, then appends.
	type op struct {
		truncate kraft.Offset
		entry    Entry
		install  *simSnapshot
	}
	var ops []op
	if rd.TruncateTo >= 0 {
		ops = append(ops, op{truncate: rd.TruncateTo})
	}
	for _, a := range rd.Appends {
		e := Entry{Batch: a.Batch}
		if a.Handle == 0 {
			e.Payload = controlPayload(a.Batch)
		} else {
			es := c.handles.entries[a.Handle]
			i := slices.IndexFunc(es, func(x Entry) bool { return x.Batch.BaseOffset == a.Batch.BaseOffset })
			if i < 0 {
				return false, fmt.Errorf("node %d: append %s with handle %d that holds no such batch", n.id, a.Batch, a.Handle)
			}
			e.Payload = es[i].Payload
		}
		ops = append(ops, op{truncate: -1, entry: e})
	}
	if len(rd.SnapshotWrites) > 0 {
		if err := c.writeChunks(n, rd.SnapshotWrites); err != nil {
			return false, err
		}
	}
	if rd.InstallSnapshot.Valid() {
		s, err := c.installFor(n, rd.InstallSnapshot)
		if err != nil {
			return false, err
		}
		ops = append(ops, op{truncate: -1, install: s})
	}
	if len(ops) > 0 {
		n.lastAppends = len(rd.Appends)
	}
	for _, o := range ops {
		if o.install != nil {
			if err := c.chk.onInstall(n, o.install); err != nil {
				return false, err
			}
			n.log.install(o.install)
			if n.disk != nil {
				if err := n.disk.log.TruncateFullyAndStartAt(int64(o.install.id.Offset)); err != nil {
					return c.failStop(n, fmt.Errorf("node %d: log store: restart at snapshot %s: %w", n.id, o.install.id, err))
				}
				n.disk.setSnapshots(n.log)
				c.witness.StoreStartMoves++
			}
			c.witness.SnapshotInstalls++
			c.tracef("%d install snapshot %s", n.id, o.install.id)
			continue
		}
		if o.truncate >= 0 {
			if o.truncate < n.log.EndOffset() {
				c.witness.Truncations++
				c.tracef("%d truncate %d (leo %d)", n.id, o.truncate, n.log.EndOffset())
			}
			if err := c.chk.onTruncate(n, o.truncate); err != nil {
				return false, err
			}
			if err := n.log.truncate(o.truncate); err != nil {
				return false, fmt.Errorf("node %d: %w", n.id, err)
			}
			if n.disk != nil {
				if err := n.disk.truncate(o.truncate); err != nil {
					return c.failStop(n, fmt.Errorf("node %d: log store: truncate %d: %w", n.id, o.truncate, err))
				}
			}
			continue
		}
		if err := c.chk.onAppend(n, o.entry); err != nil {
			return false, err
		}
		if err := n.log.append(o.entry); err != nil {
			return false, fmt.Errorf("node %d: %w", n.id, err)
		}
		if n.disk != nil {
			b := o.entry.Batch
			c.infos[infoKey{b.BaseOffset, b.Epoch, o.entry.Payload}] = b
			if err := n.disk.append(o.entry); err != nil {
				return c.failStop(n, fmt.Errorf("node %d: log store: %w", n.id, err))
			}
		}
	}
	if rd.SyncLater && len(ops) > 0 && !n.unsynced {
		n.unsynced, n.syncedEnd = true, syncedEnd
	}
	sent := 0
	if rd.SyncLater && len(ops) > 0 {
		// A leader's messages leave without waiting for the fsync, which
		// runs in the background; a crash before it may come after some
		// or all of them are out, and lose entries the followers already
		// hold.
		out := len(rd.Messages)
		if cp.at == beforeSync {
			out = min(cp.sendOut, out)
		}
		for _, m := range rd.Messages[:out] {
			if err := c.sendOne(n, m, syncedEnd); err != nil {
				return false, err
			}
		}
		sent = out
		n.sentUnsynced = n.sentUnsynced || out > 0
		if cp.at == beforeSync && out > 0 {
			c.tracef("%d sent %d of %d messages before its fsync", n.id, out, len(rd.Messages))
		}
	}
	if cp.at == beforeSync && n.disk != nil {
		end := n.log.EndOffset()
		torn, err := c.crashDisk(n, cp.mode)
		if err != nil {
			return false, err
		}
		if torn {
			c.witness.TornTails++
		}
		if n.log.EndOffset() != end {
			c.witness.UnsyncedLost++
			if sent > 0 {
				c.witness.LostAfterSend++
			}
		}
		c.tracef("%d crash before fsync (%s): log store recovered [0,%d) of [0,%d)", n.id, cp.mode, n.log.EndOffset(), end)
		c.crash(n)
		return true, nil
	}
	if cp.at == beforeSync {
		// Rebuild the durable image: the state before this Ready (less the
		// earlier SyncLater appends not yet synced) plus what the crash
		// mode lets survive of the unsynced operations.
		img := before
		unsyncedOps := make([]op, 0, len(pre)+len(ops))
		for _, e := range pre {
			unsyncedOps = append(unsyncedOps, op{truncate: -1, entry: e})
		}
		ops = append(unsyncedOps, ops...)
		keep := 0
		if cp.mode != DropUnsynced {
			keep = min(cp.keep+len(pre), len(ops))
		}
		for _, o := range ops[:keep] {
			if o.install != nil {
				img.install(o.install)
			} else if o.truncate >= 0 {
				_ = img.truncate(o.truncate)
			} else {
				_ = img.append(o.entry)
			}
		}
		if keep < len(ops) && ops[keep].install != nil && cp.mode != DropUnsynced {
			// The snapshot file was renamed into place, but the log was
			// not restarted at it: start-up finishes the install.
			img.snaps = append(slices.Clone(img.snaps), ops[keep].install)
		}
		if cp.mode == TearPrefix && keep < len(ops) && ops[keep].truncate < 0 && ops[keep].install == nil {
			// Half of the next batch reached the disk; recovery cuts it off.
			c.witness.TornTails++
		}
		c.witness.UnsyncedLost += len(ops) - keep
		if sent > 0 && keep < len(ops) {
			c.witness.LostAfterSend++
		}
		n.log = img
		n.unsynced = false
		c.tracef("%d crash before fsync (%s, kept %d of %d log operations)", n.id, cp.mode, keep, len(ops))
		c.crash(n)
		return true, nil
	}
	if !rd.SyncLater {
		// fsync: the live log, earlier SyncLater appends included, is now
		// the durable image; a background fsync still running was waited
		// for first, and its completion is void.
		if n.disk != nil && (len(ops) > 0 || n.unsynced) {
			if err := n.disk.sync(); err != nil {
				return c.failStop(n, fmt.Errorf("node %d: log store: sync: %w", n.id, err))
			}
			if err := checkStore(n); err != nil {
				return false, err
			}
		}
		n.unsynced, n.sentUnsynced, n.syncing = false, false, false
		n.syncGen++
	}
	for i := sent; i < len(rd.Messages); i++ {
		if cp.at == afterSync && i == cp.sendOut {
			c.tracef("%d crash after fsync, %d of %d messages sent", n.id, i, len(rd.Messages))
			return true, c.crashAtRest(n)
		}
		if err := c.sendOne(n, rd.Messages[i], n.durableEnd()); err != nil {
			return false, err
		}
	}
	if rd.HighWatermark >= 0 {
		if err := c.chk.onHighWatermark(n, rd.HighWatermark); err != nil {
			return false, err
		}
		n.hw = rd.HighWatermark
		if err := c.maybeSnapshot(n); err != nil {
			return c.failStop(n, err)
		}
	}
	if cp.at == afterSync {
		return true, c.crashAtRest(n)
	}
	return false, nil
}

// sendOne fills, checks and sends one message of n, whose log is durable
// up to syncedEnd.
func (c *cluster) sendOne(n *simNode, m kraft.Message, syncedEnd kraft.Offset) error {
	if err := c.fill(n, m); err != nil {
		return err
	}
	if err := c.chk.onSend(n, m, syncedEnd); err != nil {
		return err
	}
	c.send(n, m)
	return nil
}

// fill plays the sending runtime's part: a Fetch response gets the
// batches its RecordsRead names, read from the live log now.
func (c *cluster) fill(n *simNode, m kraft.Message) error {
	if r, ok := m.(*kraft.FetchSnapshotResponse); ok && r.Length > 0 {
		return c.fillChunk(n, r)
	}
	r, ok := m.(*kraft.FetchResponse)
	if !ok || r.Read.Empty() {
		return nil
	}
	es := n.log.read(r.Read.From, r.Read.Until, c.maxFetch)
	if len(es) == 0 {
		return fmt.Errorf("node %d: fetch response reads [%d,%d) but the log holds [%d,%d)", n.id, r.Read.From, r.Read.Until, n.log.start, n.log.EndOffset())
	}
	r.Batches = make([]kraft.BatchInfo, len(es))
	for i, e := range es {
		r.Batches[i] = e.Batch
	}
	r.Records = c.handles.put(es)
	return nil
}

// copyMessage returns a copy of m that shares no fields a receiver could
// change (a duplicated message is delivered twice).
func copyMessage(m kraft.Message) kraft.Message {
	switch m := m.(type) {
	case *kraft.VoteRequest:
		c := *m
		return &c
	case *kraft.VoteResponse:
		c := *m
		return &c
	case *kraft.BeginQuorumEpochRequest:
		c := *m
		return &c
	case *kraft.BeginQuorumEpochResponse:
		c := *m
		return &c
	case *kraft.EndQuorumEpochRequest:
		c := *m
		return &c
	case *kraft.EndQuorumEpochResponse:
		c := *m
		return &c
	case *kraft.FetchRequest:
		c := *m
		return &c
	case *kraft.FetchResponse:
		c := *m
		c.Batches = slices.Clone(m.Batches)
		return &c
	case *kraft.FetchSnapshotRequest:
		c := *m
		return &c
	case *kraft.FetchSnapshotResponse:
		c := *m
		return &c
	}
	return m
}
