package raft

import (
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Metrics receives a running node's measurements: the quorum gauges of
// Kafka's KafkaRaftMetrics, the commit and election latencies, the
// records appended, the engine loop's idle time, the fsyncs and the
// traffic of its connections. Set it in [Config.Metrics]; nil records
// nothing. Package metrics/prom exports them to Prometheus under Kafka's
// names.
//
// The engine calls the methods on its one goroutine, once per event, and
// the listener and peer connections on theirs: an implementation must be
// safe for concurrent use, must not block, and should not allocate (a
// write calls several). Embed [NopMetrics] to implement only some.
type Metrics interface {
	// Quorum reports the quorum gauges after an engine turn that changed
	// them.
	Quorum(QuorumMetrics)
	// Committed reports a submission this node proposed as the leader
	// and then applied: latency runs from its arrival at the engine to
	// its application.
	Committed(latency time.Duration)
	// ProposalsFailed reports proposed submissions that failed before
	// their commit (the leadership ended, the node stopped).
	ProposalsFailed(n int)
	// Elected reports an election this node took part in that ended:
	// latency runs from its entry into Prospective or Candidate to its
	// becoming leader or follower (Kafka's election-latency).
	Elected(latency time.Duration)
	// LeaderChanged reports that the leader this node knows changed to
	// another known leader or to a new epoch.
	LeaderChanged()
	// Appended reports records written to the log: as the leader
	// (asLeader; Kafka's append-records) or fetched from it.
	Appended(records int, asLeader bool)
	// Proposed reports one batch of the leader's group commit: the
	// records it holds and its size in bytes.
	Proposed(records, bytes int)
	// Synced reports the duration of one fsync of the log.
	Synced(d time.Duration)
	// Polled reports one turn of the engine loop: how long it waited for
	// an input (idle) and how long it worked on the previous one (busy).
	Polled(idle, busy time.Duration)
	// ChannelConnections reports connections to other nodes opened
	// (delta 1) or closed (-1); ChannelSent and ChannelReceived the
	// requests this node sends them and the answers it reads, with their
	// bytes (Kafka's raft-channel-metrics).
	ChannelConnections(delta int)
	ChannelSent(requests, bytes int)
	ChannelReceived(responses, bytes int)
	// ListenerConnections reports connections accepted by the controller
	// listeners (1) or closed (-1); ListenerReceived and ListenerSent the
	// requests they read and the answers they write, with their bytes.
	ListenerConnections(delta int)
	ListenerReceived(requests, bytes int)
	ListenerSent(responses, bytes int)
}

// QuorumMetrics are the gauges of Kafka's KafkaRaftMetrics and of the
// active-controller count, as one node sees them.
type QuorumMetrics struct {
	// State is Kafka's current-state.
	State RaftState
	// Leader is the leader's id, -1 when unknown (current-leader).
	Leader NodeID
	// Epoch is the current epoch (current-epoch).
	Epoch int32
	// Vote is the voted id: the node's own while it leads or is a
	// candidate, -1 when it has not voted (current-vote).
	Vote NodeID
	// HighWatermark is -1 when unknown (high-watermark).
	HighWatermark int64
	// LogEndOffset and LogEndEpoch are the log's end and the epoch of its
	// last entry (log-end-offset, log-end-epoch).
	LogEndOffset int64
	LogEndEpoch  int32
	// Voters is the size of the latest voter set (number-of-voters).
	Voters int
	// Observers is the number of observers the leader tracks; 0 on other
	// nodes, where Kafka does not report it (number-of-observers).
	Observers int
	// UncommittedVoterChange is set on the leader while a voter set it
	// appended is not committed (uncommitted-voter-change).
	UncommittedVoterChange bool
	// Active is set on the leader once it has committed in its epoch and
	// takes submissions (Kafka's ActiveControllerCount is 1).
	Active bool
}

// RaftState is a value of Kafka's current-state metric.
type RaftState string

// The values of current-state, as KafkaRaftMetrics reports them.
const (
	StateLeader           RaftState = "leader"
	StateFollower         RaftState = "follower"
	StateObserver         RaftState = "observer"
	StateCandidate        RaftState = "candidate"
	StateProspective      RaftState = "prospective"
	StateProspectiveVoted RaftState = "prospective-voted"
	StateUnattached       RaftState = "unattached"
	StateUnattachedVoted  RaftState = "unattached-voted"
)

// RaftStates lists every value of current-state.
var RaftStates = []RaftState{
	StateLeader, StateFollower, StateObserver, StateCandidate, StateProspective,
	StateProspectiveVoted, StateUnattached, StateUnattachedVoted,
}

// NopMetrics records nothing. Embed it in a [Metrics] that implements
// only some of the methods.
type NopMetrics struct{}

func (NopMetrics) Quorum(QuorumMetrics)                {}
func (NopMetrics) Committed(time.Duration)             {}
func (NopMetrics) ProposalsFailed(int)                 {}
func (NopMetrics) Elected(time.Duration)               {}
func (NopMetrics) LeaderChanged()                      {}
func (NopMetrics) Appended(int, bool)                  {}
func (NopMetrics) Proposed(int, int)                   {}
func (NopMetrics) Synced(time.Duration)                {}
func (NopMetrics) Polled(time.Duration, time.Duration) {}
func (NopMetrics) ChannelConnections(int)              {}
func (NopMetrics) ChannelSent(int, int)                {}
func (NopMetrics) ChannelReceived(int, int)            {}
func (NopMetrics) ListenerConnections(int)             {}
func (NopMetrics) ListenerReceived(int, int)           {}
func (NopMetrics) ListenerSent(int, int)               {}

// raftState maps the core's role to Kafka's current-state: a follower
// outside the voter set is an observer, a Resigned leader reports
// unattached, and a vote cast in the epoch shows in the -voted forms.
func raftState(st kraft.Status) RaftState {
	voted := st.VotedKey.ID != kraft.NoNode
	switch st.Role {
	case kraft.Leader:
		return StateLeader
	case kraft.Candidate:
		return StateCandidate
	case kraft.Prospective:
		if voted {
			return StateProspectiveVoted
		}
		return StateProspective
	case kraft.Follower:
		if !st.IsVoter {
			return StateObserver
		}
		return StateFollower
	case kraft.Unattached:
		if voted {
			return StateUnattachedVoted
		}
	}
	return StateUnattached
}

// metricsState is what the engine keeps to report its metrics: the last
// gauges reported, when the running election started, when the leader
// last counted its observers, and when the loop last started working.
type metricsState struct {
	m Metrics
	// last is the QuorumMetrics last reported.
	last QuorumMetrics
	// electionStart is when this node entered Prospective or Candidate;
	// zero when no election runs.
	electionStart time.Time
	// observers is the leader's count of its observers, taken at
	// observersAt.
	observers   int
	observersAt time.Time
	// busyFrom is when the loop last woke up (publishedState.busySince
	// publishes it for Controller.LiveChecks).
	busyFrom time.Time
}

// rec is the Metrics to report to: m, or NopMetrics when m is unset (an
// engine built without a runtime configuration).
func (ms *metricsState) rec() Metrics {
	if ms.m == nil {
		return NopMetrics{}
	}
	return ms.m
}

// observersEvery is how often the leader counts its observers: counting
// copies the replicas' progress, too much for every turn.
const observersEvery = time.Second

// reportQuorum reports the quorum gauges of st, the Brief of this turn,
// if they changed, and the election and leader changes between prev
// and st. It allocates nothing unless the leader counts its observers
// (at most once per observersEvery).
func (e *engine) reportQuorum(st, prev kraft.Status) {
	ms := &e.metrics
	now := e.clock.Now()
	if st.Role != prev.Role {
		switch st.Role {
		case kraft.Prospective, kraft.Candidate:
			if ms.electionStart.IsZero() {
				ms.electionStart = now
			}
		case kraft.Leader, kraft.Follower:
			if !ms.electionStart.IsZero() {
				ms.rec().Elected(now.Sub(ms.electionStart))
				ms.electionStart = time.Time{}
			}
		}
	}
	if st.Leader.LeaderID != kraft.NoNode && (st.Leader.LeaderID != prev.Leader.LeaderID || st.Epoch != prev.Epoch) {
		ms.rec().LeaderChanged()
	}
	q := QuorumMetrics{
		State: raftState(st), Leader: NodeID(st.Leader.LeaderID), Epoch: int32(st.Epoch), Vote: NodeID(st.VotedKey.ID),
		HighWatermark: int64(st.HighWatermark), LogEndOffset: int64(st.LogEndOffset), LogEndEpoch: int32(st.LastEpoch),
		Voters: st.Voters.Len(),
	}
	if st.Role == kraft.Leader || st.Role == kraft.Candidate {
		q.Vote = NodeID(st.ID)
	}
	if st.Role == kraft.Leader {
		if now.Sub(ms.observersAt) >= observersEvery || prev.Role != kraft.Leader {
			ms.observersAt = now
			ms.observers = 0
			for _, r := range e.node.Status().Replicas {
				if !r.Voter {
					ms.observers++
				}
			}
		}
		q.Observers = ms.observers
		q.UncommittedVoterChange = e.node.PendingVoterChange()
		q.Active = e.caughtUpEpoch == st.Epoch
	}
	if q != ms.last {
		ms.last = q
		ms.rec().Quorum(q)
	}
}

// reportApplied reports the commit latency of the proposed submissions
// that applied has passed; it runs before the submitter answers them.
func (e *engine) reportApplied(applied kraft.Offset) {
	now := time.Time{}
	for _, w := range e.sub.waiters {
		if w.last >= applied {
			return
		}
		if w.queued.IsZero() {
			continue // the leader's own NoOpRecord
		}
		if now.IsZero() {
			now = e.clock.Now()
		}
		e.metrics.rec().Committed(now.Sub(w.queued))
	}
}

// reportFailed reports the proposed submissions the submitter is about
// to fail; it runs before it does.
func (e *engine) reportFailed() {
	n := 0
	for _, w := range e.sub.waiters {
		if !w.queued.IsZero() {
			n++
		}
	}
	if n > 0 {
		e.metrics.rec().ProposalsFailed(n)
	}
}

// pollWaits is called when the loop starts waiting for an input; it
// returns when.
func (e *engine) pollWaits() time.Time {
	e.pub.busySince.Store(0)
	return time.Now()
}

// pollWoke is called when an input arrived after waiting since idleFrom:
// the loop's idle and busy times go to the metrics.
func (e *engine) pollWoke(idleFrom time.Time) {
	now := time.Now()
	e.pub.busySince.Store(now.UnixNano())
	ms := &e.metrics
	if !ms.busyFrom.IsZero() {
		ms.rec().Polled(now.Sub(idleFrom), idleFrom.Sub(ms.busyFrom))
	}
	ms.busyFrom = now
}

// channelMeter counts a peer's traffic as Kafka's raft-channel-metrics.
type channelMeter struct{ m Metrics }

func (c channelMeter) Connected()             { c.m.ChannelConnections(1) }
func (c channelMeter) Disconnected()          { c.m.ChannelConnections(-1) }
func (c channelMeter) Sent(frames, bytes int) { c.m.ChannelSent(frames, bytes) }
func (c channelMeter) Received(bytes int)     { c.m.ChannelReceived(1, bytes) }

// listenerMeter counts a controller listener's traffic.
type listenerMeter struct{ m Metrics }

func (l listenerMeter) Connected()             { l.m.ListenerConnections(1) }
func (l listenerMeter) Disconnected()          { l.m.ListenerConnections(-1) }
func (l listenerMeter) Sent(frames, bytes int) { l.m.ListenerSent(frames, bytes) }
func (l listenerMeter) Received(bytes int)     { l.m.ListenerReceived(1, bytes) }
