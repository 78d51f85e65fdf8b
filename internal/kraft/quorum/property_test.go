package quorum

import (
	"testing"

	"pgregory.net/rapid"
)

// MajorityOffset is the largest v such that a majority of offsets are ≥ v
// (or -1 when no majority has a known offset).
func TestMajorityOffsetProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := rapid.SliceOfN(rapid.Int64Range(-1, 50), 1, 9).Draw(t, "offsets")
		offsets := make([]Offset, len(raw))
		for i, o := range raw {
			offsets[i] = Offset(o)
		}
		got := MajorityOffset(offsets)
		atLeast := func(v Offset) int {
			n := 0
			for _, o := range offsets {
				if o >= v {
					n++
				}
			}
			return n
		}
		maj := Majority(len(offsets))
		if got >= 0 && atLeast(got) < maj {
			t.Fatalf("MajorityOffset(%v) = %d, held by only %d of %d", offsets, got, atLeast(got), len(offsets))
		}
		if atLeast(got+1) >= maj {
			t.Fatalf("MajorityOffset(%v) = %d, but a majority holds %d", offsets, got, got+1)
		}
	})
}

// NextHighWatermark never moves backwards and never exposes an offset at or
// below the epoch start.
func TestNextHighWatermarkProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		start := Offset(rapid.Int64Range(0, 20).Draw(t, "start"))
		current := Offset(-1)
		for range rapid.IntRange(1, 10).Draw(t, "rounds") {
			raw := rapid.SliceOfN(rapid.Int64Range(-1, 40), 3, 3).Draw(t, "offsets")
			offsets := []Offset{Offset(raw[0]), Offset(raw[1]), Offset(raw[2])}
			next, changed := NextHighWatermark(current, start, offsets)
			if next < current {
				t.Fatalf("high watermark moved back from %d to %d", current, next)
			}
			if changed && next <= start {
				t.Fatalf("exposed %d with epoch start %d", next, start)
			}
			if changed != (next != current) {
				t.Fatalf("changed=%v but %d -> %d", changed, current, next)
			}
			current = next
		}
	})
}
