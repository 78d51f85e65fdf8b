package raft

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// The leader's fsync runs off the engine goroutine: while it is held, the
// leader still takes its followers' Fetches, so the followers fetch the
// new record, acknowledge it and learn the high watermark that commits it
// (two followers are a majority of three). The leader itself acknowledges
// and applies the record only once its own fsync completes.
func TestLeaderServesFetchesWhileItsFsyncRuns(t *testing.T) {
	segment := func(name string) bool { return strings.HasSuffix(name, ".log") }
	holds := []*sharedtest.SyncHold{
		sharedtest.NewSyncHold(vfs.OS(), segment), sharedtest.NewSyncHold(vfs.OS(), segment), sharedtest.NewSyncHold(vfs.OS(), segment),
	}
	c := newTestClusterOpts(t, 3, "", nil, func(id NodeID, o *startOptions) { o.fsys = holds[id-1] })
	lid := c.leader()
	leader := c.node(lid)
	submit(t, leader, metadataVersionRecord())
	epoch := leader.QuorumState().Epoch
	h := holds[lid-1]
	defer h.Release()
	h.Arm()
	type outcome struct {
		res SubmitResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := leader.SubmitChange(ctx, []metadata.Record{topicRecord("held")})
		done <- outcome{res, err}
	}()
	<-h.Entered()
	// The fsync may cover an earlier write (a NoOpRecord): the record
	// may be anywhere from the leader's applied offset on.
	from := leader.QuorumState().AppliedOffset
	waitFor(t, "the followers to learn a high watermark past the leader's durable log", func() bool {
		hw := int64(-1)
		for id, n := range c.nodes {
			if NodeID(id+1) == lid {
				continue
			}
			st := n.QuorumState()
			if hw < 0 || st.HighWatermark < hw {
				hw = st.HighWatermark
			}
		}
		return hw > from
	})
	for id, n := range c.nodes {
		if st := n.QuorumState(); st.LeaderID != lid || st.Epoch != epoch {
			t.Fatalf("node %d follows %d in epoch %d, not %d in epoch %d: the leader stopped serving Fetches while its fsync was held", id+1, st.LeaderID, st.Epoch, lid, epoch)
		}
	}
	select {
	case o := <-done:
		t.Fatalf("submission answered %+v, %v while the leader's fsync is held", o.res, o.err)
	default:
	}
	h.Release()
	o := <-done
	if o.err != nil {
		t.Fatalf("SubmitChange: %v", o.err)
	}
	if o.res.LastOffset < from {
		t.Fatalf("submission acknowledged at offset %d, below the leader's applied offset %d when its fsync was held", o.res.LastOffset, from)
	}
}
