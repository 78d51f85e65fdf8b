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

// memLog is a node's log: contiguous entries from offset 0 (the simulator
// takes no snapshots, so the log start stays 0). It implements
// [kraft.LogView]. The simulator keeps two per node: the live log the
// core reads, and the durable image a crash falls back to.
type memLog struct {
	entries []Entry
}

var _ kraft.LogView = (*memLog)(nil)

func (l *memLog) clone() *memLog { return &memLog{entries: slices.Clone(l.entries)} }

// StartOffset implements [kraft.LogView].
func (l *memLog) StartOffset() kraft.Offset { return 0 }

// EndOffset implements [kraft.LogView].
func (l *memLog) EndOffset() kraft.Offset {
	if len(l.entries) == 0 {
		return 0
	}
	return l.entries[len(l.entries)-1].Batch.LastOffset + 1
}

// LastFetchedEpoch implements [kraft.LogView].
func (l *memLog) LastFetchedEpoch() kraft.Epoch {
	if len(l.entries) == 0 {
		return 0
	}
	return l.entries[len(l.entries)-1].Batch.Epoch
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
		return kraft.OffsetAndEpoch{Offset: 0, Epoch: 0}
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
				return kraft.OffsetAndEpoch{Offset: en.Batch.BaseOffset, Epoch: e}
			}
			return kraft.OffsetAndEpoch{Offset: en.Batch.BaseOffset, Epoch: prevEpoch}
		}
		prevEpoch = en.Batch.Epoch
	}
	return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: last}
}

// LatestSnapshot implements [kraft.LogView]; the simulator takes none.
func (l *memLog) LatestSnapshot() (kraft.OffsetAndEpoch, bool) { return kraft.OffsetAndEpoch{}, false }

// EarliestSnapshot implements [kraft.LogView]; the simulator takes none.
func (l *memLog) EarliestSnapshot() (kraft.OffsetAndEpoch, bool) {
	return kraft.OffsetAndEpoch{}, false
}

// SnapshotSize implements [kraft.LogView]; the simulator takes none.
func (l *memLog) SnapshotSize(kraft.OffsetAndEpoch) (int64, bool) { return 0, false }

// VoterHistory implements [kraft.LogView]: the Voters records in the log.
func (l *memLog) VoterHistory() []kraft.VoterSetAt {
	var h []kraft.VoterSetAt
	for _, e := range l.entries {
		if e.Batch.Voters != nil {
			h = append(h, kraft.VoterSetAt{Offset: e.Batch.BaseOffset, Voters: slices.Clone(e.Batch.Voters)})
		}
	}
	return h
}

// find returns the index of the entry whose range holds offset o, or -1.
func (l *memLog) find(o kraft.Offset) int {
	i, ok := slices.BinarySearchFunc(l.entries, o, func(e Entry, o kraft.Offset) int {
		switch {
		case e.Batch.LastOffset < o:
			return -1
		case e.Batch.BaseOffset > o:
			return 1
		}
		return 0
	})
	if !ok {
		return -1
	}
	return i
}

// truncate drops every entry at or after offset t; t must be a batch
// boundary.
func (l *memLog) truncate(t kraft.Offset) error {
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

// hash adds the log's content (offsets, epochs, payloads) to h.
func (l *memLog) hash(h interface{ Write([]byte) (int, error) }) {
	buf := make([]byte, 0, 16*len(l.entries)+1)
	for _, e := range l.entries {
		buf = binary.AppendVarint(buf, int64(e.Batch.BaseOffset))
		buf = binary.AppendVarint(buf, int64(e.Batch.LastOffset))
		buf = binary.AppendVarint(buf, int64(e.Batch.Epoch))
		buf = binary.AppendUvarint(buf, uint64(e.Payload))
	}
	buf = append(buf, ';')
	h.Write(buf)
}
