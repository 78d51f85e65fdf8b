package kraft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft/quorum"
)

// Log attribute keys, one spelling each, so that every log line names a
// field the same way.
const (
	keyNodeID   = "node_id"
	keyEpoch    = "epoch"
	keyLeaderID = "leader_id"
	keyRole     = "role"
	keyOffset   = "offset"
	keyHW       = "high_watermark"
	keyPeer     = "peer"
	keyVoted    = "voted"
	keyError    = "error"
	keyVoters   = "voters"

	keyPosition      = "position"
	keyBackoffMs     = "backoff_ms"
	keySnapshotID    = "snapshot_id"
	keyReason        = "reason"
	keyClaimedLeader = "claimed_leader_id"
	keyDiverging     = "diverging"
	keyPreVote       = "pre_vote"
	keyGranted       = "granted"
	keyRequestID     = "request_id"
)

// Node is one replica's KRaft consensus state machine. It performs no I/O:
// inputs are [Node.Step], [Node.Tick], [Node.Propose], [Node.Resign] and
// [Node.ConnectionLost], each with the current time; the work to do comes
// out of [Node.Ready].
// A Node is not safe for concurrent use: one goroutine owns it.
type Node struct {
	cfg    Config
	me     ReplicaKey
	log    LogView
	logger *slog.Logger
	s      state
}

// state is everything that changes. It holds only values and slices of
// values (no maps, pointers, funcs or channels besides immutable messages),
// so that Clone is a copy plus a few slice copies and Fingerprint can hash
// its printed form.
type state struct {
	rng rand.PCG
	now Instant

	role     Role
	epoch    Epoch
	leaderID NodeID
	votedKey ReplicaKey
	// persisted is the quorum state last handed out for persistence.
	persisted ElectionState

	voterSets []voterSetEntry // voter-set history, offset order; never empty
	// excludedAt is the offset of a leader's LeaderChange that named a
	// voter set without this node while the static configuration counts
	// it (-1: none); see noteLeaderChange.
	excludedAt Offset

	// The log tail as the core knows it. It runs ahead of the LogView by
	// whatever is accumulated in out and not yet advanced.
	leo        Offset
	lastEpoch  Epoch
	durableEnd Offset // log end offset known durable: at the last Advance of a Ready without SyncLater, or by LogSynced
	tailStale  bool   // a truncation or install is pending: leo/lastEpoch unknown until Advance
	hw         Offset // -1 if unknown
	emittedHW  Offset // highest high watermark handed out; -1 none

	shuttingDown     bool
	electionDeadline Instant // Unattached voter, Prospective, Candidate, Resigned
	election         electionState
	leader           leaderState
	follower         followerState
	resigned         resignedState

	peers         []peer // sorted by id
	nextRequestID uint64

	out         readyBuf
	outstanding bool
}

// voterSetEntry is one voter set of the history: in force from Offset on
// (-1 for the static configuration).
type voterSetEntry struct {
	Offset Offset
	Set    VoterSet
}

// VoterSetAt is a voter set recorded in the log (a Voters control record)
// or in a snapshot, with the offset of its record (a snapshot's voters
// are at its end offset minus one); see [LogView.VoterHistory].
type VoterSetAt struct {
	Offset Offset
	Voters []ReplicaKey
}

// NewNode builds a node at time now from its configuration, its durable
// quorum state and a view of its log. The voter-set history is read from
// log.VoterHistory; with none, the static Config.Voters apply
// (kraft.version 0).
//
// The log is bound to the node for its lifetime (see [Node.Clone]); the
// runtime keeps it in step with the Readys it carries out.
//
// The starting role follows Kafka's QuorumState.initialize. A node that
// is the only voter becomes leader at once (KafkaRaftClient.initialize); the
// resulting work is in the first Ready.
func NewNode(now Instant, cfg Config, st ElectionState, log LogView) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		return nil, fmt.Errorf("kraft: new node %d: nil LogView", cfg.ID)
	}
	sets, err := loadVoterSets(cfg.Voters, log)
	if err != nil {
		return nil, fmt.Errorf("kraft: new node %d: %w", cfg.ID, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		cfg:    cfg,
		me:     ReplicaKey{ID: cfg.ID, DirectoryID: cfg.DirectoryID},
		log:    log,
		logger: logger.With(slog.Int(keyNodeID, int(cfg.ID))),
	}
	n.s = state{
		rng:        *rand.NewPCG(cfg.Seed, uint64(cfg.ID)),
		now:        now,
		leaderID:   NoNode,
		votedKey:   quorum.NoReplica,
		voterSets:  sets,
		excludedAt: -1,
		hw:         -1,
		emittedHW:  -1,
		out:        emptyBuf(),
	}
	n.syncTail()
	n.s.durableEnd = n.s.leo // the runtime opens a recovered, durable log
	n.s.persisted = st
	n.restoreExclusion()
	n.initialize(st)
	n.poll()
	return n, nil
}

// initialize picks the starting role (QuorumState.initialize).
func (n *Node) initialize(st ElectionState) {
	s := &n.s
	logEpoch := s.lastEpoch
	switch {
	case st.Epoch < logEpoch:
		// The log saw a later epoch than the stored state: trust the log and
		// forget leader and vote.
		s.epoch, s.leaderID, s.votedKey = logEpoch, NoNode, quorum.NoReplica
		n.enterUnattached()
	case st.LeaderID == n.me.ID:
		// Never lead an epoch twice: entries written before a crash may be
		// lost, and (offset, epoch) must stay unique (QuorumState.initialize).
		s.epoch, s.leaderID, s.votedKey = st.Epoch, st.LeaderID, st.VotedKey
		if bugzoo.Active(bugzoo.Z16) {
			n.bugZ16ResumeLeadership()
			break
		}
		n.enterResigned(nil)
	case st.VotedKey.IsSet() && st.VotedKey.ID == n.me.ID && n.isVoter():
		s.epoch, s.leaderID, s.votedKey = st.Epoch, NoNode, st.VotedKey
		n.enterCandidateResume()
	case st.LeaderID >= 0:
		s.epoch, s.leaderID, s.votedKey = st.Epoch, st.LeaderID, st.VotedKey
		n.enterFollower()
	default:
		s.epoch, s.leaderID, s.votedKey = st.Epoch, NoNode, st.VotedKey
		n.enterUnattached()
	}
	// Persist what changed from the stored state (an epoch taken from the
	// log); a no-op otherwise.
	n.markPersist()
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "started",
		slog.String(keyRole, s.role.String()), slog.Int(keyEpoch, int(s.epoch)),
		slog.Int(keyLeaderID, int(s.leaderID)), slog.Int64(keyOffset, int64(s.leo)),
		slog.String(keyVoters, n.voters().String()))
	n.maybeSingleVoterElection()
}

// syncTail reloads the log tail from the LogView. Called when no work is
// outstanding, so the view and the core agree.
func (n *Node) syncTail() {
	s := &n.s
	s.leo = n.log.EndOffset()
	s.lastEpoch = n.log.LastFetchedEpoch()
	s.tailStale = false
}

// voters returns the voter set in force: the latest one in the history,
// committed or not (KIP-853).
func (n *Node) voters() VoterSet {
	if bugzoo.Active(bugzoo.Z13) {
		return n.bugZ13CommittedVoters(n.s.hw)
	}
	return n.s.voterSets[len(n.s.voterSets)-1].Set
}

// isVoter reports whether this replica is a voter of the latest set, and
// has not learnt from a leader's LeaderChange that the quorum was rebuilt
// without it (noteLeaderChange).
func (n *Node) isVoter() bool { return n.voters().Contains(n.me) && n.s.excludedAt < 0 }

// Step feeds the node a request or response from a peer. Peer input never
// produces an error: invalid or stale messages are answered with a Kafka
// error code or ignored. Step returns an error only for misuse: a nil or
// foreign message type ([ErrUnknownMessage]), a message addressed to
// another node ([ErrMisaddressed]), or a call while a Ready is outstanding
// ([ErrReadyOutstanding]).
func (n *Node) Step(now Instant, m Message) error {
	if n.s.outstanding {
		return ErrReadyOutstanding
	}
	if m == nil {
		return ErrUnknownMessage
	}
	if h := m.header(); h.To != n.me.ID {
		return fmt.Errorf("%w: to %d, this node is %d", ErrMisaddressed, h.To, n.me.ID)
	}
	n.advanceClock(now)
	switch m := m.(type) {
	case *VoteRequest:
		n.handleVoteRequest(m)
	case *VoteResponse:
		n.handleVoteResponse(m)
	case *BeginQuorumEpochRequest:
		n.handleBeginQuorumEpochRequest(m)
	case *BeginQuorumEpochResponse:
		n.handleBeginQuorumEpochResponse(m)
	case *EndQuorumEpochRequest:
		n.handleEndQuorumEpochRequest(m)
	case *EndQuorumEpochResponse:
		n.handleEndQuorumEpochResponse(m)
	case *FetchRequest:
		n.handleFetchRequest(m)
	case *FetchResponse:
		n.handleFetchResponse(m)
	case *FetchSnapshotRequest:
		n.handleFetchSnapshotRequest(m)
	case *FetchSnapshotResponse:
		n.handleFetchSnapshotResponse(m)
	default:
		return fmt.Errorf("%w: %T", ErrUnknownMessage, m)
	}
	n.poll()
	return nil
}

// Tick tells the node that time has reached now. Call it at or after
// [Node.NextDeadline]; extra calls are harmless. Tick may be called while
// a Ready is outstanding.
func (n *Node) Tick(now Instant) {
	n.advanceClock(now)
	n.poll()
}

func (n *Node) advanceClock(now Instant) {
	if now > n.s.now {
		n.s.now = now
	}
}

// Proposal is a batch of records the leader's runtime wants appended. The
// runtime encodes the batch once the offsets are known (from the returned
// [BatchInfo]) and writes it when the Ready's [Append] with the same Handle
// comes out.
type Proposal struct {
	// Records is the number of records in the batch (≥ 1).
	Records int
	// Handle names the runtime's pending batch; it must not be 0 for a
	// data batch. A Voters batch may use 0, and the runtime then encodes it
	// from the BatchInfo like the core's own control batches.
	Handle RecordsHandle
	// Voters, if non-nil, makes this a control batch holding a Voters
	// record with this set (KIP-853); Records must then be 1. The new set
	// is in force as soon as it is appended.
	Voters []ReplicaKey
	// KRaftVersion, if positive, puts a KRaftVersion record of this level
	// before the Voters record, as Kafka's first leader of a dynamic
	// quorum does when it copies the bootstrap voter set into the log;
	// Records must then be 2. It needs Voters.
	KRaftVersion int16
}

// Propose reserves offsets for a batch on the leader and queues its append.
// It returns the batch's offsets and epoch. On a replica that is not the
// active leader it returns a [*NotLeaderError]. It fails with
// [ErrReadyOutstanding] between Ready and Advance, and with an error for a
// malformed proposal.
func (n *Node) Propose(now Instant, p Proposal) (BatchInfo, error) {
	if n.s.outstanding {
		return BatchInfo{}, ErrReadyOutstanding
	}
	n.advanceClock(now)
	if n.s.role != Leader || n.s.shuttingDown {
		return BatchInfo{}, &NotLeaderError{Leader: n.leaderAndEpoch()}
	}
	if p.Records < 1 {
		return BatchInfo{}, fmt.Errorf("kraft: propose: %d records, want at least 1", p.Records)
	}
	if p.Handle == 0 && p.Voters == nil {
		return BatchInfo{}, errors.New("kraft: propose: a data batch needs a non-zero Handle (0 marks batches the runtime encodes from BatchInfo)")
	}
	b := BatchInfo{
		BaseOffset:   n.s.leo,
		LastOffset:   n.s.leo + Offset(p.Records) - 1,
		Epoch:        n.s.epoch,
		KRaftVersion: -1,
		LeaderChange: LeaderChange{LeaderID: NoNode},
	}
	if p.KRaftVersion > 0 && p.Voters == nil {
		return BatchInfo{}, errors.New("kraft: propose: a KRaftVersion record goes with a Voters record")
	}
	if p.Voters != nil {
		want := 1
		if p.KRaftVersion > 0 {
			want = 2
			b.KRaftVersion = p.KRaftVersion
		}
		if p.Records != want {
			return BatchInfo{}, fmt.Errorf("kraft: propose: this Voters control batch holds %d records, not %d", want, p.Records)
		}
		if _, err := quorum.NewVoterSet(p.Voters...); err != nil {
			return BatchInfo{}, fmt.Errorf("kraft: propose voters: %w", err)
		}
		if p.KRaftVersion > 0 {
			if err := n.checkUpgradeProposal(p); err != nil {
				return BatchInfo{}, err
			}
		}
		b.Control = true
		b.Voters = slices.Clone(p.Voters)
	}
	n.appendLocal(b, p.Handle)
	n.poll()
	return b, nil
}

// Resign starts a graceful shutdown (KafkaRaftClient.shutdown and
// maybeCompleteShutdown): every replica stops starting elections and a
// leader stops taking proposals; the leader
// resigns, sending EndQuorumEpoch to the other voters with its preferred
// successors, once one of them has fetched its whole log or a short budget
// has passed (handoff.go). It cannot be undone.
func (n *Node) Resign(now Instant) {
	n.advanceClock(now)
	if n.s.shuttingDown {
		return
	}
	n.s.shuttingDown = true
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "shutting down",
		slog.String(keyRole, n.s.role.String()), slog.Int(keyEpoch, int(n.s.epoch)))
	if n.s.role == Leader {
		n.startHandoff()
	}
	n.poll()
}

// HasReady reports whether [Node.Ready] has work. It is false while a Ready
// is outstanding.
func (n *Node) HasReady() bool { return !n.s.outstanding && !n.s.out.empty() }

// Ready returns the accumulated work and marks it outstanding until
// [Node.Advance]. See [Ready] for the order in which to carry it out.
func (n *Node) Ready() Ready {
	b := n.s.out
	rd := Ready{
		TruncateTo:      b.truncateTo,
		Appends:         b.appends,
		SnapshotWrites:  b.snapWrites,
		InstallSnapshot: b.install,
		Messages:        b.msgs,
		HighWatermark:   b.hw,
		Reads:           b.reads,
	}
	rd.SyncLater = b.syncLater(n.s.role)
	if b.persist {
		st := n.s.persisted
		rd.State = &st
	}
	n.s.out = emptyBuf()
	n.s.outstanding = true
	return rd
}

// Advance tells the node that rd, the value the last [Node.Ready]
// returned, has been carried out: the state persisted, the log truncated,
// appended and fsynced (the fsync not yet, for a [Ready.SyncLater] Ready),
// snapshot chunks written and installed, messages handed to the
// transport, and the high watermark applied as far as the runtime
// chooses. This is how the runtime reports durability: the Advance of a
// Ready without SyncLater marks the whole log durable, and the leader
// counts its own log end offset toward the high watermark only from then
// (or from [Node.LogSynced]).
func (n *Node) Advance(rd Ready) {
	if !n.s.outstanding {
		panic("kraft: invariant: Advance without an outstanding Ready")
	}
	n.s.outstanding = false
	if rd.TruncateTo >= 0 || len(rd.Appends) > 0 || rd.InstallSnapshot.Valid() {
		if b := &n.s.out; b.truncateTo < 0 && len(b.appends) == 0 && !b.install.Valid() {
			want := n.s.leo
			stale := n.s.tailStale
			n.syncTail()
			if !stale && n.s.leo != want {
				panic(fmt.Sprintf("kraft: invariant: log end offset %d after Advance, want %d (the runtime skipped or reordered Ready work)", n.s.leo, want))
			}
		}
		// Otherwise more appends were queued after Ready (a Tick while it
		// was outstanding): the log holds this Ready's work, the tail
		// stays ahead of it.
		if rd.InstallSnapshot.Valid() {
			n.onSnapshotInstalled(rd.InstallSnapshot)
		}
	}
	if !rd.SyncLater {
		// Everything written is durable, below a truncation too.
		if end := n.log.EndOffset(); end != n.s.durableEnd {
			n.s.durableEnd = end
			if n.s.role == Leader {
				n.onLeaderDurable()
			}
		}
	}
	n.poll()
}

// LogSynced tells the node that its log is durable up to offset: a
// background fsync, started after a [Ready.SyncLater] Ready was written,
// completed. From then on the leader counts its own end offset up to
// offset toward the high watermark. An offset at or below what is already
// known durable (a late report, one overtaken by a Ready without SyncLater
// that made the whole log durable) changes nothing, and one beyond the
// log end is clamped to it; a node that stopped leading just records it.
// It fails with [ErrReadyOutstanding] between Ready and Advance.
func (n *Node) LogSynced(now Instant, offset Offset) error {
	if n.s.outstanding {
		return ErrReadyOutstanding
	}
	n.advanceClock(now)
	if end := min(offset, n.log.EndOffset()); end > n.s.durableEnd {
		n.s.durableEnd = end
		if n.s.role == Leader {
			n.onLeaderDurable()
		}
	}
	n.poll()
	return nil
}

// NextDeadline returns the earliest instant at which [Node.Tick] has work
// to do: an election, fetch or check-quorum timer, a request timeout or
// retry backoff, a parked fetch's max wait. [Never] if none.
func (n *Node) NextDeadline() Instant {
	s := &n.s
	d := Never
	switch s.role {
	case Unattached:
		if n.isVoter() && !s.shuttingDown {
			d = s.electionDeadline
		}
	case Prospective, Candidate:
		d = s.electionDeadline
	case Resigned:
		if !s.shuttingDown {
			d = s.electionDeadline
		}
	case Follower:
		if n.isVoter() && !s.shuttingDown {
			d = s.follower.FetchDeadline
		}
	case Leader:
		if !bugzoo.Active(bugzoo.Z4) && n.voters().Len() > 1 {
			d = min(d, s.leader.CheckQuorumDeadline)
		}
		d = min(d, s.leader.BeginQuorumDeadline)
		if s.leader.HandingOff {
			d = min(d, s.leader.HandoffDeadline)
		}
		for _, p := range s.leader.Parked {
			d = min(d, p.Deadline)
		}
	}
	for _, p := range s.peers {
		if p.InFlight != 0 {
			d = min(d, p.SentAt.Add(n.cfg.RequestTimeout))
		}
		if p.BackoffUntil > s.now {
			d = min(d, p.BackoffUntil)
		}
	}
	return d
}

// Clone returns an independent copy of the node bound to log, which must
// be a copy of the original's log in the same state (the simulator clones
// nodes and logs separately). The clone evolves exactly like the original
// given the same inputs: the random source is copied by value.
func (n *Node) Clone(log LogView) *Node {
	c := &Node{cfg: n.cfg, me: n.me, log: log, logger: n.logger, s: n.s}
	s := &c.s
	s.voterSets = slices.Clip(s.voterSets)
	s.election.Votes = slices.Clone(s.election.Votes)
	s.leader.Voters = slices.Clone(s.leader.Voters)
	s.leader.Observers = slices.Clone(s.leader.Observers)
	s.leader.Parked = slices.Clone(s.leader.Parked)
	s.leader.Reads = slices.Clone(s.leader.Reads)
	s.leader.Granting = slices.Clip(s.leader.Granting)
	s.resigned.Preferred = slices.Clip(s.resigned.Preferred)
	s.resigned.Unacked = slices.Clone(s.resigned.Unacked)
	s.peers = slices.Clone(s.peers)
	s.out = s.out.clone()
	msgs := make([]Message, len(s.out.msgs))
	for i, m := range s.out.msgs {
		msgs[i] = cloneMessage(m)
	}
	s.out.msgs = msgs
	return c
}

// Fingerprint returns a hash of the node's state (not its configuration or
// log). Equal states give equal fingerprints; the simulator uses it to
// deduplicate explored states.
func (n *Node) Fingerprint() uint64 {
	h := fnv.New64a()
	s := n.s
	s.out.msgs = nil
	fmt.Fprintf(h, "%v", s)
	// Messages are pointers; hash what they point to.
	for _, m := range n.s.out.msgs {
		fmt.Fprintf(h, "|%+v", messageValue(m))
	}
	return h.Sum64()
}

// messageValue returns the struct a message points to.
func messageValue(m Message) any {
	switch m := m.(type) {
	case *VoteRequest:
		return *m
	case *VoteResponse:
		return *m
	case *BeginQuorumEpochRequest:
		return *m
	case *BeginQuorumEpochResponse:
		return *m
	case *EndQuorumEpochRequest:
		return *m
	case *EndQuorumEpochResponse:
		return *m
	case *FetchRequest:
		return *m
	case *FetchResponse:
		return *m
	case *FetchSnapshotRequest:
		return *m
	case *FetchSnapshotResponse:
		return *m
	}
	return m
}

func cloneMessage(m Message) Message {
	switch m := m.(type) {
	case *VoteRequest:
		c := *m
		return &c
	case *VoteResponse:
		c := *m
		return &c
	case *BeginQuorumEpochRequest:
		c := *m
		return &c
	case *BeginQuorumEpochResponse:
		c := *m
		return &c
	case *EndQuorumEpochRequest:
		c := *m
		return &c
	case *EndQuorumEpochResponse:
		c := *m
		return &c
	case *FetchRequest:
		c := *m
		return &c
	case *FetchResponse:
		c := *m
		return &c
	case *FetchSnapshotRequest:
		c := *m
		return &c
	case *FetchSnapshotResponse:
		c := *m
		return &c
	}
	return m
}

func (n *Node) leaderAndEpoch() LeaderAndEpoch {
	return LeaderAndEpoch{LeaderID: n.s.leaderID, Epoch: n.s.epoch}
}

// markPersist queues the quorum state for persistence if it changed.
func (n *Node) markPersist() {
	st := ElectionState{Epoch: n.s.epoch, LeaderID: n.s.leaderID, VotedKey: n.s.votedKey}
	if st != n.s.persisted {
		n.s.persisted = st
		n.s.out.persist = true
	}
}

func (n *Node) randomElectionTimeout() Instant {
	te := uint64(n.cfg.ElectionTimeout.Milliseconds())
	return Instant(te + n.s.rng.Uint64()%te)
}

// poll runs the current role's timers and sends what the role sends
// (Kafka's pollCurrentState).
func (n *Node) poll() {
	n.expireRequests()
	// A role's poll may change the role (a timer fired); the new role then
	// gets its own poll so that it sends at once. Transitions chain at most
	// Unattached → Prospective → Candidate → Leader plus a resignation.
	for range 8 {
		role, epoch := n.s.role, n.s.epoch
		switch n.s.role {
		case Unattached:
			n.pollUnattached()
		case Prospective, Candidate:
			n.pollElection()
		case Leader:
			n.pollLeader()
		case Follower:
			n.pollFollower()
		case Resigned:
			n.pollResigned()
		}
		if role == n.s.role && epoch == n.s.epoch {
			break
		}
	}
	n.emitHighWatermark()
}

// emitHighWatermark hands a new high watermark to the runtime. A leader
// hands out no more than its own durable end offset: with SyncLater,
// followers may commit entries whose fsync on the leader is still running,
// and the state machine applies only locally durable entries. Nor does it
// hand out a value at or below its epoch start (C4): it waits for its
// fsync to pass that.
func (n *Node) emitHighWatermark() {
	hw := n.s.hw
	if n.s.role == Leader && hw > n.s.durableEnd {
		hw = n.s.durableEnd
		if hw <= n.s.leader.EpochStart {
			return
		}
	}
	if hw > n.s.emittedHW {
		n.s.emittedHW = hw
		n.s.out.hw = hw
	}
}

func (n *Node) setHighWatermark(hw Offset) {
	if hw < n.s.hw {
		panic("kraft: invariant: high watermark moved backwards")
	}
	if hw != n.s.hw {
		old := n.s.hw
		n.s.hw = hw
		if bugzoo.Active(bugzoo.Z13) {
			n.bugZ13Committed(old)
		}
		n.logger.LogAttrs(context.Background(), slog.LevelDebug, "high watermark advanced", slog.Int64(keyHW, int64(hw)))
	}
}

// appendLocal queues an append and moves the tail.
func (n *Node) appendLocal(b BatchInfo, h RecordsHandle) {
	if n.s.role != Leader {
		n.s.out.syncFirst = true
	}
	n.s.out.appends = append(n.s.out.appends, Append{Batch: b, Handle: h})
	n.s.leo = b.LastOffset + 1
	n.s.lastEpoch = b.Epoch
	if b.Voters != nil {
		n.applyVoters(b.BaseOffset, b.Voters)
	}
	if b.LeaderChange.LeaderID != NoNode && n.s.role != Leader {
		n.noteLeaderChange(b)
	}
	if n.s.role == Leader {
		n.onLeaderAppend()
	}
}

// endOffsetForEpoch answers the leader-epoch question over the core's log
// tail: the LogView knows everything but appends still queued in out, which
// are all in the core's last epoch.
func (n *Node) endOffsetForEpoch(e Epoch) OffsetAndEpoch {
	if e == n.s.lastEpoch {
		return OffsetAndEpoch{Offset: n.s.leo, Epoch: e}
	}
	if logLast := n.log.LastFetchedEpoch(); e > logLast && e < n.s.lastEpoch {
		// e lies between the log's last epoch and the queued appends' epoch:
		// the log's last epoch ends where the queued appends begin.
		return OffsetAndEpoch{Offset: n.log.EndOffset(), Epoch: logLast}
	}
	return n.log.EndOffsetForEpoch(e)
}

func sortKeys(ks []ReplicaKey) {
	slices.SortFunc(ks, func(a, b ReplicaKey) int { return cmp.Compare(a.ID, b.ID) })
}
