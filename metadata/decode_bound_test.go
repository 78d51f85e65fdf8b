package metadata

import (
	"errors"
	"runtime"
	"testing"

	"github.com/krabka-go/krabka/internal/kbin"
)

// TestDecodeAllocatesWithinInput (hostile input W14 in docs/reliability.md):
// a record whose array count claims four million elements in a frame of
// a few bytes is refused as truncated before anything is allocated for
// the count: the decoder allocates from a count only what the remaining
// bytes can hold.
func TestDecodeAllocatesWithinInput(t *testing.T) {
	// PartitionRecord v0: partition 0, a zero topic id, then a Replicas
	// count of 4,194,304 (compact: 4,194,305 as a uvarint) and nothing
	// after it.
	in := hexBytes(t, "01 03 00 | 00000000 | 00000000000000000000000000000000 | 81 80 80 02")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Decode(in)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, kbin.ErrTruncated) {
		t.Fatalf("Decode = %v, want ErrTruncated", err)
	}
	const bound = 1 << 20 // the claimed count would take 16 MiB
	if n := after.TotalAlloc - before.TotalAlloc; n > bound {
		t.Fatalf("W14: decoding a %d-byte record allocated %d bytes, over %d: the array count was trusted", len(in), n, bound)
	}
}
