package raft

import (
	"context"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/recordbatch"
)

func TestTimerTable(t *testing.T) {
	var tt timerTable
	if _, ok := tt.earliest(); ok {
		t.Fatal("an empty table has a deadline")
	}
	base := time.Unix(1000, 0)
	tt.set(timerRetention, base.Add(time.Minute))
	tt.set(timerNoOp, base.Add(500*time.Millisecond))
	tt.set(timerCheckpoint, base.Add(time.Second))
	if at, ok := tt.earliest(); !ok || !at.Equal(base.Add(500*time.Millisecond)) {
		t.Fatalf("earliest = %v, %v; want the NoOp deadline", at, ok)
	}
	if tt.expired(timerNoOp, base) || !tt.expired(timerNoOp, base.Add(500*time.Millisecond)) {
		t.Fatal("expired must hold from the deadline on, not before")
	}
	tt.stop(timerNoOp)
	if tt.armed(timerNoOp) || tt.expired(timerNoOp, base.Add(time.Hour)) {
		t.Fatal("a stopped timer is armed or expired")
	}
	if at, _ := tt.earliest(); !at.Equal(base.Add(time.Second)) {
		t.Fatalf("earliest after stop = %v; want the checkpoint deadline", at)
	}
}

// shiftedClock is the system clock moved by a fixed offset.
type shiftedClock struct{ by time.Duration }

func (c shiftedClock) Now() time.Time { return time.Now().Add(c.by) }

// TestEngineTakesTimeFromItsClock: the batches a node writes, leader
// epoch and metadata alike, carry the time of the engine's clock, not
// the system's.
func TestEngineTakesTimeFromItsClock(t *testing.T) {
	const shift = 1000 * time.Hour
	cfg := ForTests(1, t.TempDir())
	before := time.Now().Add(shift).UnixMilli()
	n, err := start(t.Context(), cfg, startOptions{clock: shiftedClock{by: shift}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Shutdown(context.Background()) }()
	res := submit(t, n, metadataVersionRecord())
	after := time.Now().Add(shift).UnixMilli()
	if err := n.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	raw := readCommitted(t, cfg, res.LastOffset+1)
	var dec recordbatch.Decoder
	it := recordbatch.NewIterator(&dec, raw)
	batches := 0
	for it.Next() {
		b := it.Batch()
		if b.MaxTimestamp < before || b.MaxTimestamp > after {
			t.Errorf("batch at %d has timestamp %d, outside the engine clock's [%d, %d]", b.BaseOffset, b.MaxTimestamp, before, after)
		}
		batches++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if batches < 2 {
		t.Fatalf("%d batches; want the LeaderChange batch and the submission", batches)
	}
}
