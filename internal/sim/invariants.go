package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Violation is a broken invariant: its identifier in docs/reliability.md
// and what was seen.
type Violation struct {
	Invariant string
	Detail    string
}

// Error formats the violation as "invariant: detail".
func (v *Violation) Error() string { return v.Invariant + ": " + v.Detail }

func violation(inv, format string, args ...any) error {
	return &Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)}
}

// The invariant names used in failure messages.
const (
	invElectionSafety     = "E1 election safety"
	invDurableVote        = "E2 one durable vote per voter per epoch"
	invEpochMonotonic     = "E3 durable epoch never goes back"
	invRestartedLeader    = "E4 restarted leader resigns"
	invPreVote            = "E5 pre-vote is non-binding"
	invCheckQuorum        = "E6 check-quorum"
	invLogMatching        = "G1 log matching"
	invWellFormed         = "G2 well-formed log"
	invHWBounds           = "C1 high watermark within the log"
	invHWMonotonic        = "C2 high watermark monotonic"
	invDurableMajority    = "C3 high watermark durable on a majority"
	invCurrentEpochCommit = "C4 current-epoch commit rule"
	invCommitted          = "C5 committed prefix immutable"
	invLeaderComplete     = "C6 leader completeness"
	invNoTruncateCommit   = "C7 no truncation below the high watermark"
	invFetchDurable       = "C8 fetch offsets are durable"
	invOneVoterChange     = "R1 one voter change at a time"
	invAcked              = "K1 acknowledged proposals survive"
	invDurable            = "D1 synced data survives a crash"
	invNoDisruption       = "L4 an isolated node keeps its epoch"
	invSnapshotValid      = "S1 snapshot id valid"
	invLogStartCovered    = "S2 log start at a snapshot"
	invSnapshotContent    = "S3 snapshot equals the committed prefix"
	invSnapshotMonotonic  = "S6 a node's newest snapshot never goes back"
)

type voteKey struct {
	voter kraft.NodeID
	epoch kraft.Epoch
}

type epochKey struct {
	base  kraft.Offset
	epoch kraft.Epoch
}

// logKey records what a (base offset, epoch) pair names anywhere: the
// batch, its payload, and the batch before it. Two logs holding the same
// pair must agree on all three, which by induction makes their prefixes
// identical (log matching).
type logKey struct {
	last    kraft.Offset
	payload Payload
	prev    epochKey // base -1 for the first batch
	prevPay Payload
}

type leaderRec struct {
	id    kraft.NodeID
	lives int
}

type reqKey struct {
	from, to kraft.NodeID
	id       uint64
}

// checker holds the ghost state: facts about the whole history that no node
// keeps, against which every event is checked.
type checker struct {
	c           *cluster
	leaderOf    map[kraft.Epoch]leaderRec
	epochStart  map[kraft.Epoch]kraft.Offset
	votes       map[voteKey]kraft.NodeID
	keys        map[epochKey]logKey
	committed   []Entry // contiguous from offset 0: the committed prefix
	commitPay   map[Payload]kraft.Offset
	proposals   map[kraft.Epoch][]Entry // pending, per epoch, in offset order
	acked       map[Payload]kraft.Offset
	preVotes    map[reqKey]bool // Vote requests delivered, by responder view
	fetchReq    map[kraft.NodeID]uint64
	goodFetch   map[kraft.NodeID]fetchSeen
	lastFetch   map[kraft.NodeID]map[kraft.NodeID]kraft.Instant // leader -> voter -> time
	votersSince map[kraft.NodeID]votersAt                       // leader -> voter set in force since
	snapHigh    map[kraft.NodeID]kraft.OffsetAndEpoch           // newest snapshot each node has had
	verified    map[*simSnapshot]bool                           // snapshots whose content was checked
}

type votersAt struct {
	set   string
	since kraft.Instant
}

type fetchSeen struct {
	epoch kraft.Epoch
	at    kraft.Instant
}

func newChecker(c *cluster) *checker {
	return &checker{
		c:           c,
		leaderOf:    map[kraft.Epoch]leaderRec{},
		epochStart:  map[kraft.Epoch]kraft.Offset{},
		votes:       map[voteKey]kraft.NodeID{},
		keys:        map[epochKey]logKey{},
		commitPay:   map[Payload]kraft.Offset{},
		proposals:   map[kraft.Epoch][]Entry{},
		acked:       map[Payload]kraft.Offset{},
		preVotes:    map[reqKey]bool{},
		fetchReq:    map[kraft.NodeID]uint64{},
		goodFetch:   map[kraft.NodeID]fetchSeen{},
		lastFetch:   map[kraft.NodeID]map[kraft.NodeID]kraft.Instant{},
		votersSince: map[kraft.NodeID]votersAt{},
		snapHigh:    map[kraft.NodeID]kraft.OffsetAndEpoch{},
		verified:    map[*simSnapshot]bool{},
	}
}

func (k *checker) clone(c *cluster) *checker {
	d := *k
	d.c = c
	d.leaderOf = maps.Clone(k.leaderOf)
	d.epochStart = maps.Clone(k.epochStart)
	d.votes = maps.Clone(k.votes)
	d.keys = maps.Clone(k.keys)
	d.committed = slices.Clip(k.committed)
	d.commitPay = maps.Clone(k.commitPay)
	d.proposals = maps.Clone(k.proposals)
	for e, ps := range d.proposals {
		d.proposals[e] = slices.Clip(ps)
	}
	d.acked = maps.Clone(k.acked)
	d.preVotes = maps.Clone(k.preVotes)
	d.fetchReq = maps.Clone(k.fetchReq)
	d.goodFetch = maps.Clone(k.goodFetch)
	d.votersSince = maps.Clone(k.votersSince)
	d.snapHigh = maps.Clone(k.snapHigh)
	d.verified = maps.Clone(k.verified)
	d.lastFetch = map[kraft.NodeID]map[kraft.NodeID]kraft.Instant{}
	for l, m := range k.lastFetch {
		d.lastFetch[l] = maps.Clone(m)
	}
	return &d
}

// committedAt returns the committed batch holding offset o.
func (k *checker) committedAt(o kraft.Offset) (Entry, bool) { return findEntry(k.committed, o) }

func (k *checker) committedEnd() kraft.Offset {
	if len(k.committed) == 0 {
		return 0
	}
	return k.committed[len(k.committed)-1].Batch.LastOffset + 1
}

func sameEntry(a, b Entry) bool {
	return a.Payload == b.Payload && a.Batch.BaseOffset == b.Batch.BaseOffset &&
		a.Batch.LastOffset == b.Batch.LastOffset && a.Batch.Epoch == b.Batch.Epoch
}

// onStart checks a node that has just (re)started: E3 against the epoch
// of its log, E4 for a node whose durable state says it led.
func (k *checker) onStart(n *simNode) error {
	st := n.core.Status()
	if n.qs.LeaderID == n.id && n.qs.Epoch == st.Epoch && st.Role == kraft.Leader && len(k.c.voters) > 1 {
		return violation(invRestartedLeader, "node %d restarted with durable state %s and is Leader of epoch %d again", n.id, n.qs, st.Epoch)
	}
	return nil
}

// onPersist checks a quorum-state write: E3 (the durable epoch never
// goes back, across crashes too) and E2 (one vote per voter per epoch).
func (k *checker) onPersist(n *simNode, st kraft.ElectionState) error {
	if st.Epoch < n.qs.Epoch {
		return violation(invEpochMonotonic, "node %d persists %s over durable %s", n.id, st, n.qs)
	}
	if st.VotedKey.IsSet() {
		vk := voteKey{n.id, st.Epoch}
		if c, ok := k.votes[vk]; ok && c != st.VotedKey.ID {
			return violation(invDurableVote, "node %d voted for %d in epoch %d and now persists a vote for %d", n.id, c, st.Epoch, st.VotedKey.ID)
		}
		k.votes[vk] = st.VotedKey.ID
	}
	if st.Epoch == n.qs.Epoch && n.qs.VotedKey.IsSet() && st.VotedKey != n.qs.VotedKey {
		return violation(invDurableVote, "node %d changes its durable vote in epoch %d from %s to %s", n.id, st.Epoch, n.qs.VotedKey, st.VotedKey)
	}
	return nil
}

// onAppend checks one batch about to be appended to n's log: G2 (offsets
// contiguous, epochs non-decreasing and not above the node's epoch), G1
// (the (offset, epoch) oracle) and C5 (committed offsets keep their
// content).
func (k *checker) onAppend(n *simNode, e Entry) error {
	b := e.Batch
	if b.LastOffset < b.BaseOffset {
		return violation(invWellFormed, "node %d appends %s with last offset below base", n.id, b)
	}
	prev := epochKey{base: -1}
	var prevPay Payload
	if p, ok := n.log.lastEntry(); ok {
		if b.Epoch < p.Batch.Epoch {
			return violation(invWellFormed, "node %d appends %s after %s: epoch goes back", n.id, b, p.Batch)
		}
		prev, prevPay = epochKey{p.Batch.BaseOffset, p.Batch.Epoch}, p.Payload
	}
	if ep := n.core.Status().Epoch; b.Epoch > ep {
		return violation(invWellFormed, "node %d at epoch %d appends %s from a later epoch", n.id, ep, b)
	}
	key := epochKey{b.BaseOffset, b.Epoch}
	rec := logKey{last: b.LastOffset, payload: e.Payload, prev: prev, prevPay: prevPay}
	if old, ok := k.keys[key]; ok && old != rec {
		return violation(invLogMatching, "node %d appends %s (payload %s, after %d@%d:%s); offset %d epoch %d already names a batch ending at %d with payload %s after %d@%d:%s",
			n.id, b, e.Payload, prev.base, prev.epoch, prevPay, b.BaseOffset, b.Epoch, old.last, old.payload, old.prev.base, old.prev.epoch, old.prevPay)
	}
	k.keys[key] = rec
	if c, ok := k.committedAt(b.BaseOffset); ok && n.hw > b.BaseOffset && !sameEntry(c, e) {
		return violation(invCommitted, "node %d with high watermark %d appends %s over committed %s", n.id, n.hw, e, c)
	}
	if b.Voters != nil {
		if err := k.checkVoterChange(n, e); err != nil {
			return err
		}
	}
	return nil
}

// checkVoterChange checks R1 for a Voters batch appended to n: on the
// leader no other Voters record is uncommitted, and consecutive sets
// differ by one voter.
func (k *checker) checkVoterChange(n *simNode, e Entry) error {
	prev := k.c.voters
	if v := n.log.baseVoters(); v != nil {
		prev = v
	}
	pending := 0
	for _, x := range n.log.entries {
		if x.Batch.Voters != nil {
			prev = x.Batch.Voters
			// Committed once a majority of the set it puts in force
			// holds it, which the leader may know before its own fsync
			// lets it hand out the high watermark.
			if x.Batch.BaseOffset >= n.hw && x.Batch.BaseOffset != e.Batch.BaseOffset && k.holders(x, x.Batch.Voters) <= len(x.Batch.Voters)/2 {
				pending++
			}
		}
	}
	if n.core.Status().Role == kraft.Leader && pending > 0 {
		return violation(invOneVoterChange, "leader %d appends %s while %d Voters record(s) at or above its high watermark %d are held by no majority", n.id, e, pending, n.hw)
	}
	diff := 0
	for _, v := range e.Batch.Voters {
		if !slices.Contains(prev, v) {
			diff++
		}
	}
	for _, v := range prev {
		if !slices.Contains(e.Batch.Voters, v) {
			diff++
		}
	}
	if diff != 1 {
		return violation(invOneVoterChange, "node %d appends voters %v after %v: %d voters differ, want 1", n.id, e.Batch.Voters, prev, diff)
	}
	return nil
}

// onTruncate checks C7: no truncation below the node's high watermark or
// through a committed batch the node holds.
func (k *checker) onTruncate(n *simNode, t kraft.Offset) error {
	if t < n.hw {
		return violation(invNoTruncateCommit, "node %d truncates to %d below its high watermark %d", n.id, t, n.hw)
	}
	if s := n.log.latest(); s != nil && t < s.id.Offset {
		return violation(invNoTruncateCommit, "node %d truncates to %d below its snapshot %s", n.id, t, s.id)
	}
	if t >= n.log.EndOffset() {
		return nil
	}
	for _, e := range n.log.entries[max(0, n.log.find(t)):] {
		if c, ok := k.committedAt(e.Batch.BaseOffset); ok && sameEntry(c, e) {
			return violation(invNoTruncateCommit, "node %d truncates to %d through committed %s", n.id, t, e)
		}
	}
	return nil
}

// afterPreVote checks E5 after n handled a pre-vote request: one that does
// not carry a higher epoch leaves the durable state alone. (A higher
// epoch moves the receiver to Unattached in that epoch, as in Kafka.)
func (k *checker) afterPreVote(n *simNode, m *kraft.VoteRequest, before kraft.ElectionState) error {
	if m.ReplicaEpoch <= before.Epoch && n.qs != before {
		return violation(invPreVote, "node %d handled %s and its durable state went from %s to %s", n.id, m, before, n.qs)
	}
	return nil
}

// connectionLost forgets n's successful fetch if peer is its leader: a
// follower told that its leader's connection reset no longer hears the
// leader, and may grant pre-votes (E5).
func (k *checker) connectionLost(n *simNode, peer kraft.NodeID) {
	if st := n.core.Status(); st.Role == kraft.Follower && st.Leader.LeaderID == peer {
		delete(k.goodFetch, n.id)
		// The request in flight on the lost connection is forgotten: an
		// answer the network still delivers is not awaited any more.
		delete(k.fetchReq, n.id)
	}
}

// beforeDeliver records what the checker needs from inbound messages.
func (k *checker) beforeDeliver(n *simNode, m kraft.Message) {
	switch m := m.(type) {
	case *kraft.EndQuorumEpochRequest:
		// The leader resigned: its followers no longer hear it (E5).
		if g, ok := k.goodFetch[n.id]; ok && m.LeaderEpoch >= g.epoch {
			delete(k.goodFetch, n.id)
		}
	case *kraft.VoteRequest:
		k.preVotes[reqKey{from: n.id, to: m.From, id: m.RequestID}] = m.PreVote
	case *kraft.FetchResponse:
		st := n.core.Status()
		if m.Error == kraft.CodeNone && m.RequestID == k.fetchReq[n.id] && m.Leader == st.Leader &&
			st.Role == kraft.Follower && !m.DivergingEpoch.Valid() {
			k.goodFetch[n.id] = fetchSeen{epoch: m.Leader.Epoch, at: n.now}
		}
	case *kraft.FetchRequest:
		st := n.core.Status()
		if st.Role == kraft.Leader && m.CurrentLeaderEpoch == st.Epoch {
			lf := k.lastFetch[n.id]
			if lf == nil {
				lf = map[kraft.NodeID]kraft.Instant{}
				k.lastFetch[n.id] = lf
			}
			lf[m.Replica.ID] = n.now
		}
	case *kraft.FetchSnapshotRequest:
		// A snapshot download is a sign of life too (Kafka's
		// handleFetchSnapshotRequest updates check-quorum as a Fetch does).
		st := n.core.Status()
		if st.Role == kraft.Leader && m.CurrentLeaderEpoch == st.Epoch {
			if k.lastFetch[n.id] == nil {
				k.lastFetch[n.id] = map[kraft.NodeID]kraft.Instant{}
			}
			k.lastFetch[n.id][m.Replica.ID] = n.now
		}
	}
}

// messageEpoch is the epoch a message claims for its sender.
func messageEpoch(m kraft.Message) kraft.Epoch {
	switch m := m.(type) {
	case *kraft.VoteRequest:
		return m.ReplicaEpoch
	case *kraft.VoteResponse:
		return m.Leader.Epoch
	case *kraft.BeginQuorumEpochRequest:
		return m.LeaderEpoch
	case *kraft.BeginQuorumEpochResponse:
		return m.Leader.Epoch
	case *kraft.EndQuorumEpochRequest:
		return m.LeaderEpoch
	case *kraft.EndQuorumEpochResponse:
		return m.Leader.Epoch
	case *kraft.FetchRequest:
		return m.CurrentLeaderEpoch
	case *kraft.FetchResponse:
		return m.Leader.Epoch
	case *kraft.FetchSnapshotRequest:
		return m.CurrentLeaderEpoch
	case *kraft.FetchSnapshotResponse:
		return m.Leader.Epoch
	}
	return -1
}

// onSend checks a message as it leaves n, after the Ready's fsync: E3 (no
// epoch above the durable one), E2 (a granted vote is durable first), E5
// (a follower of a live leader grants no pre-vote) and C8 (a Fetch offset
// is durable).
func (k *checker) onSend(n *simNode, m kraft.Message, syncedEnd kraft.Offset) error {
	if e := messageEpoch(m); e > n.qs.Epoch {
		return violation(invEpochMonotonic, "node %d sends %s with epoch %d above its durable %s", n.id, m, e, n.qs)
	}
	switch m := m.(type) {
	case *kraft.VoteResponse:
		pre, ok := k.preVotes[reqKey{from: n.id, to: m.To, id: m.RequestID}]
		if !ok || !m.VoteGranted {
			return nil
		}
		if !pre {
			if n.qs.Epoch != m.Leader.Epoch || n.qs.VotedKey.ID != m.To {
				return violation(invDurableVote, "node %d grants a vote to %d in epoch %d with durable state %s", n.id, m.To, m.Leader.Epoch, n.qs)
			}
			return nil
		}
		st := n.core.Status()
		g, seen := k.goodFetch[n.id]
		// The fetch must belong to the current follower session: a node
		// that left and re-entered Follower starts without one.
		same := n.role == st.Role && n.epoch == st.Epoch
		if same && st.Role == kraft.Follower && seen && g.epoch == st.Epoch && n.now-g.at < kraft.Instant(n.cfg.FetchTimeout.Milliseconds()) {
			return violation(invPreVote, "node %d follows %d in epoch %d, fetched successfully at %s, and grants a pre-vote to %d at %s",
				n.id, st.Leader.LeaderID, st.Epoch, g.at, m.To, n.now)
		}
	case *kraft.FetchRequest:
		k.fetchReq[n.id] = m.RequestID
		if m.FetchOffset > syncedEnd {
			return violation(invFetchDurable, "node %d fetches from %d beyond its durable log end %d", n.id, m.FetchOffset, syncedEnd)
		}
		if m.FetchOffset > 0 {
			e, ok := n.log.holds(m.FetchOffset - 1)
			if s := n.log.latest(); s != nil && m.FetchOffset == s.id.Offset {
				e, ok = Entry{Batch: kraft.BatchInfo{Epoch: s.id.Epoch}}, true
			}
			if !ok || e.Batch.Epoch != m.LastFetchedEpoch {
				return violation(invFetchDurable, "node %d fetches from %d with last epoch %d that its log does not hold there", n.id, m.FetchOffset, m.LastFetchedEpoch)
			}
		}
	}
	return nil
}

// onPropose records a client proposal accepted by a leader.
func (k *checker) onPropose(_ *simNode, e Entry) {
	k.proposals[e.Batch.Epoch] = append(k.proposals[e.Batch.Epoch], e)
}

// onHighWatermark checks a high watermark n hands out: C1, C2, C5, and
// on a leader C3 and C4; it records newly committed batches and
// acknowledges proposals the leader committed.
func (k *checker) onHighWatermark(n *simNode, hw kraft.Offset) error {
	if hw < n.hw {
		return violation(invHWMonotonic, "node %d moves its high watermark from %d back to %d", n.id, n.hw, hw)
	}
	if hw > n.log.EndOffset() {
		return violation(invHWBounds, "node %d has high watermark %d beyond its log end %d", n.id, hw, n.log.EndOffset())
	}
	if hw == 0 {
		return nil
	}
	start := max(0, n.log.find(max(n.hw, 0)))
	for _, e := range n.log.entries[start:] {
		if e.Batch.BaseOffset >= hw {
			break
		}
		if c, ok := k.committedAt(e.Batch.BaseOffset); ok {
			if !sameEntry(c, e) {
				return violation(invCommitted, "node %d commits %s (high watermark %d) where %s was committed", n.id, e, hw, c)
			}
			continue
		}
		if e.Batch.BaseOffset != k.committedEnd() {
			return violation(invCommitted, "node %d commits %s, not contiguous with the committed prefix ending at %d", n.id, e, k.committedEnd())
		}
		k.committed = append(k.committed, e)
		k.commitPay[e.Payload] = e.Batch.BaseOffset
	}
	st := n.core.Status()
	if st.Role != kraft.Leader {
		return nil
	}
	if es, ok := k.epochStart[st.Epoch]; ok && hw <= es {
		return violation(invCurrentEpochCommit, "leader %d of epoch %d sets high watermark %d, not above its epoch start offset %d", n.id, st.Epoch, hw, es)
	}
	// C3: a majority of the voters hold the batch below hw durably. The
	// voters are read from the leader's log, not from the core, so that a
	// core counting the wrong set is caught.
	voters := k.latestVoters(n)
	last, ok := n.log.holds(hw - 1)
	if !ok {
		return violation(invHWBounds, "leader %d sets high watermark %d but holds no batch at %d", n.id, hw, hw-1)
	}
	if holders, need := k.holders(last, voters), len(voters)/2+1; holders < need {
		return violation(invDurableMajority, "leader %d sets high watermark %d but only %d of voters %v hold %s durably (need %d)", n.id, hw, holders, voters, last, need)
	}
	// The proposals of this epoch below hw are acknowledged to their
	// clients: the leader that took them committed them.
	ps := k.proposals[st.Epoch]
	for len(ps) > 0 && ps[0].Batch.BaseOffset < hw {
		e := ps[0]
		ps = ps[1:]
		if x, ok := n.log.holds(e.Batch.BaseOffset); ok && x.Payload == e.Payload {
			k.acked[e.Payload] = e.Batch.BaseOffset
			k.c.witness.Acked++
		}
	}
	k.proposals[st.Epoch] = ps
	return nil
}

// holders counts the voters whose logs hold e.
func (k *checker) holders(e Entry, voters []kraft.ReplicaKey) int {
	n := 0
	for _, v := range voters {
		if m := k.c.node(v.ID); m != nil {
			if x, ok := m.log.holds(e.Batch.BaseOffset); ok && sameEntry(x, e) {
				n++
			}
		}
	}
	return n
}

// latestVoters is the voter set in force on n by KIP-853: the latest
// Voters record in its log, committed or not, else the static set.
func (k *checker) latestVoters(n *simNode) []kraft.ReplicaKey {
	for i := len(n.log.entries) - 1; i >= 0; i-- {
		if v := n.log.entries[i].Batch.Voters; v != nil {
			return v
		}
	}
	if v := n.log.baseVoters(); v != nil {
		return v
	}
	return k.c.voters
}

// onLeader checks a node that has just become leader: E1 (one leader per
// epoch over the whole history, restarts included) and C6 (it holds every
// committed batch).
func (k *checker) onLeader(n *simNode) error {
	st := n.core.Status()
	rec := leaderRec{n.id, n.lives}
	if old, ok := k.leaderOf[st.Epoch]; ok && old != rec {
		return violation(invElectionSafety, "node %d (incarnation %d) leads epoch %d, already led by node %d (incarnation %d)", n.id, n.lives, st.Epoch, old.id, old.lives)
	}
	k.leaderOf[st.Epoch] = rec
	start := n.log.EndOffset()
	for _, e := range n.log.entries {
		if e.Batch.Epoch == st.Epoch {
			start = e.Batch.BaseOffset
			break
		}
	}
	k.epochStart[st.Epoch] = start
	if end := k.committedEnd(); start < end {
		return violation(invLeaderComplete, "node %d leads epoch %d from offset %d but the committed prefix ends at %d", n.id, st.Epoch, start, end)
	}
	for _, c := range k.committed {
		if e, ok := n.log.holds(c.Batch.BaseOffset); !ok || !sameEntry(e, c) {
			return violation(invLeaderComplete, "node %d leads epoch %d without committed %s", n.id, st.Epoch, c)
		}
	}
	return nil
}

// checkQuorum checks E6 at time now: a node that has led continuously for
// two check-quorum periods heard a Fetch from a majority of the voters
// (itself included) within the last two periods.
func (k *checker) checkQuorum(now kraft.Instant) error {
	for _, n := range k.c.nodes {
		if !n.up() || n.role != kraft.Leader {
			continue
		}
		st := n.core.Status()
		voters := k.latestVoters(n)
		if len(voters) <= 1 {
			continue
		}
		window := 3 * kraft.Instant(n.cfg.FetchTimeout.Milliseconds())
		// A new voter set restarts the count: the majority to reach is
		// the new set's (KIP-853: in force on append).
		vs := fmt.Sprint(voters)
		if rec, ok := k.votersSince[n.id]; !ok || rec.set != vs {
			k.votersSince[n.id] = votersAt{set: vs, since: now}
		}
		since := max(n.roleSince, k.votersSince[n.id].since)
		if now-since < window {
			continue
		}
		heard := 0
		if slices.ContainsFunc(voters, func(v kraft.ReplicaKey) bool { return v.ID == n.id }) {
			heard = 1 // a leader outside the set does not count itself (KAFKA-16531)
		}
		for _, v := range voters {
			if v.ID != n.id && now-k.lastFetch[n.id][v.ID] <= window {
				if _, ok := k.lastFetch[n.id][v.ID]; ok {
					heard++
				}
			}
		}
		if need := len(voters)/2 + 1; heard < need {
			return violation(invCheckQuorum, "node %d has led epoch %d since %s and heard from %d of %d voters in the last %dms (need %d)",
				n.id, st.Epoch, n.roleSince, heard, len(voters), window, need)
		}
	}
	return nil
}

// checkAcked checks K1 at the end of a run: every acknowledged proposal
// is at its offset on every node whose log reaches that offset.
func (k *checker) checkAcked() error {
	ps := slices.Sorted(maps.Keys(k.acked))
	for _, p := range ps {
		o := k.acked[p]
		for _, n := range k.c.nodes {
			if n.log.EndOffset() <= o {
				continue
			}
			e, ok := n.log.holds(o)
			if !ok || e.Payload != p {
				got := "nothing"
				if ok {
					got = e.String()
				}
				return violation(invAcked, "proposal %s acknowledged at offset %d; node %d holds %s there", p, o, n.id, got)
			}
		}
	}
	return nil
}

// checkHeld checks C5 at the end of a run: every node holds, in its
// snapshot or its log, the committed prefix below its high watermark.
func (k *checker) checkHeld() error {
	for _, n := range k.c.nodes {
		for _, c := range k.committed {
			if c.Batch.BaseOffset >= n.hw {
				break
			}
			if e, ok := n.log.holds(c.Batch.BaseOffset); !ok || !sameEntry(e, c) {
				return violation(invCommitted, "node %d with high watermark %d lost committed %s", n.id, n.hw, c)
			}
		}
	}
	return nil
}
