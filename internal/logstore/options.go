package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/krabka-go/krabka/internal/recordbatch"
)

// Defaults of the Kafka properties Options mirrors (Kafka 4.3.1,
// MetadataLogConfig and KafkaRaftClient).
const (
	// DefaultSegmentBytes is metadata.log.segment.bytes' default, 1 GiB.
	DefaultSegmentBytes = 1 << 30
	// MinSegmentBytes is the smallest metadata.log.segment.bytes Kafka
	// accepts, 8 MiB.
	MinSegmentBytes = 8 << 20
	// DefaultSegmentTime is metadata.log.segment.ms' default, 7 days.
	DefaultSegmentTime = 7 * 24 * time.Hour
	// DefaultIndexIntervalBytes is index.interval.bytes' default, 4096.
	DefaultIndexIntervalBytes = 4096
	// DefaultMaxBatchBytes is internal.metadata.max.batch.size.in.bytes'
	// default, 8 MiB (KafkaRaftClient.MAX_BATCH_SIZE_BYTES), which is
	// also the metadata log's max.message.bytes.
	DefaultMaxBatchBytes = 8 << 20
	// DefaultPreallocateBytes is the default of Options.PreallocateBytes,
	// 1 MiB. Not a Kafka property (see Options.PreallocateBytes).
	DefaultPreallocateBytes = 1 << 20
)

// Options configure a [Log]. Start from [DefaultOptions]; [Options.Validate]
// reports every problem and never changes the value.
type Options struct {
	// SegmentBytes mirrors metadata.log.segment.bytes: the active segment
	// is rolled before an append would make it larger. Kafka requires at
	// least 8 MiB ([MinSegmentBytes]); at most math.MaxInt32, because
	// index entries hold 32-bit positions.
	SegmentBytes int64
	// InternalSegmentBytes mirrors internal.metadata.log.segment.bytes, the
	// test-only override: when positive it replaces SegmentBytes and may be
	// smaller than 8 MiB, so tests can produce many segments.
	InternalSegmentBytes int64
	// SegmentTime mirrors metadata.log.segment.ms: the active segment is
	// rolled when the batch being appended is this much newer than the
	// segment's first batch (by batch MaxTimestamp, as Kafka's
	// LogSegment.shouldRoll does).
	SegmentTime time.Duration
	// IndexIntervalBytes mirrors index.interval.bytes: an offset and time
	// index entry is added once more than this many bytes were appended
	// since the previous entry.
	IndexIntervalBytes int
	// MaxBatchBytes mirrors internal.metadata.max.batch.size.in.bytes (the
	// metadata log's max.message.bytes): the largest encoded batch,
	// including its 12-byte offset and length prefix, that appends accept
	// and that recovery reads. It bounds every allocation recovery makes
	// from a length found on disk.
	MaxBatchBytes int
	// PreallocateBytes is the chunk by which the active segment's .log
	// file is extended ahead of its end: when an append would go past the
	// allocated end, zeros are first written for this much beyond it, but
	// never past the segment size, so that the size changes once per
	// chunk and the fsync after an append writes into blocks that exist
	// and commits no file system metadata. A rolled or closed segment is
	// cut back to its batches; recovery cuts the zeros a crash leaves.
	// 0 turns it off.
	// Kafka's log.preallocate (off by default) differs: it creates every
	// segment at its full size, as a sparse file.
	PreallocateBytes int64
	// Logger receives recovery warnings (a cut tail, rebuilt files); nil
	// discards them.
	Logger *slog.Logger

	// maxTailEntries bounds the batches an active segment's tail (the
	// run of its newest batches whose positions it remembers) holds
	// whatever IndexIntervalBytes is: past it, the older half is dropped.
	// 0 means defaultMaxTailEntries; tests in this package lower it to
	// make a tail fill up.
	maxTailEntries int
}

// defaultMaxTailEntries is the tail bound of Options with maxTailEntries
// unset.
const defaultMaxTailEntries = 1024

// DefaultOptions returns Kafka's defaults.
func DefaultOptions() Options {
	return Options{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentTime:        DefaultSegmentTime,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		MaxBatchBytes:      DefaultMaxBatchBytes,
		PreallocateBytes:   DefaultPreallocateBytes,
	}
}

// Validate reports every invalid field, joined with errors.Join.
func (o Options) Validate() error {
	var errs []error
	if o.InternalSegmentBytes == 0 && o.SegmentBytes < MinSegmentBytes {
		errs = append(errs, fmt.Errorf("SegmentBytes (%d) must be at least %d (metadata.log.segment.bytes)", o.SegmentBytes, MinSegmentBytes))
	}
	if o.SegmentBytes > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("SegmentBytes (%d) must be at most %d: index positions are 32-bit", o.SegmentBytes, math.MaxInt32))
	}
	if o.InternalSegmentBytes < 0 || o.InternalSegmentBytes > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("InternalSegmentBytes (%d) must be 0 (unset) or in [1, %d]", o.InternalSegmentBytes, math.MaxInt32))
	}
	if o.SegmentTime <= 0 {
		errs = append(errs, fmt.Errorf("SegmentTime (%v) must be positive (metadata.log.segment.ms)", o.SegmentTime))
	}
	if o.IndexIntervalBytes < 0 {
		errs = append(errs, fmt.Errorf("IndexIntervalBytes (%d) must not be negative (index.interval.bytes)", o.IndexIntervalBytes))
	}
	if o.MaxBatchBytes < 61 || o.MaxBatchBytes > math.MaxInt32/2 {
		errs = append(errs, fmt.Errorf("MaxBatchBytes (%d) must be in [61, %d]", o.MaxBatchBytes, math.MaxInt32/2))
	}
	if o.PreallocateBytes < 0 {
		errs = append(errs, fmt.Errorf("PreallocateBytes (%d) must not be negative (0 turns preallocation off)", o.PreallocateBytes))
	}
	return errors.Join(errs...)
}

// tailCap is the capacity an active segment's tail gets: the most batches
// two index intervals can hold (every batch is at least a header long), so
// that the tail never grows once made, within the tail bound.
func (o Options) tailCap() int {
	bound := o.maxTailEntries
	if bound <= 0 {
		bound = defaultMaxTailEntries
	}
	return min(bound, 2*(o.IndexIntervalBytes/recordbatch.HeaderSize+2))
}

// segmentBytes returns the effective roll size.
func (o Options) segmentBytes() int64 {
	if o.InternalSegmentBytes > 0 {
		return o.InternalSegmentBytes
	}
	return o.SegmentBytes
}
