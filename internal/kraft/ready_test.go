package kraft_test

import (
	"errors"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// electCapturing runs id's campaign like elect, and returns the Ready in
// which id became leader (its quorum state names itself).
func electCapturing(t *testing.T, c *cluster, id kraft.NodeID) kraft.Ready {
	t.Helper()
	c.campaign(id)
	for range 100 {
		for i, n := range c.nodes {
			if !n.HasReady() {
				continue
			}
			rd := c.ready(kraft.NodeID(i + 1))
			if kraft.NodeID(i+1) == id && rd.State != nil && rd.State.LeaderID == id {
				c.stabilize()
				return rd
			}
		}
		for len(c.net) > 0 {
			c.deliver(0)
		}
	}
	t.Fatalf("node %d never became leader", id)
	return kraft.Ready{}
}

// leaderWithProposal elects node 1 of three voters, lets both followers
// catch up and park their fetches, and queues one proposal on it; it
// returns the cluster and the high watermark before the proposal.
func leaderWithProposal(t *testing.T) (*cluster, kraft.Offset) {
	t.Helper()
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	hw := c.node(1).Status().HighWatermark
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 100}); err != nil {
		t.Fatal(err)
	}
	return c, hw
}

// A leader's Ready lets its messages leave before its appends are fsynced,
// from the Ready that makes it leader (State, the LeaderChange batch,
// BeginQuorumEpoch) on; a follower's Ready does not, since its next Fetch
// reports its appends as durable (ready.go).
func TestSyncLaterOnlyForLeader(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	rd := electCapturing(t, c, 1)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.BeginQuorumEpochRequest](rd)) == 0 || !rd.SyncLater {
		t.Fatalf("becoming leader: Ready %+v, want the LeaderChange append and BeginQuorumEpoch with SyncLater", rd)
	}

	// Both followers' fetches are parked; a proposal answers them.
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 100}); err != nil {
		t.Fatal(err)
	}
	rd = c.ready(1)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.FetchResponse](rd)) != 2 || !rd.SyncLater {
		t.Fatalf("leader: Ready %+v, want one append and two fetch answers with SyncLater", rd)
	}
	c.deliver(0) // the records to node 2
	rd = c.ready(2)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.FetchRequest](rd)) != 1 || rd.SyncLater {
		t.Fatalf("follower: Ready %+v, want one append and the next Fetch without SyncLater", rd)
	}
}

// A leader that appends and then steps down in the same Ready sends what
// its new role sends (a vote, the parked fetches' errors) only after the
// fsync: a non-leader's messages may report its log as durable.
func TestLeaderSteppingDownKeepsSyncFirst(t *testing.T) {
	c, _ := leaderWithProposal(t)
	leader := c.node(1)
	if err := leader.Step(c.now[0], vote(2, 1, 2, kraft.OffsetAndEpoch{Offset: 2, Epoch: 1}, false)); err != nil {
		t.Fatal(err)
	}
	rd := c.ready(1)
	if len(rd.Appends) != 1 || len(messagesOf[*kraft.VoteResponse](rd)) != 1 || rd.SyncLater {
		t.Fatalf("Ready %+v, want the append and a vote answer without SyncLater", rd)
	}
}

// ackFrom builds node from's Fetch to leader 1 in epoch 1 reporting
// offset as its durable end.
func ackFrom(from kraft.NodeID, id uint64, offset, hw kraft.Offset) *kraft.FetchRequest {
	return &kraft.FetchRequest{
		Header: kraft.Header{From: from, To: 1, RequestID: id}, Replica: kraft.ReplicaKey{ID: from},
		CurrentLeaderEpoch: 1, FetchOffset: offset, LastFetchedEpoch: 1, MaxBytes: 1 << 20, HighWatermark: hw,
	}
}

// writeSyncLater hands out the leader's Ready, checks it is SyncLater,
// writes it and advances without the fsync.
func writeSyncLater(t *testing.T, c *cluster, leader *kraft.Node) kraft.Ready {
	t.Helper()
	rd := leader.Ready()
	if !rd.SyncLater {
		t.Fatalf("leader Ready %+v without SyncLater", rd)
	}
	if err := c.logs[0].ApplyReady(rd); err != nil {
		t.Fatal(err)
	}
	leader.Advance(rd)
	return rd
}

// The leader counts its own end offset toward the high watermark only
// once LogSynced reports it, not at Advance, even when a follower already
// reports the leader's unsynced entries: with three voters, one follower's
// ack and a leader whose fsync still runs commit nothing (invariant C3 in
// docs/reliability.md). The leader keeps stepping input meanwhile.
func TestLeaderCountsOwnAppendsOnlyWhenSynced(t *testing.T) {
	c, hw := leaderWithProposal(t)
	leader := c.node(1)
	end := leader.Status().LogEndOffset

	// Queued, not handed out: node 2 reports the entry, the leader's copy
	// is not durable, node 3 lacks it.
	if err := leader.Step(c.now[0], ackFrom(2, 98, end, hw)); err != nil {
		t.Fatal(err)
	}
	if got := leader.Status().HighWatermark; got != hw {
		t.Fatalf("high watermark %d after one follower's ack of the leader's unsynced entry, want %d", got, hw)
	}

	// Written and advanced, the fsync running: node 2's next ack is taken
	// and still commits nothing.
	writeSyncLater(t, c, leader)
	if err := leader.Step(c.now[0], ackFrom(2, 99, end, hw)); err != nil {
		t.Fatalf("Step while the leader's fsync runs: %v", err)
	}
	if got := leader.Status().HighWatermark; got != hw {
		t.Fatalf("high watermark %d after Advance without LogSynced, want %d", got, hw)
	}
	rd := leader.Ready()
	if rd.HighWatermark >= 0 {
		t.Fatalf("Ready hands out high watermark %d before the leader's fsync", rd.HighWatermark)
	}
	leader.Advance(rd)

	// Durable: the leader and node 2 are a majority.
	syncedReleases(t, leader, c.now[0], end)
}

// syncedReleases reports the leader's log synced up to end and checks
// that the high watermark, and the one its next Ready hands out, is end.
func syncedReleases(t *testing.T, leader *kraft.Node, now kraft.Instant, end kraft.Offset) {
	t.Helper()
	if err := leader.LogSynced(now, end); err != nil {
		t.Fatal(err)
	}
	if got := leader.Status().HighWatermark; got != end {
		t.Fatalf("high watermark %d after LogSynced, want %d", got, end)
	}
	if rd := leader.Ready(); rd.HighWatermark != end {
		t.Fatalf("Ready after LogSynced hands out high watermark %d, want %d", rd.HighWatermark, end)
	}
}

// Two followers holding the leader's unsynced entries commit them (a
// majority without the leader), but the leader hands the runtime a high
// watermark only up to its own durable end, so that its state machine
// applies only entries its log holds durably; LogSynced releases the rest.
func TestLeaderHandsOutHighWatermarkOnlyUpToDurableEnd(t *testing.T) {
	c, hw := leaderWithProposal(t)
	leader := c.node(1)
	end := leader.Status().LogEndOffset
	writeSyncLater(t, c, leader)
	for i, from := range []kraft.NodeID{2, 3} {
		if err := leader.Step(c.now[0], ackFrom(from, uint64(90+i), end, hw)); err != nil {
			t.Fatal(err)
		}
	}
	if got := leader.Status().HighWatermark; got != end {
		t.Fatalf("high watermark %d after both followers' acks, want %d", got, end)
	}
	rd := leader.Ready()
	if rd.HighWatermark > hw {
		t.Fatalf("Ready hands out high watermark %d beyond the leader's durable end %d", rd.HighWatermark, hw)
	}
	if !rd.SyncLater {
		t.Fatalf("leader Ready %+v without SyncLater", rd)
	}
	leader.Advance(rd)
	syncedReleases(t, leader, c.now[0], end)
}

// LogSynced with an offset at or below what is durable changes nothing,
// one beyond the log end is clamped to it, and it is refused while a
// Ready is outstanding.
func TestLogSyncedStaleOrBeyondEnd(t *testing.T) {
	c, hw := leaderWithProposal(t)
	leader := c.node(1)
	end := leader.Status().LogEndOffset
	writeSyncLater(t, c, leader)
	if err := leader.Step(c.now[0], ackFrom(2, 99, end, hw)); err != nil {
		t.Fatal(err)
	}
	if err := leader.LogSynced(c.now[0], hw-1); err != nil {
		t.Fatal(err)
	}
	if got := leader.Status().HighWatermark; got != hw {
		t.Fatalf("high watermark %d after a stale LogSynced, want %d", got, hw)
	}

	// A proposal queued but not yet handed out is not in the log: a
	// report beyond the log end counts only the written entries.
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 101}); err != nil {
		t.Fatal(err)
	}
	if err := leader.LogSynced(c.now[0], end+10); err != nil {
		t.Fatal(err)
	}
	if got := leader.Status().HighWatermark; got != end {
		t.Fatalf("high watermark %d after LogSynced beyond the log end, want %d (clamped)", got, end)
	}

	rd := leader.Ready()
	if err := leader.LogSynced(c.now[0], end+1); !errors.Is(err, kraft.ErrReadyOutstanding) {
		t.Fatalf("LogSynced with a Ready outstanding = %v, want ErrReadyOutstanding", err)
	}
	if err := c.logs[0].ApplyReady(rd); err != nil {
		t.Fatal(err)
	}
	leader.Advance(rd)
}

// A leader that steps down while its fsync runs (its SyncLater appends
// advanced, LogSynced not yet called) hands out only Readys without
// SyncLater from then on, even without appends: its vote answer and
// fetches report a log the runtime must have fsynced first. A late
// LogSynced of the old epoch is harmless.
func TestLeaderSteppingDownWithSyncInFlight(t *testing.T) {
	c, _ := leaderWithProposal(t)
	leader := c.node(1)
	end := leader.Status().LogEndOffset
	writeSyncLater(t, c, leader)
	if err := leader.Step(c.now[0], vote(2, 1, 2, kraft.OffsetAndEpoch{Offset: end, Epoch: 1}, false)); err != nil {
		t.Fatal(err)
	}
	rd := leader.Ready()
	if len(rd.Appends) != 0 || len(messagesOf[*kraft.VoteResponse](rd)) != 1 || rd.SyncLater {
		t.Fatalf("Ready %+v, want a vote answer without appends and without SyncLater", rd)
	}
	leader.Advance(rd)
	st := leader.Status()
	if st.Role == kraft.Leader || st.Epoch != 2 {
		t.Fatalf("status %+v, want a non-leader in epoch 2", st)
	}
	hw := st.HighWatermark
	if err := leader.LogSynced(c.now[0], end); err != nil {
		t.Fatal(err)
	}
	if st := leader.Status(); st.HighWatermark != hw || st.Role == kraft.Leader || st.LogEndOffset != end {
		t.Fatalf("status %+v after a late LogSynced, want high watermark %d, log end %d, not leader", st, hw, end)
	}
	for leader.HasReady() {
		rd := leader.Ready()
		if rd.SyncLater {
			t.Fatalf("Ready %+v of a node that stepped down with SyncLater", rd)
		}
		leader.Advance(rd)
	}
}

// A new leader whose LeaderChange batch is not yet synced hands out no
// high watermark even when both followers hold the batch and commit it:
// its durable end is its epoch start, and a value at or below that would
// break the current-epoch commit rule (C4) for what the runtime applies.
func TestNewLeaderHandsOutNoHighWatermarkBeforeItsFsync(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.campaign(1)
	leader := c.node(1)
	var rd kraft.Ready
	for round := 0; rd.State == nil || rd.State.LeaderID != 1; round++ {
		if round == 100 {
			t.Fatal("node 1 never became leader")
		}
		for i := 2; i <= 3; i++ {
			if c.node(kraft.NodeID(i)).HasReady() {
				c.ready(kraft.NodeID(i))
			}
		}
		for len(c.net) > 0 {
			c.deliver(0)
		}
		if !leader.HasReady() {
			continue
		}
		if rd = leader.Ready(); rd.State == nil || rd.State.LeaderID != 1 {
			if err := c.logs[0].ApplyReady(rd); err != nil {
				t.Fatal(err)
			}
			c.net = append(c.net, rd.Messages...)
			advance(leader, rd)
		}
	}
	if !rd.SyncLater || len(rd.Appends) != 1 {
		t.Fatalf("becoming leader: Ready %+v, want the LeaderChange append with SyncLater", rd)
	}
	if err := c.logs[0].ApplyReady(rd); err != nil {
		t.Fatal(err)
	}
	leader.Advance(rd)
	end := leader.Status().LogEndOffset
	epoch := leader.Status().Epoch
	for i, from := range []kraft.NodeID{2, 3} {
		f := ackFrom(from, uint64(80+i), end, -1)
		f.CurrentLeaderEpoch, f.LastFetchedEpoch = epoch, epoch
		if err := leader.Step(c.now[0], f); err != nil {
			t.Fatal(err)
		}
	}
	if got := leader.Status().HighWatermark; got != end {
		t.Fatalf("high watermark %d after both followers' acks, want %d", got, end)
	}
	rd = leader.Ready()
	if rd.HighWatermark >= 0 {
		t.Fatalf("Ready hands out high watermark %d while the leader's epoch start %d is not durable", rd.HighWatermark, end-1)
	}
	leader.Advance(rd)
	syncedReleases(t, leader, c.now[0], end)
}
