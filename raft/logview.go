package raft

import (
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
)

// logView adapts the log store to the consensus core's read-only
// [kraft.LogView]: the same questions under the core's names and scalar
// types. The engine goroutine is its only user.
type logView struct {
	log *logstore.Log
	// size reports a snapshot's size from the snapshot store.
	size func(kraft.OffsetAndEpoch) (int64, bool)
	// voters reloads the voter-set history from the snapshot and the log
	// (empty for a static quorum).
	voters func() []kraft.VoterSetAt
	// leaderChange finds the log's latest LeaderChange batch.
	leaderChange func() (kraft.BatchInfo, bool)
}

var _ kraft.LogView = logView{}

func (v logView) StartOffset() kraft.Offset { return kraft.Offset(v.log.LogStartOffset()) }

func (v logView) EndOffset() kraft.Offset { return kraft.Offset(v.log.LogEndOffset()) }

func (v logView) LastFetchedEpoch() kraft.Epoch { return kraft.Epoch(v.log.LastEpoch()) }

func (v logView) EndOffsetForEpoch(e kraft.Epoch) kraft.OffsetAndEpoch {
	return v.log.EndOffsetForEpoch(int32(e))
}

func (v logView) LatestSnapshot() (kraft.OffsetAndEpoch, bool) { return v.log.LatestSnapshot() }

func (v logView) EarliestSnapshot() (kraft.OffsetAndEpoch, bool) { return v.log.EarliestSnapshot() }

func (v logView) SnapshotSize(id kraft.OffsetAndEpoch) (int64, bool) { return v.size(id) }

// VoterHistory is empty for a static quorum (kraft.version 0), whose
// voter set is controller.quorum.voters; a dynamic quorum's comes from
// its snapshot and log (see dynamic.go).
func (v logView) VoterHistory() []kraft.VoterSetAt { return v.voters() }

func (v logView) LatestLeaderChange() (kraft.BatchInfo, bool) { return v.leaderChange() }
