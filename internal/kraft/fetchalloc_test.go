package kraft_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// TestLeaderFetchAllocations: a leader answers a follower's Fetch that
// has records to read with one FetchResponse, and the Ready that carries
// it adds its message slice; the fetch another follower keeps parked
// costs nothing.
func TestLeaderFetchAllocations(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	st := leader.Status()
	req := followerFetch(2, st.Epoch)
	req.FetchOffset = st.LogEndOffset - 1
	var id uint64
	a := testing.AllocsPerRun(100, func() {
		id++
		req.RequestID = id
		if err := leader.Step(c.now[0], req); err != nil {
			t.Fatal(err)
		}
		rd := leader.Ready()
		if len(rd.Messages) != 1 {
			t.Fatalf("Ready holds %d messages, want the Fetch answer", len(rd.Messages))
		}
		if r, ok := rd.Messages[0].(*kraft.FetchResponse); !ok || r.Error != kraft.CodeNone || r.Read.Empty() {
			t.Fatalf("answer %v, want a FetchResponse with records to read", rd.Messages[0])
		}
		leader.Advance(rd)
	})
	if a > 2 {
		t.Errorf("a Fetch answered at once costs %v allocations, want at most 2 (the response and the Ready's messages)", a)
	}
}
