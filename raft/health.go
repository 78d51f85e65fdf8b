package raft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Health: what the engine publishes for [Controller.LiveChecks] and
// [Controller.ReadyChecks], read without waiting for the engine, so that
// a wedged engine is seen as one. docs/operations.md defines each check.

// healthState is written by the engine and read by the checks.
type healthState struct {
	// leaderHW is the high watermark of the last Fetch answer a leader
	// gave this node, leaderFetchAt when it arrived (Unix nanoseconds; 0
	// never) and leaderFetchEpoch that leader's epoch.
	leaderHW         atomic.Int64
	leaderFetchAt    atomic.Int64
	leaderFetchEpoch atomic.Int32
	// caughtUpAt is when this node last had a Fetch answer from the
	// leader that left its log at or past that answer's high watermark
	// (Unix nanoseconds; 0 never), and caughtUpEpoch that leader's
	// epoch: the follower's side of Kafka's lastCaughtUpTimestamp.
	caughtUpAt    atomic.Int64
	caughtUpEpoch atomic.Int32
	// knownHW is the newest high watermark this node knows of (its own on
	// the leader, the leader's answer's on the others) and knownHWAt when
	// it last changed.
	knownHW   atomic.Int64
	knownHWAt atomic.Int64
	// activeEpoch is the epoch in which this node leads and has
	// committed, -1 when it does not.
	activeEpoch atomic.Int32
}

// noteFetchAnswer records the leader's high watermark from a Fetch
// answer: one without an error comes from the leader. The answer
// catches this node up when it asks for no truncation or snapshot and
// its records (or, with none, this node's log) end at or past its high
// watermark.
func (e *engine) noteFetchAnswer(r *kraft.FetchResponse) {
	if r.Error != kraft.CodeNone {
		return
	}
	now := e.clock.Now().UnixNano()
	h := &e.pub.health
	h.leaderHW.Store(int64(r.HighWatermark))
	h.leaderFetchEpoch.Store(int32(r.Leader.Epoch))
	h.leaderFetchAt.Store(now)
	if r.DivergingEpoch == kraft.NoOffsetAndEpoch && r.SnapshotID == kraft.NoOffsetAndEpoch {
		end := kraft.Offset(e.log.LogEndOffset())
		if n := len(r.Batches); n > 0 {
			end = r.Batches[n-1].LastOffset + 1
		}
		if end >= r.HighWatermark {
			h.caughtUpEpoch.Store(int32(r.Leader.Epoch))
			h.caughtUpAt.Store(now)
		}
	}
	e.noteKnownHW(int64(r.HighWatermark), now)
}

// publishHealth publishes what the checks read of st, this turn's Brief.
func (e *engine) publishHealth(st kraft.Status) {
	h := &e.pub.health
	active := int32(-1)
	if st.Role == kraft.Leader && e.caughtUpEpoch == st.Epoch {
		active = int32(st.Epoch)
	}
	if h.activeEpoch.Load() != active {
		h.activeEpoch.Store(active)
	}
	if st.Role == kraft.Leader {
		e.noteKnownHW(int64(st.HighWatermark), 0)
	}
}

// noteKnownHW records hw as the newest high watermark known, and when it
// moved (now, Unix nanoseconds; 0 reads the clock only if it moved).
func (e *engine) noteKnownHW(hw, now int64) {
	h := &e.pub.health
	if h.knownHW.Load() == hw && h.knownHWAt.Load() != 0 {
		return
	}
	if now == 0 {
		now = e.clock.Now().UnixNano()
	}
	h.knownHW.Store(hw)
	h.knownHWAt.Store(now)
}

// The names of the health checks, as /livez and /readyz list them.
const (
	// CheckEngineLoop: the engine has not stopped, and has not been in
	// one turn for longer than [HealthOptions.MaxTurn].
	CheckEngineLoop = "engine-loop"
	// CheckFatalFault: no fatal fault stopped the node ([Controller.Err]
	// is nil).
	CheckFatalFault = "fatal-fault"
	// CheckLeader: a leader of the current epoch is known; on the leader
	// itself, it has committed in its epoch (Kafka's active controller).
	CheckLeader = "leader"
	// CheckCaughtUp: a follower or observer last caught up with the
	// leader of its epoch within controller.quorum.fetch.timeout.ms, and
	// its high watermark trails the leader's by at most
	// [HealthOptions.MaxLag]. The leader is caught up by definition.
	CheckCaughtUp = "caught-up"
	// CheckCommitting: with metadata.max.idle.interval.ms above 0, the
	// high watermark this node knows of moved within
	// controller.quorum.fetch.timeout.ms plus that interval.
	CheckCommitting = "committing"
	// CheckLinearizableRead: a [Controller.ReadImage] completes within
	// [HealthOptions.ReadTimeout].
	CheckLinearizableRead = "linearizable-read"
)

var (
	liveCheckList  = []string{CheckEngineLoop, CheckFatalFault}
	readyCheckList = []string{CheckEngineLoop, CheckFatalFault, CheckLeader, CheckCaughtUp, CheckCommitting, CheckLinearizableRead}
)

// LiveCheckNames returns the names of the checks [Controller.LiveChecks]
// runs, in the order it runs them.
func LiveCheckNames() []string { return slices.Clone(liveCheckList) }

// ReadyCheckNames returns the names of the checks
// [Controller.ReadyChecks] runs, in the order it runs them.
func ReadyCheckNames() []string { return slices.Clone(readyCheckList) }

// ErrNotLive and ErrNotReady are what [Controller.Live] and
// [Controller.Ready] wrap when a check fails; ErrUnknownCheck is what
// [Controller.LiveChecks] and [Controller.ReadyChecks] wrap when asked to
// exclude a check they do not run.
var (
	ErrNotLive      = errors.New("raft: not live")
	ErrNotReady     = errors.New("raft: not ready")
	ErrUnknownCheck = errors.New("raft: unknown health check")
)

// HealthOptions bound the health checks.
type HealthOptions struct {
	// MaxTurn bounds one turn of the engine (an input, a Ready with its
	// writes and fsync) for [CheckEngineLoop].
	MaxTurn time.Duration
	// MaxLag is how many offsets a follower's high watermark may trail
	// the leader's for [CheckCaughtUp].
	MaxLag int64
	// ReadTimeout bounds the linearizable read of
	// [CheckLinearizableRead].
	ReadTimeout time.Duration
	// Exclude names checks not to run.
	Exclude []string
}

// DefaultHealthOptions returns the bounds krabka server-start uses: a
// turn of 30 s (far above an fsync or a snapshot install of a healthy
// disk), a lag of 1000 offsets and a read of 2 s.
func DefaultHealthOptions() HealthOptions {
	return HealthOptions{MaxTurn: 30 * time.Second, MaxLag: 1000, ReadTimeout: 2 * time.Second}
}

// validate reports every bound that is out of range, and every excluded
// name that is not one of names.
func (o HealthOptions) validate(names []string) error {
	var errs []error
	if o.MaxTurn <= 0 {
		errs = append(errs, fmt.Errorf("raft: HealthOptions.MaxTurn (%v) must be positive", o.MaxTurn))
	}
	if o.MaxLag < 0 {
		errs = append(errs, fmt.Errorf("raft: HealthOptions.MaxLag (%d) must not be negative", o.MaxLag))
	}
	if o.ReadTimeout <= 0 {
		errs = append(errs, fmt.Errorf("raft: HealthOptions.ReadTimeout (%v) must be positive", o.ReadTimeout))
	}
	for _, x := range o.Exclude {
		if !slices.Contains(names, x) {
			errs = append(errs, fmt.Errorf("%w %q (checks: %s)", ErrUnknownCheck, x, strings.Join(names, ", ")))
		}
	}
	return errors.Join(errs...)
}

// CheckResult is the outcome of one health check: Err is nil when it
// passed, and says why when it failed.
type CheckResult struct {
	Name string
	Err  error
}

// failures joins the errors of the failed checks in rs under sentinel,
// nil when every check passed.
func failures(sentinel error, rs []CheckResult) error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name, r.Err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", sentinel, errors.Join(errs...))
}

// LiveChecks runs the liveness checks ([LiveCheckNames]) but those opts
// excludes, in order, and returns each one's result. They never depend
// on the quorum, and never wait for the engine. It fails only for opts
// out of range or an excluded name it does not know (wrapping
// [ErrUnknownCheck]).
func (c *Controller) LiveChecks(opts HealthOptions) ([]CheckResult, error) {
	if err := opts.validate(liveCheckList); err != nil {
		return nil, err
	}
	var rs []CheckResult
	for _, name := range liveCheckList {
		if !slices.Contains(opts.Exclude, name) {
			rs = append(rs, CheckResult{Name: name, Err: c.runCheck(context.Background(), name, opts)})
		}
	}
	return rs, nil
}

// ReadyChecks runs the readiness checks ([ReadyCheckNames]) but those
// opts excludes, in order, and returns each one's result. Only
// [CheckLinearizableRead] waits, at most opts.ReadTimeout (or until ctx
// ends); concurrent calls share one read in flight rather than starting
// one each. It fails only for opts out of range or an excluded name it
// does not know (wrapping [ErrUnknownCheck]).
func (c *Controller) ReadyChecks(ctx context.Context, opts HealthOptions) ([]CheckResult, error) {
	if err := opts.validate(readyCheckList); err != nil {
		return nil, err
	}
	var rs []CheckResult
	for _, name := range readyCheckList {
		if !slices.Contains(opts.Exclude, name) {
			rs = append(rs, CheckResult{Name: name, Err: c.runCheck(ctx, name, opts)})
		}
	}
	return rs, nil
}

// Live reports whether the engine runs and is not stuck (the checks of
// [Controller.LiveChecks] with maxTurn): a failing check wraps
// [ErrNotLive]. An engine that waits for input is live however long it
// waits.
func (c *Controller) Live(maxTurn time.Duration) error {
	opts := DefaultHealthOptions()
	opts.MaxTurn = maxTurn
	rs, err := c.LiveChecks(opts)
	if err != nil {
		return err
	}
	return failures(ErrNotLive, rs)
}

// Ready reports whether this node serves an up-to-date quorum (the
// checks of [Controller.ReadyChecks] with opts): every failing check is
// named in the error, which wraps [ErrNotReady].
func (c *Controller) Ready(ctx context.Context, opts HealthOptions) error {
	rs, err := c.ReadyChecks(ctx, opts)
	if err != nil {
		return err
	}
	return failures(ErrNotReady, rs)
}

// runCheck runs the check called name.
func (c *Controller) runCheck(ctx context.Context, name string, opts HealthOptions) error {
	switch name {
	case CheckEngineLoop:
		return c.checkEngineLoop(opts.MaxTurn)
	case CheckFatalFault:
		return c.Err()
	case CheckLeader:
		return c.checkLeader()
	case CheckCaughtUp:
		return c.checkCaughtUp(opts.MaxLag)
	case CheckCommitting:
		return c.checkCommitting()
	case CheckLinearizableRead:
		return c.probeRead(ctx, opts.ReadTimeout)
	}
	panic("raft: invariant: health check " + name + " has no implementation")
}

// checkEngineLoop fails once the engine stopped, or while it has been in
// one turn for longer than maxTurn.
func (c *Controller) checkEngineLoop(maxTurn time.Duration) error {
	select {
	case <-c.done:
		return fmt.Errorf("the engine stopped: %w", stopReason(c.runErr))
	default:
	}
	if since := c.eng.pub.busySince.Load(); since != 0 {
		if d := time.Since(time.Unix(0, since)); d > maxTurn {
			return fmt.Errorf("the engine has been in one turn for %v (bound %v)", d.Round(time.Millisecond), maxTurn)
		}
	}
	return nil
}

// stopReason is why the engine stopped: err, or a shutdown when it
// stopped cleanly.
func stopReason(err error) error {
	if err == nil {
		return ErrShuttingDown
	}
	return err
}

// checkLeader fails when no leader is known in the current epoch, and on
// a leader that has not committed in its epoch yet.
func (c *Controller) checkLeader() error {
	q := c.QuorumState()
	switch {
	case q.LeaderID < 0:
		return fmt.Errorf("no leader known in epoch %d", q.Epoch)
	case q.Role == RoleLeader && c.eng.pub.health.activeEpoch.Load() != q.Epoch:
		return fmt.Errorf("leader of epoch %d has not committed in its epoch yet", q.Epoch)
	}
	return nil
}

// checkCaughtUp fails on a follower or observer that has not caught up
// with the leader of its epoch within controller.quorum.fetch.timeout.ms
// (Kafka's lastCaughtUpTimestamp, the bound Strimzi's roller holds a
// voter to), or whose high watermark trails the leader's by more than
// maxLag.
func (c *Controller) checkCaughtUp(maxLag int64) error {
	q := c.QuorumState()
	if q.Role == RoleLeader {
		return nil
	}
	if q.LeaderID < 0 {
		return fmt.Errorf("no leader known in epoch %d", q.Epoch)
	}
	h := &c.eng.pub.health
	at := h.caughtUpAt.Load()
	if at == 0 || h.caughtUpEpoch.Load() != q.Epoch {
		return fmt.Errorf("not caught up with leader %d in epoch %d yet", q.LeaderID, q.Epoch)
	}
	fetchTimeout := c.eng.rc.core.FetchTimeout
	if d := c.eng.clock.Now().Sub(time.Unix(0, at)); d > fetchTimeout {
		return fmt.Errorf("last caught up with leader %d %v ago (controller.quorum.fetch.timeout.ms %v)",
			q.LeaderID, d.Round(time.Millisecond), fetchTimeout)
	}
	if lhw := h.leaderHW.Load(); h.leaderFetchEpoch.Load() == q.Epoch && q.HighWatermark < lhw-maxLag {
		return fmt.Errorf("high watermark %d is %d behind the leader's %d (bound %d)",
			q.HighWatermark, lhw-q.HighWatermark, lhw, maxLag)
	}
	return nil
}

// checkCommitting fails, when metadata.max.idle.interval.ms is above 0
// (the leader then commits a NoOpRecord at that interval), once the high
// watermark this node knows of stood still for longer than
// controller.quorum.fetch.timeout.ms plus that interval: a quorum that
// stops committing is not ready even while its leader answers.
func (c *Controller) checkCommitting() error {
	e := c.eng
	idle := e.rc.maxIdle
	if idle <= 0 {
		return nil
	}
	h := &e.pub.health
	bound := e.rc.core.FetchTimeout + idle
	if at := h.knownHWAt.Load(); at != 0 {
		if d := e.clock.Now().Sub(time.Unix(0, at)); d > bound {
			return fmt.Errorf("the high watermark %d has not moved for %v (bound %v)", h.knownHW.Load(), d.Round(time.Millisecond), bound)
		}
	}
	return nil
}

// readProbe is one linearizable read run for the health checks; done is
// closed once err is set.
type readProbe struct {
	done chan struct{}
	err  error
}

// readProbes lets one health-check read be in flight at a time: cur is
// the read in flight (nil: none); started counts the reads run and
// shared the checks that took the result of one already in flight.
type readProbes struct {
	cur     atomic.Pointer[readProbe]
	started atomic.Int64
	shared  atomic.Int64
}

// probeRead runs a linearizable read bounded by timeout, or takes the
// result of the one in flight, so that a storm of probes costs the
// quorum one read at a time. The read runs in the first caller's
// goroutine, bounded by timeout alone (its caller leaving does not cut
// the others' read short); a caller whose ctx ends stops waiting.
func (c *Controller) probeRead(ctx context.Context, timeout time.Duration) error {
	for {
		if p := c.probes.cur.Load(); p != nil {
			c.probes.shared.Add(1)
			select {
			case <-p.done:
				return p.err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		p := &readProbe{done: make(chan struct{})}
		if !c.probes.cur.CompareAndSwap(nil, p) {
			continue
		}
		c.probes.started.Add(1)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		_, err := c.ReadImage(rctx)
		cancel()
		if errors.Is(err, ErrReadTimeout) {
			err = fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		p.err = err
		c.probes.cur.Store(nil)
		close(p.done)
		return err
	}
}
