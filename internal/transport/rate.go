package transport

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Kafka's defaults of the quota window (QuotaConfig): quota.window.num
// samples of quota.window.size.seconds each.
const (
	DefaultQuotaWindowNum  = 11
	DefaultQuotaWindowSize = time.Second
)

// CreationRate is a connection creation rate quota (KIP-612):
// max.connection.creation.rate node-wide, shared by every listener, or
// listener.name.<listener>.max.connection.creation.rate for one listener.
// A listener records each connection it accepts in its quotas and, when
// one is over its rate, holds that connection, and with it every later
// accept, for the time that brings the rate back to the limit, at most
// one quota window, as Kafka's ConnectionQuotas throttles its acceptor.
// Nothing is refused; connections wait in the accept queue meanwhile.
//
// The rate is measured as Kafka's Rate sensor measures it: connections
// are counted in samples of one quota window each (quota.window.size.seconds),
// the last quota.window.num of them are kept, and the rate is their
// total over the time they span, counted as at least quota.window.num-1
// whole windows. So a listener that was quiet lets a burst of up to
// (quota.window.num-1) × rate connections through at once (50 at a rate
// of 5 with Kafka's defaults) before it delays, and a rate of 0 delays
// every connection by a whole window. Its methods are safe for concurrent
// use.
type CreationRate struct {
	bound    float64
	windowMs int64
	samples  int

	mu      sync.Mutex
	ring    []rateSample
	current int
}

// rateSample counts the connections of one quota window, from start (in
// Unix milliseconds).
type rateSample struct {
	start int64
	count float64
}

// NewCreationRate returns a quota of perSecond connections a second,
// measured over samples windows of window each, or an error when
// perSecond is negative, samples is below 1 or window below a second.
func NewCreationRate(perSecond, samples int, window time.Duration) (*CreationRate, error) {
	var errs []error
	if perSecond < 0 {
		errs = append(errs, fmt.Errorf("connection creation rate %d must not be negative", perSecond))
	}
	if samples < 1 {
		errs = append(errs, fmt.Errorf("quota window count %d must be at least 1", samples))
	}
	if window < time.Second {
		errs = append(errs, fmt.Errorf("quota window %v must be at least a second", window))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	return &CreationRate{bound: float64(perSecond), windowMs: window.Milliseconds(), samples: samples}, nil
}

// record counts a connection accepted at now and returns how long the
// listener must hold it; 0 when the rate allows it. As Kafka's Sensor
// does, it counts the connection first and then checks the rate.
func (r *CreationRate) record(now time.Time) time.Duration {
	ms := now.UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) == 0 {
		r.ring = append(r.ring, rateSample{start: ms})
	}
	if prev := r.ring[r.current].start; ms-prev >= r.windowMs {
		// The new sample starts on the grid of windows the previous
		// one began, as Kafka's SampledStat aligns it.
		r.advance(ms - (ms-(prev+r.windowMs))%r.windowMs)
	}
	r.ring[r.current].count++

	r.purge(ms)
	var total float64
	oldest := r.ring[0].start
	for _, s := range r.ring {
		total += s.count
		oldest = min(oldest, s.start)
	}
	elapsed := ms - oldest
	if full, least := elapsed/r.windowMs, int64(r.samples-1); full < least {
		elapsed += (least - full) * r.windowMs
	}
	elapsed = max(elapsed, 1)
	rate := total / (float64(elapsed) / 1000)
	if rate <= r.bound {
		return 0
	}
	limit := time.Duration(r.windowMs) * time.Millisecond
	delay := (rate - r.bound) / r.bound * float64(elapsed) // +Inf at a bound of 0
	if delay >= float64(r.windowMs) {
		return limit
	}
	return time.Duration(math.Round(delay)) * time.Millisecond
}

// advance starts a new sample at ms, reusing the oldest slot once the
// ring holds one sample per window.
func (r *CreationRate) advance(ms int64) {
	r.current = (r.current + 1) % r.samples
	if r.current >= len(r.ring) {
		r.ring = append(r.ring, rateSample{start: ms})
		return
	}
	r.ring[r.current] = rateSample{start: ms}
}

// purge empties the samples older than the whole measured span, as if
// they had started at ms.
func (r *CreationRate) purge(ms int64) {
	expire := int64(r.samples) * r.windowMs
	for i := range r.ring {
		if ms-r.ring[i].start >= expire {
			r.ring[i] = rateSample{start: ms}
		}
	}
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
