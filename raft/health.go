package raft

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Health: what the engine publishes for [Controller.Live] and
// [Controller.Ready], read without waiting for the engine, so that a
// wedged engine is seen as one. docs/operations.md defines both checks.

// healthState is written by the engine and read by the checks.
type healthState struct {
	// leaderHW is the high watermark of the last Fetch answer a leader
	// gave this node, leaderFetchAt when it arrived (Unix nanoseconds; 0
	// never) and leaderFetchEpoch that leader's epoch.
	leaderHW         atomic.Int64
	leaderFetchAt    atomic.Int64
	leaderFetchEpoch atomic.Int32
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
// answer: one without an error comes from the leader.
func (e *engine) noteFetchAnswer(r *kraft.FetchResponse) {
	if r.Error != kraft.CodeNone {
		return
	}
	now := e.clock.Now().UnixNano()
	e.pub.health.leaderHW.Store(int64(r.HighWatermark))
	e.pub.health.leaderFetchEpoch.Store(int32(r.Leader.Epoch))
	e.pub.health.leaderFetchAt.Store(now)
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

// ErrNotLive and ErrNotReady are what [Controller.Live] and
// [Controller.Ready] wrap when the check fails.
var (
	ErrNotLive  = errors.New("raft: not live")
	ErrNotReady = errors.New("raft: not ready")
)

// Live reports whether the engine runs and is not stuck: it has not
// stopped, and it has not been working on one turn (an input, a Ready
// with its writes and fsync) for longer than maxTurn. An engine that
// waits for input is live however long it waits. A failing check wraps
// [ErrNotLive].
func (c *Controller) Live(maxTurn time.Duration) error {
	select {
	case <-c.done:
		return fmt.Errorf("%w: the engine stopped: %v", ErrNotLive, stopReason(c.runErr))
	default:
	}
	if since := c.eng.pub.busySince.Load(); since != 0 {
		if d := time.Since(time.Unix(0, since)); d > maxTurn {
			return fmt.Errorf("%w: the engine has been in one turn for %v (bound %v)", ErrNotLive, d.Round(time.Millisecond), maxTurn)
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

// Ready reports whether this node serves an up-to-date quorum: it is
// live (with maxTurn, see [Controller.Live]) and knows a leader of its
// epoch, and
//
//   - as the leader, has committed in its epoch (it takes submissions:
//     Kafka's active controller);
//   - otherwise, had a Fetch answer from the leader of its epoch within
//     controller.quorum.fetch.timeout.ms, and its high watermark is at
//     most maxLag offsets below that answer's;
//
// and, when metadata.max.idle.interval.ms is above 0 (the leader then
// commits a NoOpRecord at that interval), the high watermark it knows of
// (its own on the leader, the leader's answer's elsewhere) moved within
// controller.quorum.fetch.timeout.ms plus that interval: a quorum that
// stops committing is not ready even while its leader answers. A failing
// check wraps [ErrNotReady] and says why.
func (c *Controller) Ready(maxTurn time.Duration, maxLag int64) error {
	if err := c.Live(maxTurn); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	e := c.eng
	q := c.QuorumState()
	h := &e.pub.health
	now := e.clock.Now()
	fetchTimeout := e.rc.core.FetchTimeout
	switch {
	case q.LeaderID < 0:
		return fmt.Errorf("%w: no leader known in epoch %d", ErrNotReady, q.Epoch)
	case q.Role == RoleLeader:
		if h.activeEpoch.Load() != q.Epoch {
			return fmt.Errorf("%w: leader of epoch %d has not committed in its epoch yet", ErrNotReady, q.Epoch)
		}
	default:
		at := h.leaderFetchAt.Load()
		if at == 0 || h.leaderFetchEpoch.Load() != q.Epoch {
			return fmt.Errorf("%w: no Fetch answer from leader %d in epoch %d yet", ErrNotReady, q.LeaderID, q.Epoch)
		}
		if d := now.Sub(time.Unix(0, at)); d > fetchTimeout {
			return fmt.Errorf("%w: last Fetch answer from leader %d was %v ago (controller.quorum.fetch.timeout.ms %v)",
				ErrNotReady, q.LeaderID, d.Round(time.Millisecond), fetchTimeout)
		}
		if lhw := h.leaderHW.Load(); q.HighWatermark < lhw-maxLag {
			return fmt.Errorf("%w: high watermark %d is %d behind the leader's %d (bound %d)",
				ErrNotReady, q.HighWatermark, lhw-q.HighWatermark, lhw, maxLag)
		}
	}
	if idle := e.rc.maxIdle; idle > 0 {
		bound := fetchTimeout + idle
		if at := h.knownHWAt.Load(); at != 0 && now.Sub(time.Unix(0, at)) > bound {
			return fmt.Errorf("%w: the high watermark %d has not moved for %v (bound %v)",
				ErrNotReady, h.knownHW.Load(), now.Sub(time.Unix(0, at)).Round(time.Millisecond), bound)
		}
	}
	return nil
}
