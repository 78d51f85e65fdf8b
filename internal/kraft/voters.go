package kraft

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/krabka-go/krabka/internal/kraft/quorum"
)

// Voter-set history (KIP-853, VoterSetHistory and
// KRaftControlRecordStateMachine). The latest appended Voters record is in
// force at once, committed or not; truncating it away restores the
// previous set. voterSets[0] is the static configuration
// (offset -1), used while the log holds no Voters record.

// loadVoterSets builds the history from the static voters and the log's
// Voters records.
func loadVoterSets(static []ReplicaKey, log LogView) ([]voterSetEntry, error) {
	base, err := quorum.NewVoterSet(static...)
	if err != nil {
		return nil, err
	}
	sets := []voterSetEntry{{Offset: -1, Set: base}}
	for _, h := range log.VoterHistory() {
		vs, err := quorum.NewVoterSet(h.Voters...)
		if err != nil {
			return nil, fmt.Errorf("voter set at offset %d: %w", h.Offset, err)
		}
		sets = append(sets, voterSetEntry{Offset: h.Offset, Set: vs})
	}
	return sets, nil
}

// applyVoters records a Voters control record appended at offset.
func (n *Node) applyVoters(offset Offset, keys []ReplicaKey) {
	vs, err := quorum.NewVoterSet(keys...)
	if err != nil {
		n.logger.LogAttrs(context.Background(), slog.LevelError, "ignoring malformed voter set",
			slog.Int64(keyOffset, int64(offset)), slog.String(keyError, err.Error()))
		return
	}
	n.s.voterSets = append(slices.Clip(n.s.voterSets), voterSetEntry{Offset: offset, Set: vs})
	n.onVotersChanged()
}

// noteLeaderChange checks the LeaderChange record of a batch a follower
// appends. In a static quorum (no Voters record in force) every leader's
// LeaderChange names its voter set, controller.quorum.voters as it sees it.
// Only the LeaderChange of the epoch the node follows counts: older ones
// are history a catching-up node replays. One that omits this node, while
// this node's own configuration counts it,
// means the quorum went on without it: storage unsafe-force-standalone
// rebuilt it on a survivor, or the voters were reconfigured and this node's
// configuration and log are stale (docs/operations.md, "Losing a
// majority"). Counting itself a voter then is unsafe: with other stale
// voters it could elect a leader that truncates what the rebuilt quorum
// committed. So the node stops counting itself a voter (isVoter) and acts
// as an observer, which never campaigns, and grants no vote
// (handleVoteRequest), and says so
// at ERROR once. A later LeaderChange naming it, or the truncation of the
// record, clears it. Dynamic quorums need no such rule: the Voters record
// in force already omits the node (KIP-853).
func (n *Node) noteLeaderChange(b BatchInfo) {
	last := n.s.voterSets[len(n.s.voterSets)-1]
	if b.Epoch != n.s.epoch || last.Offset >= 0 || len(b.LeaderChange.Voters) == 0 || !last.Set.Contains(n.me) {
		return
	}
	named := slices.ContainsFunc(b.LeaderChange.Voters, func(k ReplicaKey) bool { return k.ID == n.me.ID })
	switch {
	case named && n.s.excludedAt >= 0:
		n.s.excludedAt = -1
		n.logger.LogAttrs(context.Background(), slog.LevelInfo, "the leader's voter set includes this node again",
			slog.Int(keyEpoch, int(b.Epoch)), slog.Int(keyLeaderID, int(b.LeaderChange.LeaderID)))
	case !named && n.s.excludedAt < 0:
		n.exclude(b, "removed from the quorum: the leader's LeaderChange names a voter set without this node, though controller.quorum.voters lists it; "+
			"this node no longer campaigns or grants votes. The quorum was rebuilt without it (storage unsafe-force-standalone) or reconfigured: ")
	}
}

// exclude makes the node stop counting itself a voter because of the
// LeaderChange of batch b, and logs why at ERROR: why, then what the
// operator must do.
func (n *Node) exclude(b BatchInfo, why string) {
	n.s.excludedAt = b.BaseOffset
	n.logger.LogAttrs(context.Background(), slog.LevelError,
		why+"stop it, wipe its log directories, format them again with the cluster id and add it back (docs/operations.md, \"Losing a majority\")",
		slog.Int(keyEpoch, int(b.Epoch)), slog.Int(keyLeaderID, int(b.LeaderChange.LeaderID)),
		slog.Int64(keyOffset, int64(b.BaseOffset)), slog.String(keyVoters, keyList(b.LeaderChange.Voters)))
}

// restoreExclusion re-derives, at construction, what noteLeaderChange
// learnt while the node ran, so that a restart does not make a stale
// static voter count itself again: with another restarted stale voter it
// could then elect a leader of the old voter set and truncate what the
// rebuilt quorum committed. The exclusion is not stored anywhere: the
// log's latest LeaderChange is its record. If that LeaderChange omits
// this node while the static voter set in force counts it, the node
// starts excluded.
//
// Unlike noteLeaderChange this does not ask that the LeaderChange be of
// the epoch the node follows: at construction the node cannot tell the
// current epoch's record from history it replayed while catching up. It
// errs on the safe side. A node excluded only by history fetches the
// LeaderChange of the epoch it follows, which comes after the one it
// holds and names it, and that clears the exclusion as it does at run
// time.
func (n *Node) restoreExclusion() {
	b, ok := n.log.LatestLeaderChange()
	last := n.s.voterSets[len(n.s.voterSets)-1]
	if !ok || last.Offset >= 0 || len(b.LeaderChange.Voters) == 0 || !last.Set.Contains(n.me) ||
		slices.ContainsFunc(b.LeaderChange.Voters, func(k ReplicaKey) bool { return k.ID == n.me.ID }) {
		return
	}
	n.exclude(b, "starting removed from the quorum: the latest LeaderChange in the log names a voter set without this node, though controller.quorum.voters lists it; "+
		"this node does not campaign or grant votes until a leader's LeaderChange names it. If the quorum was rebuilt without it (storage unsafe-force-standalone): ")
}

// truncateVoters drops voter sets recorded at or after offset.
func (n *Node) truncateVoters(offset Offset) {
	if n.s.excludedAt >= offset {
		n.s.excludedAt = -1
	}
	before := len(n.s.voterSets)
	n.s.voterSets = slices.DeleteFunc(slices.Clone(n.s.voterSets), func(e voterSetEntry) bool { return e.Offset >= offset })
	if len(n.s.voterSets) != before {
		n.onVotersChanged()
	}
}

func (n *Node) onVotersChanged() {
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "voter set changed", slog.String(keyVoters, n.voters().String()))
	if n.s.role == Leader {
		n.rebuildLeaderVoters()
		n.maybeAdvanceHighWatermark()
	}
}

// PendingVoterChange reports whether the latest voter set is not yet
// committed (its record is at or above the high watermark). KIP-853 allows
// at most one uncommitted change: the runtime must not propose a new
// Voters record while this is true.
func (n *Node) PendingVoterChange() bool {
	last := n.s.voterSets[len(n.s.voterSets)-1]
	return last.Offset >= 0 && last.Offset >= n.s.hw
}
