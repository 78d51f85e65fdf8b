package raft

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/metadata"
)

// manualClock is a clock the test moves.
type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time { return c.now }

// manualHost drives one engine on the test's goroutine over the test's
// time: it holds the engine's background tasks and runs them in the
// order they were handed over, between turns.
type manualHost struct {
	t     *testing.T
	c     *Controller
	e     *engine
	clock *manualClock
	tasks []func(context.Context)
	done  bool
}

// startManual starts a node whose engine the returned host drives.
func startManual(t *testing.T, cfg Config, seed uint64) *manualHost {
	t.Helper()
	h := &manualHost{t: t, clock: &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	c, err := start(t.Context(), cfg, startOptions{
		clock: h.clock,
		seed:  seed,
		host:  func(task func(context.Context)) { h.tasks = append(h.tasks, task) },
	})
	if err != nil {
		t.Fatal(err)
	}
	h.c, h.e = c, c.eng
	t.Cleanup(h.finish)
	return h
}

// finish ends the engine as its production host would, then the node.
func (h *manualHost) finish() {
	if h.done {
		return
	}
	h.done = true
	for len(h.tasks) > 0 {
		h.runTask()
	}
	h.e.stop(nil)
	close(h.c.done)
	h.c.cancel()
	h.c.wg.Wait()
	h.c.closeAll()
}

func (h *manualHost) runTask() {
	task := h.tasks[0]
	h.tasks = h.tasks[1:]
	task(h.t.Context())
}

// settle runs turns at the current time until the engine has nothing
// left to do: no task, no fsync outcome, no queued input.
func (h *manualHost) settle() {
	h.t.Helper()
	for range 10000 {
		if done, err := h.e.settle(); done || err != nil {
			h.t.Fatalf("engine stopped: %v", err)
		}
		select {
		case out := <-h.e.syncDone:
			if err := h.e.synced(out); err != nil {
				h.t.Fatal(err)
			}
			continue
		case ev := <-h.e.inbox:
			h.e.handle(ev)
			h.e.takeInbox()
			continue
		default:
		}
		if len(h.tasks) == 0 {
			return
		}
		h.runTask()
	}
	h.t.Fatal("the engine does not settle")
}

// advance moves the clock to the engine's next deadline and runs the turn
// it is due for.
func (h *manualHost) advance() {
	h.t.Helper()
	at, ok := h.e.wake()
	if !ok {
		h.t.Fatal("the engine has no deadline")
	}
	if at.After(h.clock.now) {
		h.clock.now = at
	}
	h.e.tick()
	h.settle()
}

// until advances the clock, deadline by deadline, until cond holds.
func (h *manualHost) until(what string, cond func() bool) {
	h.t.Helper()
	h.settle()
	for range 10000 {
		if cond() {
			return
		}
		h.advance()
	}
	h.t.Fatalf("never %s", what)
}

// runHostScenario elects the one voter, commits a submission and lets ten
// seconds pass on the host's clock; it returns the committed log.
func runHostScenario(t *testing.T) (log []byte, noOps int64) {
	cfg := ForTests(1, t.TempDir())
	cfg.MaxIdleInterval = 500 * time.Millisecond
	h := startManual(t, cfg, 7)
	h.until("leader", func() bool { return h.e.lastStatus.Role == kraft.Leader })

	var res SubmitResult
	var subErr error
	answered := false
	s := &submission{records: []metadata.Record{metadataVersionRecord()}, complete: func(r SubmitResult, err error) {
		res, subErr, answered = r, err, true
	}}
	enc, err := metadata.Encode(s.records[0])
	if err != nil {
		t.Fatal(err)
	}
	s.encoded = [][]byte{enc}
	h.e.handle(event{submit: s})
	h.until("answered", func() bool { return answered })
	if subErr != nil {
		t.Fatalf("submission: %v", subErr)
	}

	from, end := h.clock.now, h.e.lastStatus.LogEndOffset
	h.until("ten seconds later", func() bool { return h.clock.now.Sub(from) >= 10*time.Second })
	noOps = int64(h.e.lastStatus.LogEndOffset - end)
	hw := int64(h.e.applier.applied)
	if hw <= res.LastOffset {
		t.Fatalf("applied %d, want past the submission at %d", hw, res.LastOffset)
	}
	h.finish()
	return readCommitted(t, cfg, hw), noOps
}

// TestEngineDrivenByHost: a host that owns time and scheduling drives the
// production engine turn by turn on one goroutine: the one voter elects
// itself and commits a submission, and its idle leader appends a
// NoOpRecord every metadata.max.idle.interval.ms of the host's time,
// although no real time passes. Two runs with the same seed write the same
// bytes.
func TestEngineDrivenByHost(t *testing.T) {
	first, noOps := runHostScenario(t)
	if noOps < 19 || noOps > 21 {
		t.Errorf("%d NoOpRecords in ten seconds of the host's time, want 20 (one every 500 ms)", noOps)
	}
	second, _ := runHostScenario(t)
	if !bytes.Equal(first, second) {
		t.Errorf("two runs with one seed wrote different logs (%d and %d bytes)", len(first), len(second))
	}
}
