package raft

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/wire"
)

// The election and commit invariants of docs/reliability.md, checked
// over the production engines of a simCluster: the ghost state below is
// what no node keeps, fed by the engines' durabilityProbe, by the
// messages the cluster carries and by each node's log store.

// simGhost is the history of a simulated run that no node keeps.
type simGhost struct {
	// leaders is every node seen leading an epoch, with its incarnation
	// (E1, E4).
	leaders map[kraft.Epoch]simIncarnation
	// votes is the candidate each voter persisted a vote for, per epoch
	// (E2).
	votes map[simVote]kraft.NodeID
	// heard is when each leader last had a Fetch or FetchSnapshot of its
	// epoch delivered from each replica (E6).
	heard map[simLink]simHeard
	// commitEnd is the highest high watermark a leader handed out;
	// commitEpochs that leader's epoch entries below it (C6).
	commitEnd    int64
	commitEpochs []logstore.EpochEntry
}

type simIncarnation struct {
	id   NodeID
	life int
}

type simLink struct{ leader, replica NodeID }

type simHeard struct {
	epoch kraft.Epoch
	at    time.Time
}

type simVote struct {
	voter NodeID
	epoch kraft.Epoch
}

// simDurable is what a node's disk holds durably, as the checker knows
// it: the quorum state last persisted, and the log as far as it was
// synced when its power was cut.
type simDurable struct {
	state    kraft.ElectionState
	hasState bool
	// The log at the last power loss: its start, its synced end and its
	// epoch entries.
	start, synced int64
	epochs        []logstore.EpochEntry
}

// simProbe is the durabilityProbe of one incarnation of a node.
type simProbe struct {
	sc *simCluster
	n  *simNode
}

// persisted checks a quorum-state write: the durable epoch never goes
// back, across power losses too (E3), and a voter persists one vote per
// epoch (E2).
func (p simProbe) persisted(st kraft.ElectionState) {
	sc, n := p.sc, p.n
	if old := n.durable.state; n.durable.hasState {
		if st.Epoch < old.Epoch {
			sc.t.Fatalf("E3 durable epoch never goes back: node %d persists %s over its durable %s (seed %d)", n.id, st, old, sc.seed)
		}
		if st.Epoch == old.Epoch && old.VotedKey.IsSet() && !st.VotedKey.SameReplica(old.VotedKey) {
			sc.t.Fatalf("E2 one durable vote per voter per epoch: node %d changes its durable vote in epoch %d from %s to %s (seed %d)", n.id, st.Epoch, old.VotedKey, st.VotedKey, sc.seed)
		}
	}
	if st.VotedKey.IsSet() {
		k := simVote{n.id, st.Epoch}
		if c, ok := sc.ghost.votes[k]; ok && c != st.VotedKey.ID {
			sc.t.Fatalf("E2 one durable vote per voter per epoch: node %d voted for %d in epoch %d and now persists a vote for %d (seed %d)", n.id, c, st.Epoch, st.VotedKey.ID, sc.seed)
		}
		sc.ghost.votes[k] = st.VotedKey.ID
	}
	n.durable.state, n.durable.hasState = st, true
}

// truncated checks C7: a node never truncates below the high watermark
// it knew in this incarnation.
func (p simProbe) truncated(to kraft.Offset) {
	if to < p.n.hw {
		p.sc.t.Fatalf("C7 no truncation below the high watermark: node %d truncates its log to %d below its high watermark %d (seed %d)", p.n.id, to, p.n.hw, p.sc.seed)
	}
}

// notePowerLoss records what n's disk must still hold after the power
// loss that follows.
func (sc *simCluster) notePowerLoss(n *simNode) {
	l := n.e.log
	n.durable.start, n.durable.synced = l.LogStartOffset(), l.SyncedOffset()
	n.durable.epochs = slices.Clone(l.EpochEntries())
}

// checkRecovered checks a node started on what its disk kept: the
// quorum state reads back as last persisted (E2, E3), a node that led
// its durable epoch does not lead it again (E4), and the log holds what
// it had synced (D1).
func (sc *simCluster) checkRecovered(n *simNode) {
	if n.life == 1 {
		return
	}
	st := n.e.node.Status()
	if d := n.durable.state; n.durable.hasState {
		switch {
		case st.Epoch < d.Epoch:
			sc.t.Fatalf("E3 durable epoch never goes back: node %d restarts in epoch %d below its durable %s (seed %d)", n.id, st.Epoch, d, sc.seed)
		case st.Epoch == d.Epoch && d.VotedKey.IsSet() && !st.VotedKey.SameReplica(d.VotedKey):
			sc.t.Fatalf("E2 one durable vote per voter per epoch: node %d restarts in epoch %d with vote %s, its durable vote was %s (seed %d)", n.id, st.Epoch, st.VotedKey, d.VotedKey, sc.seed)
		case st.Role == kraft.Leader && d.LeaderID == kraft.NodeID(n.id) && st.Epoch == d.Epoch:
			sc.t.Fatalf("E4 restarted leader resigns: node %d restarts with durable state %s as Leader of epoch %d again (seed %d)", n.id, d, st.Epoch, sc.seed)
		}
	}
	l := n.e.log
	if end := l.LogEndOffset(); end < n.durable.synced {
		sc.t.Fatalf("D1 synced data survives a crash: node %d's log ends at %d after a power loss, below the %d it had synced (seed %d)", n.id, end, n.durable.synced, sc.seed)
	}
	for _, x := range n.durable.epochs {
		if x.StartOffset < l.LogStartOffset() || x.StartOffset >= n.durable.synced {
			continue
		}
		if got := epochAt(l.EpochEntries(), x.StartOffset); got != x.Epoch {
			sc.t.Fatalf("D1 synced data survives a crash: node %d held epoch %d at offset %d synced before a power loss, and epoch %d after it (seed %d)", n.id, x.Epoch, x.StartOffset, got, sc.seed)
		}
	}
}

// epochAt is the epoch of the batch at offset off by the epoch entries
// es, or -1 before the first.
func epochAt(es []logstore.EpochEntry, off int64) int32 {
	ep := int32(-1)
	for _, x := range es {
		if x.StartOffset > off {
			break
		}
		ep = x.Epoch
	}
	return ep
}

// checkSent checks a request as it leaves n for to: its epoch is
// durable (E3), and a Fetch names an offset within n's synced log (C8).
func (sc *simCluster) checkSent(n, to *simNode, req kmsg.Request) {
	if !n.up() || !n.durable.hasState {
		return
	}
	msg := kraftMessage(req, n.e.clusterID, kraft.NodeID(to.id))
	if msg == nil {
		return
	}
	if ep := sentEpoch(msg); ep > n.durable.state.Epoch {
		sc.t.Fatalf("E3 durable epoch never goes back: node %d sends %s with epoch %d above its durable %s (seed %d)", n.id, msg, ep, n.durable.state, sc.seed)
	}
	if f, ok := msg.(*kraft.FetchRequest); ok {
		if synced := n.e.log.SyncedOffset(); int64(f.FetchOffset) > synced {
			sc.t.Fatalf("C8 fetch offsets are durable: node %d fetches from %d beyond its synced log end %d (seed %d)", n.id, f.FetchOffset, synced, sc.seed)
		}
	}
}

// kraftMessage is req as the core of node to reads it: nil for an RPC
// the core does not take or one its listener refuses.
func kraftMessage(req kmsg.Request, clusterID string, to kraft.NodeID) kraft.Message {
	switch req.(type) {
	case *kmsg.VoteRequest, *kmsg.BeginQuorumEpochRequest, *kmsg.EndQuorumEpochRequest, *kmsg.FetchRequest, *kmsg.FetchSnapshotRequest:
		msg, answer, err := wire.KRaftRequest(req, clusterID, to)
		if err != nil || answer != nil {
			return nil
		}
		return msg
	}
	return nil
}

// sentEpoch is the epoch a request claims for its sender that it must
// have persisted first; -1 for a pre-vote, whose epoch is the one it
// asks to move to.
func sentEpoch(m kraft.Message) kraft.Epoch {
	switch m := m.(type) {
	case *kraft.VoteRequest:
		if m.PreVote {
			return -1
		}
		return m.ReplicaEpoch
	case *kraft.BeginQuorumEpochRequest:
		return m.LeaderEpoch
	case *kraft.EndQuorumEpochRequest:
		return m.LeaderEpoch
	case *kraft.FetchRequest:
		return m.CurrentLeaderEpoch
	case *kraft.FetchSnapshotRequest:
		return m.CurrentLeaderEpoch
	}
	return -1
}

// checkVoteAnswer checks E2 on a Vote answer as it leaves n: a granted
// vote (not a pre-vote) leaves only once n's quorum-state file records
// it.
func (sc *simCluster) checkVoteAnswer(n *simNode, req *kmsg.VoteRequest, resp kmsg.Response) {
	r, ok := resp.(*kmsg.VoteResponse)
	if !ok || len(req.Topics) == 0 || len(req.Topics[0].Partitions) == 0 || len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 {
		return
	}
	q, a := req.Topics[0].Partitions[0], r.Topics[0].Partitions[0]
	if !a.VoteGranted || q.PreVote {
		return
	}
	d := n.durable.state
	if !n.durable.hasState || d.Epoch != kraft.Epoch(q.CandidateEpoch) || d.VotedKey.ID != kraft.NodeID(q.CandidateID) {
		sc.t.Fatalf("E2 one durable vote per voter per epoch: node %d grants its vote to %d in epoch %d with durable state %s (seed %d)", n.id, q.CandidateID, q.CandidateEpoch, d, sc.seed)
	}
}

// noteDelivered records a Fetch or FetchSnapshot delivered to the leader
// of its epoch (E6).
func (sc *simCluster) noteDelivered(to *simNode, msg kraft.Message) {
	var from kraft.NodeID
	var epoch kraft.Epoch
	switch m := msg.(type) {
	case *kraft.FetchRequest:
		from, epoch = m.Replica.ID, m.CurrentLeaderEpoch
	case *kraft.FetchSnapshotRequest:
		from, epoch = m.Replica.ID, m.CurrentLeaderEpoch
	default:
		return
	}
	if st := to.e.lastStatus; st.Role != kraft.Leader || st.Epoch != epoch {
		return
	}
	sc.ghost.heard[simLink{to.id, NodeID(from)}] = simHeard{epoch, sc.clock.now}
}

// voterSetOf is the voter set in force on n just before offset end (-1:
// at its log end): the latest Voters record in its log before it,
// committed or not (KIP-853), else the static voters.
func (sc *simCluster) voterSetOf(n *simNode, end kraft.Offset) []NodeID {
	if end < 0 {
		end = kraft.Offset(n.e.log.LogEndOffset())
	}
	if rec := n.e.voters.at(end); rec != nil {
		var ids []NodeID
		for _, id := range voterIDs(rec) {
			ids = append(ids, NodeID(id))
		}
		return ids
	}
	var ids []NodeID
	for _, v := range n.cfg.QuorumVoters {
		ids = append(ids, v.ID)
	}
	return ids
}

// checkLeaders checks every running node between steps: one leader per
// epoch over the whole run, restarts included (E1, E4); a new leader
// holds the committed prefix (C6); a leader's high watermark is past its
// epoch start (C4) and on the synced logs of a majority of its voter set
// (C3); and a leader that has led for three fetch timeouts heard from a
// majority of its voters within the last three (E6).
func (sc *simCluster) checkLeaders() {
	for _, n := range sc.nodes {
		if !n.up() {
			continue
		}
		st := n.e.lastStatus
		if st.Role != n.role || st.Epoch != n.epoch {
			n.role, n.epoch, n.roleSince = st.Role, st.Epoch, sc.clock.now
		}
		if st.Role != kraft.Leader {
			continue
		}
		me := simIncarnation{n.id, n.life}
		switch old, ok := sc.ghost.leaders[st.Epoch]; {
		case ok && old.id != n.id:
			sc.t.Fatalf("E1 election safety: nodes %d and %d both led epoch %d (seed %d)", old.id, n.id, st.Epoch, sc.seed)
		case ok && old != me:
			sc.t.Fatalf("E4 restarted leader resigns: node %d leads epoch %d again in incarnation %d, after leading it in incarnation %d (seed %d)", n.id, st.Epoch, n.life, old.life, sc.seed)
		case !ok:
			sc.ghost.leaders[st.Epoch] = me
			sc.checkComplete(n, st.Epoch)
		}
		// A high watermark is checked when the leader hands it out:
		// a voter set appended later rules the offsets after it only.
		if hw := int64(st.HighWatermark); hw > 0 && hw > n.leaderHW {
			n.leaderHW = hw
			sc.checkLeaderCommit(n, st.Epoch, hw)
		}
		sc.checkQuorumHeard(n, st.Epoch)
	}
}

// checkComplete checks C6 on a node seen leading epoch for the first
// time: its log agrees with the committed prefix on the epoch of every
// committed offset it still holds, and its own epoch starts after it.
func (sc *simCluster) checkComplete(n *simNode, epoch kraft.Epoch) {
	l := n.e.log
	if end := l.LogEndOffset(); end < sc.ghost.commitEnd {
		sc.t.Fatalf("C6 leader completeness: node %d leads epoch %d with its log ending at %d, below the committed prefix ending at %d (seed %d)", n.id, epoch, end, sc.ghost.commitEnd, sc.seed)
	}
	es := l.EpochEntries()
	probes := []int64{sc.ghost.commitEnd - 1}
	for _, x := range sc.ghost.commitEpochs {
		probes = append(probes, x.StartOffset)
	}
	for _, off := range probes {
		if off < l.LogStartOffset() || off >= sc.ghost.commitEnd {
			continue
		}
		if want, got := epochAt(sc.ghost.commitEpochs, off), epochAt(es, off); got != want {
			sc.t.Fatalf("C6 leader completeness: node %d leads epoch %d holding epoch %d at committed offset %d, committed in epoch %d (seed %d)", n.id, epoch, got, off, want, sc.seed)
		}
	}
}

// checkLeaderCommit checks a leader's high watermark hw: C4 and C3; it
// then extends the committed prefix.
func (sc *simCluster) checkLeaderCommit(n *simNode, epoch kraft.Epoch, hw int64) {
	l := n.e.log
	es := l.EpochEntries()
	if i := slices.IndexFunc(es, func(x logstore.EpochEntry) bool { return x.Epoch == int32(epoch) }); i < 0 || hw <= es[i].StartOffset {
		start := l.LogEndOffset()
		if i >= 0 {
			start = es[i].StartOffset
		}
		sc.t.Fatalf("C4 current-epoch commit rule: leader %d of epoch %d has high watermark %d, not above its epoch start offset %d (seed %d)", n.id, epoch, hw, start, sc.seed)
	}
	want := epochAt(es, hw-1)
	// A Voters record is in force from its append (KIP-853), and the
	// majorities of two sets one voter apart intersect: the leader may
	// count the set in force at hw-1 or a later one it appended since.
	var tried [][]NodeID
	for _, end := range []kraft.Offset{kraft.Offset(hw), -1} {
		voters := sc.voterSetOf(n, end)
		holders := 0
		for _, id := range voters {
			if m := sc.byID(id); m != nil && sc.holdsDurably(m, hw, want) {
				holders++
			}
		}
		if holders > len(voters)/2 {
			tried = nil
			break
		}
		tried = append(tried, voters)
	}
	if tried != nil {
		sc.t.Fatalf("C3 high watermark durable on a majority: leader %d of epoch %d has high watermark %d, but no majority of voters %v holds offset %d of epoch %d in its synced log (seed %d)", n.id, epoch, hw, tried, hw-1, want, sc.seed)
	}
	if hw > sc.ghost.commitEnd {
		sc.ghost.commitEnd = hw
		sc.ghost.commitEpochs = slices.DeleteFunc(slices.Clone(es), func(x logstore.EpochEntry) bool { return x.StartOffset >= hw })
	}
}

// holdsDurably reports whether m's disk holds offset hw-1, in epoch, in
// its synced log (or below its log start, in a snapshot).
func (sc *simCluster) holdsDurably(m *simNode, hw int64, epoch int32) bool {
	start, synced, es := m.durable.start, m.durable.synced, m.durable.epochs
	if m.up() {
		l := m.e.log
		start, synced, es = l.LogStartOffset(), l.SyncedOffset(), l.EpochEntries()
	}
	if hw-1 < start {
		return true
	}
	return synced >= hw && epochAt(es, hw-1) == epoch
}

// checkQuorumHeard checks E6 on leader n of epoch.
func (sc *simCluster) checkQuorumHeard(n *simNode, epoch kraft.Epoch) {
	voters := sc.voterSetOf(n, -1)
	if len(voters) <= 1 {
		return
	}
	window := 3 * n.cfg.FetchTimeout
	set := fmt.Sprint(voters)
	if n.votersSeen != set {
		n.votersSeen, n.votersSince = set, sc.clock.now
	}
	since := n.roleSince
	if n.votersSince.After(since) {
		since = n.votersSince
	}
	now := sc.clock.now
	if now.Sub(since) < window {
		return
	}
	heard := 0
	for _, id := range voters {
		if id == n.id {
			heard++ // a leader outside the set does not count itself
			continue
		}
		if h, ok := sc.ghost.heard[simLink{n.id, id}]; ok && h.epoch == epoch && now.Sub(h.at) <= window {
			heard++
		}
	}
	if need := len(voters)/2 + 1; heard < need {
		sc.t.Fatalf("E6 check-quorum: node %d has led epoch %d since %s and heard from %d of voters %v in the last %v (need %d) (seed %d)", n.id, epoch, since.Format(time.StampMilli), heard, voters, window, need, sc.seed)
	}
}

// byID is the node with id, or nil.
func (sc *simCluster) byID(id NodeID) *simNode {
	for _, n := range sc.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}
