package krafttest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/krabka-go/krabka/internal/kraft"
)

// MemLog is an in-memory log of batch summaries: the krafttest stand-in
// for the log store. Every write is durable at once (the harness runs the
// Ready contract synchronously), so a crash loses only what a node had not
// yet handed out. It implements [kraft.LogView].
type MemLog struct {
	// Start is the log start offset.
	Start kraft.Offset
	// Batches are contiguous from Start.
	Batches []kraft.BatchInfo
	// Snapshots are the frozen snapshots, oldest first.
	Snapshots []Snapshot
	// Partial is a snapshot being downloaded (Size = bytes written so far).
	Partial Snapshot
	// Catalog, if set, is shared by the logs of one test: it maps a snapshot
	// id to the voter set the snapshot records, standing in for the bytes a
	// download would carry (snapshots with the same id have the same
	// content on every replica).
	Catalog map[kraft.OffsetAndEpoch][]kraft.ReplicaKey
}

// Snapshot is a snapshot file: its id, its size in bytes and the voter set
// it records (nil if none). A downloaded snapshot learns its voter set from
// the log's Catalog, as the harness decodes no bytes.
type Snapshot struct {
	ID     kraft.OffsetAndEpoch
	Size   int64
	Voters []kraft.ReplicaKey
}

var _ kraft.LogView = (*MemLog)(nil)

// Clone returns a deep copy.
func (l *MemLog) Clone() *MemLog {
	c := *l
	c.Batches = slices.Clone(l.Batches)
	c.Snapshots = slices.Clone(l.Snapshots)
	return &c
}

// StartOffset implements [kraft.LogView].
func (l *MemLog) StartOffset() kraft.Offset { return l.Start }

// EndOffset implements [kraft.LogView].
func (l *MemLog) EndOffset() kraft.Offset {
	if len(l.Batches) == 0 {
		return l.Start
	}
	return l.Batches[len(l.Batches)-1].LastOffset + 1
}

// LastFetchedEpoch implements [kraft.LogView].
func (l *MemLog) LastFetchedEpoch() kraft.Epoch {
	if len(l.Batches) > 0 {
		return l.Batches[len(l.Batches)-1].Epoch
	}
	if s, ok := l.LatestSnapshot(); ok {
		return s.Epoch
	}
	return 0
}

// EndOffsetForEpoch implements [kraft.LogView] with the leader-epoch-cache
// semantics of Kafka's LeaderEpochFileCache.endOffsetFor.
func (l *MemLog) EndOffsetForEpoch(e kraft.Epoch) kraft.OffsetAndEpoch {
	type entry struct {
		epoch kraft.Epoch
		start kraft.Offset
	}
	var cache []entry
	for _, b := range l.Batches {
		if len(cache) == 0 || cache[len(cache)-1].epoch != b.Epoch {
			cache = append(cache, entry{b.Epoch, b.BaseOffset})
		}
	}
	if len(cache) == 0 {
		return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: l.LastFetchedEpoch()}
	}
	if cache[len(cache)-1].epoch == e {
		return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: e}
	}
	hi := slices.IndexFunc(cache, func(c entry) bool { return c.epoch > e })
	if hi < 0 {
		// Above every known epoch: the cache has no answer and Kafka falls
		// back to the log end.
		return kraft.OffsetAndEpoch{Offset: l.EndOffset(), Epoch: l.LastFetchedEpoch()}
	}
	found := kraft.OffsetAndEpoch{Offset: cache[hi].start, Epoch: e}
	if hi > 0 {
		found.Epoch = cache[hi-1].epoch
	}
	// Below the log's first epoch the divergence point is the snapshot at
	// the log start offset (Kafka overrides the answer with its id).
	if s, ok := l.EarliestSnapshot(); ok && found.Offset == s.Offset && found.Epoch == e {
		return s
	}
	return found
}

// LatestSnapshot implements [kraft.LogView].
func (l *MemLog) LatestSnapshot() (kraft.OffsetAndEpoch, bool) {
	if len(l.Snapshots) == 0 {
		return kraft.OffsetAndEpoch{}, false
	}
	return l.Snapshots[len(l.Snapshots)-1].ID, true
}

// EarliestSnapshot implements [kraft.LogView].
func (l *MemLog) EarliestSnapshot() (kraft.OffsetAndEpoch, bool) {
	if len(l.Snapshots) == 0 {
		return kraft.OffsetAndEpoch{}, false
	}
	return l.Snapshots[0].ID, true
}

// SnapshotSize implements [kraft.LogView].
func (l *MemLog) SnapshotSize(id kraft.OffsetAndEpoch) (int64, bool) {
	for _, s := range l.Snapshots {
		if s.ID == id {
			return s.Size, true
		}
	}
	return 0, false
}

// VoterHistory implements [kraft.LogView]: the latest snapshot's voter set,
// then the Voters records in the log.
func (l *MemLog) VoterHistory() []kraft.VoterSetAt {
	var h []kraft.VoterSetAt
	if n := len(l.Snapshots); n > 0 && l.Snapshots[n-1].Voters != nil {
		s := l.Snapshots[n-1]
		h = append(h, kraft.VoterSetAt{Offset: s.ID.Offset - 1, Voters: s.Voters})
	}
	for _, b := range l.Batches {
		if b.Voters != nil {
			h = append(h, kraft.VoterSetAt{Offset: b.BaseOffset, Voters: b.Voters})
		}
	}
	return h
}

// LatestLeaderChange implements [kraft.LogView]: the last batch with a
// LeaderChange record.
func (l *MemLog) LatestLeaderChange() (kraft.BatchInfo, bool) {
	for i := len(l.Batches) - 1; i >= 0; i-- {
		if b := l.Batches[i]; b.Control && b.LeaderChange.LeaderID != kraft.NoNode {
			return b, true
		}
	}
	return kraft.BatchInfo{}, false
}

// Truncate drops every batch that holds an offset at or after t. Like
// Kafka's segment truncation it works on whole batches: when t falls
// inside a batch, that batch goes too and the log ends below t.
func (l *MemLog) Truncate(t kraft.Offset) error {
	if t < l.Start {
		return fmt.Errorf("krafttest: truncate to %d below log start %d", t, l.Start)
	}
	i := slices.IndexFunc(l.Batches, func(b kraft.BatchInfo) bool { return b.LastOffset >= t })
	if i < 0 {
		return nil
	}
	l.Batches = l.Batches[:i]
	return nil
}

// Append adds a batch at the end.
func (l *MemLog) Append(b kraft.BatchInfo) error {
	if b.BaseOffset != l.EndOffset() {
		return fmt.Errorf("krafttest: append %s at log end %d", b, l.EndOffset())
	}
	l.Batches = append(l.Batches, b)
	return nil
}

// Read returns whole batches covering [from, until), at most maxBatches
// (0 = no limit).
func (l *MemLog) Read(from, until kraft.Offset, maxBatches int) []kraft.BatchInfo {
	var out []kraft.BatchInfo
	for _, b := range l.Batches {
		if b.LastOffset < from || b.BaseOffset >= until {
			continue
		}
		out = append(out, b)
		if maxBatches > 0 && len(out) == maxBatches {
			break
		}
	}
	return out
}

// CreateSnapshot freezes a snapshot ending at offset (at a batch boundary,
// within the log), drops the batches below it and the older snapshots.
func (l *MemLog) CreateSnapshot(offset kraft.Offset, size int64) (kraft.OffsetAndEpoch, error) {
	if offset <= l.Start || offset > l.EndOffset() {
		return kraft.OffsetAndEpoch{}, fmt.Errorf("krafttest: snapshot at %d outside (%d, %d]", offset, l.Start, l.EndOffset())
	}
	i := slices.IndexFunc(l.Batches, func(b kraft.BatchInfo) bool { return b.LastOffset == offset-1 })
	if i < 0 {
		return kraft.OffsetAndEpoch{}, fmt.Errorf("krafttest: snapshot at %d is not at a batch boundary", offset)
	}
	id := kraft.OffsetAndEpoch{Offset: offset, Epoch: l.Batches[i].Epoch}
	var voters []kraft.ReplicaKey
	for _, h := range l.VoterHistory() {
		if h.Offset < offset {
			voters = h.Voters
		}
	}
	// Like Kafka's retention, snapshots older than the new log start go.
	l.Snapshots = slices.DeleteFunc(l.Snapshots, func(s Snapshot) bool { return s.ID.Offset < offset })
	l.Snapshots = append(l.Snapshots, Snapshot{ID: id, Size: size, Voters: voters})
	if l.Catalog != nil {
		l.Catalog[id] = voters
	}
	l.Batches = slices.Clone(l.Batches[i+1:])
	l.Start = offset
	return id, nil
}

// Install freezes the downloaded snapshot id and resets the log to start
// at its end offset.
func (l *MemLog) Install(id kraft.OffsetAndEpoch) error {
	if l.Partial.ID != id {
		if _, ok := l.SnapshotSize(id); !ok {
			return fmt.Errorf("krafttest: install %s: not downloaded", id)
		}
	} else {
		p := l.Partial
		p.Voters = l.Catalog[id]
		l.Snapshots = append(l.Snapshots, p)
		l.Partial = Snapshot{}
	}
	l.Snapshots = slices.DeleteFunc(l.Snapshots, func(s Snapshot) bool { return s.ID.Offset < id.Offset })
	l.Batches = nil
	l.Start = id.Offset
	return nil
}

// String prints the log one batch per line.
func (l *MemLog) String() string {
	var b strings.Builder
	for _, s := range l.Snapshots {
		fmt.Fprintf(&b, "snapshot %s size=%d\n", s.ID, s.Size)
	}
	if len(l.Batches) == 0 {
		fmt.Fprintf(&b, "empty log, start=%d\n", l.Start)
	}
	for _, bi := range l.Batches {
		fmt.Fprintf(&b, "%s\n", bi)
	}
	return b.String()
}

// ApplyReady carries out the log part of a Ready in contract order:
// truncate, append, snapshot writes, snapshot install. (The harness keeps
// the quorum state and the messages itself.)
func (l *MemLog) ApplyReady(rd kraft.Ready) error {
	if rd.TruncateTo >= 0 {
		if err := l.Truncate(rd.TruncateTo); err != nil {
			return err
		}
	}
	for _, a := range rd.Appends {
		if err := l.Append(a.Batch); err != nil {
			return err
		}
	}
	for _, w := range rd.SnapshotWrites {
		if l.Partial.ID != w.SnapshotID || w.Position == 0 {
			l.Partial = Snapshot{ID: w.SnapshotID}
		}
		if w.Position != l.Partial.Size {
			return fmt.Errorf("krafttest: snapshot write at %d, partial file has %d bytes", w.Position, l.Partial.Size)
		}
		l.Partial.Size += w.Length
	}
	if rd.InstallSnapshot.Valid() {
		return l.Install(rd.InstallSnapshot)
	}
	return nil
}

// Fill plays the sending runtime's part for an outbound message: a Fetch
// response gets the batches its RecordsRead names (at most maxBatches, 0
// for no cap) and a records handle; a FetchSnapshot response gets a chunk
// handle. handle is the next handle to use.
func (l *MemLog) Fill(m kraft.Message, maxBatches int, handle kraft.RecordsHandle) {
	switch m := m.(type) {
	case *kraft.FetchResponse:
		if !m.Read.Empty() {
			m.Batches = l.Read(m.Read.From, m.Read.Until, maxBatches)
			m.Records = handle
		}
	case *kraft.FetchSnapshotResponse:
		if m.Length > 0 {
			m.Chunk = handle
		}
	}
}
