package raft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// Linearizable reads. [Controller.CurrentImage] is the fast local read:
// it never blocks, and may be stale (a follower lags the leader; a leader
// cut off from the quorum does not know it has been replaced).
// [Controller.ReadImage] returns an image that holds every change
// committed before the call started:
//
//   - On the leader the consensus core runs a read barrier
//     ([kraft.Node.ReadIndex]): it records its high watermark, confirms
//     that it still leads with fetches a majority of voters sent after the
//     read, and hands the offset back; the engine answers once its image
//     has applied everything below it.
//   - A follower or observer asks the leader for that barrier over the
//     private ReadImage RPC (key 1005, Linearizable set, on the forwarding
//     connection); the leader answers with the offset of its image, and the
//     node answers once its own image has applied that record.
//
// Every wait is asynchronous on the engine goroutine; no goroutine waits
// for a read (a ReadImage RPC's deadline is the engine's timerReads,
// on the engine's clock).

// forwardClientPrefix starts the client id of every node's forwarding
// connection ("raft-forward-<node.id>"), which carries forwarded
// submissions and read barriers; a node that is not the leader answers
// a read barrier arriving on one instead of forwarding it again.
const forwardClientPrefix = "raft-forward-"

// isForwardingClient reports whether a request's client id is that of a
// node's forwarding connection.
func isForwardingClient(clientID string) bool {
	return strings.HasPrefix(clientID, forwardClientPrefix)
}

// readWaiter is one linearizable read in the engine's care. finish is
// called at most once; a waiter whose caller gave up (finished by its
// deadline) is dropped by the engine when it next looks at it.
type readWaiter struct {
	// forwarded marks a read that arrived over the wire from another
	// node's forwarding connection: a node that is not the leader answers
	// it instead of forwarding it again.
	forwarded bool
	// need is the applied offset (exclusive) the image must reach.
	need kraft.Offset
	// timeout, when set, bounds the read on the engine's clock: it fails
	// with ErrReadTimeout once timeout has passed since the engine took
	// it (deadline), at whatever stage it is. Without one the caller's
	// context bounds it.
	timeout  time.Duration
	deadline time.Time
	finished atomic.Bool
	fn       func(*metadata.Image, error)
}

// finish completes the read once; later calls do nothing.
func (r *readWaiter) finish(img *metadata.Image, err error) {
	if r.finished.CompareAndSwap(false, true) {
		r.fn(img, err)
	}
}

// ReadImage returns a metadata image that holds every change committed
// before the call started (a linearizable read), at least as new as what
// any SubmitChange that returned before it wrote, whichever node it went
// through. On the leader it confirms its leadership with a majority first;
// on a follower or observer it asks the leader for the offset to reach and
// waits until its own image has applied it. [Controller.CurrentImage] is
// the non-blocking read that may be stale.
//
// Errors: a [*NotLeaderError] (errors.Is [ErrNotLeader]) when the leader
// this node asked, or this node itself, stopped leading before the read
// was confirmed (the error names the leader it knows); [ErrLeaderUnknown]
// when no leader is known or it cannot be reached; [ErrReadTimeout] (which
// also matches [context.DeadlineExceeded]) when ctx's deadline passed
// first; [ErrShuttingDown]; ctx's error when it was cancelled. A leader
// cut off from the majority never answers: its read fails once
// check-quorum ends its leadership, or times out.
func (c *Controller) ReadImage(ctx context.Context) (*metadata.Image, error) {
	type outcome struct {
		img *metadata.Image
		err error
	}
	done := make(chan outcome, 1)
	r := &readWaiter{fn: func(img *metadata.Image, err error) { done <- outcome{img, err} }}
	if err := c.enqueue(ctx, event{call: func(e *engine) { e.readImage(r) }}); err != nil {
		return nil, readCtxErr(err)
	}
	select {
	case o := <-done:
		return o.img, o.err
	case <-ctx.Done():
		r.finish(nil, readCtxErr(ctx.Err()))
	case <-c.done:
		// The engine finishes every read before it returns.
		r.finish(nil, ErrShuttingDown)
	}
	o := <-done
	return o.img, o.err
}

// readCtxErr turns a context error into ReadImage's: a deadline is
// ErrReadTimeout (still matching context.DeadlineExceeded).
func readCtxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrReadTimeout, err)
	}
	return err
}

// readQueue holds the linearizable reads in the engine's care: those the
// core has not resolved, by id, and those waiting for the image to apply
// their offset, by ascending offset. It is the engine goroutine's alone.
type readQueue struct {
	lastID   kraft.ReadID
	barriers map[kraft.ReadID]*readWaiter
	waiting  []*readWaiter
	// timed are the reads with a deadline, by ascending deadline, at any
	// stage (a barrier, forwarded to the leader, waiting for the image);
	// finished ones are dropped when next looked at.
	timed []*readWaiter
}

// track keeps r, which has a deadline, until it finishes or its
// deadline passes ([readQueue.expire]).
func (q *readQueue) track(r *readWaiter) {
	i, _ := slices.BinarySearchFunc(q.timed, r.deadline, func(w *readWaiter, t time.Time) int { return w.deadline.Compare(t) })
	q.timed = slices.Insert(q.timed, i, r)
}

// expire fails with ErrReadTimeout every read whose deadline is at or
// before now and returns the earliest deadline still pending; ok is false
// when none is.
func (q *readQueue) expire(now time.Time) (next time.Time, ok bool) {
	done := 0
	for _, r := range q.timed {
		if r.finished.Load() {
			done++
			continue
		}
		if r.deadline.After(now) {
			break
		}
		r.finish(nil, fmt.Errorf("%w: no answer within %v", ErrReadTimeout, r.timeout))
		done++
	}
	q.timed = slices.Delete(q.timed, 0, done)
	if len(q.timed) == 0 {
		return time.Time{}, false
	}
	return q.timed[0].deadline, true
}

// nextID returns the id of the next read barrier.
func (q *readQueue) nextID() kraft.ReadID {
	q.lastID++
	return q.lastID
}

// started keeps r until the core resolves barrier id.
func (q *readQueue) started(id kraft.ReadID, r *readWaiter) {
	if q.barriers == nil {
		q.barriers = map[kraft.ReadID]*readWaiter{}
	}
	q.barriers[id] = r
}

// resolved returns and forgets the read of barrier id; ok is false for a
// read already failed.
func (q *readQueue) resolved(id kraft.ReadID) (r *readWaiter, ok bool) {
	r, ok = q.barriers[id]
	delete(q.barriers, id)
	return r, ok
}

// await finishes r with img when applied (the image's applied offset,
// exclusive) reaches need, or keeps it until [readQueue.complete] sees it
// reached.
func (q *readQueue) await(r *readWaiter, need, applied kraft.Offset, img *metadata.Image) {
	if applied >= need || bugzoo.Active(bugzoo.Z6) {
		// Z6: answer from an image that may not have applied the read's
		// offset yet.
		r.finish(img, nil)
		return
	}
	r.need = need
	q.waiting = slices.DeleteFunc(q.waiting, func(w *readWaiter) bool { return w.finished.Load() })
	i, _ := slices.BinarySearchFunc(q.waiting, need, func(w *readWaiter, n kraft.Offset) int { return cmp.Compare(w.need, n) })
	q.waiting = slices.Insert(q.waiting, i, r)
}

// complete finishes with img every waiting read that applied now covers.
func (q *readQueue) complete(applied kraft.Offset, img *metadata.Image) {
	done := 0
	for _, r := range q.waiting {
		if r.need > applied {
			break
		}
		r.finish(img, nil)
		done++
	}
	q.waiting = slices.Delete(q.waiting, 0, done)
}

// fail fails every read in the queue with err.
func (q *readQueue) fail(err error) {
	for id, r := range q.barriers {
		r.finish(nil, err)
		delete(q.barriers, id)
	}
	for _, r := range q.waiting {
		r.finish(nil, err)
	}
	for _, r := range q.timed {
		r.finish(nil, err)
	}
	q.waiting, q.timed = nil, nil
}

// readImage starts a linearizable read on the engine goroutine; a read
// with a timeout gets its deadline on the engine's clock (timerReads).
func (e *engine) readImage(r *readWaiter) {
	if r.timeout > 0 {
		r.deadline = e.clock.Now().Add(r.timeout)
		e.reads.track(r)
		if due := e.timers.due[timerReads]; due.IsZero() || r.deadline.Before(due) {
			e.timers.set(timerReads, r.deadline)
		}
	}
	st := e.lastStatus
	if e.resigning || st.ShuttingDown {
		r.finish(nil, ErrShuttingDown)
		return
	}
	if st.Role != kraft.Leader {
		e.forwardRead(r, st)
		return
	}
	if bugzoo.Active(bugzoo.Z5) {
		// Z5: answer from the image at once, without confirming that
		// this node still leads.
		r.finish(e.pub.image.Load(), nil)
		return
	}
	id := e.reads.nextID()
	if err := e.node.ReadIndex(e.now(), id); err != nil {
		r.finish(nil, e.notLeader(e.node.Status()))
		return
	}
	e.reads.started(id, r)
}

// readResolved takes a read outcome of a Ready: a failed read fails with
// the leader the core names, a confirmed one waits for the image to apply
// its offset.
func (e *engine) readResolved(res kraft.ReadResult) {
	r, ok := e.reads.resolved(res.ID)
	if !ok {
		return
	}
	if res.Err() != nil {
		if e.resigning {
			r.finish(nil, ErrShuttingDown)
		} else {
			r.finish(nil, notLeaderHint(res.Leader))
		}
		return
	}
	e.awaitRead(r, res.Offset)
}

// notLeaderHint is the error for a leader hint: ErrLeaderUnknown without
// one.
func notLeaderHint(l kraft.LeaderAndEpoch) error {
	if l.LeaderID == kraft.NoNode {
		return ErrLeaderUnknown
	}
	return &NotLeaderError{LeaderID: NodeID(l.LeaderID), Epoch: int32(l.Epoch)}
}

// expireReads fails the reads whose deadline passed (timerReads) and
// arms the timer for the next; the engine loop calls it every turn.
func (e *engine) expireReads() {
	now := e.clock.Now()
	if !e.timers.expired(timerReads, now) {
		return
	}
	if next, ok := e.reads.expire(now); ok {
		e.timers.set(timerReads, next)
	} else {
		e.timers.stop(timerReads)
	}
}

// awaitRead finishes r with the image once everything below need is
// applied.
func (e *engine) awaitRead(r *readWaiter, need kraft.Offset) {
	e.reads.await(r, need, e.applier.applied, e.pub.image.Load())
}

// forwardRead asks the leader for a read barrier over the private
// ReadImage RPC on the forwarding connection, then waits until this
// node's image has applied the record the leader's answer names. A read
// that was itself forwarded, or one made while no leader is known, fails
// with the leader this node knows.
func (e *engine) forwardRead(r *readWaiter, st kraft.Status) {
	if bugzoo.Active(bugzoo.Z24) {
		// Z24: answer from this node's image, with no minimum offset.
		r.finish(e.pub.image.Load(), nil)
		return
	}
	var l *peerLink
	if st.Leader.LeaderID != kraft.NoNode && st.Leader.LeaderID != st.ID {
		l = e.link(st.Leader.LeaderID)
	}
	if r.forwarded || l == nil {
		r.finish(nil, e.notLeader(st))
		return
	}
	req := wire.NewReadImageRequest()
	req.Linearizable = true
	sent := l.forward.Send(req, func(resp kmsg.Response, err error) {
		offset, err := readBarrierOutcome(resp, err)
		if err != nil {
			r.finish(nil, err)
			return
		}
		select {
		case e.inbox <- event{call: func(e *engine) { e.awaitRead(r, kraft.Offset(offset+1)) }}:
		default:
			// Never block a sender; a full engine queue is an overload
			// the caller may retry.
			r.finish(nil, fmt.Errorf("%w: the engine's queue is full", ErrReadTimeout))
		}
	})
	if !sent {
		r.finish(nil, ErrLeaderUnknown)
	}
}

// readBarrierOutcome turns the leader's answer to a forwarded read barrier
// into the offset of the last record its image holds (-1 for none).
func readBarrierOutcome(resp kmsg.Response, err error) (int64, error) {
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || wire.CodeForError(err) == kerr.RequestTimedOut.Code {
			return 0, fmt.Errorf("%w: read barrier on the leader: %w", ErrReadTimeout, err)
		}
		return 0, fmt.Errorf("%w: read barrier on the leader: %w", ErrLeaderUnknown, err)
	}
	r, ok := resp.(*wire.ReadImageResponse)
	if !ok {
		return 0, fmt.Errorf("raft: read barrier on the leader: unexpected answer %T", resp)
	}
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	switch err := wire.ConditionForCode(r.ErrorCode, ErrNotLeader, ErrReadTimeout, ErrShuttingDown); {
	case err == nil:
		return r.Offset, nil
	case errors.Is(err, ErrNotLeader):
		return 0, notLeaderHint(kraft.LeaderAndEpoch{LeaderID: kraft.NodeID(r.LeaderID), Epoch: kraft.Epoch(r.LeaderEpoch)})
	case errors.Is(err, ErrReadTimeout):
		return 0, fmt.Errorf("%w: read barrier on the leader: %s", ErrReadTimeout, msg)
	case errors.Is(err, ErrShuttingDown):
		return 0, fmt.Errorf("%w: the leader is shutting down", ErrLeaderUnknown)
	default:
		return 0, fmt.Errorf("raft: read barrier on the leader failed: %w: %s", err, msg)
	}
}

// serveReadImage answers the private ReadImage RPC. A plain read answers
// at once from the current image. A linearizable one runs the read
// barrier like [Controller.ReadImage] without blocking the connection's
// reader, bounded by controller.quorum.request.timeout.ms; one that
// arrived on another node's forwarding connection is not forwarded again.
func (h *handler) serveReadImage(ctx context.Context, req *wire.ReadImageRequest, clientID string, reply *transport.Reply) {
	c := h.c
	if !req.Linearizable {
		reply.Send(readImageAnswer(req, c.CurrentImage(), c.QuorumState(), nil))
		return
	}
	// The engine answers REQUEST_TIMED_OUT once the request timeout has
	// passed on its clock.
	r := &readWaiter{forwarded: isForwardingClient(clientID), timeout: c.rc.core.RequestTimeout}
	r.fn = func(img *metadata.Image, err error) {
		reply.Send(readImageAnswer(req, img, c.QuorumState(), err))
	}
	if err := c.enqueue(ctx, event{call: func(e *engine) { e.readImage(r) }}); err != nil {
		r.finish(nil, ErrShuttingDown)
	}
}

// readImageAnswer is the ReadImage response for an outcome: on success
// the answering node's leader view, the image's offset and the requested
// configs and topics; on error the Kafka code of [errorAnswer], with the
// leader hint of a not-leader error.
func readImageAnswer(req *wire.ReadImageRequest, img *metadata.Image, q QuorumState, err error) *wire.ReadImageResponse {
	resp := req.ResponseKind().(*wire.ReadImageResponse)
	if err != nil {
		resp.ErrorCode, resp.LeaderID, resp.LeaderEpoch, resp.ErrorMessage = errorAnswer(err)
		return resp
	}
	resp.LeaderID, resp.LeaderEpoch = int32(q.LeaderID), q.Epoch
	resp.Offset = img.Offset()
	for _, rr := range req.ConfigResources {
		res := wire.ReadImageResourceConfigs{ResourceType: rr.ResourceType, ResourceName: rr.ResourceName}
		for name, value := range img.Configs().Resource(metadata.ConfigResource{Type: rr.ResourceType, Name: rr.ResourceName}) {
			res.Configs = append(res.Configs, wire.ReadImageConfig{Name: name, Value: &value})
		}
		slices.SortFunc(res.Configs, func(a, b wire.ReadImageConfig) int { return cmp.Compare(a.Name, b.Name) })
		resp.ConfigResources = append(resp.ConfigResources, res)
	}
	for _, name := range req.TopicNames {
		t := wire.ReadImageTopic{Name: name, PartitionCount: -1}
		if topic, ok := img.Topics().ByName(name); ok {
			t.TopicID, t.PartitionCount = topic.ID, int32(topic.NumPartitions())
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
