package raft

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/latency"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// Submissions: the submitter part holds every SubmitChange from its
// arrival to its answer. The leader validates queued submissions against
// a speculative image and proposes them in as few batches as the batch
// limit allows (group commit); a follower forwards them to the leader over
// the private SubmitChange RPC; a commit, a lost leadership or a shutdown
// answers them.

// submission is one SubmitChange: its records, and, once proposed, the
// offsets they hold. complete is called exactly once, never blocking.
type submission struct {
	records []metadata.Record
	// one holds the records of a submission of one record (the usual
	// client write), which then needs no slice of its own.
	one     [1]metadata.Record
	encoded [][]byte
	// forwarded marks a submission that arrived over the private RPC: a
	// node that is not the leader answers it instead of forwarding again.
	forwarded bool
	// cond is the condition the leader appends the records under.
	cond     condition
	complete func(SubmitResult, error)

	base, last kraft.Offset
	epoch      kraft.Epoch
	// queued is when the engine took it from its inbox; zero for the
	// leader's own NoOpRecord.
	queued time.Time
}

// maybeNoOp queues a NoOpRecord every metadata.max.idle.interval.ms while
// this node is the active leader (KIP-835), so that the high watermark and
// the followers' caught-up times keep moving on an idle quorum.
func (e *engine) maybeNoOp() {
	st := e.lastStatus
	if e.rc.maxIdle <= 0 || e.resigning || st.Role != kraft.Leader || st.ShuttingDown || !e.caughtUp(st.Epoch) {
		e.timers.stop(timerNoOp)
		return
	}
	now := e.clock.Now()
	switch {
	case !e.timers.armed(timerNoOp):
		e.timers.set(timerNoOp, now.Add(e.rc.maxIdle))
	case e.timers.expired(timerNoOp, now):
		e.timers.set(timerNoOp, now.Add(e.rc.maxIdle))
		rec := metadata.NewNoOpRecord()
		enc, err := metadata.Encode(rec)
		if err != nil {
			panic(fmt.Sprintf("raft: invariant: encode NoOpRecord: %v", err))
		}
		// Marked forwarded: should leadership be lost before it is
		// proposed, it is dropped rather than sent to the next leader.
		e.sub.queue(&submission{
			records: []metadata.Record{rec}, encoded: [][]byte{enc}, forwarded: true,
			complete: func(SubmitResult, error) {},
		})
	}
}

// notLeader is the error for a submission this node cannot append.
func (e *engine) notLeader(st kraft.Status) error {
	switch {
	case e.resigning || st.ShuttingDown:
		return ErrShuttingDown
	case st.Leader.LeaderID == kraft.NoNode || st.Leader.LeaderID == st.ID:
		return ErrLeaderUnknown
	}
	return &NotLeaderError{LeaderID: NodeID(st.Leader.LeaderID), Epoch: int32(st.Leader.Epoch)}
}

// submitter owns the submissions from SubmitChange to their answer: those
// queued for the next flush, those proposed and waiting for their commit,
// forwarded ones waiting for the local apply, and the leader's
// speculative image that new submissions are validated against. It runs
// on the engine goroutine.
type submitter struct {
	pending []*submission // received, not yet proposed
	waiters []*submission // proposed, in offset order, waiting for commit
	// applyWaiters are forwarded submissions the leader committed, in
	// offset order, waiting for this node to apply them.
	applyWaiters []*submission
	// spec is the image plus every accepted, uncommitted submission: new
	// submissions are validated against it. nil means "start from the
	// applied image". specDelta is the Delta it is reset on.
	spec      *metadata.Delta
	specDelta *metadata.Delta
	// builder and batchBuf build a flush's batches; reused from flush
	// to flush.
	builder  recordbatch.Builder
	batchBuf []*submission
	// admission is Config.RegistrationAdmission (admission.go).
	admission RegistrationAdmission
}

// queue adds s to the submissions of the next flush.
func (q *submitter) queue(s *submission) { q.pending = append(q.pending, s) }

// take returns the queued submissions and empties the queue.
func (q *submitter) take() []*submission {
	subs := q.pending
	q.pending = nil
	return subs
}

// batchProposer hands a leader's batch of records to the consensus core.
type batchProposer interface {
	proposeBatch(raw []byte, records int) (kraft.BatchInfo, error)
}

// propose validates subs, in order, against the speculative image (which
// starts from img when there is none) at the offsets they will take after
// the leader's log end in st, and proposes the accepted ones through p in
// as few batches as maxBatchBytes allows, their records stamped now (Unix
// milliseconds). A rejected submission is answered at once; the others
// wait for their commit.
func (q *submitter) propose(subs []*submission, st kraft.Status, img *metadata.Image, now int64, maxBatchBytes int, p batchProposer) {
	if q.spec == nil {
		// A leader that one client writes to starts a speculative image
		// for every write: the same Delta serves them all.
		if q.specDelta == nil {
			q.specDelta = metadata.NewDelta(img)
		} else {
			q.specDelta.Reset(img)
		}
		q.spec = q.specDelta
	}
	offset := st.LogEndOffset
	batch := q.batchBuf[:0]
	size := 0
	flush := func() {
		if len(batch) == 0 {
			return
		}
		raw, err := q.builder.Finish()
		n := 0
		for _, s := range batch {
			n += len(s.records)
		}
		var info kraft.BatchInfo
		if err == nil {
			info, err = p.proposeBatch(raw, n)
		}
		if err != nil {
			// Not reachable on an active leader between Readys; fail
			// the batch rather than lose track of it.
			for _, s := range batch {
				s.complete(SubmitResult{}, fmt.Errorf("raft: propose %d records: %w", n, err))
			}
			q.spec = nil
		} else {
			at := info.BaseOffset
			for _, s := range batch {
				s.base, s.last, s.epoch = at, at+kraft.Offset(len(s.records))-1, info.Epoch
				at = s.last + 1
				q.waiters = append(q.waiters, s)
			}
		}
		clear(batch)
		batch, size = batch[:0], 0
	}
	// left bounds the bytes of the submissions not yet taken, so that
	// each batch's buffer is allocated once, at the size it will have,
	// instead of growing record by record.
	left := 0
	for _, s := range subs {
		left += s.batchBytes()
	}
	for _, s := range subs {
		left -= s.batchBytes()
		if err := s.cond.check(img, q.spec); err != nil {
			s.complete(SubmitResult{}, err)
			continue
		}
		if err := q.admit(s, int64(offset)); err != nil {
			s.complete(SubmitResult{}, err)
			continue
		}
		ssize := s.batchBytes()
		if ssize+recordbatch.HeaderSize > maxBatchBytes {
			s.complete(SubmitResult{}, fmt.Errorf("%w: %d records of %d bytes exceed the batch limit of %d bytes", ErrInvalidChange, len(s.records), ssize, maxBatchBytes))
			continue
		}
		if err := q.validate(s, offset, st.Epoch); err != nil {
			s.complete(SubmitResult{}, err)
			continue
		}
		offset += kraft.Offset(len(s.records))
		if len(batch) > 0 && size+ssize+recordbatch.HeaderSize > maxBatchBytes {
			flush()
		}
		if len(batch) == 0 {
			params := recordbatch.DefaultParams()
			params.PartitionLeaderEpoch = int32(st.Epoch)
			q.builder.Reset(make([]byte, 0, recordbatch.HeaderSize+min(ssize+left, maxBatchBytes)), params)
		}
		for _, v := range s.encoded {
			q.builder.Append(now, nil, v, nil)
		}
		batch = append(batch, s)
		size += ssize
	}
	flush()
	q.batchBuf = batch
}

// validate replays s's records on the speculative image at the offsets
// they will take. On a rejection it restores the speculative image and
// returns the error.
//
// The speculative image is never published, so its records go through
// ReplayNext, which changes the nodes of earlier submissions in place
// instead of copying a path per record. A rejected record changes
// nothing, so a single record needs no rollback point; a submission of
// several starts a new run after saving one, so that the saved copy
// stays valid while the submission's records change their own nodes.
func (q *submitter) validate(s *submission, offset kraft.Offset, epoch kraft.Epoch) error {
	var saved metadata.Delta
	several := len(s.records) > 1
	for i, r := range s.records {
		var err error
		switch {
		case i == 0 && several:
			saved = *q.spec
			err = q.spec.Replay(r, int64(offset), int32(epoch))
		default:
			err = q.spec.ReplayNext(r, int64(offset)+int64(i), int32(epoch))
		}
		if err != nil {
			if several {
				*q.spec = saved
			}
			return fmt.Errorf("%w: %w", ErrInvalidChange, err)
		}
	}
	return nil
}

// waiting reports whether proposed submissions wait for their commit.
func (q *submitter) waiting() bool { return len(q.waiters) > 0 }

// leadershipLost drops the speculative image and fails every proposed
// submission with err: their fate is up to the next leader.
func (q *submitter) leadershipLost(err error) {
	q.spec = nil
	for _, w := range q.waiters {
		w.complete(SubmitResult{}, err)
	}
	q.waiters = nil
}

// completeApplied answers every submission whose records are all below
// applied, the offset the image has applied up to.
func (q *submitter) completeApplied(applied kraft.Offset) {
	done := 0
	for _, w := range q.waiters {
		if w.last >= applied {
			break
		}
		w.complete(w.result(), nil)
		done++
	}
	q.waiters = slices.Delete(q.waiters, 0, done)
	done = 0
	for _, w := range q.applyWaiters {
		if w.last >= applied {
			break
		}
		w.complete(w.result(), nil)
		done++
	}
	q.applyWaiters = slices.Delete(q.applyWaiters, 0, done)
	if len(q.waiters) == 0 {
		q.spec = nil
	}
}

// awaitApplied completes s, a forwarded submission that the leader
// committed as res, once the image has applied its last record (at once
// when applied is past it).
func (q *submitter) awaitApplied(s *submission, res SubmitResult, applied kraft.Offset) {
	if int64(applied) > res.LastOffset {
		s.complete(res, nil)
		return
	}
	s.base, s.last, s.epoch = kraft.Offset(res.Offset), kraft.Offset(res.LastOffset), kraft.Epoch(res.Epoch)
	i, _ := slices.BinarySearchFunc(q.applyWaiters, s.last, func(w *submission, last kraft.Offset) int { return cmp.Compare(w.last, last) })
	q.applyWaiters = slices.Insert(q.applyWaiters, i, s)
}

// failAll completes every submission with err, except those the leader
// committed that only lack the local apply, which succeed.
func (q *submitter) failAll(err error) {
	for _, s := range q.pending {
		s.complete(SubmitResult{}, err)
	}
	for _, s := range q.waiters {
		s.complete(SubmitResult{}, err)
	}
	for _, s := range q.applyWaiters {
		s.complete(s.result(), nil)
	}
	q.pending, q.waiters, q.applyWaiters = nil, nil, nil
}

// result is where s's records landed.
func (s *submission) result() SubmitResult {
	return SubmitResult{Offset: int64(s.base), LastOffset: int64(s.last), Epoch: int32(s.epoch)}
}

// flushSubmissions proposes every queued submission on the leader (see
// [submitter.propose]). A follower forwards them to the leader; other
// nodes fail them. A new leader holds them until it has caught up.
func (e *engine) flushSubmissions() {
	if len(e.sub.pending) == 0 {
		return
	}
	st := e.lastStatus
	if st.Role != kraft.Leader || st.ShuttingDown {
		for _, s := range e.sub.take() {
			e.forward(s, st)
		}
		return
	}
	if !e.caughtUp(st.Epoch) && !bugzoo.Active(bugzoo.Z7) {
		// As Kafka's controller does, a new leader accepts changes only
		// once it has applied the whole log up to its epoch's start (its
		// LeaderChange record has committed): validating against an
		// image that lags the log would reject or accept wrongly. The
		// submissions wait for that, which is one commit round.
		return
	}
	if e.change != nil && e.change.held != nil {
		return // a leader removing itself waits for its log to commit (appendOwnRemoval)
	}
	subs := e.sub.take()
	// The turn's checks may have appended control records (a Voters or
	// KRaftVersion record) since lastStatus: the records' offsets, which
	// validation and broker epochs use, start at the core's log end now.
	e.sub.propose(subs, e.node.Brief(), e.pub.image.Load(), e.clock.Now().UnixMilli(), e.rc.maxBatchBytes, e)
	latency.Count("leader: submissions per flush", len(subs))
}

// proposeBatch hands raw, a batch of records, to the core under a new
// records handle.
func (e *engine) proposeBatch(raw []byte, records int) (kraft.BatchInfo, error) {
	e.metrics.rec().Proposed(records, len(raw))
	return e.node.Propose(e.now(), kraft.Proposal{Records: records, Handle: e.handles.hold(&heldRecords{raw: raw})})
}

// caughtUp reports whether the leader of epoch has applied every record
// before its epoch's first batch, and that batch.
//
// Once true it stays true for the epoch (caughtUpEpoch): compaction later
// folds the epoch cache's older entries into the snapshot's offset, after
// which the cache no longer tells where the epoch began.
func (e *engine) caughtUp(epoch kraft.Epoch) bool {
	if e.caughtUpEpoch == epoch {
		return true
	}
	entries := e.log.EpochEntries()
	if len(entries) == 0 || entries[len(entries)-1].Epoch != int32(epoch) {
		return false // the LeaderChange batch is not even written yet
	}
	if int64(e.applier.applied) > entries[len(entries)-1].StartOffset {
		e.caughtUpEpoch = epoch
		return true
	}
	return false
}

// recordOverhead bounds the framing a record adds to its value in a batch
// (length, attributes, deltas, key and header counts).
const recordOverhead = 24

// batchBytes bounds the bytes s's records take in a record batch.
func (s *submission) batchBytes() int {
	n := 0
	for _, v := range s.encoded {
		n += len(v) + recordOverhead
	}
	return n
}

// forward sends a submission that reached a follower to the leader over
// the private SubmitChange RPC, on a connection of its own. A submission
// that was itself forwarded, or one made while no leader is known, fails
// with the leader this node knows.
func (e *engine) forward(s *submission, st kraft.Status) {
	var l *peerLink
	if st.Leader.LeaderID != kraft.NoNode && st.Leader.LeaderID != st.ID {
		l = e.link(st.Leader.LeaderID)
	}
	if s.forwarded || l == nil || e.resigning || st.ShuttingDown {
		s.complete(SubmitResult{}, e.notLeader(st))
		return
	}
	p := l.forward
	req := wire.NewSubmitChangeRequest()
	req.Records = s.encoded
	if !s.cond.none() {
		// Version 1 carries the condition; a leader that serves only
		// version 0 fails the send (UNSUPPORTED_VERSION) rather than
		// appending the records unconditionally.
		if err := s.cond.setWire(req); err != nil {
			s.complete(SubmitResult{}, err)
			return
		}
	}
	sent := p.Send(req, func(resp kmsg.Response, err error) {
		if bugzoo.Active(bugzoo.Z21) && err != nil {
			// Z21: send the records again, through whichever node leads
			// now, with nothing that would let a leader that committed
			// them recognise them.
			select {
			case e.inbox <- event{submit: s}:
				return
			default:
			}
		}
		res, err := forwardOutcome(resp, err, len(s.encoded))
		if err != nil {
			s.complete(res, err)
			return
		}
		// Committed on the leader: answer once this node has applied it
		// too, so that its own image shows the change (read your
		// writes). When the engine cannot take the event, answer now.
		select {
		case e.inbox <- event{call: func(e *engine) { e.sub.awaitApplied(s, res, e.applier.applied) }}:
		default:
			s.complete(res, nil)
		}
	})
	if !sent {
		s.complete(SubmitResult{}, ErrLeaderUnknown)
	}
}
