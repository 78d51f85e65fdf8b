package raft

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// The engine loop: one goroutine takes one input at a time from the inbox
// (peer requests and answers, submissions, calls), the timer armed for the
// timer table's earliest deadline, and the background fsync's outcome;
// after each it drives the core until it is quiet (runUntilQuiet) and
// publishes what changed (publishQuorumState). Graceful resignation and
// the final failing of everything still waiting live here too.

// event is one input of the engine. Exactly one field is set.
type event struct {
	// request is a KRaft request from a peer, with its reply slot.
	request *inboundRequest
	// response is the answer (or the failure) of a request this node sent.
	response *peerResponse
	// submit is a metadata change to append (or forward).
	submit *submission
	// call runs on the engine goroutine: queries and commands (status,
	// DescribeQuorum, resign).
	call func(*engine)
}

// run is the production host of the engine loop: it waits on the inbox,
// one timer armed for the timer table's earliest deadline and the
// background fsync, takes each input and finishes the turn. It returns
// when ctx ends, when a resigning leader is done, or with the error that
// stopped it (a failed write: the log is poisoned and the node must
// restart to recover). A host that owns time and scheduling drives the
// same turn with takeInbox, tick, synced, settle and wake.
func (e *engine) run(ctx context.Context) (err error) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	defer func() { e.stop(err) }()
	for {
		if done, err := e.settle(); done || err != nil {
			return err
		}
		e.armTimer(timer)
		idleFrom := e.pollWaits()
		select {
		case <-ctx.Done():
			return nil
		case ev := <-e.inbox:
			e.pollWoke(idleFrom)
			e.handle(ev)
			e.takeInbox()
		case <-timer.C:
			e.pollWoke(idleFrom)
			e.tick()
		case out := <-e.syncDone:
			e.pollWoke(idleFrom)
			if err := e.synced(out); err != nil {
				e.logger.LogAttrs(context.Background(), slog.LevelError, "engine stopped", slog.String(logKeyError, err.Error()))
				return err
			}
		}
	}
}

// takeInbox handles every input already queued. Group commit: everything
// queued before the next Ready is taken, so that submissions that arrived
// together are appended together and fsynced once. Nothing waits for
// more.
func (e *engine) takeInbox() {
	for range inboxCapacity {
		select {
		case ev := <-e.inbox:
			e.handle(ev)
		default:
			return
		}
	}
}

// tick tells the core that time has passed; the turn's checks look at
// the other deadlines.
func (e *engine) tick() { e.node.Tick(e.now()) }

// settle finishes a turn after its inputs: it drives the core until it is
// quiet, checkpoints the recovery point and runs retention when due.
// done reports that the engine stops: a resigning node is done, or err
// (a failed write) stopped it.
func (e *engine) settle() (done bool, err error) {
	err = e.runUntilQuiet()
	if err == nil {
		err = e.maybeCheckpoint()
	}
	if err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelError, "engine stopped", slog.String(logKeyError, err.Error()))
		return true, err
	}
	if e.resignFinished() {
		return true, nil
	}
	e.runRetentionIfDue()
	e.expireReads()
	return false, nil
}

// stop ends the engine once its host stops taking inputs, because of
// cause (nil: a clean stop): it waits for the background fsync, abandons
// a snapshot download and answers everything still waiting with
// ErrShuttingDown, wrapping cause.
func (e *engine) stop(cause error) {
	_ = e.awaitSync()
	e.abortDownload()
	err := ErrShuttingDown
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrShuttingDown, cause)
	}
	e.failAll(err)
}

// wake returns the earliest deadline of the timer table, after copying
// the core's next deadline into it: when the engine next needs a turn
// without an input. ok is false when nothing is due.
func (e *engine) wake() (at time.Time, ok bool) {
	if d := e.node.NextDeadline(); d != kraft.Never {
		e.timers.set(timerConsensus, e.start.Add(time.Duration(d)*time.Millisecond))
	} else {
		e.timers.stop(timerConsensus)
	}
	return e.timers.earliest()
}

// armTimer sets timer to fire at wake.
func (e *engine) armTimer(timer *time.Timer) {
	at, ok := e.wake()
	if !ok {
		timer.Stop()
		return
	}
	timer.Reset(max(at.Sub(e.clock.Now()), 0))
}

// handle applies one input to the core (or queues a submission).
func (e *engine) handle(ev event) {
	switch {
	case ev.request != nil:
		e.nextRequestID++
		id := e.nextRequestID
		setRequestID(ev.request.msg, id)
		e.inbound[id] = pendingReply{reply: ev.request.reply, version: ev.request.version}
		if f, ok := ev.request.msg.(*kraft.FetchRequest); ok {
			// The core drops a replica's parked fetch when the replica
			// fetches again (its sender gave up waiting), so the older
			// reply slot would never be used. Answer it empty: should it
			// share a connection with the new fetch, the new answer
			// would otherwise wait behind it.
			if old, ok := e.parkedFrom[f.From]; ok {
				if pr, ok := e.inbound[old]; ok {
					delete(e.inbound, old)
					resp := kmsg.NewPtrFetchResponse()
					resp.Version = pr.version
					resp.ErrorCode = kerr.RequestTimedOut.Code
					pr.reply.Send(resp)
				}
			}
			e.parkedFrom[f.From] = id
		}
		e.step(ev.request.msg)
	case ev.response != nil:
		e.learnEndpoints(ev.response.endpoints)
		m := ev.response.msg
		switch r := m.(type) {
		case *kraft.FetchResponse:
			e.noteFetchAnswer(r)
			if len(ev.response.records) > 0 {
				e.holdFetched(r, ev.response.records)
			}
		case *kraft.FetchSnapshotResponse:
			if len(ev.response.records) > 0 {
				r.Chunk = e.handles.hold(&heldRecords{raw: ev.response.records, size: r.Size})
			}
		}
		if foreignCodeOf(m) {
			e.noteForeignPeer(kraft.HeaderOf(m).From)
		}
		e.step(m)
		if ev.response.connLost {
			// A refused or reset connection: if the peer is the leader, the
			// core need not wait for its fetch timer (kraft.Node.ConnectionLost).
			e.node.ConnectionLost(e.now(), kraft.HeaderOf(m).From)
		}
	case ev.submit != nil:
		if e.resigning {
			ev.submit.complete(SubmitResult{}, ErrShuttingDown)
			return
		}
		ev.submit.queued = e.clock.Now()
		e.sub.queue(ev.submit)
	case ev.call != nil:
		ev.call(e)
	}
}

// step delivers m to the core. Peer input never fails there; an error is
// this runtime's misuse, logged for the operator.
func (e *engine) step(m kraft.Message) {
	if e.logger.Enabled(context.Background(), slog.LevelDebug) {
		e.logger.LogAttrs(context.Background(), slog.LevelDebug, "received", slog.String(logKeyMessage, m.String()))
	}
	if err := e.node.Step(e.now(), m); err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "message refused by the consensus core",
			slog.String(logKeyMessage, m.String()), slog.String(logKeyError, err.Error()))
	}
}

// runUntilQuiet proposes the queued submissions and carries out every
// Ready until the core is quiet, then notices role changes.
func (e *engine) runUntilQuiet() error {
	for {
		e.publishQuorumState()
		e.maybeNoOp()
		e.maybeActivate()
		e.maybeCopyBootstrapVoters()
		e.resolveVoterChange()
		e.reconcileOwnVoterEntry()
		e.maybeRegister()
		e.flushSubmissions()
		if !e.node.HasReady() {
			break
		}
		if err := e.processReady(); err != nil {
			return err
		}
		deferred := e.deferred
		e.deferred = nil
		for _, m := range deferred {
			e.step(m)
		}
	}
	e.publishQuorumState()
	return nil
}

// publishQuorumState notices role, epoch and leader changes: it logs
// them, fails the waiters of a leadership that ended, and publishes the
// quorum state.
//
// It runs after every input and every Ready, so it allocates nothing
// unless the published state changed: the core's Brief (no per-replica
// progress, which only DescribeQuorum and voter changes read, through
// Status), and a new QuorumState only when it differs from the last.
func (e *engine) publishQuorumState() {
	st := e.node.Brief()
	prev := e.lastStatus
	e.lastStatus = st
	e.publishVoters()
	e.reportQuorum(st, prev)
	e.publishHealth(st)
	e.pub.publishLeadership(Leadership{Epoch: int32(st.Leader.Epoch), LeaderID: NodeID(st.Leader.LeaderID)})
	if st.Role != prev.Role || st.Epoch != prev.Epoch || st.Leader != prev.Leader {
		// The core logs each transition at Info; this line adds what the
		// runtime publishes.
		e.logger.LogAttrs(context.Background(), slog.LevelDebug, "quorum state changed",
			slog.String(logKeyRole, st.Role.String()), slog.Int(logKeyEpoch, int(st.Epoch)), slog.Int(logKeyLeaderID, int(st.Leader.LeaderID)),
			slog.Int64(logKeyHighWatermark, int64(st.HighWatermark)))
		if st.Role != kraft.Leader || st.Epoch != prev.Epoch {
			var err error
			if e.sub.waiting() {
				err = e.notLeader(st)
			}
			e.reportFailed()
			e.sub.leadershipLost(err)
		}
	}
	e.publishQuorum(st)
}

// publishQuorum publishes the QuorumState of core status st and the
// applied offset, when it changed.
func (e *engine) publishQuorum(st kraft.Status) {
	q := QuorumState{
		NodeID: NodeID(st.ID), Role: Role(st.Role.String()), Epoch: int32(st.Epoch),
		// The applier may hold a newer high watermark than st.
		LeaderID: NodeID(st.Leader.LeaderID), HighWatermark: int64(max(st.HighWatermark, e.applier.hw)),
		LogEndOffset: int64(st.LogEndOffset), AppliedOffset: int64(e.applier.applied),
	}
	if old := e.pub.quorum.Load(); old == nil || *old != q {
		// Other goroutines hold what was published: a new one each time.
		published := q
		e.pub.quorum.Store(&published)
	}
}

// resignFinished reports whether a graceful shutdown may stop the engine:
// a successor is known, or the resign deadline has passed.
func (e *engine) resignFinished() bool {
	if !e.resigning {
		return false
	}
	st := e.lastStatus
	successor := st.Leader.LeaderID != kraft.NoNode && st.Leader.LeaderID != st.ID
	if successor || e.timers.expired(timerResign, e.clock.Now()) {
		for _, c := range e.resignDone {
			close(c)
		}
		e.resignDone = nil
		return true
	}
	return false
}

// resign starts a graceful shutdown (called on the engine goroutine).
// A leader resigns and the engine runs on until a successor is known or
// the resign timeout passes; any other node stops at once.
func (e *engine) resign(done chan struct{}) {
	e.resignDone = append(e.resignDone, done)
	if e.resigning {
		return
	}
	wasLeader := e.lastStatus.Role == kraft.Leader
	e.resigning = true
	e.node.Resign(e.now())
	if wasLeader {
		e.timers.set(timerResign, e.clock.Now().Add(e.rc.resignTimeout))
	} else {
		e.timers.set(timerResign, e.clock.Now())
	}
}

// failAll completes every submission still in the engine's care with err.
func (e *engine) failAll(err error) {
	e.reportFailed()
	e.sub.failAll(err)
	e.finishChange(ErrShuttingDown)
	e.reads.fail(err)
	e.failTriggers(err)
	for _, c := range e.resignDone {
		close(c)
	}
	e.resignDone = nil
}
