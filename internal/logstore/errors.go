package logstore

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrClosed is returned by every method of a closed [Log].
	ErrClosed = errors.New("logstore: log closed")
	// ErrOffsetOutOfRange is returned by [Log.Read] for an offset below the
	// log start offset or above the log end offset.
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrPoisoned is wrapped by every write or sync after a failed write or
	// fsync: the state of the files on disk is unknown, and only reopening
	// the log (which recovers from what is really on disk) clears it. An
	// fsync is never retried after it failed (the "fsyncgate" lesson: the
	// kernel may have dropped the dirty pages, so a second fsync can
	// succeed without the data being durable).
	ErrPoisoned = errors.New("logstore: log poisoned by an earlier write or sync error")
	// ErrLocked is returned by [Open] when another process (or another Log
	// in this process) holds the directory's lock.
	ErrLocked = errors.New("logstore: log directory locked by another holder")
	// ErrInvalidBatch is wrapped by the append methods when the bytes given
	// are not a sequence of whole, valid record batches.
	ErrInvalidBatch = errors.New("logstore: invalid record batch")
)

// CorruptionError reports damaged data that was durable (below the recovery
// point, or in a segment that is not the last one): it cannot be a torn
// write, so the log refuses to open rather than silently drop data that may
// have been committed. Docs/storage.md says what an operator does next.
type CorruptionError struct {
	// Segment is the path of the damaged file.
	Segment string
	// Offset is the offset of the first batch that failed validation (or
	// the offset expected at the damaged position).
	Offset int64
	// Position is the byte position in Segment where the damage starts.
	Position int64
	// Reason says what check failed.
	Reason string
}

// Error implements error.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("logstore: corrupt segment %s at byte %d, offset %d: %s", e.Segment, e.Position, e.Offset, e.Reason)
}

// OffsetMismatchError is returned by [Log.AppendAsFollower] when the first
// batch does not start exactly at the log end offset, or when batches
// inside the appended bytes are not contiguous.
type OffsetMismatchError struct {
	// Expected is the offset the batch had to start at.
	Expected int64
	// Got is the base offset the batch carried.
	Got int64
}

// Error implements error.
func (e *OffsetMismatchError) Error() string {
	return fmt.Sprintf("logstore: batch base offset %d does not match expected offset %d", e.Got, e.Expected)
}

// EpochRegressionError is returned by the append methods when a batch
// carries a partition leader epoch lower than the last epoch in the log.
// Epochs in a KRaft log never decrease.
type EpochRegressionError struct {
	// LastEpoch is the epoch of the last batch already in the log (or
	// earlier in the same append).
	LastEpoch int32
	// Epoch is the epoch the rejected batch carried.
	Epoch int32
	// Offset is the base offset of the rejected batch.
	Offset int64
}

// Error implements error.
func (e *EpochRegressionError) Error() string {
	return fmt.Sprintf("logstore: batch at offset %d has epoch %d below the log's last epoch %d", e.Offset, e.Epoch, e.LastEpoch)
}
