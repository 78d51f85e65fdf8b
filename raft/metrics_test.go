package raft

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/metadata"
)

// recordingMetrics is a Metrics that keeps the last gauges and adds up
// everything else, allocating nothing.
type recordingMetrics struct {
	mu     sync.Mutex
	quorum QuorumMetrics
	quorums,
	committed, failed, elected, leaderChanges,
	appendedLeader, appendedFetched, proposedRecords, proposedBytes,
	synced, polled, idle, busy,
	channelConns, listenerConns atomic.Int64
	channelSent, channelReceived, listenerReceived, listenerSent frameCount
}

// frameCount adds up frames and their bytes.
type frameCount struct{ frames, bytes atomic.Int64 }

func (c *frameCount) add(frames, bytes int) {
	c.frames.Add(int64(frames))
	c.bytes.Add(int64(bytes))
}

func (m *recordingMetrics) Quorum(q QuorumMetrics) {
	m.mu.Lock()
	m.quorum = q
	m.mu.Unlock()
	m.quorums.Add(1)
}

func (m *recordingMetrics) last() QuorumMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.quorum
}

func (m *recordingMetrics) Committed(time.Duration) { m.committed.Add(1) }
func (m *recordingMetrics) ProposalsFailed(n int)   { m.failed.Add(int64(n)) }
func (m *recordingMetrics) Elected(time.Duration)   { m.elected.Add(1) }
func (m *recordingMetrics) LeaderChanged()          { m.leaderChanges.Add(1) }
func (m *recordingMetrics) Appended(records int, asLeader bool) {
	if asLeader {
		m.appendedLeader.Add(int64(records))
	} else {
		m.appendedFetched.Add(int64(records))
	}
}
func (m *recordingMetrics) Proposed(records, bytes int) {
	m.proposedRecords.Add(int64(records))
	m.proposedBytes.Add(int64(bytes))
}
func (m *recordingMetrics) Synced(time.Duration) { m.synced.Add(1) }
func (m *recordingMetrics) Polled(idle, busy time.Duration) {
	m.polled.Add(1)
	m.idle.Add(int64(idle))
	m.busy.Add(int64(busy))
}
func (m *recordingMetrics) ChannelConnections(d int)  { m.channelConns.Add(int64(d)) }
func (m *recordingMetrics) ChannelSent(n, b int)      { m.channelSent.add(n, b) }
func (m *recordingMetrics) ChannelReceived(n, b int)  { m.channelReceived.add(n, b) }
func (m *recordingMetrics) ListenerConnections(d int) { m.listenerConns.Add(int64(d)) }
func (m *recordingMetrics) ListenerReceived(n, b int) { m.listenerReceived.add(n, b) }
func (m *recordingMetrics) ListenerSent(n, b int)     { m.listenerSent.add(n, b) }

// newMeteredCluster is newTestCluster with a recordingMetrics on every
// node.
func newMeteredCluster(t *testing.T, n int) (*testCluster, map[NodeID]*recordingMetrics) {
	recs := map[NodeID]*recordingMetrics{}
	return newTestClusterWith(t, n, "", metered(recs)), recs
}

// metered gives every Config a recordingMetrics of its own, kept in recs.
func metered(recs map[NodeID]*recordingMetrics) func(*Config) {
	return func(cfg *Config) {
		m := &recordingMetrics{}
		recs[cfg.NodeID] = m
		cfg.Metrics = m
	}
}

// TestMetricsOfAQuorum: on a three-node quorum that commits a write, the
// leader reports itself leader, active, voting for itself, with the
// write's high watermark, its election, its own appends, the batch, the
// commit, fsyncs and the engine loop's turns; the followers report the
// leader, the fetched records and no activity as leader; every node
// counts its connections' traffic.
func TestMetricsOfAQuorum(t *testing.T) {
	c, recs := newMeteredCluster(t, 3)
	leader := c.leader()
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	lm := recs[leader]
	waitFor(t, "the leader's gauges to show the write", func() bool {
		q := lm.last()
		return q.HighWatermark > res.LastOffset && q.Active
	})
	q := lm.last()
	if q.State != StateLeader || q.Leader != leader || q.Vote != leader || q.Voters != 3 || q.Observers != 0 ||
		q.UncommittedVoterChange || q.LogEndOffset < q.HighWatermark || q.Epoch < 1 || q.LogEndEpoch != q.Epoch {
		t.Errorf("leader's gauges %+v", q)
	}
	if lm.committed.Load() < 1 || lm.proposedRecords.Load() < 1 || lm.proposedBytes.Load() < 1 || lm.appendedLeader.Load() < 2 {
		t.Errorf("leader: %d commits, %d records in %d bytes proposed, %d appended as leader; want at least 1, 1, 1, 2 (LeaderChange and the write)",
			lm.committed.Load(), lm.proposedRecords.Load(), lm.proposedBytes.Load(), lm.appendedLeader.Load())
	}
	if lm.elected.Load() < 1 || lm.leaderChanges.Load() < 1 || lm.synced.Load() < 1 || lm.polled.Load() < 1 || lm.idle.Load() <= 0 {
		t.Errorf("leader: %d elections, %d leader changes, %d fsyncs, %d turns idle for %v; want each at least 1",
			lm.elected.Load(), lm.leaderChanges.Load(), lm.synced.Load(), lm.polled.Load(), time.Duration(lm.idle.Load()))
	}
	for id, m := range recs {
		if m.listenerReceived.frames.Load() < 1 || m.listenerReceived.bytes.Load() < 1 || m.listenerSent.frames.Load() < 1 || m.listenerConns.Load() < 1 {
			t.Errorf("node %d: listener read %d requests (%d bytes), wrote %d answers on %d connections",
				id, m.listenerReceived.frames.Load(), m.listenerReceived.bytes.Load(), m.listenerSent.frames.Load(), m.listenerConns.Load())
		}
		if m.channelSent.frames.Load() < 1 || m.channelSent.bytes.Load() < 1 || m.channelConns.Load() < 1 {
			t.Errorf("node %d: sent %d requests (%d bytes) on %d connections", id, m.channelSent.frames.Load(), m.channelSent.bytes.Load(), m.channelConns.Load())
		}
		if id == leader {
			continue
		}
		waitFor(t, "a follower's gauges to show the write", func() bool { return m.last().HighWatermark > res.LastOffset })
		q := m.last()
		if q.State != StateFollower || q.Leader != leader || q.Active || q.Epoch != lm.last().Epoch || q.Voters != 3 {
			t.Errorf("follower %d's gauges %+v", id, q)
		}
		if m.appendedFetched.Load() < 2 {
			t.Errorf("follower %d: %d records fetched, want at least 2 (LeaderChange and the write)", id, m.appendedFetched.Load())
		}
		if m.channelReceived.frames.Load() < 1 {
			t.Errorf("follower %d read no answers", id)
		}
	}
}

// TestMetricsProposalsFailed: a leader that stops while a proposal
// waits for its commit (its followers are gone) counts it as failed.
func TestMetricsProposalsFailed(t *testing.T) {
	c, recs := newMeteredCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	for id := NodeID(1); id <= 3; id++ {
		if id != leader {
			c.stop(id)
		}
	}
	m := recs[leader]
	n := c.node(leader)
	done := make(chan error, 1)
	go func() {
		_, err := n.SubmitChange(t.Context(), []metadata.Record{topicRecord("lost")})
		done <- err
	}()
	waitFor(t, "the write to be proposed", func() bool {
		proposed := false
		onEngine(t, n, func(e *engine) {
			for _, w := range e.sub.waiters {
				proposed = proposed || !w.queued.IsZero()
			}
		})
		return proposed
	})
	c.stop(leader)
	if err := <-done; err == nil {
		t.Fatal("the write succeeded without followers")
	}
	if n := m.failed.Load(); n != 1 {
		t.Errorf("%d proposals failed, want 1", n)
	}
}

// TestRaftState: the core's roles map to Kafka's current-state values.
func TestRaftState(t *testing.T) {
	voted := kraft.ReplicaKey{ID: 2}
	none := kraft.ReplicaKey{ID: kraft.NoNode}
	for _, tc := range []struct {
		role  kraft.Role
		vote  kraft.ReplicaKey
		voter bool
		want  RaftState
	}{
		{kraft.Leader, none, true, StateLeader},
		{kraft.Candidate, voted, true, StateCandidate},
		{kraft.Prospective, none, true, StateProspective},
		{kraft.Prospective, voted, true, StateProspectiveVoted},
		{kraft.Follower, none, true, StateFollower},
		{kraft.Follower, voted, false, StateObserver},
		{kraft.Unattached, none, true, StateUnattached},
		{kraft.Unattached, voted, true, StateUnattachedVoted},
		{kraft.Resigned, none, true, StateUnattached},
	} {
		if got := raftState(kraft.Status{Role: tc.role, VotedKey: tc.vote, IsVoter: tc.voter}); got != tc.want {
			t.Errorf("%v (vote %d, voter %v): %q, want %q", tc.role, tc.vote.ID, tc.voter, got, tc.want)
		}
	}
	seen := map[RaftState]bool{}
	for _, s := range RaftStates {
		seen[s] = true
	}
	if len(seen) != 8 {
		t.Errorf("RaftStates lists %d distinct values, want 8", len(seen))
	}
}

// TestPublishQuorumStateAllocationsWithMetrics: publishQuorumState reports the gauges without
// allocating when nothing changed, as it runs without metrics.
func TestPublishQuorumStateAllocationsWithMetrics(t *testing.T) {
	m := &recordingMetrics{}
	c := newTestClusterWith(t, 1, "", func(cfg *Config) { cfg.Metrics = m })
	submit(t, c.node(c.leader()), metadataVersionRecord())
	onEngine(t, c.node(1), func(e *engine) {
		e.publishQuorumState()
		if a := testing.AllocsPerRun(100, e.publishQuorumState); a != 0 {
			t.Errorf("publishQuorumState with metrics allocates %v times with nothing changed, want 0", a)
		}
	})
	if q := m.last(); q.State != StateLeader || !q.Active {
		t.Errorf("gauges %+v, want an active leader", q)
	}
}

// TestWriteAllocationsWithMetrics: recording a write's metrics (its
// commit, batch, append, fsync, the loop's turns and the gauges) adds no
// heap object to it.
func TestWriteAllocationsWithMetrics(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	measure := func(m Metrics) float64 {
		c := newTestClusterWith(t, 1, "", func(cfg *Config) { cfg.Metrics = m })
		n := c.node(c.leader())
		submit(t, n, metadataVersionRecord())
		write := configWriter(t, n)
		write()
		return testing.AllocsPerRun(200, write)
	}
	without := measure(nil)
	m := &recordingMetrics{}
	with := measure(m)
	t.Logf("%v heap objects per write without metrics, %v with", without, with)
	if with > without {
		t.Errorf("a write costs %v heap objects with metrics, %v without; want no more", with, without)
	}
	if m.committed.Load() < 200 {
		t.Errorf("%d commits recorded, want at least 200", m.committed.Load())
	}
}

// TestMetricsOfObservers: on a dynamic quorum of one voter and two
// observers, the leader counts one voter and two observers, and the
// observers report the observer state with the leader's voter count.
func TestMetricsOfObservers(t *testing.T) {
	recs := map[NodeID]*recordingMetrics{}
	c, lns := newDynamicCluster(t, 3, []NodeID{1}, metered(recs))
	for id := NodeID(1); id <= 3; id++ {
		c.startNode(id, lns)
	}
	c.waitMembers([]NodeID{1}, []NodeID{2, 3})
	waitFor(t, "the leader to count two observers", func() bool {
		q := recs[1].last()
		return q.State == StateLeader && q.Voters == 1 && q.Observers == 2
	})
	for _, id := range []NodeID{2, 3} {
		waitFor(t, "an observer's gauges", func() bool {
			q := recs[id].last()
			return q.State == StateObserver && q.Leader == 1 && q.Voters == 1 && q.Observers == 0 && !q.Active
		})
	}
}
