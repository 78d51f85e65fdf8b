package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// eventually runs collections until the GC percent is want: a cycle's
// cleanups run after it, on the runtime's cleanup goroutine.
func eventually(t *testing.T, want int, what string) {
	t.Helper()
	for range 200 {
		runtime.GC()
		if gcPercent() == want {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s: GC percent %d, want %d", what, gcPercent(), want)
}

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live  uint64
		base  int
		floor uint64
		want  int
	}{
		{1 * mib, 100, 16 * mib, 400},  // under the runtime's 4 MiB minimum: a 16 MiB goal
		{4 * mib, 100, 16 * mib, 400},  // 4 + 16 = 20 MiB
		{8 * mib, 100, 16 * mib, 200},  // 8 + 16 = 24 MiB
		{16 * mib, 100, 16 * mib, 100}, // the floor and GOGC agree
		{1 << 30, 100, 16 * mib, 100},  // a large heap: GOGC alone
		{1 << 30, 200, 16 * mib, 200},  // never below the base
		{8 * mib, 50, 16 * mib, 200},   // a low base still gets the floor
		{1 * mib, 100, 0, 100},         // no floor: GOGC alone
		{0, 100, 16 * mib, 400},        // nothing live yet
	} {
		if got := Percent(c.live, c.base, c.floor); got != c.want {
			t.Errorf("Percent(%d MiB, %d, %d MiB) = %d, want %d", c.live/mib, c.base, c.floor/mib, got, c.want)
		}
	}
}

// The tuner follows the live heap from cycle to cycle: a small one gets
// the floor, a large one GOGC alone; the last stop puts the base back,
// and nested Starts share one tuner.
func TestStartAndStop(t *testing.T) {
	if gcPercent() != 100 {
		t.Skip("the test's GOGC is not the default")
	}
	stop1 := Start(16 << 20)
	stop2 := Start(64 << 20) // shares the first one's tuner and floor
	eventually(t, 400, "a small heap")
	big := make([]byte, 64<<20)
	eventually(t, 100, "a 64 MiB live heap")
	runtime.KeepAlive(big)
	big = nil
	eventually(t, 400, "the 64 MiB freed")
	stop1()
	stop1() // idempotent
	eventually(t, 400, "one Start still running")
	stop2()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d after the last stop, want 100 back", p)
	}
	runtime.GC()
	runtime.GC()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d after cycles once stopped, want 100", p)
	}
}

func TestGOGCSetLeavesTheCollectorAlone(t *testing.T) {
	t.Setenv("GOGC", "100")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := Start(16 << 20)
	defer stop()
	runtime.GC()
	runtime.GC()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d with GOGC set, want 100", p)
	}
}
