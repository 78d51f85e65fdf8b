package transport

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// maxCreationDelay is the longest an accept is delayed for a connection
// creation rate quota: Kafka caps the delay at the quota window,
// quota.window.size.seconds (1 s), so that a limit below one connection
// a second acts as one a second (KIP-612).
const maxCreationDelay = time.Second

// CreationRate is a connection creation rate quota (KIP-612):
// max.connection.creation.rate node-wide, shared by every listener, or
// listener.name.<listener>.max.connection.creation.rate for one listener.
// A listener records each connection it accepts in its quotas and, when
// one is over its rate, holds that connection, and with it every later
// accept, for the time that brings it back within the rate, at most a
// second, as Kafka's ConnectionQuotas throttles its acceptor. Nothing is refused; connections wait in the
// accept queue meanwhile.
//
// The rate is kept as a bucket of one second's worth of connections
// (at least one), refilled continuously: a burst of up to the rate is
// accepted at once, and the next connections are spread at the rate.
// Kafka measures the rate over 11 one-second samples and so lets a larger
// burst through before it delays; this quota is never looser. Its methods
// are safe for concurrent use.
type CreationRate struct {
	rate, burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// NewCreationRate returns a quota of perSecond connections a second, or
// an error when it is negative.
func NewCreationRate(perSecond int) (*CreationRate, error) {
	if perSecond < 0 {
		return nil, fmt.Errorf("transport: connection creation rate %d must not be negative", perSecond)
	}
	burst := math.Max(float64(perSecond), 1)
	return &CreationRate{rate: float64(perSecond), burst: burst, tokens: burst}, nil
}

// record counts a connection accepted at now and returns how long the
// listener must wait before its next accept; 0 when the rate allows it.
func (r *CreationRate) record(now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() {
		r.tokens = math.Min(r.burst, r.tokens+now.Sub(r.last).Seconds()*r.rate)
	}
	r.last = now
	r.tokens--
	if r.tokens >= 0 {
		return 0
	}
	if r.rate == 0 || -r.tokens/r.rate > maxCreationDelay.Seconds() {
		// Past the longest delay the debt is forgiven, as Kafka bounds
		// its throttle time: the next connection waits the cap again.
		r.tokens = -r.rate * maxCreationDelay.Seconds()
		return maxCreationDelay
	}
	return time.Duration(-r.tokens / r.rate * float64(time.Second))
}

// creationDelay records a connection accepted at now in every quota of
// rates and returns the longest delay they ask for.
func creationDelay(rates []*CreationRate, now time.Time) time.Duration {
	var d time.Duration
	for _, r := range rates {
		d = max(d, r.record(now))
	}
	return d
}

// wait waits d, or until ctx ends, and reports whether ctx is still
// live.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
