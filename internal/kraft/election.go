package kraft

import (
	"context"
	"log/slog"
	"slices"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft/quorum"
)

// handleVoteRequest decides a Vote or PreVote request
// (KafkaRaftClient.handleVoteRequest; KIP-996 for PreVote).
func (n *Node) handleVoteRequest(m *VoteRequest) {
	answer := func(code ErrorCode, granted bool) {
		r := &VoteResponse{Error: code, Leader: n.leaderAndEpoch(), VoteGranted: granted}
		n.reply(m.Header, r, &r.Header)
	}
	// KIP-595 validity: offsets and epochs must be sane, and a standard
	// vote's last epoch must be below the epoch it campaigns in (a pre-vote
	// campaigns in its current epoch, so equality is allowed).
	if m.Replica.ID < 0 || m.LastOffset < 0 || m.LastOffsetEpoch < 0 ||
		(!m.PreVote && m.LastOffsetEpoch >= m.ReplicaEpoch) || (m.PreVote && m.LastOffsetEpoch > m.ReplicaEpoch) {
		answer(CodeInvalidRequest, false)
		return
	}
	if m.ReplicaEpoch < n.s.epoch {
		answer(CodeFencedLeaderEpoch, false)
		return
	}
	if m.ReplicaEpoch > n.s.epoch {
		// A higher epoch moves us to Unattached before deciding, even for a
		// pre-vote (KafkaRaftClient.handleVoteRequest): the epoch is
		// durable, the vote is not.
		n.transitionToUnattached(m.ReplicaEpoch, true)
	}
	if m.Voter.ID >= 0 && (m.Voter.ID != n.me.ID || (!m.Voter.DirectoryID.IsZero() && m.Voter.DirectoryID != n.me.DirectoryID)) {
		answer(CodeInvalidVoterKey, false)
		return
	}
	// A node that learnt the quorum was rebuilt without it grants no vote
	// (noteLeaderChange): with other stale voters it must not elect anyone.
	granted := n.canGrantVote(m) && n.s.excludedAt < 0
	if granted && !m.PreVote && (n.s.role == Unattached || n.s.role == Prospective) && !n.s.votedKey.IsSet() {
		// KIP-595: one vote per epoch, durable before the response leaves
		// (markPersist puts it in the same Ready, ahead of the messages).
		n.s.votedKey = m.Replica
		n.s.electionDeadline = n.s.now + n.randomElectionTimeout()
		n.markPersist()
		n.logger.LogAttrs(context.Background(), slog.LevelInfo, "voted",
			slog.Int(keyEpoch, int(n.s.epoch)), slog.String(keyVoted, m.Replica.String()))
	}
	n.logger.LogAttrs(context.Background(), slog.LevelDebug, "vote request",
		slog.Int(keyPeer, int(m.From)), slog.Bool(keyPreVote, m.PreVote), slog.Bool(keyGranted, granted))
	answer(CodeNone, granted)
}

// canGrantVote is Kafka's grant decision: EpochState.canGrantVote of each
// state class and QuorumState.unattachedOrProspectiveCanGrantVote (KIP-996).
func (n *Node) canGrantVote(m *VoteRequest) bool {
	theirs := OffsetAndEpoch{Offset: m.LastOffset, Epoch: m.LastOffsetEpoch}
	upToDate := theirs.Compare(n.voteBar()) >= 0
	switch n.s.role {
	case Unattached, Prospective:
		if m.PreVote {
			return upToDate
		}
		if n.s.votedKey.IsSet() {
			return n.s.votedKey.Matches(m.Replica)
		}
		if n.s.leaderID != NoNode {
			return false
		}
		return upToDate
	case Follower:
		// KIP-996: a follower that has heard from its leader in this epoch
		// refuses pre-votes, so a partitioned replica cannot disrupt it;
		// once its fetch timer expires, or the leader is known lost, it
		// grants them (leaderlost.go).
		return m.PreVote && (bugzoo.Active(bugzoo.Z15) || !n.hearsLeader()) && upToDate
	case Candidate, Resigned:
		return m.PreVote && upToDate
	}
	return false
}

// voteBar is the log position a candidate's log must reach for this node
// to grant its vote. It is the node's log end (KIP-595), except for a node
// that its latest voter sets leave out (KIP-853: a leader that removed
// itself, a removed voter): it asks only for its log below the first of
// those sets' Voters records, at offset x. Above x the sets in force leave
// it out, so no entry there was committed with its acknowledgement
// counted; below x its vote guards what it acknowledged, as any voter's
// does. Without this, a leader that removes itself and restarts before any
// voter holds the record is no voter in its own log, and the voters of
// the previous set, which need its vote, cannot get it with a shorter
// log: nobody could ever be elected. docs/decisions.md, "The vote of a
// removed voter", has the argument. When x is the log start, the entry
// before it is the last of the snapshot there; when x or the epoch of the
// entry before it is in neither, the bar is the log end.
func (n *Node) voteBar() OffsetAndEpoch {
	ours := OffsetAndEpoch{Offset: n.s.leo, Epoch: n.s.lastEpoch}
	x := Offset(-1)
	for i := len(n.s.voterSets) - 1; i >= 0; i-- {
		e := n.s.voterSets[i]
		if e.Set.Contains(n.me) {
			break
		}
		if e.Offset < 0 {
			return ours // never a voter in this log: nothing changes
		}
		x = e.Offset
	}
	switch start := n.log.StartOffset(); {
	case x < start:
		return ours
	case x == start:
		// The entry before x is the last of the snapshot the log
		// starts at.
		for _, snap := range [2]func() (OffsetAndEpoch, bool){n.log.EarliestSnapshot, n.log.LatestSnapshot} {
			if id, ok := snap(); ok && id.Offset == x {
				return id
			}
		}
		return ours
	}
	epoch, ok := n.epochOf(x - 1)
	if !ok {
		return ours
	}
	return OffsetAndEpoch{Offset: x, Epoch: epoch}
}

// epochOf returns the epoch of the durable log entry at offset o, walking
// the log's epoch cache down from its newest epoch (EndOffsetForEpoch(e-1)
// is where epoch e starts); false when o is not in the durable log.
func (n *Node) epochOf(o Offset) (Epoch, bool) {
	if o < n.log.StartOffset() || o >= n.log.EndOffset() {
		return 0, false
	}
	e, start := n.log.LastFetchedEpoch(), n.log.EndOffset()
	for e > 0 {
		r := n.log.EndOffsetForEpoch(e - 1)
		if r.Offset <= o {
			return e, true
		}
		if r.Offset >= start || r.Epoch >= e {
			return 0, false // the cache answers nothing lower
		}
		e, start = r.Epoch, r.Offset
	}
	return e, true
}

// handleVoteResponse records a grant or rejection in the current round.
func (n *Node) handleVoteResponse(m *VoteResponse) {
	if !n.acceptResponse(m.Header) {
		return
	}
	if m.Error == CodeUnsupportedVersion && n.s.role == Prospective {
		// The peer cannot carry PreVote (Vote < v2): skip the pre-vote
		// round, as KafkaRaftClient.handleVoteResponse does (KIP-996).
		n.transitionToCandidate()
		return
	}
	if n.handleCommonResponse(m.From, m.Error, m.Leader) || m.Error != CodeNone {
		return
	}
	if (n.s.role != Prospective && n.s.role != Candidate) || m.Leader.Epoch != n.s.epoch {
		return
	}
	if !n.voters().ContainsID(m.From) || m.From == n.me.ID {
		return
	}
	i, found := slices.BinarySearchFunc(n.s.election.Votes, m.From, func(v voteRecord, id NodeID) int { return int(v.ID) - int(id) })
	if found {
		return
	}
	n.s.election.Votes = slices.Insert(n.s.election.Votes, i, voteRecord{ID: m.From, Granted: m.VoteGranted})
	n.checkElection()
}

// tally counts the current round; the nominee grants itself.
func (n *Node) tally() quorum.ElectionResult {
	granted, rejected := 1, 0
	for _, v := range n.s.election.Votes {
		if v.Granted {
			granted++
		} else {
			rejected++
		}
	}
	return quorum.Tally(n.voters().Len(), granted, rejected)
}

// checkElection moves on when the round is decided: a won pre-vote makes
// a Candidate, a won vote a Leader; a lost pre-vote ends the round at once,
// a lost vote waits for the election timer, with no backoff of its own
// (as Kafka's CandidateState).
func (n *Node) checkElection() {
	switch r := n.tally(); {
	case n.s.role == Prospective && r == quorum.Won:
		n.transitionToCandidate()
	case n.s.role == Prospective && r == quorum.Lost:
		n.prospectiveLost(false)
	case n.s.role == Candidate && r == quorum.Won:
		n.transitionToLeader()
	}
}

// prospectiveLost ends a pre-vote round that was rejected or timed out:
// back to following the known leader of the epoch, else Unattached in the
// same epoch with the vote kept. A timed-out round carries its (expired)
// timer over, so a new round starts at once; a rejected one waits a fresh
// election timeout.
func (n *Node) prospectiveLost(timedOut bool) {
	if n.s.leaderID != NoNode && n.s.leaderID != n.me.ID {
		n.transitionToFollower(n.s.epoch, n.s.leaderID)
		return
	}
	n.transitionToUnattached(n.s.epoch, timedOut)
}

// pollElection drives Prospective and Candidate: timers, then vote
// requests to every voter not yet heard from.
func (n *Node) pollElection() {
	if n.s.now >= n.s.electionDeadline {
		if n.s.role == Prospective {
			n.prospectiveLost(true)
		} else {
			n.transitionToProspective()
		}
		return
	}
	if n.s.tailStale || n.tally() == quorum.Lost {
		return
	}
	for _, k := range n.voters().Keys() {
		if k.ID == n.me.ID {
			continue
		}
		if _, heard := slices.BinarySearchFunc(n.s.election.Votes, k.ID, func(v voteRecord, id NodeID) int { return int(v.ID) - int(id) }); heard {
			continue
		}
		if !n.canSend(k.ID) {
			continue
		}
		r := &VoteRequest{
			ReplicaEpoch:    n.s.epoch,
			Replica:         n.me,
			Voter:           k,
			LastOffsetEpoch: n.s.lastEpoch,
			LastOffset:      n.s.leo,
			PreVote:         n.s.role == Prospective,
		}
		n.send(k.ID, r, &r.Header)
	}
}

// pollUnattached: a voter waits for its election timer; an observer looks
// for the leader by fetching from a bootstrap server.
func (n *Node) pollUnattached() {
	if n.isVoter() {
		if !n.s.shuttingDown && n.s.now >= n.s.electionDeadline {
			n.transitionToProspective()
		}
		return
	}
	if n.s.tailStale || n.s.shuttingDown {
		return
	}
	n.fetchFromBootstrap(NoNode)
}

// fetchFromBootstrap sends a Fetch to a random ready bootstrap server other
// than skip, keeping at most one fetch in flight across them. Any answer
// names the leader and epoch its sender knows.
func (n *Node) fetchFromBootstrap(skip NodeID) {
	servers := n.cfg.BootstrapServers
	if bugzoo.Active(bugzoo.Z14) {
		// Z14: no bootstrap servers; only the local voter set is asked.
		servers = nil
	}
	if len(servers) == 0 {
		for _, k := range n.voters().Keys() {
			servers = append(servers, k.ID)
		}
	}
	var ready []NodeID
	for _, id := range servers {
		if id == n.me.ID || id == skip {
			continue
		}
		if n.s.peers[n.peerIndex(id)].InFlight != 0 {
			return
		}
		if n.canSend(id) {
			ready = append(ready, id)
		}
	}
	if len(ready) == 0 {
		return
	}
	n.sendFetch(ready[n.s.rng.Uint64()%uint64(len(ready))])
}

// handleCommonResponse applies the epoch and leader carried by any
// response (KafkaRaftClient.maybeHandleCommonResponse). It returns
// true when the response is fully handled.
func (n *Node) handleCommonResponse(from NodeID, code ErrorCode, leader LeaderAndEpoch) bool {
	if leader.Epoch < n.s.epoch || code == CodeUnknownLeaderEpoch {
		// Stale. An error from a peer behind us teaches nothing either: do
		// not ask it again at once (an observer would spin on it).
		if code != CodeNone {
			n.backoff(from)
		}
		return true
	}
	if leader.Epoch > n.s.epoch || code == CodeFencedLeaderEpoch || code == CodeNotLeaderOrFollower {
		before := n.leaderAndEpoch()
		n.maybeTransition(leader.LeaderID, leader.Epoch)
		if code != CodeNone && n.leaderAndEpoch() == before {
			// Nothing learned: do not ask the same peer again at once. (A
			// response that taught us a leader or epoch counts as handled,
			// and the next request goes out immediately.)
			n.backoff(from)
		}
		return true
	}
	if leader.LeaderID >= 0 && leader.LeaderID != n.me.ID && n.s.leaderID == NoNode {
		n.maybeTransition(leader.LeaderID, leader.Epoch)
		if code != CodeNone {
			return true
		}
	}
	switch code {
	case CodeNone:
		return false
	case CodeBrokerNotAvailable:
		n.backoff(from)
	case CodeInvalidRequest:
		n.logger.LogAttrs(context.Background(), slog.LevelError, "peer rejected our request as invalid",
			slog.Int(keyPeer, int(from)), slog.String(keyError, code.String()))
		n.backoff(from)
	default:
		n.logger.LogAttrs(context.Background(), slog.LevelWarn, "error response",
			slog.Int(keyPeer, int(from)), slog.String(keyError, code.String()))
		n.backoff(from)
	}
	return true
}

// handleBeginQuorumEpochRequest follows a new leader
// (KafkaRaftClient.handleBeginQuorumEpochRequest).
func (n *Node) handleBeginQuorumEpochRequest(m *BeginQuorumEpochRequest) {
	answer := func(code ErrorCode) {
		r := &BeginQuorumEpochResponse{Error: code, Leader: n.leaderAndEpoch()}
		n.reply(m.Header, r, &r.Header)
	}
	if m.LeaderEpoch < n.s.epoch {
		answer(CodeFencedLeaderEpoch)
		return
	}
	if m.LeaderID < 0 {
		answer(CodeInvalidRequest)
		return
	}
	n.maybeTransition(m.LeaderID, m.LeaderEpoch)
	if m.Voter.ID >= 0 && (m.Voter.ID != n.me.ID || (!m.Voter.DirectoryID.IsZero() && m.Voter.DirectoryID != n.me.DirectoryID)) {
		answer(CodeInvalidVoterKey)
		return
	}
	answer(CodeNone)
}

func (n *Node) handleBeginQuorumEpochResponse(m *BeginQuorumEpochResponse) {
	if !n.acceptResponse(m.Header) || n.handleCommonResponse(m.From, m.Error, m.Leader) {
		return
	}
	if n.s.role == Leader {
		if r := n.leaderVoter(m.From); r != nil {
			r.BeginAcked = true
		}
	}
}

// handleEndQuorumEpochRequest learns that the leader resigned and applies
// the successor backoff (KafkaRaftClient.handleEndQuorumEpochRequest and
// strictExponentialElectionBackoffMs).
func (n *Node) handleEndQuorumEpochRequest(m *EndQuorumEpochRequest) {
	answer := func(code ErrorCode) {
		r := &EndQuorumEpochResponse{Error: code, Leader: n.leaderAndEpoch()}
		n.reply(m.Header, r, &r.Header)
	}
	if m.LeaderEpoch < n.s.epoch {
		answer(CodeFencedLeaderEpoch)
		return
	}
	if m.LeaderID < 0 {
		answer(CodeInvalidRequest)
		return
	}
	n.maybeTransition(m.LeaderID, m.LeaderEpoch)
	if n.s.role == Follower && n.s.leaderID == m.LeaderID {
		// Kafka's position counts the candidates listed before this node:
		// the list's length when it is not listed, 0 for an empty list,
		// which a leader restarted into Resigned sends (it has no fetch
		// offsets to rank its successors by), so every voter campaigns at
		// once (KafkaRaftClient.endEpochElectionBackoff).
		pos := slices.IndexFunc(m.PreferredCandidates, func(k ReplicaKey) bool { return k.Matches(n.me) })
		if pos < 0 {
			pos = len(m.PreferredCandidates)
		}
		d := electionBackoff(pos, len(m.PreferredCandidates), Instant(n.cfg.ElectionBackoffMax.Milliseconds()))
		// Kafka overrides the fetch timer and keeps refusing pre-votes
		// until it fires; here the resigned leader is no longer heard, so
		// the first successor's pre-vote is granted at once (leaderlost.go).
		n.s.follower.FetchDeadline = n.s.now + d
		n.s.follower.LeaderLost = true
		n.logger.LogAttrs(context.Background(), slog.LevelInfo, "leader resigned",
			slog.Int(keyLeaderID, int(m.LeaderID)), slog.Int(keyEpoch, int(m.LeaderEpoch)),
			slog.Int(keyPosition, pos), slog.Int64(keyBackoffMs, int64(d)))
	}
	answer(CodeNone)
}

// electionBackoff is Kafka's strictExponentialElectionBackoffMs: position
// 0 starts at once (the first preferred successor, or any voter of an
// empty list), the others wait exponentially longer, capped at max; a
// position at or past the list's length (an unlisted voter) waits max.
func electionBackoff(pos, n int, maxMs Instant) Instant {
	switch {
	case pos == 0:
		return 0
	case pos < 0 || pos >= n:
		return maxMs
	}
	return min(maxMs, (maxMs>>(n-1))<<(pos-1))
}

func (n *Node) handleEndQuorumEpochResponse(m *EndQuorumEpochResponse) {
	if !n.acceptResponse(m.Header) || n.handleCommonResponse(m.From, m.Error, m.Leader) {
		return
	}
	if n.s.role == Resigned {
		if i, ok := slices.BinarySearch(n.s.resigned.Unacked, m.From); ok {
			n.s.resigned.Unacked = slices.Delete(slices.Clone(n.s.resigned.Unacked), i, i+1)
		}
	}
}

// pollResigned re-sends EndQuorumEpoch to voters that have not answered
// and, unless shutting down, gives up the epoch when the election timer
// expires.
func (n *Node) pollResigned() {
	if !n.s.shuttingDown && n.s.now >= n.s.electionDeadline {
		n.transitionToUnattached(n.s.epoch+1, true)
		return
	}
	for _, id := range n.s.resigned.Unacked {
		if !n.canSend(id) {
			continue
		}
		r := &EndQuorumEpochRequest{LeaderID: n.me.ID, LeaderEpoch: n.s.epoch, PreferredCandidates: n.s.resigned.Preferred}
		n.send(id, r, &r.Header)
	}
}
