package logstore

import (
	"bytes"
	"path/filepath"
	"strconv"

	"github.com/krabka-go/krabka/internal/vfs"
)

// LeaderEpochCheckpointFileName is the name of the leader-epoch cache file
// in the partition directory (Kafka's LeaderEpochCheckpointFile).
const LeaderEpochCheckpointFileName = "leader-epoch-checkpoint"

// maxEpochCheckpointBytes bounds what recovery reads of the
// leader-epoch-checkpoint file: about a million epochs, far more than any
// real log.
const maxEpochCheckpointBytes = 32 << 20

// EpochEntry says that epoch Epoch starts at offset StartOffset: the base
// offset of the first batch written in that epoch.
type EpochEntry struct {
	// Epoch is the leader epoch.
	Epoch int32
	// StartOffset is the base offset of the epoch's first batch.
	StartOffset int64
}

// epochCache is the in-memory leader-epoch cache (Kafka's
// LeaderEpochFileCache): entries in increasing epoch and start offset.
type epochCache struct {
	entries []EpochEntry
}

// latest returns the last entry, if any.
func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at startOffset. It reports whether the
// cache changed. Like LeaderEpochFileCache.assign it is a no-op when the
// latest entry already has this epoch (and an earlier or equal start), and
// it drops entries that would no longer be monotonic.
func (c *epochCache) assign(epoch int32, startOffset int64) bool {
	if l, ok := c.latest(); ok && l.Epoch == epoch && l.StartOffset <= startOffset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= startOffset) {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// truncateFromEnd removes every entry that starts at or after endOffset
// (the log was truncated to endOffset). It reports whether the cache
// changed.
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart removes entries wholly below startOffset: the last entry
// starting at or before startOffset is kept and moved to start there, as
// LeaderEpochFileCache.truncateFromStart does. It reports whether the cache
// changed.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 {
		return false
	}
	keep := c.entries[i-1]
	if i == 1 && keep.StartOffset == startOffset {
		return false
	}
	keep.StartOffset = startOffset
	rest := append([]EpochEntry{keep}, c.entries[i:]...)
	c.entries = rest
	return true
}

// endOffsetFor implements LeaderEpochFileCache.endOffsetFor: the epoch and
// end offset (exclusive) of the largest epoch <= requested, with found=false
// when the cache cannot answer (it is empty, or requested is above every
// epoch, or negative).
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (epoch int32, endOffset int64, found bool) {
	if requested < 0 {
		return 0, 0, false
	}
	l, ok := c.latest()
	if !ok {
		return 0, 0, false
	}
	if l.Epoch == requested {
		// The latest epoch is still being written: its end is the LEO.
		return requested, logEndOffset, true
	}
	// higher = first entry with Epoch > requested.
	hi := 0
	for hi < len(c.entries) && c.entries[hi].Epoch <= requested {
		hi++
	}
	if hi == len(c.entries) {
		return 0, 0, false
	}
	if hi == 0 {
		// Below every known epoch: the data is gone; answer the requested
		// epoch ending where the first known epoch starts.
		return requested, c.entries[0].StartOffset, true
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset, true
}

// snapshot returns a copy of the entries.
func (c *epochCache) snapshot() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}

// EncodeLeaderEpochCheckpoint renders entries in Kafka's checkpoint text
// form: "0" (version), the entry count, then "<epoch> <startOffset>" lines,
// each ending in a newline.
func EncodeLeaderEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	b.WriteString("0\n")
	b.WriteString(strconv.Itoa(len(entries)))
	b.WriteByte('\n')
	for _, e := range entries {
		b.WriteString(strconv.FormatInt(int64(e.Epoch), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(e.StartOffset, 10))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// WriteLeaderEpochCheckpoint replaces dir/leader-epoch-checkpoint
// atomically.
func WriteLeaderEpochCheckpoint(fsys vfs.FS, dir string, entries []EpochEntry) error {
	return writeFileAtomic(fsys, filepath.Join(dir, LeaderEpochCheckpointFileName), EncodeLeaderEpochCheckpoint(entries))
}
