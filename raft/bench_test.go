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
