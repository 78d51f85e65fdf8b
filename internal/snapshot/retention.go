package snapshot

import (
	"slices"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
)

// Policy is Kafka's snapshot retention (KafkaRaftLog.maybeClean).
type Policy struct {
	// MaxRetentionBytes mirrors metadata.max.retention.bytes: while the
	// log's bytes plus the bytes of all snapshots exceed it, the oldest
	// snapshot is deleted. Negative disables the rule.
	MaxRetentionBytes int64
	// MaxRetentionMs mirrors metadata.max.retention.ms: a snapshot whose
	// LastContainedLogTimestamp is more than this many ms before now is
	// deleted. Negative disables the rule.
	MaxRetentionMs int64
}

// Retained describes one snapshot for [PlanRetention].
type Retained struct {
	// ID is the snapshot id.
	ID kraft.OffsetAndEpoch
	// Size is its size in bytes.
	Size int64
	// LastContainedLogTimestamp is its header's timestamp (ms), valid when
	// TimestampKnown. Kafka keeps a snapshot whose header it cannot read.
	LastContainedLogTimestamp int64
	// TimestampKnown says whether LastContainedLogTimestamp was read.
	TimestampKnown bool
}

// RetentionPlan is what [PlanRetention] decided.
type RetentionPlan struct {
	// Delete lists the snapshots to delete, oldest first.
	Delete []kraft.OffsetAndEpoch
	// LogStartOffset is the new log start offset: the end offset of the
	// oldest snapshot kept when any was deleted, else the given start.
	// Segments wholly below it can be deleted.
	LogStartOffset int64
}

// PlanRetention decides which snapshots to delete, as Kafka's maybeClean
// does: first the size rule, then the time rule, each walking the
// snapshots oldest first and never considering the newest. For a snapshot
// S_i (with S_{i+1} the next one), the size rule deletes S_i while
// logBytes(start) + the bytes of the snapshots not yet deleted exceed
// MaxRetentionBytes; the time rule deletes S_i while nowMs -
// S_i.LastContainedLogTimestamp > MaxRetentionMs (a snapshot whose
// timestamp is unknown is kept). Deleting S_i moves the log start to
// S_{i+1}'s end offset, which must be above the current start (else
// nothing is deleted, as in Kafka's deleteBeforeSnapshot). Each rule stops
// at the first snapshot it keeps, so both limits are soft: the newest
// snapshot, and the log after it, always remain.
//
// logBytes(start) returns the log's size in bytes once its start offset
// is start (segments wholly below start deleted); nil means an empty log.
// snaps need not be sorted and is not modified. The function is pure.
func PlanRetention(snaps []Retained, logStart int64, logBytes func(logStart int64) int64, nowMs int64, p Policy) RetentionPlan {
	s := slices.Clone(snaps)
	slices.SortFunc(s, func(a, b Retained) int { return Compare(a.ID, b.ID) })
	if logBytes == nil {
		logBytes = func(int64) int64 { return 0 }
	}
	plan := RetentionPlan{LogStartOffset: logStart}
	first := 0 // index of the oldest snapshot kept so far
	var total int64
	for _, r := range s {
		total += r.Size
	}
	// advance deletes s[first] if the log start can move to the next
	// snapshot's end offset.
	advance := func() bool {
		next := int64(s[first+1].ID.Offset)
		if plan.LogStartOffset >= next {
			return false
		}
		if bugzoo.Active(bugzoo.Z9) {
			// Z9: the snapshot the log start moves to goes instead.
			plan.Delete = append(plan.Delete, s[first+1].ID)
		} else {
			plan.Delete = append(plan.Delete, s[first].ID)
		}
		total -= s[first].Size
		plan.LogStartOffset = next
		first++
		return true
	}
	if p.MaxRetentionBytes >= 0 {
		for first+1 < len(s) && logBytes(plan.LogStartOffset)+total > p.MaxRetentionBytes {
			if !advance() {
				break
			}
		}
	}
	if p.MaxRetentionMs >= 0 {
		for first+1 < len(s) {
			r := s[first]
			if !r.TimestampKnown || nowMs-r.LastContainedLogTimestamp <= p.MaxRetentionMs || !advance() {
				break
			}
		}
	}
	return plan
}
