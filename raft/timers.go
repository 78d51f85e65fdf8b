package raft

import "time"

// clock is the engine's one source of time. The core's Instant, every
// deadline of the timer table, record timestamps and the retention rule's
// "now" all come from it, so that a host that owns time (a test or the
// simulator) owns all of the engine's time.
type clock interface {
	// Now returns the current time. A production clock's readings carry
	// Go's monotonic clock, so deadlines survive wall-clock steps.
	Now() time.Time
}

// systemClock is the operating system's clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// timerID names one of the engine's deadlines. Each has one owner, which
// alone sets and stops it; the engine loop arms one timer for the earliest.
type timerID uint8

const (
	// timerConsensus is the core's next deadline (kraft.Node.NextDeadline),
	// copied into the table after every turn.
	timerConsensus timerID = iota
	// timerResign is when a resigning node stops waiting for a successor.
	timerResign
	// timerNoOp is when the active leader appends its next NoOpRecord.
	timerNoOp
	// timerVoterChange is when the voter change in flight times out.
	timerVoterChange
	// timerSelfCheck is when a voter or observer of a dynamic quorum next
	// checks its own entry in the voter set.
	timerSelfCheck
	// timerRegistration is when this controller next checks its
	// registration (registration.go).
	timerRegistration
	// timerRetention is when retention next runs.
	timerRetention
	// timerCheckpoint is when the log's recovery point is next
	// checkpointed.
	timerCheckpoint
	// timerReads is the earliest deadline of a linearizable read served
	// over the ReadImage RPC.
	timerReads
	numTimers
)

// timerTable holds the engine's deadlines on one clock. A zero time is a
// stopped timer.
type timerTable struct {
	due [numTimers]time.Time
}

// set arms timer id for at.
func (t *timerTable) set(id timerID, at time.Time) { t.due[id] = at }

// stop disarms timer id.
func (t *timerTable) stop(id timerID) { t.due[id] = time.Time{} }

// armed reports whether timer id is set.
func (t *timerTable) armed(id timerID) bool { return !t.due[id].IsZero() }

// expired reports whether timer id is set and due at now.
func (t *timerTable) expired(id timerID, now time.Time) bool {
	return t.armed(id) && !now.Before(t.due[id])
}

// earliest returns the earliest armed deadline; ok is false when none is.
func (t *timerTable) earliest() (at time.Time, ok bool) {
	for _, d := range t.due {
		if !d.IsZero() && (!ok || d.Before(at)) {
			at, ok = d, true
		}
	}
	return at, ok
}
