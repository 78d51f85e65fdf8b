package raft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// SubmitResult is where a committed submission landed.
type SubmitResult struct {
	// Offset is the offset of the submission's first record.
	Offset int64
	// LastOffset is the offset of its last record.
	LastOffset int64
	// Epoch is the leader epoch of the batch that holds the records.
	Epoch int32
}

// Role is a node's role in the quorum (Kafka's QuorumState and its EpochState classes).
type Role string

// The roles.
const (
	RoleUnattached  Role = "Unattached"
	RoleProspective Role = "Prospective"
	RoleCandidate   Role = "Candidate"
	RoleLeader      Role = "Leader"
	RoleFollower    Role = "Follower"
	RoleResigned    Role = "Resigned"
)

// QuorumState is a node's view of the quorum, as last published by its
// engine.
type QuorumState struct {
	// NodeID is this node.
	NodeID NodeID
	// Role is the node's role.
	Role Role
	// Epoch is the node's current epoch.
	Epoch int32
	// LeaderID is the leader of Epoch, or -1 when unknown.
	LeaderID NodeID
	// HighWatermark is the commit offset this node knows, or -1 when it
	// knows none yet (after a restart, until the leader reports one).
	HighWatermark int64
	// LogEndOffset is the end of the local log.
	LogEndOffset int64
	// AppliedOffset is the offset below which every record has been
	// applied to the image.
	AppliedOffset int64
}

// ReplicaState is one replica's progress as the leader tracks it
// (DescribeQuorum, RaftUtil.singletonDescribeQuorumResponse).
type ReplicaState struct {
	// ReplicaID is the replica's node id.
	ReplicaID NodeID
	// DirectoryID is its metadata log directory id, zero if unknown.
	DirectoryID [16]byte
	// LogEndOffset is the end offset of its last fetch (the leader's own
	// log end offset for the leader), -1 if it never fetched.
	LogEndOffset int64
	// LastFetchTimestamp and LastCaughtUpTimestamp are wall-clock
	// milliseconds, -1 if unknown; for the leader both are now.
	LastFetchTimestamp    int64
	LastCaughtUpTimestamp int64
}

// QuorumDescription is the leader's answer to DescribeQuorum.
type QuorumDescription struct {
	// LeaderID and LeaderEpoch are the answering leader and its epoch.
	LeaderID    NodeID
	LeaderEpoch int32
	// HighWatermark is the leader's high watermark, -1 until its first
	// commit in the epoch.
	HighWatermark int64
	// Voters are the replicas of the voter set, the leader included.
	Voters []ReplicaState
	// Observers are the other replicas that fetched in the last five
	// minutes.
	Observers []ReplicaState
}

// Controller is a running Krabka controller node: the engine that owns the
// consensus state, the listener that serves the quorum's RPCs, and one
// sender per peer. Its methods are safe for concurrent use.
type Controller struct {
	rc     runtimeConfig
	eng    *engine
	srv    *listenerSet
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// done is closed when the engine goroutine has returned; runErr is
	// its result, readable after done.
	done   chan struct{}
	runErr error
	// probes is the linearizable read of the health checks.
	probes readProbes

	closers      []io.Closer
	shutdownOnce sync.Once
	shutdownErr  error
}

// Start opens (and locks) the metadata log directory
// <metadata.log.dir>/__cluster_metadata-0, recovers the log, reads the
// quorum state (a fresh directory starts at epoch 0), binds every
// controller listener and starts the engine and the peer senders. It
// returns once the node is serving; the quorum elects a leader on its own.
//
// ctx bounds the node's life: cancelling it stops every goroutine at once,
// like a crash that loses nothing durable. [Controller.Shutdown] is the
// graceful stop and must be called in any case to release the port and
// the directory.
func Start(ctx context.Context, cfg Config) (*Controller, error) {
	return start(ctx, cfg, startOptions{})
}

// startOptions are the seams tests use: a listener already bound (every
// node's port is bound before any node starts, so that each can name the
// others' addresses), a dialer for the peers (an in-memory network) and a
// file system (a vfs.MemFS that crash tests stop and power off; nil: the
// operating system's).
type startOptions struct {
	listener net.Listener
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	fsys     vfs.FS
	// clock is the engine's time; nil: the system clock.
	clock clock
	// seed seeds the core's random source; 0: from the system clock.
	seed uint64
	// host, when set, runs the engine's background tasks (the leader's
	// fsync, the snapshot writer) instead of goroutines, and Start
	// starts no engine goroutine: the caller drives the engine's turns
	// on a goroutine of its own (see engine.run) and ends it with
	// engine.stop.
	host func(task func(ctx context.Context))
	// dialPeer, when set, opens the senders to the peer at addr (the
	// KRaft one, the forwarding one and an add's probe) instead of
	// transport connections: the network of a host that owns it.
	dialPeer func(addr string) peerSender
	// observer starts the node with [StartObserver]'s rules.
	observer bool
	// probe is told what the engine's Ready executor makes durable (the
	// simulator's checker); nil: nothing is told.
	probe durabilityProbe
}

// start is Start with the test seams of opts.
func start(ctx context.Context, cfg Config, opts startOptions) (_ *Controller, err error) {
	ln := opts.listener
	rc, err := newRuntimeConfigAs(cfg, opts.observer)
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return nil, err
	}
	if opts.seed != 0 {
		rc.core.Seed = opts.seed
	}
	fsys := opts.fsys
	if fsys == nil {
		fsys = newFS()
	}
	fsys = zooFS(fsys)
	clk := opts.clock
	if clk == nil {
		clk = systemClock{}
	}
	c := &Controller{rc: rc, done: make(chan struct{})}
	defer func() {
		if err != nil {
			if ln != nil {
				_ = ln.Close()
			}
			c.closeAll()
		}
	}()
	clusterID, err := c.openDir(fsys, &rc, cfg.NodeID)
	if err != nil {
		return nil, err
	}
	c.rc = rc
	log, _, err := logstore.Open(fsys, rc.dir, rc.logOpts)
	if err != nil {
		return nil, fmt.Errorf("raft: open metadata log: %w", err)
	}
	c.closers = append(c.closers, log)
	ps, err := readElectionState(fsys, rc.dir)
	if err != nil {
		return nil, err
	}
	e := newEngine(rc, fsys, log, clk, clusterID)
	if opts.seed != 0 {
		e.reg.incarnation = newIncarnation(opts.seed)
	}
	if err := e.load(cfg.QuorumVoters); err != nil {
		return nil, err
	}
	node, err := kraft.NewNode(e.now(), rc.core, ps, logView{log: log, size: e.snapshotSize, voters: e.loadVoterHistory, leaderChange: e.latestLeaderChange})
	if err != nil {
		return nil, fmt.Errorf("raft: start consensus: %w", err)
	}
	e.node = node
	c.eng = e

	runCtx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.attach(runCtx, e, opts)
	e.publishVoters()

	srvCfg := rc.server
	srvCfg.Handler = &handler{c: c, authz: newRequestAuthz(cfg, e.pub.image.Load, rc.logger), shards: cfg.ShardRouter, admin: cfg.AdminRouter}
	warnUnprotectedListeners(ctx, cfg, rc.logger)
	// A SASL listener answers ApiVersions before authentication as the
	// handler does after it. Until the node has applied its whole log it
	// takes SCRAM credentials from its own state (scramLookup).
	var start *startCredentials
	for _, h := range rc.listenerSASL {
		if h == nil {
			continue
		}
		if start == nil {
			if start, err = e.startScram(); err != nil {
				return nil, err
			}
		}
		h.APIVersions = func(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
			return wire.AnswerAPIVersions(req, e.rc.featureState(e.pub.image.Load(), e.pub.finalizedKRaftVersion()))
		}
		h.ScramCredentials = scramLookup(e.pub.image.Load, e.pub.appliedOffset, start)
	}
	// Per-address creation rates come from the image's ip quotas
	// (KIP-612), shared by every listener.
	if srvCfg.IPCreationRates, err = transport.NewIPCreationRates(ipRateLookup(e.pub.image.Load), int(cfg.QuotaWindowNum), cfg.QuotaWindowSize); err != nil {
		return nil, fmt.Errorf("raft: %s: %w", keyQuotaWindowNum, err)
	}
	srv, err := serveListeners(runCtx, rc.listeners, rc.listenerTLS, rc.listenerSASL, rc.listenerRates, ln, srvCfg)
	ln = nil // serveListeners owns it now
	if err != nil {
		return nil, err
	}
	c.srv = srv
	srv.advertiseBoundPorts(e.rc.advertised)

	e.publishQuorumState()
	if opts.host != nil {
		return c, nil
	}
	// The state the core started in (its "started" line), read before
	// the engine runs: the epoch may be the log's, later than the
	// quorum-state file's.
	q := c.QuorumState()
	c.wg.Go(func() {
		defer close(c.done)
		c.runErr = e.run(runCtx)
		e.pub.subs.closeAll(cmp.Or(c.runErr, ErrShuttingDown))
		e.pub.leaders.closeAll(cmp.Or(c.runErr, ErrShuttingDown))
	})
	rc.logger.LogAttrs(ctx, slog.LevelInfo, "controller started",
		slog.String(logKeyAddr, srv.Addr().String()), slog.String(logKeyRole, string(q.Role)),
		slog.Int(logKeyEpoch, int(q.Epoch)), slog.Int(logKeyLeaderID, int(q.LeaderID)),
		slog.Int64(logKeyOffset, q.LogEndOffset))
	return c, nil
}

// openDir creates and locks the metadata log directory and reads its
// meta.properties: it returns the cluster id (empty for a directory that
// was never formatted) and sets this replica's directory id in rc, which a
// dynamic quorum requires.
func (c *Controller) openDir(fsys vfs.FS, rc *runtimeConfig, id NodeID) (clusterID string, err error) {
	if err := logstore.MkdirAllDurable(fsys, rc.logDir); err != nil {
		return "", fmt.Errorf("raft: create metadata log dir %s: %w", rc.logDir, err)
	}
	lock, err := logstore.LockDir(fsys, rc.logDir)
	if err != nil {
		return "", fmt.Errorf("raft: lock metadata log dir %s: %w", rc.logDir, err)
	}
	c.closers = append(c.closers, lock)
	switch mp, err := logstore.ReadMetaProperties(fsys, rc.logDir); {
	case err == nil:
		if mp.NodeID >= 0 && NodeID(mp.NodeID) != id {
			return "", fmt.Errorf("raft: %s/meta.properties belongs to node %d, not node.id %d", rc.logDir, mp.NodeID, id)
		}
		clusterID = mp.ClusterID
		// The directory id joins the node id in this replica's key
		// (Fetch, Vote and BeginQuorumEpoch carry it), as in Kafka.
		rc.core.DirectoryID = mp.DirectoryID
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if rc.dynamic && rc.core.DirectoryID == (kraft.UUID{}) {
		return "", fmt.Errorf("raft: controller.quorum.voters is empty (a dynamic quorum), so %s/meta.properties must give this node's directory.id: format the directory with krabka storage format (--standalone, --initial-controllers or --no-initial-controllers)", rc.logDir)
	}
	return clusterID, nil
}

// readElectionState reads the quorum-state file of the log directory
// dir; a directory without one starts at epoch 0 with no leader and no
// vote.
func readElectionState(fsys vfs.FS, dir string) (kraft.ElectionState, error) {
	qs, err := logstore.ReadQuorumState(fsys, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return kraft.ElectionState{LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}, nil
	case err != nil:
		return kraft.ElectionState{}, err
	}
	return kraft.ElectionState{
		Epoch:    kraft.Epoch(qs.LeaderEpoch),
		LeaderID: qs.LeaderID,
		VotedKey: kraft.ReplicaKey{ID: qs.VotedID, DirectoryID: qs.VotedDirectoryID},
	}, nil
}

// newEngine returns the engine of an opened log, before its state is
// loaded (load) and its core started.
func newEngine(rc runtimeConfig, fsys vfs.FS, log *logstore.Log, clk clock, clusterID string) *engine {
	return &engine{
		rc:         rc,
		fsys:       fsys,
		log:        log,
		clock:      clk,
		start:      clk.Now(),
		clusterID:  clusterID,
		logger:     rc.logger,
		inbox:      make(chan event, inboxCapacity),
		syncDone:   make(chan syncOutcome, 1),
		peers:      map[kraft.NodeID]*peerLink{},
		learned:    map[kraft.NodeID]string{},
		pub:        &publishedState{},
		inbound:    map[uint64]pendingReply{},
		parkedFrom: map[kraft.NodeID]uint64{},
		applier:    applier{delta: metadata.NewDelta(metadata.EmptyImage()), hw: -1},
		sub:        submitter{admission: rc.admission},
		metrics:    metricsState{m: rc.metrics},

		caughtUpEpoch:     -1,
		activatedEpoch:    -1,
		votersCopiedEpoch: -1,
		updatedEpoch:      -1,
		reg:               registration{off: !rc.registers, incarnation: newIncarnation(0)},
	}
}

// load reads what the engine starts from: the bootstrap records, the
// newest valid snapshot (its image, and the offset to apply from) and
// the voter set of a static quorum.
func (e *engine) load(static []QuorumVoter) (err error) {
	if e.bootstrap, err = readBootstrap(e.fsys, e.rc.logDir); err != nil {
		return err
	}
	for _, v := range static {
		e.voterIDs = append(e.voterIDs, kraft.NodeID(v.ID))
	}
	e.applier.applied = kraft.Offset(e.log.LogStartOffset())
	e.pub.image.Store(metadata.EmptyImage())
	if err := e.loadSnapshots(); err != nil {
		return err
	}
	if !e.rc.dynamic {
		voters := staticVoters(&e.rc)
		e.pub.voters.Store(&voters)
	} else {
		e.pub.kraftVersion.Store(1)
	}
	return nil
}

// attach gives the engine what it runs on besides its own goroutine,
// within ctx: the helper goroutines the Controller waits for (or the
// host's tasks) and the dialers of its peers.
func (c *Controller) attach(ctx context.Context, e *engine, opts startOptions) {
	e.spawn = func(f func(context.Context)) { c.wg.Go(func() { f(ctx) }) }
	e.background = func(task func()) { go task() }
	if opts.host != nil {
		e.spawn = opts.host
		e.background = func(task func()) { opts.host(func(context.Context) { task() }) }
	}
	rc := e.rc
	dial := func(cfg transport.PeerConfig, addr string) (*transport.Peer, error) {
		cfg.Addr = addr
		cfg.Dial = opts.dial
		return transport.DialPeer(ctx, cfg)
	}
	e.dialPeer = func(addr string) (*peerLink, error) {
		raftPeer, err := dial(rc.peer, addr)
		if err != nil {
			return nil, fmt.Errorf("raft: peer at %s: %w", addr, err)
		}
		forward, err := dial(rc.forward, addr)
		if err != nil {
			raftPeer.Close()
			return nil, fmt.Errorf("raft: peer at %s: %w", addr, err)
		}
		return &peerLink{addr: addr, raft: raftPeer, forward: forward}, nil
	}
	e.dialProbe = func(addr string) (peerSender, error) { return dial(rc.peer, addr) }
	e.probe = opts.probe
	if opts.dialPeer != nil {
		e.dialPeer = func(addr string) (*peerLink, error) {
			return &peerLink{addr: addr, raft: opts.dialPeer(addr), forward: opts.dialPeer(addr)}, nil
		}
		e.dialProbe = func(addr string) (peerSender, error) { return opts.dialPeer(addr), nil }
	}
}

// Done is closed when the engine has stopped: after Shutdown, when the
// context given to Start ends, or when a failed write stopped it (see
// [Controller.Err]).
func (c *Controller) Done() <-chan struct{} { return c.done }

// Err returns the error that stopped the engine (a failed write or fsync,
// after which the log store refuses every write and the node must be
// restarted to recover), or nil while it runs or after a clean stop.
func (c *Controller) Err() error {
	select {
	case <-c.done:
		return c.runErr
	default:
		return nil
	}
}

// Addr returns the address the first controller listener, the one the
// voters use, is bound to; [Controller.ListenerAddr] gives each one's.
func (c *Controller) Addr() net.Addr { return c.srv.Addr() }

// enqueue hands ev to the engine, waiting while its queue is full. It
// fails when ctx ends or the engine has stopped.
func (c *Controller) enqueue(ctx context.Context, ev event) error {
	select {
	case c.eng.inbox <- ev:
		return nil
	case <-c.done:
		return ErrShuttingDown
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SubmitChange appends records to the metadata log as one atomic unit and
// returns once they are committed (the high watermark passed them) and
// applied to this node's image. On a follower the records are forwarded to
// the leader over the private SubmitChange RPC; once the leader reports
// them committed, the call returns when this node has applied them too, so
// [Controller.CurrentImage] on the same node shows the change.
//
// opts set the conditions the leader appends the records under
// ([IfUnchangedSince], [IfNoUncommittedTail], [IfDelegationToken]);
// without them the records are validated against the image and every
// change accepted before them.
//
// Errors: a [*NotLeaderError] (errors.Is [ErrNotLeader]) when the node
// that answered knows another leader; [ErrLeaderUnknown] during an
// election; [ErrInvalidChange] when the image rejects a record;
// [ErrImageChanged] and [ErrUncommittedTail] when the condition refused
// them; [ErrShuttingDown]; ctx's error. Cancelling ctx stops the wait, not
// the write: records already handed to the leader may still commit. The
// same holds for a NotLeaderError after leadership was lost while
// waiting.
func (c *Controller) SubmitChange(ctx context.Context, records []metadata.Record, opts ...SubmitOption) (SubmitResult, error) {
	if len(records) == 0 {
		return SubmitResult{}, fmt.Errorf("%w: no records", ErrInvalidChange)
	}
	cond, err := conditionOf(opts)
	if err != nil {
		return SubmitResult{}, err
	}
	s := &submission{records: records, cond: cond}
	for _, r := range records {
		b, err := metadata.Encode(r)
		if err != nil {
			return SubmitResult{}, fmt.Errorf("%w: encode %s: %w", ErrInvalidChange, r.APIKey(), err)
		}
		s.encoded = append(s.encoded, b)
	}
	type outcome struct {
		res SubmitResult
		err error
	}
	done := make(chan outcome, 1)
	s.complete = func(res SubmitResult, err error) {
		select {
		case done <- outcome{res, err}:
		default:
		}
	}
	if err := c.enqueue(ctx, event{submit: s}); err != nil {
		return SubmitResult{}, err
	}
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		return SubmitResult{}, ctx.Err()
	case <-c.done:
		// The engine completes every submission before it returns.
		select {
		case o := <-done:
			return o.res, o.err
		default:
			return SubmitResult{}, ErrShuttingDown
		}
	}
}

// QuorumState returns the quorum state the engine published last. It never
// blocks.
func (c *Controller) QuorumState() QuorumState {
	return *c.eng.pub.quorum.Load()
}

// CurrentImage returns the metadata image of every record applied so far.
// It never blocks; the image is immutable. It is the fast local read and
// may be stale: a follower lags the leader, and a leader cut off from the
// quorum does not know it was replaced. [Controller.ReadImage] is the
// linearizable read.
func (c *Controller) CurrentImage() *metadata.Image {
	return c.eng.pub.image.Load()
}

// DescribeQuorum returns the leader's view of every replica's progress
// (RaftUtil.singletonDescribeQuorumResponse). On a node that is not the leader it fails like
// SubmitChange does ([*NotLeaderError] or [ErrLeaderUnknown]).
func (c *Controller) DescribeQuorum(ctx context.Context) (QuorumDescription, error) {
	type outcome struct {
		d   QuorumDescription
		err error
	}
	done := make(chan outcome, 1)
	err := c.enqueue(ctx, event{call: func(e *engine) {
		d, err := e.describe()
		done <- outcome{d, err}
	}})
	if err != nil {
		return QuorumDescription{}, err
	}
	select {
	case o := <-done:
		return o.d, o.err
	case <-ctx.Done():
		return QuorumDescription{}, ctx.Err()
	case <-c.done:
		return QuorumDescription{}, ErrShuttingDown
	}
}

// describe builds the DescribeQuorum view from the core's status.
func (e *engine) describe() (QuorumDescription, error) {
	now := e.now()
	e.node.ExpireObservers(now)
	st := e.node.Status()
	if st.Role != kraft.Leader {
		return QuorumDescription{}, e.notLeader(st)
	}
	wall := e.clock.Now().UnixMilli()
	toWall := func(at kraft.Instant) int64 {
		if at < 0 {
			return -1
		}
		return wall - int64(now-at)
	}
	d := QuorumDescription{LeaderID: NodeID(st.ID), LeaderEpoch: int32(st.Epoch), HighWatermark: int64(st.HighWatermark)}
	for _, r := range st.Replicas {
		rs := ReplicaState{ReplicaID: NodeID(r.Key.ID), DirectoryID: [16]byte(r.Key.DirectoryID), LogEndOffset: int64(r.LogEndOffset),
			LastFetchTimestamp: toWall(r.LastFetch), LastCaughtUpTimestamp: toWall(r.LastCaughtUp)}
		if r.Key.ID == st.ID {
			rs.LogEndOffset = int64(st.LogEndOffset)
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = wall, wall
		}
		if r.Voter {
			d.Voters = append(d.Voters, rs)
		} else {
			d.Observers = append(d.Observers, rs)
		}
	}
	return d, nil
}

// Shutdown stops the node gracefully: a leader first resigns (sending
// EndQuorumEpoch so that a successor is elected without waiting for a
// timeout) and runs on until a successor is known or two election
// timeouts pass; then every goroutine exits, the listener's port and the
// directory lock are released and the log is closed. Submissions still
// waiting fail with [ErrShuttingDown]. ctx bounds the resignation wait.
// It returns the error that stopped the engine, if one did; calling it
// again returns the same result.
func (c *Controller) Shutdown(ctx context.Context) error {
	c.shutdownOnce.Do(func() {
		resigned := make(chan struct{})
		if c.enqueue(ctx, event{call: func(e *engine) { e.resign(resigned) }}) == nil {
			select {
			case <-resigned:
			case <-c.done:
			case <-ctx.Done():
			}
		}
		c.cancel()
		c.wg.Wait()
		c.closeAll()
		c.shutdownErr = c.runErr
		c.rc.logger.LogAttrs(context.Background(), slog.LevelInfo, "controller stopped")
	})
	return c.shutdownErr
}

// closeAll stops the listener and the peers and closes the log and the
// directory lock, in that order. Every goroutine they own has exited when
// it returns.
func (c *Controller) closeAll() {
	if c.cancel != nil {
		c.cancel()
	}
	if c.srv != nil {
		_ = c.srv.Close()
	}
	if c.eng != nil {
		for _, l := range c.eng.peers {
			l.close()
		}
	}
	for i := len(c.closers) - 1; i >= 0; i-- {
		_ = c.closers[i].Close()
	}
	c.closers = nil
}

// forwardOutcome turns the leader's answer to a forwarded submission into
// SubmitChange's result.
func forwardOutcome(resp kmsg.Response, err error, records int) (SubmitResult, error) {
	if errors.Is(err, kerr.UnsupportedVersion) {
		// The peer sender refused the version before sending: the
		// leader does not serve the conditions of SubmitChange v1.
		return SubmitResult{}, fmt.Errorf("raft: forward to the leader: the leader does not serve conditional submissions, nothing was sent: %w", err)
	}
	if err != nil {
		return SubmitResult{}, fmt.Errorf("%w (%w): forward to the leader: %w", ErrOutcomeUnknown, ErrLeaderUnknown, err)
	}
	r, ok := resp.(*wire.SubmitChangeResponse)
	if !ok {
		return SubmitResult{}, fmt.Errorf("raft: forward to the leader: unexpected answer %T", resp)
	}
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	switch err := wire.ConditionForCode(r.ErrorCode, ErrNotLeader, ErrShuttingDown, ErrInvalidChange, ErrImageChanged, ErrUncommittedTail); {
	case err == nil:
		return SubmitResult{Offset: r.BaseOffset, LastOffset: r.BaseOffset + int64(records) - 1, Epoch: r.Epoch}, nil
	case errors.Is(err, ErrNotLeader):
		if r.LeaderID < 0 {
			return SubmitResult{}, ErrLeaderUnknown
		}
		return SubmitResult{}, &NotLeaderError{LeaderID: NodeID(r.LeaderID), Epoch: r.LeaderEpoch}
	case errors.Is(err, ErrShuttingDown):
		return SubmitResult{}, fmt.Errorf("%w: the leader is shutting down", ErrLeaderUnknown)
	case errors.Is(err, ErrInvalidChange), errors.Is(err, ErrImageChanged), errors.Is(err, ErrUncommittedTail):
		// The leader's message starts with the condition's own text.
		return SubmitResult{}, fmt.Errorf("%w: %s", err, strings.TrimPrefix(msg, err.Error()+": "))
	default:
		return SubmitResult{}, fmt.Errorf("raft: forwarded submission failed on the leader: %w: %s", err, msg)
	}
}

// submitAnswer is the leader's SubmitChange response for a local outcome.
func submitAnswer(req *wire.SubmitChangeRequest, res SubmitResult, err error) *wire.SubmitChangeResponse {
	resp := req.ResponseKind().(*wire.SubmitChangeResponse)
	if err == nil {
		resp.BaseOffset, resp.Epoch = res.Offset, res.Epoch
		return resp
	}
	resp.ErrorCode, resp.LeaderID, resp.LeaderEpoch, resp.ErrorMessage = errorAnswer(err)
	return resp
}

// errorAnswer maps the error of a private RPC (SubmitChange, ReadImage) to
// the Kafka code of its answer, the leader hint of a NotLeaderError (-1
// and -1 otherwise) and the message: the code of the runtime condition
// err matches (wire.CodeForCondition: NOT_LEADER_OR_FOLLOWER for
// NotLeaderError and ErrLeaderUnknown, BROKER_NOT_AVAILABLE for
// ErrShuttingDown, INVALID_REQUEST for ErrInvalidChange,
// REQUEST_TIMED_OUT for ErrReadTimeout, ...), UNKNOWN_SERVER_ERROR for
// any other error, even one that wraps a Kafka error.
func errorAnswer(err error) (code int16, leaderID, leaderEpoch int32, msg *string) {
	text := err.Error()
	leaderID, leaderEpoch, msg = -1, -1, &text
	code, ok := wire.CodeForCondition(err)
	if !ok {
		code = kerr.UnknownServerError.Code
	}
	if nl, ok := errors.AsType[*NotLeaderError](err); ok {
		leaderID, leaderEpoch = int32(nl.LeaderID), nl.Epoch
	}
	return code, leaderID, leaderEpoch, msg
}
