package snapshot

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Sentinels for the conditions callers branch on. Typed errors below match
// them with errors.Is.
var (
	// ErrNotFound: the snapshot does not exist (or was deleted). The
	// FetchSnapshot handler answers SNAPSHOT_NOT_FOUND.
	ErrNotFound = errors.New("snapshot: not found")
	// ErrExists: a snapshot with this id is already complete; Kafka skips
	// creating it again (KafkaRaftLog.createNewSnapshot).
	ErrExists = errors.New("snapshot: already exists")
	// ErrCorrupt is matched by every *CorruptError: the file is not a
	// valid snapshot and must not be loaded (D16 in docs/reliability.md).
	ErrCorrupt = errors.New("snapshot: corrupt")
	// ErrTruncated is matched by a *CorruptError whose file ends early:
	// a torn or partial snapshot.
	ErrTruncated = errors.New("snapshot: truncated")
	// ErrPositionOutOfRange: a range read starts before 0 or at or after
	// the end of the file (FetchSnapshot's POSITION_OUT_OF_RANGE).
	ErrPositionOutOfRange = errors.New("snapshot: position out of range")
	// ErrRecordTooLarge: one record does not fit in a batch of the
	// writer's maximum size (Kafka's RecordBatchTooLargeException).
	ErrRecordTooLarge = errors.New("snapshot: record too large for a batch")
	// ErrClosed: the writer, download or reader was already frozen,
	// installed, aborted, closed, or failed on an earlier error.
	ErrClosed = errors.New("snapshot: closed")
)

// CorruptError reports a snapshot file that violates the format: which
// file, where, and why. It matches [ErrCorrupt], and [ErrTruncated] when
// the file ends early; Err, when set, is the underlying cause (a
// *recordbatch.Error, a control record decode error).
type CorruptError struct {
	// Path is the file.
	Path string
	// Pos is the byte position in the file where the problem was found:
	// the start of the offending batch, or of the offending record when
	// the batch layer could tell.
	Pos int64
	// Reason says what is wrong.
	Reason string
	// Truncated is set when the file ends before the snapshot does.
	Truncated bool
	// Err is the underlying cause, or nil.
	Err error
}

// Error implements error.
func (e *CorruptError) Error() string {
	s := fmt.Sprintf("snapshot: corrupt snapshot %s at byte %d: %s", e.Path, e.Pos, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrCorrupt, ErrTruncated when Truncated, and Err.
func (e *CorruptError) Unwrap() []error {
	errs := []error{ErrCorrupt}
	if e.Truncated {
		errs = append(errs, ErrTruncated)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// PositionError reports a range read outside the file: Position < 0 or
// Position >= Size. It matches [ErrPositionOutOfRange].
type PositionError struct {
	// ID is the snapshot read.
	ID kraft.OffsetAndEpoch
	// Position is the requested position.
	Position int64
	// Size is the snapshot's size in bytes.
	Size int64
}

// Error implements error.
func (e *PositionError) Error() string {
	return fmt.Sprintf("snapshot: read %s at position %d: out of range [0, %d)", idString(e.ID), e.Position, e.Size)
}

// Is matches ErrPositionOutOfRange.
func (e *PositionError) Is(target error) bool { return target == ErrPositionOutOfRange }

// Download failures that leave the download usable: the chunk is rejected
// and nothing is written, so the follower can fetch the right chunk again.
var (
	// ErrWrongPosition: the chunk's position is not the number of bytes
	// already written (a reordered, duplicated or skipped chunk).
	ErrWrongPosition = errors.New("snapshot: chunk at wrong position")
	// ErrOvershoot: the chunk runs past the snapshot's announced size.
	ErrOvershoot = errors.New("snapshot: chunk past the end of the snapshot")
	// ErrSizeMismatch: the chunk announces a different total size than
	// an earlier chunk did.
	ErrSizeMismatch = errors.New("snapshot: snapshot size changed during download")
	// ErrTooLarge: the announced size is above the download's cap, or is
	// not positive.
	ErrTooLarge = errors.New("snapshot: snapshot size out of bounds")
	// ErrIncomplete: Install was called before every byte arrived.
	ErrIncomplete = errors.New("snapshot: download incomplete")
)

// ChunkError reports a rejected FetchSnapshot chunk. It matches one of
// [ErrWrongPosition], [ErrOvershoot], [ErrSizeMismatch], [ErrTooLarge] or
// [ErrIncomplete] (Kind). The download is unchanged by the rejection.
type ChunkError struct {
	// ID is the snapshot being downloaded.
	ID kraft.OffsetAndEpoch
	// Kind is the sentinel naming the problem.
	Kind error
	// Position is the chunk's position; Len its length.
	Position int64
	Len      int
	// Size is the total size the chunk announced.
	Size int64
	// Have is the number of bytes written so far (the expected position).
	Have int64
	// Limit is the size cap (for ErrTooLarge) or the size fixed by the
	// first chunk (for ErrSizeMismatch).
	Limit int64
}

// Error implements error.
func (e *ChunkError) Error() string {
	return fmt.Sprintf("snapshot: download %s: %v (chunk at %d, %d bytes, size %d; have %d bytes, limit %d)",
		idString(e.ID), e.Kind, e.Position, e.Len, e.Size, e.Have, e.Limit)
}

// Unwrap returns Kind.
func (e *ChunkError) Unwrap() error { return e.Kind }
