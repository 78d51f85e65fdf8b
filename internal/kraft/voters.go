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

// truncateVoters drops voter sets recorded at or after offset.
func (n *Node) truncateVoters(offset Offset) {
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
