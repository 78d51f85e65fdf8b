package raft

import (
	"context"
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
)

// SnapshotID names a snapshot (KIP-630): the offset after its last record
// and the epoch of that record. Its file is
// <EndOffset, 20 digits>-<Epoch, 10 digits>.checkpoint.
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

// String returns the id as Kafka logs it.
func (id SnapshotID) String() string {
	return fmt.Sprintf("OffsetAndEpoch(offset=%d, epoch=%d)", id.EndOffset, id.Epoch)
}

// publicSnapshotID is the API form of the engine's snapshot id.
func publicSnapshotID(id kraft.OffsetAndEpoch) SnapshotID {
	return SnapshotID{EndOffset: int64(id.Offset), Epoch: int32(id.Epoch)}
}

// SnapshotSlice is a contiguous window of a snapshot file, as one
// FetchSnapshot answer carries it.
type SnapshotSlice struct {
	// ID is the snapshot read.
	ID SnapshotID
	// Position is the byte position of Bytes in the file.
	Position int64
	// Size is the file's total size; the window ends the file when
	// Position+len(Bytes) == Size.
	Size int64
	// Bytes are the file's bytes from Position on (newly allocated).
	Bytes []byte
}

var (
	// ErrNothingToSnapshot is returned by [Controller.TriggerSnapshot]
	// on a node that has applied no record and holds no snapshot.
	ErrNothingToSnapshot = errors.New("raft: nothing to snapshot")
	// ErrSnapshotNotFound is returned by [Controller.ReadSnapshotRange]
	// when the node holds no snapshot, or not the one asked for (never
	// taken, or deleted by retention).
	ErrSnapshotNotFound = errors.New("raft: snapshot not found")
	// ErrSnapshotPositionOutOfRange is returned by
	// [Controller.ReadSnapshotRange] for a position outside [0, size).
	ErrSnapshotPositionOutOfRange = errors.New("raft: snapshot position out of range")
)

// TriggerSnapshot makes this node take a snapshot of its applied image now,
// whatever metadata.log.max.record.bytes.between.snapshots and
// metadata.log.max.snapshot.interval.ms say, and returns its id once the
// file is frozen (written, fsynced and renamed to its final name).
//
// The snapshot is taken at the next batch boundary of the applied log
// after the call, once any snapshot being written has finished. When the
// newest snapshot already holds every record applied at the call, its id
// is returned and nothing is written. A snapshot taken or installed
// (FetchSnapshot) meanwhile that holds those records answers the call too.
// Retention runs after the snapshot as after any other, and has run when
// TriggerSnapshot returns its id.
//
// Errors: [ErrNothingToSnapshot], a failed write, [ErrShuttingDown], or
// ctx's error (the snapshot may still be taken).
func (c *Controller) TriggerSnapshot(ctx context.Context) (SnapshotID, error) {
	done := make(chan triggerResult, 1)
	if err := c.enqueue(ctx, event{call: func(e *engine) { e.trigger(done) }}); err != nil {
		return SnapshotID{}, err
	}
	select {
	case r := <-done:
		return publicSnapshotID(r.id), r.err
	case <-ctx.Done():
		return SnapshotID{}, ctx.Err()
	case <-c.done:
		select {
		case r := <-done:
			return publicSnapshotID(r.id), r.err
		default:
			return SnapshotID{}, ErrShuttingDown
		}
	}
}

// LatestSnapshot returns the id of the newest snapshot this node holds
// (taken, installed or loaded at start); ok is false when it holds none.
// It never blocks.
func (c *Controller) LatestSnapshot() (id SnapshotID, ok bool) {
	p := c.eng.pub.latestSnapshot.Load()
	if p == nil {
		return SnapshotID{}, false
	}
	return publicSnapshotID(*p), true
}

// ReadSnapshotRange returns up to maxBytes bytes of a snapshot file from
// byte position on, the window a FetchSnapshot answer carries. id names
// the snapshot; nil means the newest one this node holds (should
// retention delete it between the look-up and the read, the then newest
// one is read). The window is clipped at the end of the file and at 8 MiB
// whatever maxBytes says; the caller reads on from Position+len(Bytes)
// until Size. It does not wait for the engine: the snapshot store serves
// the read, and a snapshot deleted while read is removed only after.
//
// Errors: [ErrSnapshotNotFound], [ErrSnapshotPositionOutOfRange], an
// error for maxBytes < 1, or the file's read error.
func (c *Controller) ReadSnapshotRange(id *SnapshotID, position int64, maxBytes int) (SnapshotSlice, error) {
	if maxBytes < 1 {
		return SnapshotSlice{}, fmt.Errorf("raft: read snapshot range: maxBytes %d < 1", maxBytes)
	}
	for {
		var want kraft.OffsetAndEpoch
		switch {
		case id != nil:
			want = kraft.OffsetAndEpoch{Offset: kraft.Offset(id.EndOffset), Epoch: kraft.Epoch(id.Epoch)}
		default:
			p := c.eng.pub.latestSnapshot.Load()
			if p == nil {
				return SnapshotSlice{}, ErrSnapshotNotFound
			}
			want = *p
		}
		b, size, err := c.eng.snap.store.ReadRange(want, position, maxBytes)
		switch {
		case err == nil:
			return SnapshotSlice{ID: publicSnapshotID(want), Position: position, Size: size, Bytes: b}, nil
		case errors.Is(err, snapshot.ErrNotFound):
			if id == nil {
				if p := c.eng.pub.latestSnapshot.Load(); p != nil && *p != want {
					continue // deleted meanwhile: read the newer one
				}
			}
			return SnapshotSlice{}, fmt.Errorf("%w: %d-%d", ErrSnapshotNotFound, want.Offset, want.Epoch)
		case errors.Is(err, snapshot.ErrPositionOutOfRange):
			return SnapshotSlice{}, fmt.Errorf("%w: %w", ErrSnapshotPositionOutOfRange, err)
		default:
			return SnapshotSlice{}, fmt.Errorf("raft: read snapshot %d-%d: %w", want.Offset, want.Epoch, err)
		}
	}
}
