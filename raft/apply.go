package raft

import (
	"fmt"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/metadata"
)

// applier builds the metadata image from the committed records: it owns
// the Delta the next image is built on, the offset applied so far and the
// high watermark it may apply up to. It runs on the engine goroutine; the
// engine publishes the image it builds.
type applier struct {
	delta *metadata.Delta
	// applied is the next offset to apply: every record below it is in
	// delta.
	applied kraft.Offset
	// hw is the high watermark the core last reported, -1 before the
	// first.
	hw  kraft.Offset
	dec recordbatch.Decoder
	// records decodes each committed record into its type's one value:
	// the delta keeps no reference to a record it replayed.
	records metadata.Decoder
	// buf holds the committed batches read back; the decoded records own
	// their values, so one buffer serves every read.
	buf []byte
}

// applyListener learns what the applier does, as it does it.
type applyListener interface {
	// noteApplied: a batch of bytes at epoch was applied, up to its end
	// when atBoundary.
	noteApplied(bytes int, epoch int32, maxTimestamp int64, atBoundary bool)
}

// apply replays the committed records of log below the high watermark
// into the delta. changed reports whether any record was replayed (a
// control batch leaves the image as it was). An error is fatal: a log
// that cannot be read below its high watermark, or a committed record
// the image refuses (a [*CommittedReplayError]; the applied offset stays
// at that record).
func (a *applier) apply(log *logstore.Log, l applyListener) (changed bool, err error) {
	for a.applied < a.hw {
		rr, err := log.ReadInto(int64(a.applied), 1<<20, a.buf)
		if err != nil {
			return changed, fmt.Errorf("raft: read committed records at %d: %w", a.applied, err)
		}
		if cap(rr.Batches) > cap(a.buf) {
			a.buf = rr.Batches[:0]
		}
		progressed := false
		it := recordbatch.NewIterator(&a.dec, rr.Batches)
		for it.Next() {
			b := it.Batch()
			if kraft.Offset(b.BaseOffset) >= a.hw {
				break
			}
			if !b.IsControl() {
				for i := range b.Records {
					r := &b.Records[i]
					off := b.RecordOffset(r)
					if kraft.Offset(off) < a.applied || kraft.Offset(off) >= a.hw {
						continue
					}
					if err := a.replay(r.Value, off, b.PartitionLeaderEpoch); err != nil {
						a.applied = kraft.Offset(off)
						return changed, &CommittedReplayError{Offset: off, Epoch: b.PartitionLeaderEpoch, Err: err}
					}
					changed = true
				}
			}
			a.applied = min(a.hw, kraft.Offset(b.NextOffset()))
			l.noteApplied(len(b.Raw), b.PartitionLeaderEpoch, b.MaxTimestamp, a.applied == kraft.Offset(b.NextOffset()))
			progressed = true
		}
		if err := it.Err(); err != nil {
			return changed, fmt.Errorf("raft: decode committed batch at %d: %w", a.applied, err)
		}
		if !progressed {
			return changed, fmt.Errorf("raft: no committed batch at %d below the high watermark %d", a.applied, a.hw)
		}
	}
	return changed, nil
}

// replay applies one committed record to the delta and returns the
// image's rejection, if any; a rejected record changes nothing.
func (a *applier) replay(value []byte, offset int64, epoch int32) error {
	rec, err := a.records.Decode(value)
	if err != nil {
		return err
	}
	// The run of in-place changes ends with the image published after
	// the commit round (Apply).
	return a.delta.ReplayNext(rec, offset, epoch)
}

// applyCommitted applies the committed records below the high watermark,
// publishes the new image and completes the submissions and reads it
// covers.
func (e *engine) applyCommitted() error {
	changed, err := e.applier.apply(e.log, e)
	if err != nil {
		return err
	}
	if changed {
		// Subscribers see only images that changed.
		e.pub.publishImage(e.applier.delta.Apply())
	}
	e.reportApplied(e.applier.applied)
	// QuorumState shows the applied offset before any submission it
	// covers is answered.
	e.publishQuorum(e.lastStatus)
	e.sub.completeApplied(e.applier.applied)
	e.reads.complete(e.applier.applied, e.pub.image.Load())
	return nil
}
