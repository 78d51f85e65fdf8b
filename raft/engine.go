package raft

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/latency"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

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

// inboundRequest is a peer's KRaft request waiting for the core's answer.
type inboundRequest struct {
	msg     kraft.Message
	reply   *transport.Reply
	version int16
}

// pendingReply is the reply slot of an inbound request the core has not
// answered yet, keyed by the RequestID the engine gave it.
type pendingReply struct {
	reply   *transport.Reply
	version int16
}

// peerResponse is a response delivered from a peer sender's callback.
// records holds the bytes of a Fetch or FetchSnapshot answer.
type peerResponse struct {
	msg     kraft.Message
	records []byte
	// endpoints are the node endpoints the answer named, in epBuf when
	// there is one (a leader names itself).
	endpoints []nodeEndpoint
	epBuf     [1]nodeEndpoint
	// connLost: the request failed because the connection to the peer was
	// refused or reset, not by a timeout (transport.ConnectionLost).
	connLost bool
}

// heldRecords are bytes the core refers to by a [kraft.RecordsHandle]: the
// encoded batch of a proposal, or the whole batches of a Fetch response
// (fetched; then next is where the batch after the last one appended
// starts, since the core appends them in order).
type heldRecords struct {
	raw     []byte
	fetched bool
	next    int
	size    int64 // a snapshot chunk's total snapshot size
}

// batch returns the whole batch at base offset base from fetched
// records, or nil. It looks first where the last one found ended, so
// that appending every batch of a response reads each header once.
func (h *heldRecords) batch(base kraft.Offset) []byte {
	for _, from := range [2]int{h.next, 0} {
		for pos := from; pos < len(h.raw); {
			hd, err := recordbatch.PeekHeader(h.raw[pos:])
			if err != nil || pos+hd.Size() > len(h.raw) {
				break
			}
			if kraft.Offset(hd.BaseOffset) == base {
				h.next = pos + hd.Size()
				return h.raw[pos:h.next]
			}
			pos += hd.Size()
		}
	}
	return nil
}

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
	complete  func(SubmitResult, error)

	base, last kraft.Offset
	epoch      kraft.Epoch
	err        error // the first rejection at apply time
}

// publishedState is what the engine shares with other goroutines: written
// only by the engine, read without locks.
type publishedState struct {
	quorum atomic.Pointer[QuorumState]
	image  atomic.Pointer[metadata.Image]
	// subs are the image subscriptions; publishImage feeds them.
	subs subscribers
	// latestSnapshot is the newest snapshot on disk; nil before the
	// first.
	latestSnapshot atomic.Pointer[snapshot.ID]
	// voters is the voter set in force with the voters' endpoints.
	voters atomic.Pointer[[]voterInfo]
}

// publishImage makes img the current image and hands it to every
// subscription, in publication order.
func (p *publishedState) publishImage(img *metadata.Image) {
	p.subs.publish(img, p.image.Store)
}

// engine is the single goroutine that owns the consensus core, the log
// store writer, the applied metadata image and the submission waiters
// (STYLE.md §3). Everything reaches it through inbox.
type engine struct {
	rc   runtimeConfig
	fsys vfs.FS
	log  *logstore.Log
	node *kraft.Node
	// clock is the engine's one source of time; start is when the
	// engine started, the core's Instant 0.
	clock     clock
	start     time.Time
	clusterID string
	voterIDs  []int32
	logger    *slog.Logger

	inbox chan event
	// syncDone carries the outcome of the background fsync of a leader's
	// SyncLater appends; at most one runs (syncing). unsynced says that
	// SyncLater appends were written since the running one started (or
	// since the last one, when none runs).
	syncDone chan syncOutcome
	syncing  bool
	unsynced bool
	// peers are the connections to other nodes, opened on first use by
	// dialPeer; learned are endpoints answers named for nodes outside
	// the voter set.
	peers    map[kraft.NodeID]*peerLink
	dialPeer func(addr string) (*peerLink, error)
	learned  map[kraft.NodeID]string
	pub      *publishedState

	// voterHist is the voter-set history of a dynamic quorum (see
	// dynamic.go); voterGen counts its changes and voterGenSynced is the
	// generation last published. votersCopiedEpoch is the last epoch in
	// which this leader checked whether to copy the bootstrap voter set
	// into the log.
	voterHist         []votersEntry
	voterGen          uint64
	voterGenSynced    uint64
	votersCopiedEpoch kraft.Epoch
	// change is the voter change this leader carries out (voters.go);
	// dialProbe opens the connection an add asks the new voter's
	// ApiVersions on. selfDue is when this node next checks its own
	// entry in the voter set; updatedEpoch is the epoch in which the
	// leader accepted its UpdateRaftVoter.
	change       *voterChange
	dialProbe    func(addr string) (*transport.Peer, error)
	selfDue      time.Time
	updatedEpoch kraft.Epoch

	nextHandle    kraft.RecordsHandle
	handles       map[kraft.RecordsHandle]*heldRecords
	nextRequestID uint64
	inbound       map[uint64]pendingReply
	// parkedFrom is the RequestID of each replica's latest Fetch.
	parkedFrom map[kraft.NodeID]uint64
	// deferred are failure responses for requests that could not even be
	// queued; they are stepped after the Ready that sent them.
	deferred []kraft.Message

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

	delta   *metadata.Delta
	applied kraft.Offset // next offset to apply
	hw      kraft.Offset
	dec     recordbatch.Decoder
	// appendBuf joins the batches of a run of several appends into one
	// write; applyBuf holds the committed batches read back to apply.
	// Both are reused from Ready to Ready.
	appendBuf []byte
	applyBuf  []byte

	// lastStatus is the core's Brief as of the last observe: its
	// Replicas are nil (read them from Status).
	lastStatus kraft.Status
	snap       snapshotState
	// spawn runs a helper goroutine (the snapshot writer) owned by the
	// Controller, which waits for it at Shutdown; its ctx ends with the
	// node.
	spawn func(func(ctx context.Context))
	// caughtUpEpoch is the epoch in which this leader has applied its own
	// LeaderChange; -1 before.
	caughtUpEpoch kraft.Epoch
	// bootstrap are the records of bootstrap.checkpoint (readBootstrap);
	// activatedEpoch is the last epoch in which this leader checked
	// whether to append them (maybeActivate), -1 before.
	bootstrap      []metadata.Record
	activatedEpoch kraft.Epoch

	// timers holds every deadline the engine wakes up for, each set and
	// stopped by its owner (see timerID).
	timers timerTable

	// resigning is set by a graceful shutdown; timerResign is when it
	// stops waiting for a successor, and resignDone are closed when it
	// does.
	resigning  bool
	resignDone []chan struct{}

	// Linearizable reads (read.go): reads holds those the core has not
	// resolved, by id; readWaiters those waiting for the image to apply
	// their offset, by ascending offset.
	nextReadID  kraft.ReadID
	reads       map[kraft.ReadID]*readWaiter
	readWaiters []*readWaiter
}

// now is the core's clock: milliseconds since the engine started.
func (e *engine) now() kraft.Instant { return e.instant(e.clock.Now()) }

// instant is t on the core's clock.
func (e *engine) instant(t time.Time) kraft.Instant {
	return kraft.Instant(t.Sub(e.start).Milliseconds())
}

// run is the engine loop. It returns when ctx ends, when a resigning
// leader is done, or with the error that stopped it (a failed write: the
// log is poisoned and the node must restart to recover).
func (e *engine) run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	defer e.failAll(ErrShuttingDown)
	defer e.abortDownload()
	defer e.awaitSync()
	for {
		err := e.drive()
		if err == nil {
			err = e.maybeCheckpoint()
		}
		if err != nil {
			e.logger.LogAttrs(ctx, slog.LevelError, "engine stopped", slog.String(logKeyError, err.Error()))
			return err
		}
		if e.resignFinished() {
			return nil
		}
		e.maybeClean()
		e.armTimer(timer)
		select {
		case <-ctx.Done():
			return nil
		case ev := <-e.inbox:
			e.handle(ev)
			// Group commit: take everything already queued before the
			// next Ready, so that submissions that arrived together are
			// appended together and fsynced once. Nothing waits for more.
			for range inboxCapacity {
				select {
				case ev := <-e.inbox:
					e.handle(ev)
					continue
				default:
				}
				break
			}
		case <-timer.C:
			e.node.Tick(e.now())
		case out := <-e.syncDone:
			if err := e.synced(out); err != nil {
				e.logger.LogAttrs(ctx, slog.LevelError, "engine stopped", slog.String(logKeyError, err.Error()))
				return err
			}
		}
	}
}

// syncOutcome is the result of a background fsync: the log's synced
// offset, or the error that poisoned it.
type syncOutcome struct {
	offset int64
	err    error
}

// startSync starts the background fsync of the SyncLater appends written
// so far, unless one runs (it starts again when that one is done: the
// appends written meanwhile are fsynced together).
func (e *engine) startSync() {
	if e.syncing || !e.unsynced {
		return
	}
	e.syncing, e.unsynced = true, false
	go func() {
		start := latency.Now()
		off, err := e.log.SyncConcurrent()
		latency.Since("leader: fsync", start)
		e.syncDone <- syncOutcome{offset: off, err: err}
	}()
}

// synced takes the outcome of the background fsync: the core counts the
// leader's own end offset up to it, and the next fsync starts if more was
// written meanwhile.
func (e *engine) synced(out syncOutcome) error {
	e.syncing = false
	if out.err != nil {
		return fmt.Errorf("raft: fsync log: %w", out.err)
	}
	if bugzoo.Active(bugzoo.Z22) {
		e.bugZ22AckAppended()
	}
	if err := e.node.LogSynced(e.now(), kraft.Offset(out.offset)); err != nil {
		panic(fmt.Sprintf("raft: invariant: LogSynced outside a Ready: %v", err))
	}
	e.startSync()
	return nil
}

// awaitSync waits for the background fsync, if one runs; a Ready without
// SyncLater then fsyncs the whole log itself. Its error is the fsync's.
func (e *engine) awaitSync() error {
	if !e.syncing {
		return nil
	}
	out := <-e.syncDone
	e.syncing = false
	if out.err != nil {
		return fmt.Errorf("raft: fsync log: %w", out.err)
	}
	return nil
}

// armTimer sets timer to the earliest deadline of the timer table, after
// copying the core's next deadline into it.
func (e *engine) armTimer(timer *time.Timer) {
	if d := e.node.NextDeadline(); d != kraft.Never {
		e.timers.set(timerConsensus, e.start.Add(time.Duration(d)*time.Millisecond))
	} else {
		e.timers.stop(timerConsensus)
	}
	at, ok := e.timers.earliest()
	if !ok {
		timer.Stop()
		return
	}
	timer.Reset(max(at.Sub(e.clock.Now()), 0))
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
		e.pending = append(e.pending, &submission{
			records: []metadata.Record{rec}, encoded: [][]byte{enc}, forwarded: true,
			complete: func(SubmitResult, error) {},
		})
	}
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
			if len(ev.response.records) > 0 {
				e.holdFetched(r, ev.response.records)
			}
		case *kraft.FetchSnapshotResponse:
			if len(ev.response.records) > 0 {
				e.nextHandle++
				e.handles[e.nextHandle] = &heldRecords{raw: ev.response.records, size: r.Size}
				r.Chunk = e.nextHandle
			}
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
		e.pending = append(e.pending, ev.submit)
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

// drive proposes the queued submissions and carries out every Ready until
// the core is quiet, then notices role changes.
func (e *engine) drive() error {
	for {
		e.observe()
		e.maybeNoOp()
		e.maybeActivate()
		e.maybeCopyBootstrapVoters()
		e.checkChange()
		e.maybeSelfMaintain()
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
	e.observe()
	return nil
}

// processReady carries out one Ready in the contract's order: quorum
// state, truncate, append, one fsync, messages, apply, Advance. A SyncLater
// Ready (a leader's) skips the fsync: its messages leave at once, so that
// the followers write the new entries while this node fsyncs its own copy
// in the background (startSync), and the engine goes on answering Fetches
// meanwhile; the core counts this node's end offset at LogSynced. Any
// other Ready first waits for that fsync and then fsyncs everything
// written, before its messages.
func (e *engine) processReady() error {
	rd := e.node.Ready()
	if !rd.SyncLater {
		if err := e.awaitSync(); err != nil {
			return err
		}
	}
	if rd.State != nil {
		qs := logstore.QuorumState{
			DataVersion:   0,
			LeaderID:      int32(rd.State.LeaderID),
			LeaderEpoch:   int32(rd.State.Epoch),
			VotedID:       int32(rd.State.VotedKey.ID),
			CurrentVoters: e.voterIDs,
		}
		if e.rc.dynamic {
			// kraft.version 1 writes data_version 1: the voted
			// directory id, no voter list (KRAFT.md §7.5).
			qs.DataVersion, qs.CurrentVoters = 1, nil
			qs.VotedDirectoryID = logstore.UUID(rd.State.VotedKey.DirectoryID)
		}
		if err := logstore.WriteQuorumState(e.fsys, e.rc.dir, qs); err != nil {
			return fmt.Errorf("raft: persist quorum state %s: %w", rd.State, err)
		}
	}
	wrote := e.unsynced && !rd.SyncLater
	if rd.TruncateTo >= 0 {
		if err := e.log.Truncate(int64(rd.TruncateTo)); err != nil {
			return fmt.Errorf("raft: truncate log to %d: %w", rd.TruncateTo, err)
		}
		wrote = true
		e.truncateVoters(rd.TruncateTo)
		if rd.TruncateTo < e.applied {
			panic(fmt.Sprintf("raft: invariant: truncation to %d below the applied offset %d", rd.TruncateTo, e.applied))
		}
	}
	if len(rd.Appends) > 0 {
		if err := e.appendBatches(rd.Appends); err != nil {
			return err
		}
		wrote = true
	}
	if len(rd.SnapshotWrites) > 0 {
		if err := e.writeSnapshotChunks(rd.SnapshotWrites); err != nil {
			return err
		}
	}
	if rd.InstallSnapshot.Valid() {
		if err := e.installSnapshot(rd.InstallSnapshot); err != nil {
			return err
		}
		wrote = true
	}
	switch {
	case rd.SyncLater:
		// Fetch answers read the written, unsynced batches back.
		e.unsynced = e.unsynced || wrote
	case wrote && !bugzoo.Active(bugzoo.Z1):
		start := latency.Now()
		_, err := e.log.Sync()
		latency.Since("follower: fsync", start)
		if err != nil {
			return fmt.Errorf("raft: fsync log: %w", err)
		}
		e.unsynced = false
		if bugzoo.Active(bugzoo.Z22) {
			e.bugZ22AckAppended()
		}
	default:
		e.unsynced = false
	}
	e.sendAll(rd.Messages)
	if rd.HighWatermark >= 0 {
		e.hw = rd.HighWatermark
		start := latency.Now()
		err := e.applyCommitted()
		latency.Since("apply committed", start)
		if err != nil {
			return err
		}
	}
	for _, res := range rd.Reads {
		e.readResolved(res)
	}
	clear(e.handles)
	e.node.Advance(rd)
	if rd.SyncLater && e.unsynced {
		if bugzoo.Active(bugzoo.Z1) {
			// Z1: the appends are reported durable without an fsync.
			e.unsynced = false
			if err := e.node.LogSynced(e.now(), kraft.Offset(e.log.LogEndOffset())); err != nil {
				panic(fmt.Sprintf("raft: invariant: LogSynced outside a Ready: %v", err))
			}
		} else {
			e.startSync()
		}
	}
	e.maybeSnapshot()
	return nil
}

// maxAppendBuf bounds the join buffer an engine keeps between Readys.
const maxAppendBuf = 1 << 20

// appendBatches writes the Ready's appends: runs of the leader's own
// batches through AppendAsLeader, runs of fetched batches through
// AppendAsFollower, each checked to land where the core placed it.
func (e *engine) appendBatches(apps []kraft.Append) error {
	var (
		buf    []byte
		copied bool // buf is e.appendBuf, not a held batch
		leader bool
		epoch  kraft.Epoch
		first  kraft.Offset
		next   kraft.Offset
	)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		var res logstore.AppendResult
		var err error
		if leader {
			res, err = e.log.AppendAsLeader(buf, int32(epoch))
		} else {
			res, err = e.log.AppendAsFollower(buf)
		}
		if err != nil {
			return fmt.Errorf("raft: append [%d, %d) at epoch %d: %w", first, next, epoch, err)
		}
		if kraft.Offset(res.FirstOffset) != first || kraft.Offset(res.NextOffset) != next {
			panic(fmt.Sprintf("raft: invariant: append landed at [%d, %d), the core placed it at [%d, %d)", res.FirstOffset, res.NextOffset, first, next))
		}
		buf, copied = nil, false
		if cap(e.appendBuf) > maxAppendBuf {
			e.appendBuf = nil
		}
		return nil
	}
	for _, a := range apps {
		var b []byte
		own := true
		switch held := e.handles[a.Handle]; {
		case a.Handle == 0:
			enc, err := encodeControlBatch(a.Batch, e.clock.Now().UnixMilli())
			if err != nil {
				return err
			}
			b = enc
		case held == nil:
			panic(fmt.Sprintf("raft: invariant: append %s names unknown records handle %d", a.Batch, a.Handle))
		case held.fetched:
			own = false
			b = held.batch(a.Batch.BaseOffset)
			if b == nil {
				panic(fmt.Sprintf("raft: invariant: append %s is not a batch of records handle %d", a.Batch, a.Handle))
			}
		default:
			b = held.raw
		}
		if len(buf) > 0 && (own != leader || a.Batch.Epoch != epoch) {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(buf) == 0 {
			first, leader, epoch = a.Batch.BaseOffset, own, a.Batch.Epoch
		}
		switch {
		case len(buf) == 0:
			// A run of one batch (the usual Ready) is written from
			// where it is held, without a copy. The log keeps no
			// reference to what it writes.
			buf = b
		case !copied:
			e.appendBuf = append(append(e.appendBuf[:0], buf...), b...)
			buf, copied = e.appendBuf, true
		default:
			e.appendBuf = append(e.appendBuf, b...)
			buf = e.appendBuf
		}
		if a.Batch.Voters != nil && e.rc.dynamic {
			e.noteAppendedVoters(a.Batch.BaseOffset, b)
		}
		next = a.Batch.LastOffset + 1
	}
	return flush()
}

// sendAll hands a Ready's messages to the network, in order.
func (e *engine) sendAll(msgs []kraft.Message) {
	for _, m := range msgs {
		e.send(m)
	}
}

// send hands one message to the network: a request to its peer's sender,
// a response to the reply slot of the request it answers. It never
// blocks.
func (e *engine) send(m kraft.Message) {
	if e.logger.Enabled(context.Background(), slog.LevelDebug) {
		e.logger.LogAttrs(context.Background(), slog.LevelDebug, "sending", slog.String(logKeyMessage, m.String()))
	}
	h := kraft.HeaderOf(m)
	if kraft.IsRequest(m) {
		l := e.link(h.To)
		req, err := wire.KmsgRequest(m, e.clusterID)
		if l == nil || err != nil {
			e.deferFailure(m)
			return
		}
		p := l.raft
		e.addLeaderEndpoints(req)
		req.SetVersion(transport.NegotiateVersion)
		if v, ok := m.(*kraft.VoteRequest); ok && v.PreVote {
			// PreVote exists from Vote v2 on; below it the flag would be
			// dropped and the pre-vote taken for a real vote. Pinning v2
			// makes the sender fail it locally with UNSUPPORTED_VERSION
			// for an older peer, and the core then runs a real election
			// (KRAFT.md §2.7).
			req.SetVersion(2)
		}
		if !p.Send(req, func(resp kmsg.Response, err error) { e.onPeerAnswer(m, resp, err) }) {
			e.deferFailure(m)
		}
		return
	}
	pr, ok := e.inbound[h.RequestID]
	if !ok {
		return
	}
	delete(e.inbound, h.RequestID)
	var records []byte
	if fr, ok := m.(*kraft.FetchResponse); ok && !fr.Read.Empty() {
		var err error
		if records, err = e.readRecords(fr.Read); err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelWarn, "read records for a fetch",
				slog.Int(logKeyPeer, int(h.To)), slog.Int64(logKeyOffset, int64(fr.Read.From)), slog.String(logKeyError, err.Error()))
			records = nil
		}
	}
	if fs, ok := m.(*kraft.FetchSnapshotResponse); ok && fs.Length > 0 {
		var err error
		if records, err = e.readSnapshotChunk(fs); err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelWarn, "read snapshot chunk",
				slog.Int(logKeyPeer, int(h.To)), slog.String(logKeySnapshotID, fs.SnapshotID.String()), slog.String(logKeyError, err.Error()))
			pr.reply.Close()
			return
		}
	}
	resp, err := wire.KmsgResponse(m, pr.version, records)
	if err != nil {
		pr.reply.Close()
		return
	}
	e.addNodeEndpoints(resp)
	pr.reply.Send(resp)
}

// deferFailure arranges for the core to learn that request m failed
// locally, as BROKER_NOT_AVAILABLE, once the current Ready is done.
func (e *engine) deferFailure(m kraft.Message) {
	if f, err := wire.KRaftFailure(m, kraft.CodeBrokerNotAvailable); err == nil {
		e.deferred = append(e.deferred, f)
	}
}

// onPeerAnswer runs on a peer sender's goroutine: it turns the outcome of
// request req into a response event. It never blocks: when the inbox is
// full the answer is dropped and the core's request timeout frees the
// destination.
func (e *engine) onPeerAnswer(req kraft.Message, resp kmsg.Response, err error) {
	rh := kraft.HeaderOf(req)
	h := kraft.Header{From: rh.To, To: rh.From, RequestID: rh.RequestID}
	var pr peerResponse
	if err == nil {
		m, records, derr := wire.KRaftResponse(resp, h)
		if derr == nil {
			pr = peerResponse{msg: m, records: records}
			pr.endpoints = answerEndpoints(resp, pr.epBuf[:0])
		} else {
			err = derr
		}
	}
	if err != nil {
		code := kraft.CodeBrokerNotAvailable
		if c := wire.CodeForError(err); c == int16(kraft.CodeUnsupportedVersion) {
			code = kraft.CodeUnsupportedVersion
		}
		f, ferr := wire.KRaftFailure(req, code)
		if ferr != nil {
			return
		}
		pr = peerResponse{msg: f, connLost: transport.ConnectionLost(err)}
	}
	select {
	case e.inbox <- event{response: &pr}:
	default:
	}
}

// readRecords reads the whole batches a leader's Fetch answer carries:
// from the batch holding r.From, within r.MaxBytes (at least one batch),
// none at or past r.Until.
func (e *engine) readRecords(r kraft.RecordsRead) ([]byte, error) {
	rr, err := e.log.Read(int64(r.From), int(max(r.MaxBytes, 1)))
	if err != nil {
		return nil, err
	}
	b, pos := rr.Batches, 0
	for pos < len(b) {
		h, err := recordbatch.PeekHeader(b[pos:])
		if err != nil || kraft.Offset(h.BaseOffset) >= r.Until {
			break
		}
		pos += h.Size()
	}
	return b[:pos], nil
}

// holdFetched summarises the whole batches of a follower's Fetch response
// for the core and keeps their bytes under a new handle. A trailing partial
// or damaged batch ends the summary: the core fetches again from there.
func (e *engine) holdFetched(m *kraft.FetchResponse, records []byte) {
	it := recordbatch.NewIterator(&e.dec, records)
	for it.Next() {
		b := it.Batch()
		info, err := summarize(b)
		if err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelWarn, "undecodable control batch in fetch response",
				slog.Int(logKeyPeer, int(m.From)), slog.Int64(logKeyOffset, b.BaseOffset), slog.String(logKeyError, err.Error()))
			break
		}
		m.Batches = append(m.Batches, info)
	}
	if len(m.Batches) > 0 {
		e.nextHandle++
		m.Records = e.nextHandle
		e.handles[e.nextHandle] = &heldRecords{raw: records, fetched: true}
	}
}

// setRequestID sets the RequestID of an inbound request.
func setRequestID(m kraft.Message, id uint64) {
	switch m := m.(type) {
	case *kraft.VoteRequest:
		m.RequestID = id
	case *kraft.BeginQuorumEpochRequest:
		m.RequestID = id
	case *kraft.EndQuorumEpochRequest:
		m.RequestID = id
	case *kraft.FetchRequest:
		m.RequestID = id
	case *kraft.FetchSnapshotRequest:
		m.RequestID = id
	}
}

// observe notices role, epoch and leader changes: it logs them, fails the
// waiters of a leadership that ended, and publishes the quorum state.
//
// It runs after every input and every Ready, so it allocates nothing
// unless the published state changed: the core's Brief (no per-replica
// progress, which only DescribeQuorum and voter changes read, through
// Status), and a new QuorumState only when it differs from the last.
func (e *engine) observe() {
	st := e.node.Brief()
	prev := e.lastStatus
	e.lastStatus = st
	e.syncVoters()
	if st.Role != prev.Role || st.Epoch != prev.Epoch || st.Leader != prev.Leader {
		// The core logs each transition at Info; this line adds what the
		// runtime publishes.
		e.logger.LogAttrs(context.Background(), slog.LevelDebug, "quorum state changed",
			slog.String(logKeyRole, st.Role.String()), slog.Int(logKeyEpoch, int(st.Epoch)), slog.Int(logKeyLeaderID, int(st.Leader.LeaderID)),
			slog.Int64(logKeyHighWatermark, int64(st.HighWatermark)))
		if st.Role != kraft.Leader || st.Epoch != prev.Epoch {
			e.spec = nil
			if len(e.waiters) > 0 {
				err := e.notLeader(st)
				for _, w := range e.waiters {
					w.complete(SubmitResult{}, err)
				}
				e.waiters = nil
			}
		}
	}
	q := QuorumState{
		NodeID: NodeID(st.ID), Role: Role(st.Role.String()), Epoch: int32(st.Epoch),
		LeaderID: NodeID(st.Leader.LeaderID), HighWatermark: int64(st.HighWatermark),
		LogEndOffset: int64(st.LogEndOffset), AppliedOffset: int64(e.applied),
	}
	if old := e.pub.quorum.Load(); old == nil || *old != q {
		// Other goroutines hold what was published: a new one each time.
		published := q
		e.pub.quorum.Store(&published)
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

// flushSubmissions proposes every queued submission on the leader, as few
// batches as the batch size limit allows, after validating each against
// the image plus the uncommitted submissions before it. A follower
// forwards them to the leader; other nodes fail them.
func (e *engine) flushSubmissions() {
	if len(e.pending) == 0 {
		return
	}
	subs := e.pending
	e.pending = nil
	st := e.lastStatus
	if st.Role != kraft.Leader || st.ShuttingDown {
		for _, s := range subs {
			e.forward(s, st)
		}
		return
	}
	if !e.caughtUp(st.Epoch) {
		// As Kafka's controller does, a new leader accepts changes only
		// once it has applied the whole log up to its epoch's start (its
		// LeaderChange record has committed): validating against an
		// image that lags the log would reject or accept wrongly. The
		// submissions wait for that, which is one commit round.
		e.pending = subs
		return
	}
	if e.spec == nil {
		// A leader that one client writes to starts a speculative image
		// for every write: the same Delta serves them all.
		if e.specDelta == nil {
			e.specDelta = metadata.NewDelta(e.pub.image.Load())
		} else {
			e.specDelta.Reset(e.pub.image.Load())
		}
		e.spec = e.specDelta
	}
	now := e.clock.Now().UnixMilli()
	offset := st.LogEndOffset
	batch := e.batchBuf[:0]
	builder := &e.builder
	size := 0
	propose := func() {
		if len(batch) == 0 {
			return
		}
		raw, err := builder.Finish()
		n := 0
		for _, s := range batch {
			n += len(s.records)
		}
		var info kraft.BatchInfo
		if err == nil {
			e.nextHandle++
			e.handles[e.nextHandle] = &heldRecords{raw: raw}
			info, err = e.node.Propose(e.now(), kraft.Proposal{Records: n, Handle: e.nextHandle})
		}
		if err != nil {
			// Not reachable on an active leader between Readys; fail
			// the batch rather than lose track of it.
			for _, s := range batch {
				s.complete(SubmitResult{}, fmt.Errorf("raft: propose %d records: %w", n, err))
			}
			e.spec = nil
		} else {
			at := info.BaseOffset
			for _, s := range batch {
				s.base, s.last, s.epoch = at, at+kraft.Offset(len(s.records))-1, info.Epoch
				at = s.last + 1
				e.waiters = append(e.waiters, s)
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
		ssize := s.batchBytes()
		left -= ssize
		if ssize+recordbatch.HeaderSize > e.rc.maxBatchBytes {
			s.complete(SubmitResult{}, fmt.Errorf("%w: %d records of %d bytes exceed the batch limit of %d bytes", ErrInvalidChange, len(s.records), ssize, e.rc.maxBatchBytes))
			continue
		}
		if err := e.validate(s, offset, st.Epoch); err != nil {
			s.complete(SubmitResult{}, err)
			continue
		}
		offset += kraft.Offset(len(s.records))
		if len(batch) > 0 && size+ssize+recordbatch.HeaderSize > e.rc.maxBatchBytes {
			propose()
		}
		if len(batch) == 0 {
			p := recordbatch.DefaultParams()
			p.PartitionLeaderEpoch = int32(st.Epoch)
			builder.Reset(make([]byte, 0, recordbatch.HeaderSize+min(ssize+left, e.rc.maxBatchBytes)), p)
		}
		for _, v := range s.encoded {
			builder.Append(now, nil, v, nil)
		}
		batch = append(batch, s)
		size += ssize
	}
	propose()
	e.batchBuf = batch
	latency.Count("leader: submissions per flush", len(subs))
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
	if int64(e.applied) > entries[len(entries)-1].StartOffset {
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
func (e *engine) validate(s *submission, offset kraft.Offset, epoch kraft.Epoch) error {
	var saved metadata.Delta
	several := len(s.records) > 1
	for i, r := range s.records {
		var err error
		switch {
		case i == 0 && several:
			saved = *e.spec
			err = e.spec.Replay(r, int64(offset), int32(epoch))
		default:
			err = e.spec.ReplayNext(r, int64(offset)+int64(i), int32(epoch))
		}
		if err != nil {
			if several {
				*e.spec = saved
			}
			return fmt.Errorf("%w: %w", ErrInvalidChange, err)
		}
	}
	return nil
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
		case e.inbox <- event{call: func(e *engine) { e.awaitApplied(s, res) }}:
		default:
			s.complete(res, nil)
		}
	})
	if !sent {
		s.complete(SubmitResult{}, ErrLeaderUnknown)
	}
}

// awaitApplied completes a forwarded submission that the leader committed
// once this node has applied its last record.
func (e *engine) awaitApplied(s *submission, res SubmitResult) {
	if int64(e.applied) > res.LastOffset {
		s.complete(res, nil)
		return
	}
	s.base, s.last, s.epoch = kraft.Offset(res.Offset), kraft.Offset(res.LastOffset), kraft.Epoch(res.Epoch)
	i, _ := slices.BinarySearchFunc(e.applyWaiters, s.last, func(w *submission, last kraft.Offset) int { return cmp.Compare(w.last, last) })
	e.applyWaiters = slices.Insert(e.applyWaiters, i, s)
}

// applyCommitted replays the committed records below the high watermark
// into the image, publishes it and completes the waiters it covers.
func (e *engine) applyCommitted() error {
	replayed := 0
	for e.applied < e.hw {
		// The decoded records own their values, so one buffer serves
		// every read.
		rr, err := e.log.ReadInto(int64(e.applied), 1<<20, e.applyBuf)
		if err != nil {
			return fmt.Errorf("raft: read committed records at %d: %w", e.applied, err)
		}
		if cap(rr.Batches) > cap(e.applyBuf) {
			e.applyBuf = rr.Batches[:0]
		}
		progressed := false
		it := recordbatch.NewIterator(&e.dec, rr.Batches)
		for it.Next() {
			b := it.Batch()
			if kraft.Offset(b.BaseOffset) >= e.hw {
				break
			}
			if !b.IsControl() {
				for i := range b.Records {
					r := &b.Records[i]
					off := b.RecordOffset(r)
					if kraft.Offset(off) < e.applied || kraft.Offset(off) >= e.hw {
						continue
					}
					e.replay(r.Value, off, b.PartitionLeaderEpoch)
					replayed++
				}
			}
			e.applied = min(e.hw, kraft.Offset(b.NextOffset()))
			e.noteApplied(len(b.Raw), b.PartitionLeaderEpoch, b.MaxTimestamp, e.applied == kraft.Offset(b.NextOffset()))
			progressed = true
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("raft: decode committed batch at %d: %w", e.applied, err)
		}
		if !progressed {
			return fmt.Errorf("raft: no committed batch at %d below the high watermark %d", e.applied, e.hw)
		}
	}
	if replayed > 0 {
		// Control batches leave the image as it was: no new image for
		// them, so that subscribers see only images that changed.
		e.pub.publishImage(e.delta.Apply())
	}
	done := 0
	for _, w := range e.waiters {
		if w.last >= e.applied {
			break
		}
		if w.err != nil {
			w.complete(SubmitResult{}, w.err)
		} else {
			w.complete(SubmitResult{Offset: int64(w.base), LastOffset: int64(w.last), Epoch: int32(w.epoch)}, nil)
		}
		done++
	}
	e.waiters = slices.Delete(e.waiters, 0, done)
	done = 0
	for _, w := range e.applyWaiters {
		if w.last >= e.applied {
			break
		}
		w.complete(SubmitResult{Offset: int64(w.base), LastOffset: int64(w.last), Epoch: int32(w.epoch)}, nil)
		done++
	}
	e.applyWaiters = slices.Delete(e.applyWaiters, 0, done)
	if len(e.waiters) == 0 {
		e.spec = nil
	}
	e.completeReads()
	return nil
}

// replay applies one committed record to the image. A record the image
// rejects is skipped (every replica rejects it alike) and the rejection
// goes to the submission that holds its offset.
func (e *engine) replay(value []byte, offset int64, epoch int32) {
	rec, err := metadata.Decode(value)
	if err == nil {
		// The run of in-place changes ends with the image published
		// after the commit round (Apply).
		err = e.delta.ReplayNext(rec, offset, epoch)
	}
	if err == nil {
		return
	}
	// The record still occupies its offset: the image's provenance moves
	// past it, as Kafka's loader does, so that a snapshot can name it.
	if serr := e.delta.Skip(offset, epoch); serr != nil {
		panic(fmt.Sprintf("raft: invariant: skip committed record at offset %d: %v", offset, serr))
	}
	e.logger.LogAttrs(context.Background(), slog.LevelWarn, "committed record rejected by the image",
		slog.Int64(logKeyOffset, offset), slog.String(logKeyError, err.Error()))
	for _, w := range e.waiters {
		if kraft.Offset(offset) >= w.base && kraft.Offset(offset) <= w.last {
			if w.err == nil {
				w.err = fmt.Errorf("%w: %w", ErrInvalidChange, err)
			}
			return
		}
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
	for _, s := range e.pending {
		s.complete(SubmitResult{}, err)
	}
	for _, s := range e.waiters {
		s.complete(SubmitResult{}, err)
	}
	// The leader committed these; they only lack the local apply.
	for _, s := range e.applyWaiters {
		s.complete(SubmitResult{Offset: int64(s.base), LastOffset: int64(s.last), Epoch: int32(s.epoch)}, nil)
	}
	e.pending, e.waiters, e.applyWaiters = nil, nil, nil
	e.finishChange(kerr.BrokerNotAvailable.Code)
	e.failReads(err)
	e.failTriggers(err)
	for _, c := range e.resignDone {
		close(c)
	}
	e.resignDone = nil
}
