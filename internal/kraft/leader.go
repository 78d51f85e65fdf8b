package kraft

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft/quorum"
)

// leaderState is the per-role state of Leader (Kafka's LeaderState).
type leaderState struct {
	// EpochStart is the log end offset at election, where the LeaderChange
	// batch sits; the high watermark must pass it
	// (LeaderState.maybeUpdateHighWatermark).
	EpochStart Offset
	Granting   []ReplicaKey
	// Voters tracks every voter of the latest set, this node included when
	// it is one, sorted by id; Observers every other fetcher, sorted by key.
	Voters    []replicaState
	Observers []replicaState
	// CheckQuorumDeadline: resign unless a majority fetched by then
	// (LeaderState.timeUntilCheckQuorumExpires).
	CheckQuorumDeadline Instant
	// BeginQuorumDeadline: next BeginQuorumEpoch resend round (Tf/2).
	BeginQuorumDeadline Instant
	// Parked holds long-poll fetches waiting for data or max wait (Kafka's
	// fetch purgatory in KafkaRaftClient.handleFetchRequest), in arrival
	// order.
	Parked []parkedFetch
	// ReadSeq numbers the linearizable reads registered in this epoch;
	// Reads are those not yet confirmed, in registration order (read.go).
	ReadSeq uint64
	Reads   []pendingRead
	// HandingOff: a graceful shutdown waits, until HandoffDeadline, for a
	// voter to fetch up to the log end before resigning (handoff.go).
	HandingOff      bool
	HandoffDeadline Instant
}

// replicaState is what the leader knows of a fetcher (ReplicaState).
type replicaState struct {
	Key                ReplicaKey
	EndOffset          Offset  // last valid fetch offset (durable on the fetcher); -1 unknown
	LastFetch          Instant // -1 never
	LastCaughtUp       Instant // -1 never
	PrevFetchLeaderLEO Offset
	PrevFetch          Instant
	CheckQuorumFetched bool
	BeginAcked         bool
	// ReadAnswered is the newest read registered when the leader last
	// answered this voter's Fetch; ReadConfirmed the newest read a later
	// Fetch of the voter confirmed (read.go).
	ReadAnswered  uint64
	ReadConfirmed uint64
	// ReportedDir, KRaftMin, KRaftMax and KRaftKnown are what a voter of
	// a static quorum reported for the kraft.version upgrade: its
	// directory id (Fetch or UpdateRaftVoter) and, once KRaftKnown, the
	// kraft.version range of its UpdateRaftVoter (upgrade.go).
	ReportedDir        UUID
	KRaftMin, KRaftMax int16
	KRaftKnown         bool
}

type parkedFetch struct {
	Req      FetchRequest
	Deadline Instant
}

func newReplicaState(k ReplicaKey) replicaState {
	return replicaState{Key: k, EndOffset: -1, LastFetch: -1, LastCaughtUp: -1, PrevFetchLeaderLEO: -1, PrevFetch: -1}
}

func (n *Node) checkQuorumTimeout() time.Duration { return n.cfg.FetchTimeout * 3 / 2 }

func (n *Node) initLeaderState(granting []ReplicaKey) {
	l := &n.s.leader
	l.EpochStart = n.s.leo
	l.Granting = granting
	l.CheckQuorumDeadline = n.s.now.Add(n.checkQuorumTimeout())
	l.BeginQuorumDeadline = n.s.now
	n.rebuildLeaderVoters()
}

// rebuildLeaderVoters aligns the replica table with the latest voter set:
// known entries keep their progress, removed voters become observers and
// added voters leave the observer list
// (LeaderState.updateVoterAndObserverStates; KIP-853).
func (n *Node) rebuildLeaderVoters() {
	l := &n.s.leader
	old := l.Voters
	var voters []replicaState
	for _, k := range n.voters().Keys() {
		r := newReplicaState(k)
		if i := slices.IndexFunc(old, func(o replicaState) bool { return o.Key.SameReplica(k) }); i >= 0 {
			r = old[i]
			r.Key = k
		} else if i := slices.IndexFunc(l.Observers, func(o replicaState) bool { return k.Matches(o.Key) }); i >= 0 {
			r = l.Observers[i]
			r.Key = k
			l.Observers = slices.Delete(slices.Clone(l.Observers), i, i+1)
		}
		if k.ID == n.me.ID {
			r.EndOffset = n.s.durableEnd
			r.LastFetch, r.LastCaughtUp = n.s.now, n.s.now
		}
		voters = append(voters, r)
	}
	for _, o := range old {
		if !slices.ContainsFunc(voters, func(v replicaState) bool { return o.Key.SameReplica(v.Key) }) && o.Key.ID != n.me.ID {
			o.CheckQuorumFetched = false
			l.Observers = insertObserver(l.Observers, o)
		}
	}
	if len(old) <= 1 && len(voters) > 1 {
		// A lone voter's check-quorum timer never expires: Kafka resets
		// it on every poll while the set has one voter. The timeout
		// starts when the set grows, not when the epoch began.
		l.CheckQuorumDeadline = n.s.now.Add(n.checkQuorumTimeout())
	}
	l.Voters = voters
}

func insertObserver(obs []replicaState, r replicaState) []replicaState {
	i, _ := slices.BinarySearchFunc(obs, r.Key, compareReplicaState)
	return slices.Insert(slices.Clone(obs), i, r)
}

func compareReplicaState(r replicaState, k ReplicaKey) int {
	if c := cmp.Compare(r.Key.ID, k.ID); c != 0 {
		return c
	}
	return slices.Compare(r.Key.DirectoryID[:], k.DirectoryID[:])
}

// leaderVoter returns the tracked voter with node id id, or nil.
func (n *Node) leaderVoter(id NodeID) *replicaState {
	for i := range n.s.leader.Voters {
		if n.s.leader.Voters[i].Key.ID == id {
			return &n.s.leader.Voters[i]
		}
	}
	return nil
}

// validateLeaderOnly checks the epoch of a leader-directed request
// (KafkaRaftClient.validateLeaderOnlyRequest).
func (n *Node) validateLeaderOnly(epoch Epoch) ErrorCode {
	switch {
	case epoch < n.s.epoch:
		return CodeFencedLeaderEpoch
	case epoch > n.s.epoch:
		return CodeUnknownLeaderEpoch
	case n.s.role != Leader:
		return CodeNotLeaderOrFollower
	case n.s.shuttingDown && !n.s.leader.HandingOff:
		// A leader handing off still serves fetches: that is how its
		// successor catches up (handoff.go).
		return CodeBrokerNotAvailable
	}
	return CodeNone
}

// handleFetchRequest serves a Fetch on the leader
// (KafkaRaftClient.handleFetchRequest and tryCompleteFetchRequest). On any
// other replica it answers with its view of the leader so the fetcher can
// find it.
func (n *Node) handleFetchRequest(m *FetchRequest) {
	// resp is copied out when this function answers, so that a Fetch
	// answered by answerFetch (the usual one) allocates one response.
	resp := FetchResponse{HighWatermark: -1, LogStartOffset: n.log.StartOffset(), DivergingEpoch: NoOffsetAndEpoch, SnapshotID: NoOffsetAndEpoch}
	answer := func(code ErrorCode) {
		if code == CodeNone {
			n.noteReadAnswer(m.Replica)
		}
		out := resp
		out.Error = code
		out.Leader = n.leaderAndEpoch()
		n.reply(m.Header, &out, &out.Header)
	}
	if m.MaxWait < 0 || m.FetchOffset < 0 || m.LastFetchedEpoch < 0 || m.LastFetchedEpoch > m.CurrentLeaderEpoch {
		answer(CodeInvalidRequest)
		return
	}
	if code := n.validateLeaderOnly(m.CurrentLeaderEpoch); code != CodeNone {
		answer(code)
		return
	}
	// The voter still follows this leader in its epoch: that confirms the
	// reads registered before the answer it is acting on (read.go).
	n.noteReadFetch(m.Replica)
	resp.HighWatermark = n.s.hw
	latest, hasSnap := n.log.LatestSnapshot()
	hasSnap = hasSnap && latest != (OffsetAndEpoch{})
	if m.FetchOffset == 0 && hasSnap {
		// Replaying from a snapshot is always cheaper than from offset 0.
		resp.SnapshotID = latest
		answer(CodeNone)
		return
	}
	if start := n.log.StartOffset(); !(start == 0 && m.FetchOffset == 0) {
		if earliest, ok := n.log.EarliestSnapshot(); ok && hasSnap &&
			(m.FetchOffset < start || (m.FetchOffset == start && m.LastFetchedEpoch != earliest.Epoch) || m.LastFetchedEpoch < earliest.Epoch) {
			resp.SnapshotID = latest
			answer(CodeNone)
			return
		}
		if eoe := n.endOffsetForEpoch(m.LastFetchedEpoch); eoe.Epoch != m.LastFetchedEpoch || eoe.Offset < m.FetchOffset {
			// KIP-595 divergence: the fetcher's last epoch ends earlier (or
			// never existed) here; it truncates to this point and retries.
			resp.DivergingEpoch = eoe
			answer(CodeNone)
			return
		}
	}
	n.updateReplica(m.Replica, m.FetchOffset)
	// A replica has one fetch outstanding: a newer one supersedes any it
	// had parked (e.g. before it restarted).
	n.unpark(m.From)
	if m.FetchOffset < n.s.leo || m.MaxWait == 0 || m.HighWatermark < n.s.hw || n.readRoundDue(m.Replica) {
		n.answerFetch(m)
		return
	}
	n.park(m)
}

func (n *Node) unpark(from NodeID) {
	l := &n.s.leader
	if slices.ContainsFunc(l.Parked, func(p parkedFetch) bool { return p.Req.From == from }) {
		l.Parked = slices.DeleteFunc(slices.Clone(l.Parked), func(p parkedFetch) bool { return p.Req.From == from })
	}
}

// answerFetch sends a VALID fetch its records and the high watermark.
func (n *Node) answerFetch(m *FetchRequest) {
	resp := &FetchResponse{
		Error: CodeNone, Leader: n.leaderAndEpoch(), HighWatermark: n.s.hw, LogStartOffset: n.log.StartOffset(),
		DivergingEpoch: NoOffsetAndEpoch, SnapshotID: NoOffsetAndEpoch,
	}
	n.noteReadAnswer(m.Replica)
	if m.FetchOffset < n.s.leo {
		resp.Read = RecordsRead{From: m.FetchOffset, Until: n.s.leo, MaxBytes: m.MaxBytes}
	} else {
		resp.Read = RecordsRead{From: m.FetchOffset, Until: m.FetchOffset, MaxBytes: m.MaxBytes}
	}
	n.reply(m.Header, resp, &resp.Header)
}

func (n *Node) park(m *FetchRequest) {
	l := &n.s.leader
	l.Parked = append(l.Parked, parkedFetch{Req: *m, Deadline: n.s.now.Add(m.MaxWait)})
}

// completeParked answers parked fetches: all of them (the high watermark
// moved) or those that now have data.
func (n *Node) completeParked(all bool) {
	l := &n.s.leader
	if len(l.Parked) == 0 {
		return
	}
	due := func(p parkedFetch) bool { return all || p.Req.FetchOffset < n.s.leo || n.s.now >= p.Deadline }
	if !slices.ContainsFunc(l.Parked, due) {
		// Called on every append: a fetch that stays parked costs no
		// new slice.
		return
	}
	var keep []parkedFetch
	for _, p := range l.Parked {
		if due(p) {
			n.answerFetch(&p.Req)
		} else {
			keep = append(keep, p)
		}
	}
	l.Parked = keep
}

// answerParked fails the fetches a former leader had parked
// (fetchPurgatory.completeAllExceptionally).
func (n *Node) answerParked(parked []parkedFetch) {
	for _, p := range parked {
		resp := &FetchResponse{
			Error: CodeNotLeaderOrFollower, Leader: n.leaderAndEpoch(), HighWatermark: -1, LogStartOffset: n.log.StartOffset(),
			DivergingEpoch: NoOffsetAndEpoch, SnapshotID: NoOffsetAndEpoch,
		}
		n.reply(p.Req.Header, resp, &resp.Header)
	}
}

// updateReplica records a VALID fetch position (LeaderState.updateReplicaState).
func (n *Node) updateReplica(k ReplicaKey, offset Offset) {
	if k.ID < 0 {
		return // anonymous readers are served, never tracked
	}
	l := &n.s.leader
	var r *replicaState
	isVoter := false
	for i := range l.Voters {
		if l.Voters[i].Key.Matches(k) && k.ID != n.me.ID {
			r, isVoter = &l.Voters[i], true
			break
		}
	}
	if r == nil {
		i, found := slices.BinarySearchFunc(l.Observers, k, compareReplicaState)
		if !found {
			l.Observers = slices.Insert(slices.Clone(l.Observers), i, newReplicaState(k))
		}
		r = &l.Observers[i]
	}
	now := n.s.now
	switch {
	case offset >= n.s.leo:
		r.LastCaughtUp = now
	case r.PrevFetchLeaderLEO >= 0 && offset >= r.PrevFetchLeaderLEO:
		r.LastCaughtUp = max(r.LastCaughtUp, r.PrevFetch)
	}
	r.PrevFetchLeaderLEO, r.PrevFetch = n.s.leo, now
	r.LastFetch = now
	r.EndOffset = min(offset, n.s.leo)
	if isVoter {
		n.noteFetchedDirectory(r, k.DirectoryID)
		n.creditCheckQuorum(r)
		n.maybeAdvanceHighWatermark()
	}
}

// creditCheckQuorum counts a voter's sign of life; once a majority (this
// leader included) has shown one, the check-quorum timer restarts
// (LeaderState.updateCheckQuorumForFollowingVoter).
func (n *Node) creditCheckQuorum(r *replicaState) {
	l := &n.s.leader
	r.CheckQuorumFetched = true
	count := 0
	for _, v := range l.Voters {
		if v.CheckQuorumFetched {
			count++
		}
	}
	need := n.voters().Majority()
	if n.isVoter() || bugzoo.Active(bugzoo.Z12) {
		need--
	}
	if count >= need {
		for i := range l.Voters {
			l.Voters[i].CheckQuorumFetched = false
		}
		l.CheckQuorumDeadline = n.s.now.Add(n.checkQuorumTimeout())
	}
}

// maybeAdvanceHighWatermark applies the HW rule to the voters' durable end
// offsets; a new value completes every parked fetch so followers learn it.
func (n *Node) maybeAdvanceHighWatermark() {
	l := &n.s.leader
	var buf [8]Offset // no allocation for a quorum of up to 8 voters
	offsets := buf[:0]
	for _, v := range l.Voters {
		offsets = append(offsets, v.EndOffset)
	}
	epochStart := l.EpochStart
	if bugzoo.Active(bugzoo.Z17) {
		epochStart = -1
	}
	hw, changed := quorum.NextHighWatermark(n.s.hw, epochStart, offsets)
	if !changed {
		return
	}
	n.setHighWatermark(hw)
	n.completeParked(true)
	n.onReadsCommitted()
	n.maybeLeaderRemoved()
}

// onLeaderAppend runs when the leader queues an append: fetches parked at
// the old end offset can be answered (they are sent after the append is
// durable, by the Ready ordering contract).
func (n *Node) onLeaderAppend() { n.completeParked(false) }

// onLeaderDurable runs at Advance: the leader's own end offset now counts.
func (n *Node) onLeaderDurable() {
	if r := n.leaderVoter(n.me.ID); r != nil {
		r.EndOffset = n.s.durableEnd
		r.LastFetch, r.LastCaughtUp = n.s.now, n.s.now
	}
	n.maybeAdvanceHighWatermark()
}

// pollLeader runs the leader's timers: check-quorum, parked-fetch expiry
// and BeginQuorumEpoch (re)sends.
func (n *Node) pollLeader() {
	l := &n.s.leader
	if n.s.shuttingDown && n.handoffDone() {
		// Handed off, or elected while shutting down (a candidacy runs
		// on): resign now.
		n.resign("shutdown")
		return
	}
	if !bugzoo.Active(bugzoo.Z4) && n.voters().Len() > 1 && n.s.now >= l.CheckQuorumDeadline {
		// KAFKA-15489: a leader cut off from a majority must stop leading.
		n.resign("check quorum expired")
		return
	}
	n.completeParked(false)
	resendDue := n.s.now >= l.BeginQuorumDeadline
	half := n.cfg.FetchTimeout / 2
	for i := range l.Voters {
		v := &l.Voters[i]
		if v.Key.ID == n.me.ID {
			continue
		}
		stale := v.LastFetch < 0 || n.s.now >= v.LastFetch.Add(half)
		if !stale || (v.BeginAcked && !resendDue) || !n.canSend(v.Key.ID) {
			continue
		}
		r := &BeginQuorumEpochRequest{Voter: v.Key, LeaderID: n.me.ID, LeaderEpoch: n.s.epoch}
		n.send(v.Key.ID, r, &r.Header)
	}
	if resendDue {
		l.BeginQuorumDeadline = n.s.now.Add(half)
	}
}

// handleFetchSnapshotRequest serves a snapshot chunk (KIP-630,
// KafkaRaftClient.handleFetchSnapshotRequest).
func (n *Node) handleFetchSnapshotRequest(m *FetchSnapshotRequest) {
	resp := &FetchSnapshotResponse{SnapshotID: m.SnapshotID, Position: m.Position}
	answer := func(code ErrorCode) {
		resp.Error = code
		resp.Leader = n.leaderAndEpoch()
		n.reply(m.Header, resp, &resp.Header)
	}
	if code := n.validateLeaderOnly(m.CurrentLeaderEpoch); code != CodeNone {
		answer(code)
		return
	}
	size, ok := n.log.SnapshotSize(m.SnapshotID)
	if !ok || m.SnapshotID == (OffsetAndEpoch{}) {
		// The bootstrap snapshot 0-0 is never replicated.
		answer(CodeSnapshotNotFound)
		return
	}
	if m.Position < 0 || m.Position >= size {
		answer(CodePositionOutOfRange)
		return
	}
	resp.Size = size
	resp.Length = min(int64(max(m.MaxBytes, 1)), size-m.Position)
	for i := range n.s.leader.Voters {
		if v := &n.s.leader.Voters[i]; v.Key.Matches(m.Replica) && v.Key.ID != n.me.ID {
			n.creditCheckQuorum(v)
		}
	}
	answer(CodeNone)
}

// maybeLeaderRemoved resigns a leader whose removal from the voter set has
// committed (KIP-853; invariant R5 in docs/reliability.md).
func (n *Node) maybeLeaderRemoved() {
	if n.s.role != Leader || n.isVoter() {
		return
	}
	last := n.s.voterSets[len(n.s.voterSets)-1]
	if last.Offset >= 0 && last.Offset < n.s.hw {
		n.logger.LogAttrs(context.Background(), slog.LevelInfo, "leader removed from the committed voter set",
			slog.String(keyVoters, last.Set.String()))
		n.resign("removed from voter set")
	}
}
