package snapshot

import (
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// TestPlanRetention checks the cleaning rules of Kafka's
// KafkaRaftLog.maybeClean: oldest first, never the newest, stop at the
// first snapshot kept, size rule before time rule.
func TestPlanRetention(t *testing.T) {
	snap := func(end int64, size int64, ts int64) Retained {
		return Retained{ID: kraft.OffsetAndEpoch{Offset: kraft.Offset(end), Epoch: 1}, Size: size, LastContainedLogTimestamp: ts, TimestampKnown: true}
	}
	three := []Retained{snap(300, 100, 3000), snap(100, 100, 1000), snap(200, 100, 2000)} // unsorted on purpose
	// A log of 10 bytes per offset from its start to 400.
	logBytes := func(start int64) int64 { return (400 - start) * 10 }
	ids := func(ends ...int64) []kraft.OffsetAndEpoch {
		var out []kraft.OffsetAndEpoch
		for _, e := range ends {
			out = append(out, kraft.OffsetAndEpoch{Offset: kraft.Offset(e), Epoch: 1})
		}
		return out
	}
	for _, c := range []struct {
		name      string
		snaps     []Retained
		logStart  int64
		logBytes  func(int64) int64
		now       int64
		p         Policy
		delete    []kraft.OffsetAndEpoch
		wantStart int64
	}{
		{"nothing exceeds", three, 0, logBytes, 1500, Policy{1 << 30, 1 << 30}, nil, 0},
		{"rules disabled", three, 0, logBytes, 1 << 40, Policy{-1, -1}, nil, 0},
		{"one snapshot is always kept", three[:1], 0, logBytes, 1 << 40, Policy{0, 0}, nil, 0},
		{"zero limits keep only the newest", three, 0, logBytes, 1 << 40, Policy{0, 0}, ids(100, 200), 300},
		// Size: 4000 log + 300 snapshots > 3000: delete 100 (log from 200:
		// 2000 + 200 = 2200 <= 3000), stop.
		{"size rule", three, 0, logBytes, 0, Policy{3000, -1}, ids(100), 200},
		// 2200 > 2100 still: delete 200 too (log from 300: 1000 + 100).
		{"size rule twice", three, 0, logBytes, 0, Policy{2100, -1}, ids(100, 200), 300},
		{"size rule with an empty log", three, 0, nil, 0, Policy{250, -1}, ids(100), 200},
		// Time: now 2500, 1000 ms: 100 (ts 1000) is 1500 old, deleted;
		// 200 (ts 2000) is 500 old, kept.
		{"time rule", three, 0, logBytes, 2500, Policy{-1, 1000}, ids(100), 200},
		{"time rule at the limit keeps", three, 0, logBytes, 2000, Policy{-1, 1000}, nil, 0},
		{"both rules", three, 0, logBytes, 3500, Policy{3000, 1000}, ids(100, 200), 300},
		{"unknown timestamp stops the time rule", []Retained{{ID: kraft.OffsetAndEpoch{Offset: 100, Epoch: 1}, Size: 1}, snap(200, 1, 0), snap(300, 1, 0)}, 0, logBytes, 1 << 40, Policy{-1, 0}, nil, 0},
		// The log already starts at the next snapshot: Kafka's
		// deleteBeforeSnapshot refuses, and cleaning stops.
		{"log start at the next snapshot", three, 200, logBytes, 1 << 40, Policy{0, 0}, nil, 200},
		{"log start between snapshots", three, 150, logBytes, 1 << 40, Policy{0, 0}, ids(100, 200), 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.snaps)
			got := PlanRetention(c.snaps, c.logStart, c.logBytes, c.now, c.p)
			if !slices.Equal(got.Delete, c.delete) || got.LogStartOffset != c.wantStart {
				t.Errorf("PlanRetention = %+v, want delete %v, log start %d", got, c.delete, c.wantStart)
			}
			if !slices.Equal(in, c.snaps) {
				t.Error("PlanRetention modified its input")
			}
		})
	}
}
