package raft

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/krabka-go/krabka/metadata"
)

// BenchmarkSubmitChange measures committed submissions per second on a
// 3-node loopback quorum with real fsyncs, with b.RunParallel's
// concurrent submitters (group commit turns concurrency into larger
// batches). Each submission is one TopicRecord.
func BenchmarkSubmitChange(b *testing.B) {
	c := newTestCluster(b, 3)
	leader := c.node(c.leader())
	if _, err := leader.SubmitChange(b.Context(), []metadata.Record{metadataVersionRecord()}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := leader.SubmitChange(b.Context(), []metadata.Record{topicRecord("bench-" + strconv.FormatInt(i, 10))}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReadImage measures linearizable reads on a 3-node loopback
// quorum, on the leader (a read barrier: one fetch round trip to a
// majority) and on a follower (the barrier forwarded to the leader over
// the ReadImage RPC, then the local image's wait), with b.RunParallel's
// concurrent readers. Reads registered together share a fetch round.
func BenchmarkReadImage(b *testing.B) {
	c := newTestCluster(b, 3)
	leader := c.leader()
	if _, err := c.node(leader).SubmitChange(b.Context(), []metadata.Record{metadataVersionRecord()}); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		node NodeID
	}{{"leader", leader}, {"follower", c.follower(leader)}} {
		b.Run(bc.name, func(b *testing.B) {
			n := c.node(bc.node)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := n.ReadImage(b.Context()); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
