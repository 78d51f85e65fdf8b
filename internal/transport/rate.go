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

// unrecord takes back the last connection recorded, as Kafka un-records
// a connection it throttles for its address's rate.
func (r *CreationRate) unrecord() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) > 0 {
		r.ring[r.current].count--
	}
}

// IPCreationRates are a node's per-address connection creation rate
// quotas (KIP-612's connection_creation_rate of an ip client quota),
// shared by its listeners. Lookup gives the rate of an address (its own,
// or the default of every address), false for none. A connection over
// its address's rate is not counted toward that rate or the listener's
// and node's ([CreationRate]), is never served, and is closed once the
// delay that would bring the rate back to the limit has passed (at most
// one quota window), as Kafka's acceptor closes it; the listener goes on
// accepting meanwhile. Its methods are safe for concurrent use.
type IPCreationRates struct {
	lookup  func(ip string) (int, bool)
	samples int
	window  time.Duration

	mu        sync.Mutex
	byIP      map[string]*ipRate
	lastSweep time.Time
}

// ipRate is the rate state of one address.
type ipRate struct {
	rate *CreationRate
	last time.Time
}

// NewIPCreationRates returns per-address quotas whose rates lookup gives
// (by the address as [CanonicalIP] writes it), measured over samples
// windows of window each, as [NewCreationRate] takes them.
func NewIPCreationRates(lookup func(ip string) (int, bool), samples int, window time.Duration) (*IPCreationRates, error) {
	if _, err := NewCreationRate(0, samples, window); err != nil {
		return nil, err
	}
	return &IPCreationRates{lookup: lookup, samples: samples, window: window, byIP: map[string]*ipRate{}}, nil
}

// record counts a connection from ip at now and returns how long to hold
// it before closing it, or 0 when its address's rate allows it. A
// throttled connection is taken back from the address's rate.
func (q *IPCreationRates) record(ip string, now time.Time) time.Duration {
	limit, ok := q.lookup(ip)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweep(now)
	if !ok {
		delete(q.byIP, ip)
		return 0
	}
	e := q.byIP[ip]
	if e == nil {
		r, err := NewCreationRate(max(limit, 0), q.samples, q.window)
		if err != nil {
			panic("transport: invariant: the quota window was checked by NewIPCreationRates")
		}
		e = &ipRate{rate: r}
		q.byIP[ip] = e
	}
	// A changed quota keeps the samples, as Kafka updates the sensor's
	// bound in place.
	e.rate.mu.Lock()
	e.rate.bound = float64(max(limit, 0))
	e.rate.mu.Unlock()
	e.last = now
	d := e.rate.record(now)
	if d > 0 {
		e.rate.unrecord()
	}
	return d
}

// sweep forgets, at most once a window, the addresses whose samples have
// all expired: their state is that of an address never seen, so the map
// holds only the addresses of the last samples × window.
func (q *IPCreationRates) sweep(now time.Time) {
	if now.Sub(q.lastSweep) < q.window {
		return
	}
	q.lastSweep = now
	span := time.Duration(q.samples) * q.window
	for ip, e := range q.byIP {
		if now.Sub(e.last) >= span {
			delete(q.byIP, ip)
		}
	}
}

// tracked returns how many addresses q holds state for.
func (q *IPCreationRates) tracked() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.byIP)
}
