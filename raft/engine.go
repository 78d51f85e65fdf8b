package raft

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// publishedState is what the engine shares with other goroutines: written
// only by the engine, read without locks.
type publishedState struct {
	quorum atomic.Pointer[QuorumState]
	image  atomic.Pointer[metadata.Image]
	// subs are the image subscriptions; publishImage feeds them.
	subs feed[*metadata.Image]
	// leader is the leadership last published, leaders its
	// subscriptions (publishLeadership).
	leader  atomic.Pointer[Leadership]
	leaders feed[Leadership]
	// latestSnapshot is the newest snapshot on disk; nil before the
	// first.
	latestSnapshot atomic.Pointer[kraft.OffsetAndEpoch]
	// voters is the voter set in force with the voters' endpoints.
	voters atomic.Pointer[[]voterInfo]
	// kraftVersion is the kraft.version in force (ApiVersions reports
	// it): 1 once a Voters record is in the voter history (dynamic.go).
	kraftVersion atomic.Int32
	// busySince is when the engine loop woke up for its current turn
	// (Unix nanoseconds), 0 while it waits for an input.
	busySince atomic.Int64
	// health is what Controller.LiveChecks and Controller.ReadyChecks read.
	health healthState
}

// appliedOffset is the applied offset of the quorum state published
// last, 0 before the first publication (a listener may serve before it).
func (p *publishedState) appliedOffset() int64 {
	if q := p.quorum.Load(); q != nil {
		return q.AppliedOffset
	}
	return 0
}

// publishImage makes img the current image and hands it to every
// subscription, in publication order.
func (p *publishedState) publishImage(img *metadata.Image) {
	p.subs.publish(img, p.image.Store)
}

// engine is the single goroutine that owns the consensus core, the log
// store writer, the applied metadata image and the submission waiters
// (docs/architecture.md). Everything reaches it through inbox.
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
	voterIDs  []kraft.NodeID
	logger    *slog.Logger

	inbox chan event
	// sharedRead lets the Fetch answers of one Ready share a read
	// (sendAll).
	sharedRead sharedRead
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
	peers map[kraft.NodeID]*peerLink
	// foreignReported is when each peer that refused this node's cluster
	// id was last reported (noteForeignPeer).
	foreignReported map[kraft.NodeID]time.Time
	dialPeer        func(addr string) (*peerLink, error)
	learned         map[kraft.NodeID]string
	pub             *publishedState

	// voters is the voter-set history of a dynamic quorum (dynamic.go).
	// votersCopiedEpoch is the last epoch in which this leader checked
	// whether to copy the bootstrap voter set into the log.
	voters            voterHistory
	leaderChange      leaderChangeScan // the log's latest LeaderChange, from loadVoterHistory
	votersCopiedEpoch kraft.Epoch
	// change is the voter change this leader carries out (voters.go);
	// dialProbe opens the connection an add asks the new voter's
	// ApiVersions on. selfDue is when this node next checks its own
	// entry in the voter set; updatedEpoch is the epoch in which the
	// leader accepted its UpdateRaftVoter.
	change *voterChange
	// reports are the UpdateRaftVoter requests this leader of a static
	// quorum accepted, for the kraft.version upgrade (upgrade.go).
	reports      upgradeReports
	dialProbe    func(addr string) (peerSender, error)
	selfDue      time.Time
	updatedEpoch kraft.Epoch
	// reg is this controller's own registration (registration.go).
	reg registration

	// handles are the bytes the core names by a RecordsHandle (ready.go).
	handles       handleTable
	nextRequestID uint64
	inbound       map[uint64]pendingReply
	// parkedFrom is the RequestID of each replica's latest Fetch.
	parkedFrom map[kraft.NodeID]uint64
	// deferred are failure responses for requests that could not even be
	// queued; they are stepped after the Ready that sent them.
	deferred []kraft.Message

	// sub holds the submissions from SubmitChange to their answer;
	// applier the image being built from the committed records.
	sub     submitter
	applier applier
	// dec decodes the batches of Fetch answers and of the voter history;
	// appendBuf joins the batches of a run of several appends into one
	// write, reused from Ready to Ready.
	dec       recordbatch.Decoder
	appendBuf []byte

	// lastStatus is the core's Brief as of the last publishQuorumState:
	// its Replicas are nil (read them from Status).
	lastStatus kraft.Status
	snap       snapshotState
	// background runs the leader's background fsync off the engine
	// goroutine; the task hands its outcome to syncDone, which never
	// blocks (at most one runs).
	background func(task func())
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

	// reads are the linearizable reads in the engine's care (read.go).
	reads readQueue

	// metrics reports to rc.metrics (metrics.go).
	metrics metricsState
	// probe, when set, is told what the Ready executor made durable.
	probe durabilityProbe
}

// now is the core's clock: milliseconds since the engine started.
func (e *engine) now() kraft.Instant { return e.instant(e.clock.Now()) }

// instant is t on the core's clock.
func (e *engine) instant(t time.Time) kraft.Instant {
	return kraft.Instant(t.Sub(e.start).Milliseconds())
}
