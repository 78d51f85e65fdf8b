package raft

import (
	"errors"
	"testing"
	"time"

	"github.com/krabka-go/krabka/metadata"
)

// TestReadQueueExpires: the read queue fails each read with a deadline
// once its deadline has passed, oldest first, and never a read that
// already finished; fail ends the rest.
func TestReadQueueExpires(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var q readQueue
	errs := make([]error, 4)
	calls := make([]int, 4)
	for i := range 4 {
		r := &readWaiter{timeout: time.Second, deadline: t0.Add(time.Duration(4-i) * time.Second)}
		r.fn = func(_ *metadata.Image, err error) { errs[i], calls[i] = err, calls[i]+1 }
		q.track(r)
		if i == 3 {
			r.finish(nil, nil) // answered before its deadline (t0+1s)
		}
	}
	next, ok := q.expire(t0.Add(2 * time.Second))
	if !ok || !next.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("next deadline = %v, %v; want t0+3s", next, ok)
	}
	if calls[3] != 1 || errs[3] != nil {
		t.Errorf("the read answered in time was finished again: %d calls, %v", calls[3], errs[3])
	}
	if !errors.Is(errs[2], ErrReadTimeout) || calls[2] != 1 {
		t.Errorf("the read due at t0+2s: %d calls, %v; want one ErrReadTimeout", calls[2], errs[2])
	}
	if calls[0] != 0 || calls[1] != 0 {
		t.Errorf("reads not yet due were finished: %v", calls)
	}
	q.fail(ErrShuttingDown)
	if !errors.Is(errs[0], ErrShuttingDown) || !errors.Is(errs[1], ErrShuttingDown) {
		t.Errorf("fail left reads unfinished: %v", errs)
	}
	if _, ok := q.expire(t0.Add(time.Hour)); ok {
		t.Error("the queue still holds reads after fail")
	}
}

// TestReadImageRPCTimesOutOnEngineClock: a read barrier served over the
// ReadImage RPC on a leader that cannot reach a majority is answered
// with ErrReadTimeout (REQUEST_TIMED_OUT) once the request timeout has
// passed on the engine's clock, and not before.
func TestReadImageRPCTimesOutOnEngineClock(t *testing.T) {
	sc := newSimCluster(t, 3, 1, simMode{})
	var l *simNode
	for range 20000 {
		if l = sc.leader(); l != nil && l.e.lastStatus.HighWatermark > 0 {
			break
		}
		sc.step()
	}
	if l == nil {
		t.Fatal("no leader")
	}
	for _, n := range sc.nodes {
		n.cut = n != l
	}
	var got error
	answered := false
	r := &readWaiter{forwarded: true, timeout: l.cfg.RequestTimeout}
	r.fn = func(_ *metadata.Image, err error) { got, answered = err, true }
	l.e.handle(event{call: func(e *engine) { e.readImage(r) }})
	sc.settle()
	start := sc.clock.now
	for !answered && sc.clock.now.Sub(start) < 10*l.cfg.RequestTimeout {
		sc.advance()
		sc.settle()
		if !answered || sc.clock.now.Sub(start) >= l.cfg.RequestTimeout {
			continue
		}
		if got == nil || !errors.Is(got, ErrNotLeader) && !errors.Is(got, ErrLeaderUnknown) {
			t.Fatalf("answered after %v, before the request timeout %v: %v", sc.clock.now.Sub(start), l.cfg.RequestTimeout, got)
		}
		return // check-quorum ended the leadership first: a valid answer
	}
	if !answered || !errors.Is(got, ErrReadTimeout) {
		t.Fatalf("after %v: answered %v with %v, want ErrReadTimeout", sc.clock.now.Sub(start), answered, got)
	}
}
