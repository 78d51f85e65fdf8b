package logstore

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/krabka-go/krabka/internal/recordbatch"
)

// ReadResult is what [Log.Read] returns.
type ReadResult struct {
	// Batches holds whole record batches, concatenated, in a slice the
	// caller owns (it is a copy; later appends or truncations do not
	// change it). Empty at the log end offset.
	Batches []byte
	// FirstOffset is the base offset of the first batch (it may be below
	// the offset asked for, when that offset is inside a batch).
	FirstOffset int64
	// NextOffset is the offset after the last batch returned.
	NextOffset int64
}

// Read returns whole batches starting with the batch that holds offset, up
// to maxBytes in total but always at least one whole batch (as Kafka's
// Fetch does, so a batch larger than the limit still makes progress). It
// reads from one segment. At the log end offset the result is empty; below
// the log start offset or above the log end offset it fails with
// [ErrOffsetOutOfRange].
//
// Read copies the bytes from the file into a new slice: vfs has no
// memory mapping, and a copy stays valid whatever the log does next
// (truncation, advancing the log start). Unsynced batches are readable.
func (l *Log) Read(offset int64, maxBytes int) (ReadResult, error) {
	return l.ReadInto(offset, maxBytes, nil)
}

// ReadInto is [Log.Read] into buf's memory: the result's Batches start at
// buf[0], or in a new slice when buf's capacity is too small. A reader
// that is done with one result before the next read (the apply loop, which
// decodes records into values of their own) reuses one buffer instead of
// allocating per read.
func (l *Log) ReadInto(offset int64, maxBytes int, buf []byte) (ReadResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ReadResult{}, ErrClosed
	}
	end := l.active().next
	if offset < l.startOffset || offset > end {
		return ReadResult{}, fmt.Errorf("logstore: read offset %d outside [%d, %d]: %w", offset, l.startOffset, end, ErrOffsetOutOfRange)
	}
	if offset == end {
		return ReadResult{FirstOffset: end, NextOffset: end}, nil
	}
	s := l.segmentFor(offset)
	b, err := l.findBatch(s, offset)
	if err != nil {
		return ReadResult{}, err
	}
	pos, base := b.pos, b.base
	want := max(int64(maxBytes), b.size)
	if rest := s.size - pos; want > rest {
		want = rest
	}
	buf = slices.Grow(buf[:0], int(want))[:want]
	if _, err := s.log.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
		return ReadResult{}, fmt.Errorf("logstore: read segment %s at byte %d: %w", s.path(logSuffix), pos, err)
	}
	// Keep whole batches only, at least the first. The bytes were
	// validated when appended or recovered; only lengths are read here.
	n, next := 0, base
	for n < len(buf) {
		h, err := recordbatch.PeekHeader(buf[n:])
		if err != nil || h.Size() > len(buf)-n {
			break
		}
		next = h.NextOffset()
		n += h.Size()
	}
	return ReadResult{Batches: buf[:n], FirstOffset: base, NextOffset: next}, nil
}

// segmentFor returns the segment that holds offset: the last one whose
// base is <= offset (skipping empty segments that end before it).
func (l *Log) segmentFor(offset int64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	for i < len(l.segs)-1 && l.segs[i].next <= offset {
		i++
	}
	return l.segs[i]
}

// batchLoc is where a batch of a segment is.
type batchLoc struct {
	pos  int64 // byte position in the .log
	base int64 // base offset
	size int64 // bytes, LogOverhead included
}

// findBatch returns the batch of s that holds offset, which must be below
// s.next. A batch in the active segment's tail is found in memory, with no
// read. Any other lookup starts at the offset index entry (at most
// index.interval.bytes before the batch) and walks batch headers read in
// chunks (usually one read per lookup) rather than one read per header:
// metadata batches are small, a dozen or more per index interval.
func (l *Log) findBatch(s *segment, offset int64) (batchLoc, error) {
	if b, ok := s.tailLookup(offset); ok {
		return b, nil
	}
	r := headerReader{s: s, buf: l.chunk}
	for pos := s.lookup(offset); pos < s.size; {
		h, err := r.header(pos)
		if err != nil {
			return batchLoc{}, err
		}
		if h.LastOffset() >= offset {
			return batchLoc{pos: pos, base: h.BaseOffset, size: int64(h.Size())}, nil
		}
		pos += int64(h.Size())
	}
	return batchLoc{}, fmt.Errorf("logstore: offset %d not found in segment %s: %w", offset, s.path(logSuffix), ErrOffsetOutOfRange)
}

// chunkSize is the size of the scratch findBatch reads headers into: two
// index intervals (a walk from an index entry crosses at most one interval
// and a batch), within [4 KiB, 64 KiB].
func chunkSize(interval int) int {
	return min(max(2*interval, 4<<10), 64<<10)
}

// headerReader reads the headers of batches of s, which were validated
// when appended or recovered, through buf: a header inside the bytes last
// read is decoded from them, any other one refills buf from its position.
type headerReader struct {
	s      *segment
	buf    []byte
	bufPos int64 // file position of buf[0]
	n      int64 // valid bytes in buf
}

// header returns the header of the batch at pos (< s.size).
func (r *headerReader) header(pos int64) (recordbatch.Header, error) {
	if pos < r.bufPos || pos+recordbatch.HeaderSize > r.bufPos+r.n {
		want := min(int64(len(r.buf)), r.s.size-pos)
		m, err := r.s.log.ReadAt(r.buf[:want], pos)
		if int64(m) < want {
			r.n = 0
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return recordbatch.Header{}, fmt.Errorf("logstore: read segment %s at byte %d: %w", r.s.path(logSuffix), pos, err)
		}
		r.bufPos, r.n = pos, want
	}
	h, err := recordbatch.PeekHeader(r.buf[pos-r.bufPos : r.n])
	if err != nil {
		return recordbatch.Header{}, fmt.Errorf("logstore: read segment %s at byte %d: %w", r.s.path(logSuffix), pos, err)
	}
	return h, nil
}
