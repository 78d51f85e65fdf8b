//go:build !krabkalatency

package latency

import (
	"testing"
	"unsafe"
)

// In a normal build a stamp takes no room in the structures that carry
// one, and recording does nothing (and allocates nothing).
func TestOffBuildCostsNothing(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled in a normal build")
	}
	if size := unsafe.Sizeof(Now()); size != 0 {
		t.Fatalf("a Stamp is %d bytes", size)
	}
	if n := testing.AllocsPerRun(100, func() {
		s := Now()
		Since("span", s)
		Count("series", 3)
	}); n != 0 {
		t.Fatalf("%v allocations per record", n)
	}
}
