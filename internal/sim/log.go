package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Payload identifies the content of one batch. A client proposal gets a
// fresh id from the proposal counter; a control batch the core makes (the
// LeaderChange at an epoch start) is identified by its epoch and leader,
// so two control batches with equal content have equal payloads. The
// checker compares payloads where a real node would compare bytes.
type Payload uint64

// controlBit marks the payload of a control batch.
const controlBit Payload = 1 << 62

// controlPayload names the control batch b by its content.
func controlPayload(b kraft.BatchInfo) Payload {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%+v|%d|%v", b.Epoch, b.LeaderChange, b.KRaftVersion, b.Voters)
	return controlBit | Payload(h.Sum64()>>2)
}

// String formats the payload: "p7" for a proposal, "ctl" plus a short hash
// for a control batch.
func (p Payload) String() string {
	if p&controlBit != 0 {
		return fmt.Sprintf("ctl%04x", uint64(p)&0xffff)
	}
	return fmt.Sprintf("p%d", uint64(p))
}

// Entry is one batch of a simulated log: the summary the core sees plus
// the payload that stands for its bytes.
type Entry struct {
	Batch   kraft.BatchInfo
	Payload Payload
}

// String formats the entry as its batch and payload.
func (e Entry) String() string { return fmt.Sprintf("%s:%s", e.Batch, e.Payload) }

// memLog is a node's log: contiguous entries from the log start offset,
// and the node's snapshots (oldest first; the log start is the oldest
// one's end offset once retention moved it). It implements
// [kraft.LogView]. The simulator keeps two per node: the live log the
// core reads, and the durable image a crash falls back to. Snapshots are
// immutable, so clones share them.
type memLog struct {
	start   kraft.Offset
	entries []Entry
	snaps   []*simSnapshot
}

var _ kraft.LogView = (*memLog)(nil)

func (l *memLog) clone() *memLog {
	return &memLog{start: l.start, entries: slices.Clone(l.entries), snaps: slices.Clone(l.snaps)}
}

// StartOffset implements [kraft.LogView].
func (l *memLog) StartOffset() kraft.Offset { return l.start }

// EndOffset implements [kraft.LogView].
func (l *memLog) EndOffset() kraft.Offset {
	if len(l.entries) == 0 {
		return l.start
	}
	return l.entries[len(l.entries)-1].Batch.LastOffset + 1
}

// LastFetchedEpoch implements [kraft.LogView]: the last batch's epoch, or
// the latest snapshot's when the log is empty.
func (l *memLog) LastFetchedEpoch() kraft.Epoch {
	if len(l.entries) == 0 {
		if s := l.latest(); s != nil {
			return s.id.Epoch
		}
		return 0
	}
	return l.entries[len(l.entries)-1].Batch.Epoch
}

// latest returns the newest snapshot, or nil.
func (l *memLog) latest() *simSnapshot {
	if len(l.snaps) == 0 {
		return nil
	}
	return l.snaps[len(l.snaps)-1]
}

// EndOffsetForEpoch implements [kraft.LogView] with the semantics of
// KafkaRaftLog.endOffsetForEpoch over the leader epoch cache: the end
// offset of the largest epoch ≤ e is the start offset of the next larger
// epoch; an epoch the cache cannot answer for (above every known one, or
// an empty log) gives (log end offset, last epoch), as the log store
// does. (kraft.LogView's doc and krafttest.MemLog say (-1, -1) for an
// epoch above every known one.)
func (l *memLog) EndOffsetForEpoch(e kraft.Epoch) kraft.OffsetAndEpoch {
	if len(l.entries) == 0 {
		return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: l.LastFetchedEpoch()}
	}
	last := l.entries[len(l.entries)-1].Batch.Epoch
	if e == last {
		return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: e}
	}
	if e > last {
		return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: last}
	}
	// Walk the epoch runs: (epoch, start offset).
	prevEpoch := kraft.Epoch(-1)
	for _, en := range l.entries {
		if en.Batch.Epoch == prevEpoch {
			continue
		}
		if en.Batch.Epoch > e {
			if prevEpoch < 0 {
				// Below the log's first epoch: when the log starts at the
				// earliest snapshot, its id is the answer (Kafka points a
				// fetcher behind the log start at the snapshot).
				if len(l.snaps) > 0 && l.snaps[0].id.Offset == en.Batch.BaseOffset {
					return l.snaps[0].id
				}
				return kraft.OffsetAndEpoch{Offset: en.Batch.BaseOffset, Epoch: e}
			}
			return kraft.OffsetAndEpoch{Offset: en.Batch.BaseOffset, Epoch: prevEpoch}
		}
		prevEpoch = en.Batch.Epoch
	}
	return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: last}
}

// LatestSnapshot implements [kraft.LogView].
func (l *memLog) LatestSnapshot() (kraft.OffsetAndEpoch, bool) {
	if s := l.latest(); s != nil {
		return s.id, true
	}
	return kraft.OffsetAndEpoch{}, false
}

// EarliestSnapshot implements [kraft.LogView].
func (l *memLog) EarliestSnapshot() (kraft.OffsetAndEpoch, bool) {
	if len(l.snaps) == 0 {
		return kraft.OffsetAndEpoch{}, false
	}
	return l.snaps[0].id, true
}

// SnapshotSize implements [kraft.LogView].
func (l *memLog) SnapshotSize(id kraft.OffsetAndEpoch) (int64, bool) {
	if s := l.snapshot(id); s != nil {
		return int64(len(s.data)), true
	}
	return 0, false
}

// snapshot returns the snapshot with id id, or nil.
func (l *memLog) snapshot(id kraft.OffsetAndEpoch) *simSnapshot {
	for _, s := range l.snaps {
		if s.id == id {
			return s
		}
	}
	return nil
}

// VoterHistory implements [kraft.LogView]: the latest snapshot's voter set
// (at its last offset), then the Voters records in the log.
func (l *memLog) VoterHistory() []kraft.VoterSetAt {
	var h []kraft.VoterSetAt
	if s := l.latest(); s != nil && s.voters != nil {
		h = append(h, kraft.VoterSetAt{Offset: s.id.Offset - 1, Voters: slices.Clone(s.voters)})
	}
	for _, e := range l.entries {
		if e.Batch.Voters != nil {
			h = append(h, kraft.VoterSetAt{Offset: e.Batch.BaseOffset, Voters: slices.Clone(e.Batch.Voters)})
		}
	}
	return h
}

// LatestLeaderChange implements [kraft.LogView]: the last entry with a
// LeaderChange record.
func (l *memLog) LatestLeaderChange() (kraft.BatchInfo, bool) {
	for i := len(l.entries) - 1; i >= 0; i-- {
		if b := l.entries[i].Batch; b.Control && b.LeaderChange.LeaderID != kraft.NoNode {
			return b, true
		}
	}
	return kraft.BatchInfo{}, false
}

// find returns the index of the entry whose range holds offset o, or -1.
func (l *memLog) find(o kraft.Offset) int { return findIndex(l.entries, o) }

// truncate drops every entry at or after offset t; t must be a batch
// boundary.
func (l *memLog) truncate(t kraft.Offset) error {
	if t < l.start {
		return fmt.Errorf("truncate to %d below the log start %d", t, l.start)
	}
	i := slices.IndexFunc(l.entries, func(e Entry) bool { return e.Batch.LastOffset >= t })
	if i < 0 {
		return nil
	}
	if l.entries[i].Batch.BaseOffset != t {
		return fmt.Errorf("truncate to %d inside batch %s", t, l.entries[i].Batch)
	}
	l.entries = l.entries[:i:i]
	return nil
}

// append adds e at the end; its base offset must be the log end offset.
func (l *memLog) append(e Entry) error {
	if e.Batch.BaseOffset != l.EndOffset() {
		return fmt.Errorf("append %s at log end %d", e.Batch, l.EndOffset())
	}
	l.entries = append(l.entries, e)
	return nil
}

// read returns the whole entries covering [from, until), at most max
// (0: no limit).
func (l *memLog) read(from, until kraft.Offset, max int) []Entry {
	i := l.find(from)
	if i < 0 {
		return nil
	}
	var out []Entry
	for _, e := range l.entries[i:] {
		if e.Batch.BaseOffset >= until || (max > 0 && len(out) == max) {
			break
		}
		out = append(out, e)
	}
	return out
}

// hash adds the log's content (start, snapshots, offsets, epochs,
// payloads) to h.
func (l *memLog) hash(h interface{ Write([]byte) (int, error) }) {
	buf := make([]byte, 0, 16*len(l.entries)+16*len(l.snaps)+12)
	buf = binary.AppendVarint(buf, int64(l.start))
	for _, s := range l.snaps {
		buf = binary.AppendVarint(buf, int64(s.id.Offset))
		buf = binary.AppendVarint(buf, int64(s.id.Epoch))
	}
	for _, e := range l.entries {
		buf = binary.AppendVarint(buf, int64(e.Batch.BaseOffset))
		buf = binary.AppendVarint(buf, int64(e.Batch.LastOffset))
		buf = binary.AppendVarint(buf, int64(e.Batch.Epoch))
		buf = binary.AppendUvarint(buf, uint64(e.Payload))
	}
	buf = append(buf, ';')
	h.Write(buf)
}
