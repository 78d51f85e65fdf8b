package kraft_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// BenchmarkLeaderFetch measures the leader's hot path: a proposal, its
// Ready/Advance (append, parked fetches completed), then one Fetch from
// each of two followers reporting the new end offset (high watermark
// advance) and the Ready/Advance that answers them. One op is one such
// round: 1 Propose + 2 Step + 2 Ready/Advance.
func BenchmarkLeaderFetch(b *testing.B) {
	c := newCluster(b, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	now := c.now[0]
	epoch := leader.Status().Epoch
	reqs := [2]*kraft.FetchRequest{followerFetch(2, epoch), followerFetch(3, epoch)}
	drain := func() {
		rd := leader.Ready()
		if err := c.logs[0].ApplyReady(rd); err != nil {
			b.Fatal(err)
		}
		advance(leader, rd)
	}
	var reqID uint64
	b.ReportAllocs()
	for b.Loop() {
		bi, err := leader.Propose(now, kraft.Proposal{Records: 1, Handle: 1})
		if err != nil {
			b.Fatal(err)
		}
		drain()
		for _, r := range reqs {
			reqID++
			r.RequestID = reqID
			r.FetchOffset = bi.LastOffset + 1
			r.HighWatermark = -1
			if err := leader.Step(now, r); err != nil {
				b.Fatal(err)
			}
		}
		drain()
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCloneAndFingerprint measures what an exhaustive explorer pays
// per state: a Clone of a 3-voter leader (its log cloned separately) and
// the clone's Fingerprint.
func BenchmarkCloneAndFingerprint(b *testing.B) {
	c := newCluster(b, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	log := c.logs[0]
	b.ReportAllocs()
	for b.Loop() {
		_ = leader.Clone(log).Fingerprint()
	}
}
