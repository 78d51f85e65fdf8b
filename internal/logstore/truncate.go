package logstore

import (
	"fmt"

	"github.com/krabka-go/krabka/internal/vfs"
)

// fixTail makes the tail of s, after a cut, what appending or recovering
// its remaining batches builds: the batches from the one the next-to-last
// index entry points at (or from the first) to the end. The part the cut
// left is kept when it reaches back that far; otherwise the headers are
// read again. A read that fails leaves the tail empty, which only costs
// lookups a scan.
func (l *Log) fixTail(s *segment) {
	n := len(s.index)
	start := int64(0)
	if n >= 2 {
		start = int64(s.index[n-2].Pos)
	}
	k := len(s.tail)
	for k > 0 && s.tail[k-1].pos >= s.size {
		k--
	}
	s.tail = s.tail[:k]
	if i := s.tailIndexOf(start); i >= 0 {
		s.dropTailBefore(i)
	} else {
		s.tail = s.tail[:0]
		r := headerReader{s: s, buf: l.chunk}
		for pos := start; pos < s.size; {
			h, err := r.header(pos)
			if err != nil {
				s.tail = s.tail[:0]
				break
			}
			s.rememberTail(h.BaseOffset, pos, l.opts.tailCap())
			pos += int64(h.Size())
		}
	}
	s.tailMark = 0
	if n >= 1 {
		s.tailMark = max(0, s.tailIndexOf(int64(s.index[n-1].Pos)))
	}
}

// Truncate removes every batch at or after offset, which is how a follower
// drops a divergent suffix (KafkaRaftLog.truncateTo). When offset falls
// inside a batch, that whole batch goes too, so the new log end offset is
// the start of the batch holding offset. Later segments are deleted, the
// cut segment's files are truncated at the batch boundary, index and epoch
// cache entries beyond it are dropped. The recovery point is lowered
// first, so a crash in the middle never leaves a recovery point above the
// data. Offsets below the log start offset fail with [ErrOffsetOutOfRange];
// it is the caller's job never to truncate below the high watermark.
func (l *Log) Truncate(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaitSyncs()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset < l.startOffset {
		return fmt.Errorf("logstore: truncate to %d below log start offset %d: %w", offset, l.startOffset, ErrOffsetOutOfRange)
	}
	if offset >= l.active().next {
		return nil
	}
	s := l.segmentFor(offset)
	b, err := l.findBatch(s, offset)
	if err != nil {
		return err
	}
	pos, newEnd := b.pos, b.base
	if l.rp.offset > newEnd {
		if err := l.rp.set(newEnd); err != nil {
			return l.poison(err)
		}
	}
	l.synced = min(l.synced, newEnd)
	// Delete the later segments, newest first.
	idx := l.indexOf(s)
	for len(l.segs)-1 > idx {
		last := l.segs[len(l.segs)-1]
		if err := last.removeFiles(l.fsys); err != nil {
			return l.poison(err)
		}
		l.segs = l.segs[:len(l.segs)-1]
	}
	// The deletions are made durable before the cut segment shrinks: if
	// they could be undone by a crash after the cut, the resurrected
	// segments would no longer continue the cut one, which recovery must
	// treat as corruption.
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return l.poison(fmt.Errorf("logstore: sync directory %s: %w", l.dir, err))
	}
	if err := l.cutSegment(s, pos, newEnd); err != nil {
		return err
	}
	if l.epochs.truncateFromEnd(newEnd) {
		if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, l.epochs.entries); err != nil {
			return l.poison(err)
		}
	}
	return nil
}

// cutSegment truncates s to pos bytes (newEnd is the offset of the batch
// that started there), trims its indexes and fsyncs the files.
func (l *Log) cutSegment(s *segment, pos, newEnd int64) error {
	if err := s.log.Truncate(pos); err != nil {
		return l.poison(fmt.Errorf("logstore: truncate segment %s to %d bytes: %w", s.path(logSuffix), pos, err))
	}
	s.size, s.next, s.alloc = pos, newEnd, pos
	s.truncateIndexes(pos, newEnd)
	s.bytesSinceIndex = pos
	if n := len(s.index); n > 0 {
		s.bytesSinceIndex = pos - int64(s.index[n-1].Pos)
	}
	l.fixTail(s)
	s.maxTimestamp, s.offsetOfMaxTS = noTimestamp, s.base
	if n := len(s.timeIndex); n > 0 {
		s.maxTimestamp, s.offsetOfMaxTS = s.timeIndex[n-1].Timestamp, s.base+int64(s.timeIndex[n-1].RelOffset)
	}
	if pos == 0 {
		s.firstTimestamp = noTimestamp
	}
	if err := s.idx.Truncate(int64(len(s.index)) * offsetIndexEntrySize); err != nil {
		return l.poison(fmt.Errorf("logstore: truncate index %s: %w", s.path(indexSuffix), err))
	}
	if err := s.tidx.Truncate(int64(len(s.timeIndex)) * timeIndexEntrySize); err != nil {
		return l.poison(fmt.Errorf("logstore: truncate time index %s: %w", s.path(timeIndexSuffix), err))
	}
	for _, f := range []vfs.File{s.log, s.idx, s.tidx} {
		if err := f.Sync(); err != nil {
			return l.poison(fmt.Errorf("logstore: sync %s: %w", f.Name(), err))
		}
	}
	return nil
}

func (l *Log) indexOf(s *segment) int {
	for i, t := range l.segs {
		if t == s {
			return i
		}
	}
	panic("logstore: invariant: segment not in the log")
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset (KafkaRaftLog.truncateFullyAndStartAt): a follower does this after
// installing a snapshot that ends beyond its log. The epoch cache is
// emptied. The recovery point is lowered to 0 before anything is deleted
// and raised to offset once the new empty segment is durable.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaitSyncs()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("logstore: truncate fully and start at negative offset %d: %w", offset, ErrOffsetOutOfRange)
	}
	if l.rp.offset > 0 {
		if err := l.rp.set(0); err != nil {
			return l.poison(err)
		}
	}
	for len(l.segs) > 0 {
		last := l.segs[len(l.segs)-1]
		if err := last.removeFiles(l.fsys); err != nil {
			return l.poison(err)
		}
		l.segs = l.segs[:len(l.segs)-1]
	}
	s, err := createSegment(l.fsys, l.dir, offset)
	if err != nil {
		// Keep the invariant "at least one segment" for readers; the log
		// is poisoned anyway.
		l.segs = []*segment{newSegmentState(l.dir, offset)}
		return l.poison(err)
	}
	l.segs = []*segment{s}
	l.startOffset = offset
	l.epochs.entries = nil
	if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, nil); err != nil {
		return l.poison(err)
	}
	if err := l.rp.set(offset); err != nil {
		return l.poison(err)
	}
	l.synced = offset
	return nil
}

// AdvanceLogStart moves the log start offset up to offset (after a
// snapshot ending at offset exists) and deletes every segment that lies
// entirely below it; the active segment is never deleted. Epoch cache
// entries below offset are folded into one entry starting at offset
// (LeaderEpochFileCache.truncateFromStart). An offset beyond the log end
// fails with [ErrOffsetOutOfRange]: use [Log.TruncateFullyAndStartAt].
func (l *Log) AdvanceLogStart(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaitSyncs()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset > l.active().next {
		return fmt.Errorf("logstore: advance log start to %d beyond log end offset %d: %w", offset, l.active().next, ErrOffsetOutOfRange)
	}
	if offset <= l.startOffset {
		return nil
	}
	l.startOffset = offset
	return l.deleteSegmentsBelow(offset)
}

// deleteSegmentsBelow deletes the segments that end at or below offset,
// oldest first, never the active one, then fixes the log start offset and
// epoch cache.
func (l *Log) deleteSegmentsBelow(offset int64) error {
	removed := 0
	for len(l.segs) > 1 && l.segs[0].next <= offset {
		if err := l.segs[0].removeFiles(l.fsys); err != nil {
			return l.poison(err)
		}
		l.segs = l.segs[1:]
		removed++
	}
	if removed > 0 {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return l.poison(fmt.Errorf("logstore: sync directory %s: %w", l.dir, err))
		}
	}
	l.startOffset = max(l.startOffset, l.segs[0].base)
	if l.epochs.truncateFromStart(l.startOffset) {
		if err := WriteLeaderEpochCheckpoint(l.fsys, l.dir, l.epochs.entries); err != nil {
			return l.poison(err)
		}
	}
	return nil
}
