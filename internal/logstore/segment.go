package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// File suffixes of a segment (LogFileUtils).
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// Entry sizes of the index files.
const (
	offsetIndexEntrySize = 8  // relative offset int32 + position int32
	timeIndexEntrySize   = 12 // timestamp int64 + relative offset int32
)

// noTimestamp is RecordBatch.NO_TIMESTAMP.
const noTimestamp = -1

// segmentName returns the 20-digit zero-padded base offset followed by
// suffix (LogFileUtils.filenamePrefixFromOffset).
func segmentName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// parseSegmentName returns the base offset of a file named
// <20 digits><suffix>.
func parseSegmentName(name, suffix string) (int64, bool) {
	prefix, ok := strings.CutSuffix(name, suffix)
	if !ok || len(prefix) != 20 {
		return 0, false
	}
	for i := 0; i < len(prefix); i++ {
		if prefix[i] < '0' || prefix[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(prefix, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// offsetEntry is one offset index entry: the batch at position Pos (in the
// .log) has last offset base+RelOffset.
type offsetEntry struct {
	RelOffset int32
	Pos       int32
}

// timeEntry is one time index entry: by offset base+RelOffset the largest
// batch MaxTimestamp seen in the segment was Timestamp.
type timeEntry struct {
	Timestamp int64
	RelOffset int32
}

// segment is one .log file with its two indexes. The indexes are kept in
// memory (lookups never read the index files); the files mirror them for
// Kafka and for tools, and are verified or rebuilt at open.
//
// The active segment also remembers where its last batches start (tail):
// every batch from the one the next-to-last offset index entry points at
// (or from the first batch, while there are fewer than two entries) to the
// end, so at least index.interval.bytes of the newest batches. A lookup in
// that range reads no header from the file; see [Log.findBatch].
type segment struct {
	base int64
	dir  string
	log  vfs.File
	idx  vfs.File
	tidx vfs.File

	size int64 // valid bytes in .log: the logical end, all that is ever read
	next int64 // offset after the last batch
	// alloc is the size of the .log file as this process set it: size,
	// plus, for the active segment, the space preallocated beyond it
	// (zeros). Sealing a segment cuts the file back to size.
	alloc int64

	index     []offsetEntry
	timeIndex []timeEntry

	bytesSinceIndex int64 // bytes appended since the last index entry
	firstTimestamp  int64 // MaxTimestamp of the first batch (roll by time)
	maxTimestamp    int64 // largest batch MaxTimestamp so far
	offsetOfMaxTS   int64 // last offset of the batch that had it
	closedTimeEntry bool  // the close-time entry is in timeIndex

	// tail holds the base offset and position of each batch of a
	// contiguous run that ends with the segment's last batch, oldest
	// first; empty for a sealed segment. observe maintains it, at the
	// same points as the offset index.
	tail []tailEntry
	// tailMark is the index in tail of the batch the last offset index
	// entry points at (0 when there is no entry or it is not in tail):
	// the next entry drops the batches before it.
	tailMark int
}

// tailEntry is where one batch of a segment's tail starts.
type tailEntry struct {
	base int64 // the batch's base offset
	pos  int64 // its byte position in the .log
}

// rememberTail appends the batch at pos with base offset base to the tail,
// dropping the older half first when the tail is full. A tail made here
// gets capacity tailCap (see Options.tailCap).
func (s *segment) rememberTail(base, pos int64, tailCap int) {
	if s.tail == nil {
		s.tail = make([]tailEntry, 0, tailCap)
	}
	if len(s.tail) == cap(s.tail) {
		s.dropTailBefore(len(s.tail) / 2)
	}
	s.tail = append(s.tail, tailEntry{base: base, pos: pos})
}

// dropTailBefore forgets the first n batches of the tail, keeping its
// memory.
func (s *segment) dropTailBefore(n int) {
	if n == 0 {
		return
	}
	m := copy(s.tail, s.tail[n:])
	s.tail = s.tail[:m]
	s.tailMark = max(0, s.tailMark-n)
}

// forgetTail releases the tail (the segment is no longer active).
func (s *segment) forgetTail() {
	s.tail, s.tailMark = nil, 0
}

// tailLookup returns the batch that holds offset when it is in the tail.
func (s *segment) tailLookup(offset int64) (batchLoc, bool) {
	t := s.tail
	if len(t) == 0 || offset < t[0].base || offset >= s.next {
		return batchLoc{}, false
	}
	// The last entry whose base is <= offset.
	lo, hi := 0, len(t)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t[m].base <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	end := s.size
	if i+1 < len(t) {
		end = t[i+1].pos
	}
	return batchLoc{pos: t[i].pos, base: t[i].base, size: end - t[i].pos}, true
}

// tailIndexOf returns the index in the tail of the batch at pos, or -1.
func (s *segment) tailIndexOf(pos int64) int {
	lo, hi := 0, len(s.tail)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.tail[m].pos < pos {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.tail) && s.tail[lo].pos == pos {
		return lo
	}
	return -1
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base, suffix))
}

// newSegmentState returns a segment with no batches.
func newSegmentState(dir string, base int64) *segment {
	return &segment{base: base, dir: dir, next: base, firstTimestamp: noTimestamp, maxTimestamp: noTimestamp, offsetOfMaxTS: base}
}

// observe updates the in-memory indexes for a batch at position pos, as
// LogSegment.append and LogSegment.recover do: the max timestamp first,
// then an index entry (keyed by the batch's last offset, pointing at its
// start) once more than interval bytes went by since the previous entry.
// It returns the entries added, so callers can mirror them to the files.
// The batch also joins the tail, which an index entry first trims to the
// batches from the previous entry's on.
func (s *segment) observe(h *recordbatch.Header, pos int64, interval, tailCap int) (newIdx, newTidx bool) {
	if s.size == 0 && pos == 0 {
		s.firstTimestamp = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = h.MaxTimestamp
		s.offsetOfMaxTS = h.LastOffset()
	}
	if s.bytesSinceIndex > int64(interval) {
		s.index = append(s.index, offsetEntry{RelOffset: int32(h.LastOffset() - s.base), Pos: int32(pos)})
		newIdx = true
		newTidx = s.maybeAppendTime()
		s.bytesSinceIndex = 0
		// The tail keeps the batches from the previous entry's on.
		s.dropTailBefore(s.tailMark)
		s.tailMark = len(s.tail)
	}
	s.rememberTail(h.BaseOffset, pos, tailCap)
	s.bytesSinceIndex += int64(h.Size())
	s.size = pos + int64(h.Size())
	s.next = h.NextOffset()
	return newIdx, newTidx
}

// maybeAppendTime adds (maxTimestamp, offsetOfMaxTS) to the time index if
// the timestamp is newer than the last entry's (TimeIndex.maybeAppend).
func (s *segment) maybeAppendTime() bool {
	last := int64(noTimestamp)
	if n := len(s.timeIndex); n > 0 {
		last = s.timeIndex[n-1].Timestamp
	}
	if s.maxTimestamp <= last {
		return false
	}
	s.timeIndex = append(s.timeIndex, timeEntry{Timestamp: s.maxTimestamp, RelOffset: int32(s.offsetOfMaxTS - s.base)})
	return true
}

// lookup returns the byte position from which a scan for offset must start:
// the position of the indexed batch with the largest last offset <= offset
// (OffsetIndex.lookup), or 0.
func (s *segment) lookup(offset int64) int64 {
	rel := offset - s.base
	lo, hi := 0, len(s.index)
	for lo < hi {
		m := (lo + hi) / 2
		if int64(s.index[m].RelOffset) <= rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	return int64(s.index[lo-1].Pos)
}

// truncateIndexes drops index entries that point at or beyond position pos
// or name offsets at or beyond next, and forgets the close-time entry.
func (s *segment) truncateIndexes(pos, next int64) {
	n := len(s.index)
	for n > 0 && int64(s.index[n-1].Pos) >= pos {
		n--
	}
	s.index = s.index[:n]
	m := len(s.timeIndex)
	for m > 0 && s.base+int64(s.timeIndex[m-1].RelOffset) >= next {
		m--
	}
	s.timeIndex = s.timeIndex[:m]
	s.closedTimeEntry = false
}

// putOffsetEntry encodes e into b[:offsetIndexEntrySize].
func putOffsetEntry(b []byte, e offsetEntry) {
	binary.BigEndian.PutUint32(b, uint32(e.RelOffset))
	binary.BigEndian.PutUint32(b[4:], uint32(e.Pos))
}

// putTimeEntry encodes e into b[:timeIndexEntrySize].
func putTimeEntry(b []byte, e timeEntry) {
	binary.BigEndian.PutUint64(b, uint64(e.Timestamp))
	binary.BigEndian.PutUint32(b[8:], uint32(e.RelOffset))
}

func encodeOffsetIndex(entries []offsetEntry) []byte {
	b := make([]byte, len(entries)*offsetIndexEntrySize)
	for i, e := range entries {
		putOffsetEntry(b[i*offsetIndexEntrySize:], e)
	}
	return b
}

func encodeTimeIndex(entries []timeEntry) []byte {
	b := make([]byte, len(entries)*timeIndexEntrySize)
	for i, e := range entries {
		putTimeEntry(b[i*timeIndexEntrySize:], e)
	}
	return b
}

// batchError is a batch that failed validation during a scan.
type batchError struct {
	pos    int64
	offset int64 // the offset expected at pos
	reason string
}

// scanLimits are what a scan checks batches against.
type scanLimits struct {
	maxBatchBytes int
	interval      int
	tailCap       int
}

// scanner reads the batches of a segment file sequentially through a
// bounded window, validating each one. Its buffer never grows beyond
// max(window, maxBatchBytes), and only after a batch length was checked
// against both the limit and the bytes left in the file.
type scanner struct {
	r        io.ReaderAt
	fileSize int64
	buf      []byte
	bufPos   int64 // file position of buf[0]
	window   int
}

const scanWindow = 1 << 20

// batchAt returns the whole batch at pos, or a reason why there is none.
func (sc *scanner) batchAt(pos int64, maxBatch int) ([]byte, string, error) {
	left := sc.fileSize - pos
	if left < recordbatch.LogOverhead {
		return nil, fmt.Sprintf("truncated batch header: %d bytes left", left), nil
	}
	head, err := sc.slice(pos, recordbatch.LogOverhead)
	if err != nil {
		return nil, "", err
	}
	size, err := recordbatch.TotalSize(head)
	if err != nil {
		return nil, err.Error(), nil
	}
	if size > maxBatch {
		return nil, fmt.Sprintf("batch of %d bytes exceeds the %d-byte maximum", size, maxBatch), nil
	}
	if int64(size) > left {
		return nil, fmt.Sprintf("truncated batch: %d bytes, %d left in file", size, left), nil
	}
	b, err := sc.slice(pos, size)
	if err != nil {
		return nil, "", err
	}
	return b, "", nil
}

// slice returns n bytes at file position pos (which the caller checked
// are inside the file), reading a new window when needed.
func (sc *scanner) slice(pos int64, n int) ([]byte, error) {
	if pos >= sc.bufPos && pos+int64(n) <= sc.bufPos+int64(len(sc.buf)) {
		return sc.buf[pos-sc.bufPos : pos-sc.bufPos+int64(n)], nil
	}
	want := max(n, sc.window)
	if rest := sc.fileSize - pos; int64(want) > rest {
		want = int(rest)
	}
	if cap(sc.buf) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:want]
	if m, err := sc.r.ReadAt(sc.buf, pos); m < want {
		sc.buf = sc.buf[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	sc.bufPos = pos
	return sc.buf[:n], nil
}

// scanSegment validates the batches of s's .log file (already open, of
// fileSize bytes) from position 0, starting at offset s.base and epoch
// lastEpoch, and rebuilds s's in-memory indexes. It stops at the first bad
// batch and returns it (nil when the whole file is valid); s.size and
// s.next then describe the valid prefix. onBatch is called for each valid
// batch with its header.
func scanSegment(s *segment, r io.ReaderAt, fileSize int64, lastEpoch int32, lim scanLimits, onBatch func(h *recordbatch.Header)) (*batchError, error) {
	sc := &scanner{r: r, fileSize: fileSize, window: scanWindow}
	pos := int64(0)
	// Declared once: onBatch receives its address, which would otherwise
	// move a new header to the heap for every batch.
	var h recordbatch.Header
	for pos < fileSize {
		b, reason, err := sc.batchAt(pos, lim.maxBatchBytes)
		if err != nil {
			return nil, fmt.Errorf("logstore: read segment %s at byte %d: %w", s.path(logSuffix), pos, err)
		}
		if reason != "" {
			return &batchError{pos: pos, offset: s.next, reason: reason}, nil
		}
		if h, err = recordbatch.Validate(b); err != nil {
			return &batchError{pos: pos, offset: s.next, reason: err.Error()}, nil
		}
		if reason := checkBatch(&h, s.next, lastEpoch, s.base); reason != "" {
			return &batchError{pos: pos, offset: s.next, reason: reason}, nil
		}
		lastEpoch = h.PartitionLeaderEpoch
		s.observe(&h, pos, lim.interval, lim.tailCap)
		if onBatch != nil {
			onBatch(&h)
		}
		pos += int64(h.Size())
	}
	return nil, nil
}

// checkBatch checks a CRC-valid batch against its place in the log: it
// starts at the expected offset, its offsets fit a segment, its epoch does
// not go back, and (the metadata log is never compacted) it holds exactly
// LastOffsetDelta+1 records. It returns "" when the batch fits.
func checkBatch(h *recordbatch.Header, expected int64, lastEpoch int32, segBase int64) string {
	switch {
	case h.BaseOffset != expected:
		return fmt.Sprintf("batch base offset %d, expected %d", h.BaseOffset, expected)
	case h.LastOffsetDelta < 0:
		return fmt.Sprintf("negative last offset delta %d", h.LastOffsetDelta)
	case int64(h.NumRecords) != int64(h.LastOffsetDelta)+1:
		return fmt.Sprintf("%d records for last offset delta %d", h.NumRecords, h.LastOffsetDelta)
	case h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1:
		return "offsets overflow"
	case h.LastOffset()-segBase > math.MaxInt32:
		return fmt.Sprintf("offset %d too far from segment base %d", h.LastOffset(), segBase)
	case h.PartitionLeaderEpoch < 0:
		return fmt.Sprintf("negative partition leader epoch %d", h.PartitionLeaderEpoch)
	case h.PartitionLeaderEpoch < lastEpoch:
		return fmt.Sprintf("epoch %d below previous epoch %d", h.PartitionLeaderEpoch, lastEpoch)
	}
	return ""
}
