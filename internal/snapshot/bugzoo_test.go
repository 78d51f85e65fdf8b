package snapshot

import (
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"pgregory.net/rapid"
)

// Invariant S2 for retention (KAFKA-14240; KafkaRaftLog.maybeClean): the
// log start a retention plan moves to is the end offset of a snapshot the
// plan keeps, and the plan keeps the newest snapshot, so that a log whose
// start is above 0 always begins where a snapshot ends.
func TestRetentionKeepsSnapshotAtLogStart(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var snaps []Retained
		end := int64(0)
		for range rapid.IntRange(1, 6).Draw(rt, "snapshots") {
			end += int64(rapid.IntRange(1, 100).Draw(rt, "gap"))
			snaps = append(snaps, Retained{
				ID: kraft.OffsetAndEpoch{Offset: kraft.Offset(end), Epoch: 1}, Size: int64(rapid.IntRange(1, 100).Draw(rt, "size")),
				LastContainedLogTimestamp: int64(rapid.IntRange(0, 1000).Draw(rt, "timestamp")), TimestampKnown: rapid.Bool().Draw(rt, "timestamp known"),
			})
		}
		logStart := int64(rapid.IntRange(0, int(snaps[0].ID.Offset)).Draw(rt, "log start"))
		logEnd := end + int64(rapid.IntRange(0, 100).Draw(rt, "log after the newest"))
		logBytes := func(start int64) int64 { return logEnd - start }
		p := Policy{
			MaxRetentionBytes: int64(rapid.IntRange(-1, 800).Draw(rt, "max bytes")),
			MaxRetentionMs:    int64(rapid.IntRange(-1, 1000).Draw(rt, "max ms")),
		}
		snaps = rapid.Permutation(snaps).Draw(rt, "order")
		plan := PlanRetention(snaps, logStart, logBytes, 1000, p)
		var kept []kraft.OffsetAndEpoch
		for _, r := range snaps {
			if !slices.Contains(plan.Delete, r.ID) {
				kept = append(kept, r.ID)
			}
		}
		if !slices.Contains(kept, kraft.OffsetAndEpoch{Offset: kraft.Offset(end), Epoch: 1}) {
			rt.Fatalf("S2: retention deletes the newest snapshot (plan %+v)", plan)
		}
		if plan.LogStartOffset != logStart && !slices.ContainsFunc(kept, func(id kraft.OffsetAndEpoch) bool { return int64(id.Offset) == plan.LogStartOffset }) {
			rt.Fatalf("S2: retention moves the log start to %d, where no kept snapshot ends (kept %v, plan %+v)", plan.LogStartOffset, kept, plan)
		}
		for _, id := range plan.Delete {
			if int64(id.Offset) > plan.LogStartOffset {
				rt.Fatalf("S2: retention deletes snapshot %v above the new log start %d", id, plan.LogStartOffset)
			}
		}
	})
}
