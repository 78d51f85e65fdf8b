// Package gctune keeps the Go collector from running too often on a
// node whose live heap is small.
//
// A controller's live heap is its metadata image and its buffers: a few
// MiB for most clusters. The collector starts a cycle when the heap has
// grown by GOGC percent of the live heap, but never below a minimum goal
// of 4 MiB at the default GOGC of 100. A leader taking tens of thousands
// of writes a second allocates a few KB per write (frames, decoded
// requests, answers), so at a live heap of 1 MiB it collected about 45
// times a second, each cycle with its stop-the-world pauses, its mark
// assists and its background worker taking CPU from the request path
// (docs/decisions.md, "The binary gives the collector a heap floor").
//
// [Start] gives the heap a floor of growth instead: after every cycle it
// sets the GC percent so that the next cycle starts when the heap has
// grown by the larger of GOGC percent of the live heap and the floor.
// A large heap (a big cluster's image) is collected exactly as with
// GOGC alone; a small one grows by the floor, a few MiB of memory
// traded for a collector that runs a few times less often.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the heap growth [Start] allows between cycles however
// small the live heap: measured on a 3-node quorum at 128 concurrent
// writers, a floor of 16 MiB (GOGC=400 at a live heap under 4 MiB) made
// the leader collect 7 times less often, and cut the p99 write latency
// by a quarter, for about 12 MiB more memory per node.
const DefaultFloor = 16 << 20

// minHeap is the Go runtime's minimum heap goal at GOGC=100, which
// scales with the GC percent.
const minHeap = 4 << 20

// Percent returns the GC percent that makes the cycle after one that
// left live bytes start once the heap has grown by the larger of
// base percent of live and floor. base is GOGC's value (100 by default).
// The runtime's goal is the larger of live × (1 + percent/100) and its
// minimum heap, 4 MiB × percent/100, so a live heap under 4 MiB is
// measured against that minimum instead.
func Percent(live uint64, base int, floor uint64) int {
	growth := max(live*uint64(base)/100, floor)
	p := int(100 * growth / max(live, minHeap))
	return max(p, base)
}

// Start tunes the collector after every cycle, as [Percent] says, with
// the GC percent in force at the first Start as base, until stop is
// called. Nodes of one process share the tuner: the first Start starts
// it (with its floor), the last stop ends it and puts base back. Start
// does nothing when the GOGC environment variable is set (the operator
// has chosen) or the collector is off.
func Start(floor uint64) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	users++
	if users == 1 {
		if base := gcPercent(); base >= 0 {
			active = &tuner{base: base, floor: floor, current: base}
			active.sample[0].Name = liveMetric
			active.tune()
			active.arm()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			users--
			if users == 0 && active != nil {
				active.stop()
				active = nil
			}
		})
	}
}

var (
	mu     sync.Mutex
	users  int    // Starts not yet stopped
	active *tuner // nil when users is 0, or the collector was off
)

const (
	liveMetric    = "/gc/heap/live:bytes"
	percentMetric = "/gc/gogc:percent"
)

// gcPercent returns the GC percent in force.
func gcPercent() int {
	s := []metrics.Sample{{Name: percentMetric}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

type tuner struct {
	base  int
	floor uint64

	mu      sync.Mutex
	stopped bool
	current int
	sample  [1]metrics.Sample
}

// sentinel is collected in every cycle; its cleanup tunes and arms the
// next one. It is larger than the runtime's tiny allocations, which are
// packed together and may outlive the cycle.
type sentinel struct{ _ [32]byte }

func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets the percent for the live heap the last cycle left. It
// reports false once stopped.
func (t *tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return false
	}
	if p := Percent(t.sample[0].Value.Uint64(), t.base, t.floor); p != t.current {
		debug.SetGCPercent(p)
		t.current = p
	}
	return true
}

// stop puts the base percent back; the armed cleanup then ends the
// chain.
func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	debug.SetGCPercent(t.base)
}
