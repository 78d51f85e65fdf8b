//go:build krabkalatency

package latency

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"time"
)

// Enabled reports whether this is a measuring build.
const Enabled = true

// Stamp is a point in time in a measuring build, and nothing otherwise.
type Stamp struct{ t time.Time }

// Now returns the current time in a measuring build.
func Now() Stamp { return Stamp{time.Now()} }

// Between records span as lasting from from to to. A zero stamp (a point
// that was not stamped) records nothing.
func Between(span string, from, to Stamp) {
	if from.t.IsZero() || to.t.IsZero() {
		return
	}
	Record(span, to.t.Sub(from.t))
}

// Since records span as lasting from from to now.
func Since(span string, from Stamp) { Between(span, from, Now()) }

// Record records one occurrence of span lasting d.
func Record(span string, d time.Duration) { rec.add(span, int64(d), true) }

// Count records n for series, a quantity per event (a batch's size).
func Count(series string, n int) { rec.add(series, int64(n), false) }

// interval is how often the recorder prints and starts again, at the
// first value recorded after it has passed.
const interval = 5 * time.Second

var rec = &recorder{out: os.Stderr, series: map[string]*series{}}

type series struct {
	values   []int64
	duration bool
}

type recorder struct {
	mu     sync.Mutex
	out    io.Writer
	series map[string]*series
	since  time.Time // when the series began
}

// add records v. The call that finds the interval over prints the
// series and starts new ones: no goroutine of its own, so a measuring
// build has no more goroutines than a normal one.
func (r *recorder) add(name string, v int64, duration bool) {
	now := time.Now()
	r.mu.Lock()
	var full map[string]*series
	switch {
	case r.since.IsZero():
		r.since = now
	case now.Sub(r.since) >= interval:
		full, r.series, r.since = r.series, map[string]*series{}, now
	}
	s := r.series[name]
	if s == nil {
		s = &series{duration: duration}
		r.series[name] = s
	}
	s.values = append(s.values, v)
	r.mu.Unlock()
	if full != nil {
		r.print(full)
	}
}

// print writes one line per series, in name order.
func (r *recorder) print(all map[string]*series) {
	for _, name := range slices.Sorted(maps.Keys(all)) {
		fmt.Fprintln(r.out, line(name, all[name]))
	}
}

// line formats a series: its count, mean and percentiles, as durations
// or as plain numbers.
func line(name string, s *series) string {
	v := s.values
	slices.Sort(v)
	var sum int64
	for _, x := range v {
		sum += x
	}
	n := len(v)
	q := func(p float64) int64 { return v[min(n-1, int(p*float64(n)))] }
	f := func(x int64) string { return fmt.Sprint(x) }
	if s.duration {
		f = func(x int64) string { return time.Duration(x).Round(100 * time.Nanosecond).String() }
	}
	return fmt.Sprintf("latency %-36q n=%d mean=%s p50=%s p90=%s p99=%s p99.9=%s max=%s",
		name, n, f(sum/int64(n)), f(q(0.5)), f(q(0.9)), f(q(0.99)), f(q(0.999)), f(v[n-1]))
}
