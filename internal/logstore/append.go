package logstore

import (
	"fmt"
	"math"

	"github.com/krabka-go/krabka/internal/recordbatch"
)

// AppendResult is the offset range an append wrote: [FirstOffset,
// NextOffset).
type AppendResult struct {
	// FirstOffset is the base offset of the first batch written.
	FirstOffset int64
	// NextOffset is the log end offset after the append.
	NextOffset int64
}

// AppendAsLeader appends batches, one or more whole encoded record batches
// back to back, as the leader of epoch: it assigns offsets from the log
// end offset and the epoch by rewriting each batch's BaseOffset and
// PartitionLeaderEpoch in place (both are outside the CRC), so batches is
// modified. It returns the offset range written. Every batch must be valid
// (length, magic, CRC-32C, LastOffsetDelta+1 records) and at most
// Options.MaxBatchBytes; epoch must not be below [Log.LastEpoch].
//
// The data is not durable until [Log.Sync] returns.
func (l *Log) AppendAsLeader(batches []byte, epoch int32) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return AppendResult{}, err
	}
	if epoch < 0 {
		return AppendResult{}, fmt.Errorf("logstore: append as leader: negative epoch %d", epoch)
	}
	if last, ok := l.epochs.latest(); ok && epoch < last.Epoch {
		return AppendResult{}, &EpochRegressionError{LastEpoch: last.Epoch, Epoch: epoch, Offset: l.active().next}
	}
	if _, err := recordbatch.StampAll(batches, l.active().next, epoch); err != nil {
		return AppendResult{}, fmt.Errorf("logstore: append as leader: %w: %w", ErrInvalidBatch, err)
	}
	return l.appendLocked(batches)
}

// AppendAsFollower appends batches exactly as the leader sent them: the
// first must start at the log end offset (else *[OffsetMismatchError]),
// offsets must be contiguous and epochs must not decrease (else
// *[EpochRegressionError]). Every batch must be whole and valid; a caller
// holding a Fetch response that ends in a partial batch (Kafka's Fetch may
// return one) passes only the whole batches before it.
//
// The data is not durable until [Log.Sync] returns.
func (l *Log) AppendAsFollower(batches []byte) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return AppendResult{}, err
	}
	return l.appendLocked(batches)
}

// maxKeptPending bounds the pending-batch scratch a Log keeps between
// appends.
const maxKeptPending = 1024

// pendingBatch is a validated batch of an append.
type pendingBatch struct {
	h   recordbatch.Header
	pos int // in the input
}

// appendLocked appends batches, with mu held and the log writable: it
// validates them all (validateAppend) before writing any, so a bad batch
// writes nothing, then writes them (writeAppend).
func (l *Log) appendLocked(batches []byte) (AppendResult, error) {
	if len(batches) == 0 {
		return AppendResult{}, fmt.Errorf("logstore: append: %w: no batches", ErrInvalidBatch)
	}
	first := l.active().next
	pend, err := l.validateAppend(batches, first)
	if err != nil {
		return AppendResult{}, err
	}
	if cap(pend) <= maxKeptPending {
		// Kept for the next append (only this one reads it until then),
		// unless one huge append grew it.
		l.pend = pend[:0]
	}
	if err := l.writeAppend(batches, pend); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{FirstOffset: first, NextOffset: l.active().next}, nil
}

// validateAppend checks every batch of batches, which must start at offset
// first, and returns their headers and positions in l.pend's memory: each
// is whole, at most Options.MaxBatchBytes and valid, and continues the log
// (contiguous offsets from first, epochs never decreasing).
func (l *Log) validateAppend(batches []byte, first int64) ([]pendingBatch, error) {
	expected := first
	lastEpoch := int32(0)
	if e, ok := l.epochs.latest(); ok {
		lastEpoch = e.Epoch
	}
	pend := l.pend[:0]
	for pos := 0; pos < len(batches); {
		n, err := recordbatch.TotalSize(batches[pos:])
		if err != nil {
			return nil, fmt.Errorf("logstore: append: %w: %w", ErrInvalidBatch, err)
		}
		if n > l.opts.MaxBatchBytes {
			return nil, fmt.Errorf("logstore: append: %w: batch at offset %d is %d bytes, maximum %d", ErrInvalidBatch, expected, n, l.opts.MaxBatchBytes)
		}
		h, err := recordbatch.Validate(batches[pos:])
		if err != nil {
			return nil, fmt.Errorf("logstore: append: %w: %w", ErrInvalidBatch, err)
		}
		if h.BaseOffset != expected {
			return nil, &OffsetMismatchError{Expected: expected, Got: h.BaseOffset}
		}
		if h.PartitionLeaderEpoch < lastEpoch {
			return nil, &EpochRegressionError{LastEpoch: lastEpoch, Epoch: h.PartitionLeaderEpoch, Offset: h.BaseOffset}
		}
		if reason := checkBatch(&h, expected, lastEpoch, h.BaseOffset); reason != "" {
			return nil, fmt.Errorf("logstore: append: %w: %s", ErrInvalidBatch, reason)
		}
		pend = append(pend, pendingBatch{h: h, pos: pos})
		lastEpoch = h.PartitionLeaderEpoch
		expected = h.NextOffset()
		pos += n
	}
	return pend, nil
}

// writeAppend writes batches, validated as pend, at the log end: each run
// that fits the active segment with one write (rolling first when none
// fits), then its index entries, and the leader-epoch checkpoint when an
// epoch began. A failed write poisons the log.
func (l *Log) writeAppend(batches []byte, pend []pendingBatch) error {
	segBytes := l.opts.segmentBytes()
	epochChanged := false
	for i := 0; i < len(pend); {
		s := l.active()
		// Find the run of batches that fit the active segment.
		j := i
		size, firstTS := s.size, s.firstTimestamp
		for j < len(pend) {
			h := &pend[j].h
			if size > 0 && l.shouldRoll(s, size, firstTS, h, segBytes) {
				break
			}
			if size == 0 {
				firstTS = h.MaxTimestamp
			}
			size += int64(h.Size())
			j++
		}
		if j == i {
			if err := l.roll(); err != nil {
				return err
			}
			continue
		}
		end := len(batches)
		if j < len(pend) {
			end = pend[j].pos
		}
		run := batches[pend[i].pos:end]
		if err := l.preallocate(s, s.size+int64(len(run)), segBytes); err != nil {
			return err
		}
		if _, err := s.log.WriteAt(run, s.size); err != nil {
			return l.poison(fmt.Errorf("logstore: write segment %s at byte %d: %w", s.path(logSuffix), s.size, err))
		}
		s.alloc = max(s.alloc, s.size+int64(len(run)))
		for k := i; k < j; k++ {
			h := &pend[k].h
			if l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) {
				epochChanged = true
			}
			newIdx, newTidx := s.observe(h, s.size, l.opts.IndexIntervalBytes, l.opts.tailCap())
			if err := l.writeIndexEntries(s, newIdx, newTidx); err != nil {
				return err
			}
		}
		i = j
	}
	if epochChanged {
		if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, l.epochs.entries); err != nil {
			return l.poison(err)
		}
	}
	return nil
}

// preallocate extends the active segment's .log file ahead of a write
// that would end at end beyond the allocated end, by writing zeros: from
// there to Options.PreallocateBytes past the larger of the two ends, but
// never past segBytes. The file's size then changes once per chunk rather
// than with every append, and, because the zeros are written (not
// reserved as unwritten extents, which fallocate(2) would leave), the
// blocks an append lands in already exist, so the fsync after an append
// writes data and commits no file system metadata; the zeros themselves
// reach the disk with the next fsync, once per chunk. The bytes beyond
// s.size are zeros that nothing reads: reads, lookups and the logical
// size stop at s.size, sealing cuts them off (sealSegment), and recovery
// cuts what a crash leaves of them. A failure poisons the log, as a failed
// write does.
func (l *Log) preallocate(s *segment, end, segBytes int64) error {
	chunk := l.opts.PreallocateBytes
	if chunk <= 0 || end <= s.alloc {
		return nil
	}
	// The write itself fills [s.size, end); the zeros go after it.
	from := max(s.alloc, end)
	target := max(end, min(from+chunk, segBytes))
	for off := from; off < target; {
		n := int(min(target-off, int64(len(zeroFill))))
		if _, err := s.log.WriteAt(zeroFill[:n], off); err != nil {
			return l.poison(fmt.Errorf("logstore: preallocate segment %s to %d bytes: %w", s.path(logSuffix), target, err))
		}
		off += int64(n)
	}
	s.alloc = target
	return nil
}

// zeroFill is what preallocate writes. Never written to, it stays in the
// zero pages the operating system maps for it.
var zeroFill [1 << 20]byte

// trimPreallocated cuts s's .log file back to its batches when space was
// preallocated beyond them. The cut is durable with the next fsync of the
// file.
func (l *Log) trimPreallocated(s *segment) error {
	if s.alloc <= s.size {
		return nil
	}
	if err := s.log.Truncate(s.size); err != nil {
		return l.poison(fmt.Errorf("logstore: cut preallocated space of segment %s at %d bytes: %w", s.path(logSuffix), s.size, err))
	}
	s.alloc = s.size
	return nil
}

// shouldRoll reports whether h must go to a new segment rather than s,
// which already holds size bytes and whose first batch has MaxTimestamp
// firstTS (LogSegment.shouldRoll): the segment would outgrow
// Options.SegmentBytes, h is more than SegmentTime newer than the segment's
// first batch, or h's offsets or position would not fit a 32-bit
// index entry.
func (l *Log) shouldRoll(s *segment, size, firstTS int64, h *recordbatch.Header, segBytes int64) bool {
	switch {
	case size+int64(h.Size()) > segBytes:
		return true
	case size+int64(h.Size()) > math.MaxInt32:
		return true
	case h.LastOffset()-s.base > math.MaxInt32:
		return true
	case firstTS != noTimestamp && h.MaxTimestamp-firstTS > l.opts.SegmentTime.Milliseconds():
		return true
	}
	return false
}

// writeIndexEntries mirrors the newest in-memory index entries to the
// index files.
func (l *Log) writeIndexEntries(s *segment, idx, tidx bool) error {
	if idx {
		n := len(s.index)
		b := l.entry[:offsetIndexEntrySize]
		putOffsetEntry(b, s.index[n-1])
		if _, err := s.idx.WriteAt(b, int64(n-1)*offsetIndexEntrySize); err != nil {
			return l.poison(fmt.Errorf("logstore: write index %s: %w", s.path(indexSuffix), err))
		}
	}
	if tidx {
		n := len(s.timeIndex)
		b := l.entry[:timeIndexEntrySize]
		putTimeEntry(b, s.timeIndex[n-1])
		if _, err := s.tidx.WriteAt(b, int64(n-1)*timeIndexEntrySize); err != nil {
			return l.poison(fmt.Errorf("logstore: write time index %s: %w", s.path(timeIndexSuffix), err))
		}
	}
	return nil
}
