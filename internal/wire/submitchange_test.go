package wire

import "testing"

// TestStricterCondition: an unchanged-since check with the lower offset
// wins, then the higher Condition value; the order of the two does not
// matter.
func TestStricterCondition(t *testing.T) {
	cases := []struct {
		a, b  [2]int64 // kind, since
		kind  int8
		since int64
	}{
		{[2]int64{0, 0}, [2]int64{0, 0}, ConditionNone, 0},
		{[2]int64{0, 0}, [2]int64{1, 0}, ConditionNoUncommittedTail, 0},
		{[2]int64{1, 0}, [2]int64{2, 7}, ConditionUnchangedSince, 7},
		{[2]int64{2, 7}, [2]int64{2, 3}, ConditionUnchangedSince, 3},
		{[2]int64{2, -1}, [2]int64{2, 3}, ConditionUnchangedSince, -1},
	}
	for _, c := range cases {
		for _, order := range [][2][2]int64{{c.a, c.b}, {c.b, c.a}} {
			x, y := order[0], order[1]
			kind, since := StricterCondition(int8(x[0]), x[1], int8(y[0]), y[1])
			if kind != c.kind || (kind == ConditionUnchangedSince && since != c.since) {
				t.Errorf("StricterCondition(%v, %v) = %d, %d; want %d, %d", x, y, kind, since, c.kind, c.since)
			}
		}
	}
}
