package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Snapshots (KIP-630) in the simulator, both modes. Each node takes its
// own snapshots of its committed prefix at a batch boundary below its
// high watermark, every SnapshotEvery committed batches, as the runtime
// does on metadata.log.max.record.bytes.between.snapshots; retention then
// keeps the newest SnapshotKeep snapshots and moves the log start to the
// oldest one kept, as the size rule of metadata.max.retention.bytes does.
// A follower behind the leader's log start downloads the leader's newest
// snapshot in FetchSnapshot chunks of at most FetchSnapshotMaxBytes,
// through the same lossy, duplicating, reordering network as every other
// message, and installs it; a crash loses the partial download.
//
// A snapshot's bytes encode its id, the voter set at its last offset, a
// writer-specific header (so that two nodes' snapshots of one id differ in
// bytes and size, as Kafka's do) and every batch summary of the prefix,
// with a CRC-32C over everything. The installing node decodes what it
// assembled from chunks, so a chunk written at the wrong place, twice or
// from another snapshot is caught by the checksum, not trusted.

// simSnapshot is one frozen snapshot: its id, the batches of the prefix
// it holds (the state machine's content), the voter set in force at its
// last offset (nil: the static set) and its bytes.
type simSnapshot struct {
	id      kraft.OffsetAndEpoch
	entries []Entry
	voters  []kraft.ReplicaKey
	data    []byte
}

// download is a snapshot being received: the bytes so far. It lives in
// memory only, as the .checkpoint.part file a restart deletes.
type download struct {
	id   kraft.OffsetAndEpoch
	data []byte
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// snapMagic starts every encoded snapshot.
const snapMagic = "SIMSNAP1"

// encodeSnapshot returns the bytes of a snapshot of entries with id id
// and voter set voters, written by writer (whose header padding makes the
// bytes writer-specific).
func encodeSnapshot(id kraft.OffsetAndEpoch, voters []kraft.ReplicaKey, entries []Entry, writer kraft.NodeID) []byte {
	b := make([]byte, 0, len(snapMagic)+32+6*len(entries))
	b = append(b, snapMagic...)
	b = binary.AppendVarint(b, int64(id.Offset))
	b = binary.AppendVarint(b, int64(id.Epoch))
	b = binary.AppendVarint(b, int64(writer))
	b = append(b, make([]byte, int(writer)%4)...) // writer-specific header size
	if voters == nil {
		b = binary.AppendVarint(b, -1)
	} else {
		b = binary.AppendVarint(b, int64(len(voters)))
		for _, v := range voters {
			b = binary.AppendVarint(b, int64(v.ID))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendVarint(b, int64(e.Batch.BaseOffset))
		b = binary.AppendVarint(b, int64(e.Batch.LastOffset-e.Batch.BaseOffset))
		b = binary.AppendVarint(b, int64(e.Batch.Epoch))
		b = binary.AppendUvarint(b, uint64(e.Payload))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

var errBadSnapshot = errors.New("malformed snapshot")

// decodeSnapshot parses and verifies the bytes of snapshot id.
func decodeSnapshot(id kraft.OffsetAndEpoch, data []byte) (*simSnapshot, error) {
	if len(data) < len(snapMagic)+4 || string(data[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: %d bytes without the magic", errBadSnapshot, len(data))
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, crcTable), binary.BigEndian.Uint32(data[len(data)-4:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", errBadSnapshot, got, want)
	}
	r := body[len(snapMagic):]
	bad := false
	varint := func() int64 {
		v, n := binary.Varint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return v
	}
	uvarint := func() uint64 {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return v
	}
	got := kraft.OffsetAndEpoch{Offset: kraft.Offset(varint()), Epoch: kraft.Epoch(varint())}
	writer := varint()
	if pad := int(writer) % 4; !bad && pad >= 0 && pad <= len(r) {
		r = r[pad:]
	} else {
		bad = true
	}
	s := &simSnapshot{id: got, data: data}
	if nv := varint(); nv >= 0 && !bad {
		s.voters = make([]kraft.ReplicaKey, 0, nv)
		for range nv {
			s.voters = append(s.voters, kraft.ReplicaKey{ID: kraft.NodeID(varint())})
		}
	}
	n := uvarint()
	for i := uint64(0); i < n && !bad; i++ {
		base := kraft.Offset(varint())
		last := base + kraft.Offset(varint())
		epoch := kraft.Epoch(varint())
		p := Payload(uvarint())
		s.entries = append(s.entries, Entry{Batch: kraft.BatchInfo{BaseOffset: base, LastOffset: last, Epoch: epoch}, Payload: p})
	}
	switch {
	case bad || len(r) != 0:
		return nil, fmt.Errorf("%w: bad framing", errBadSnapshot)
	case got != id:
		return nil, fmt.Errorf("%w: holds snapshot %s, want %s", errBadSnapshot, got, id)
	}
	return s, nil
}

// holds returns the batch of n's snapshot or log that holds offset o.
func (l *memLog) holds(o kraft.Offset) (Entry, bool) {
	if o >= l.start {
		if i := l.find(o); i >= 0 {
			return l.entries[i], true
		}
		return Entry{}, false
	}
	if s := l.latest(); s != nil && o < s.id.Offset {
		return findEntry(s.entries, o)
	}
	return Entry{}, false
}

// findEntry returns the entry of es (in offset order) holding offset o.
func findEntry(es []Entry, o kraft.Offset) (Entry, bool) {
	if i := findIndex(es, o); i >= 0 {
		return es[i], true
	}
	return Entry{}, false
}

// findIndex returns the index of the entry of es (in offset order) holding
// offset o, or -1.
func findIndex(es []Entry, o kraft.Offset) int {
	i, ok := slices.BinarySearchFunc(es, o, func(e Entry, o kraft.Offset) int {
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

// lastEntry returns the last batch of the log, or of the latest snapshot
// when the log is empty.
func (l *memLog) lastEntry() (Entry, bool) {
	if len(l.entries) > 0 {
		return l.entries[len(l.entries)-1], true
	}
	if s := l.latest(); s != nil && len(s.entries) > 0 {
		return s.entries[len(s.entries)-1], true
	}
	return Entry{}, false
}

// baseVoters is the voter set the log's Voters records start from: the
// latest snapshot's, else nil.
func (l *memLog) baseVoters() []kraft.ReplicaKey {
	if s := l.latest(); s != nil {
		return s.voters
	}
	return nil
}

// install makes s the newest snapshot and restarts the log at its end
// offset (Kafka's truncateFullyAndStartAt); older snapshots go.
func (l *memLog) install(s *simSnapshot) {
	l.snaps = slices.DeleteFunc(l.snaps, func(x *simSnapshot) bool { return x.id.Offset <= s.id.Offset })
	l.snaps = append(l.snaps, s)
	l.entries = nil
	l.start = s.id.Offset
}

// maybeSnapshot takes a snapshot of n's committed prefix when
// c.snapEvery committed batches followed the latest one, then applies
// retention.
func (c *cluster) maybeSnapshot(n *simNode) error {
	if c.snapEvery == 0 || n.hw <= n.log.start {
		return nil
	}
	latestEnd := kraft.Offset(0)
	var prev []Entry
	var voters []kraft.ReplicaKey
	if s := n.log.latest(); s != nil {
		latestEnd, prev, voters = s.id.Offset, s.entries, s.voters
	}
	// The batch boundary at or below the high watermark.
	end := -1
	for i, e := range n.log.entries {
		if e.Batch.LastOffset >= n.hw && c.mutation != mutSnapshotUncommitted {
			break
		}
		end = i
	}
	if end < 0 {
		return nil
	}
	first := n.log.find(latestEnd)
	if first < 0 || end-first+1 < c.snapEvery {
		return nil
	}
	tail := n.log.entries[first : end+1]
	for _, e := range tail {
		if e.Batch.Voters != nil {
			voters = e.Batch.Voters
		}
	}
	last := tail[len(tail)-1].Batch
	id := kraft.OffsetAndEpoch{Offset: last.LastOffset + 1, Epoch: last.Epoch}
	entries := append(slices.Clip(prev), tail...)
	s := &simSnapshot{id: id, entries: entries, voters: slices.Clone(voters)}
	s.data = encodeSnapshot(id, s.voters, entries, n.id)
	if err := c.chk.onSnapshot(n, s, "takes"); err != nil {
		return err
	}
	n.log.snaps = append(n.log.snaps, s)
	c.witness.Snapshots++
	c.tracef("%d snapshot %s (%d bytes)", n.id, id, len(s.data))
	return c.retain(n)
}

// retain keeps the newest c.snapKeep snapshots of n and moves its log
// start to the oldest one kept, dropping the batches below it (in disk
// mode the log store advances its log start and deletes the segments
// wholly below it, as the runtime's retention does). Snapshots are
// deleted after the log start moved.
func (c *cluster) retain(n *simNode) error {
	l := n.log
	if n.disk != nil {
		defer n.disk.setSnapshots(l)
	}
	if len(l.snaps) <= c.snapKeep {
		return nil
	}
	start := l.snaps[len(l.snaps)-c.snapKeep].id.Offset
	if start <= l.start {
		l.snaps = slices.Clone(l.snaps[len(l.snaps)-c.snapKeep:])
		return nil
	}
	if c.mutation == mutRetentionPastSnapshot {
		if i := l.find(start); i >= 0 {
			start = l.entries[i].Batch.LastOffset + 1
		}
	}
	if n.disk != nil {
		if err := n.disk.log.AdvanceLogStart(int64(start)); err != nil {
			return fmt.Errorf("node %d: log store: advance log start to %d: %w", n.id, start, err)
		}
		c.witness.StoreStartMoves++
	}
	l.snaps = slices.Clone(l.snaps[len(l.snaps)-c.snapKeep:])
	l.trimBelow(start)
	c.witness.LogStartAdvances++
	c.tracef("%d log start -> %d", n.id, start)
	return nil
}

// trimBelow drops the batches below start and makes start the log start.
func (l *memLog) trimBelow(start kraft.Offset) {
	i := slices.IndexFunc(l.entries, func(e Entry) bool { return e.Batch.BaseOffset >= start })
	if i < 0 {
		i = len(l.entries)
	}
	l.entries = slices.Clone(l.entries[i:])
	l.start = start
}

// settle brings n's log and snapshots into the shape the runtime's
// start-up leaves: a log behind its newest snapshot (an install stopped
// between the snapshot's rename and the log's restart) restarts at the
// snapshot; otherwise the log start moves up to the oldest snapshot at or
// above it (the log store reopens at its first segment's base, below the
// log start retention had set), and snapshots below that one go.
func (c *cluster) settle(n *simNode) error {
	l := n.log
	s := l.latest()
	if s == nil {
		return nil
	}
	if l.EndOffset() < s.id.Offset || l.start > s.id.Offset {
		if n.disk != nil {
			if err := n.disk.log.TruncateFullyAndStartAt(int64(s.id.Offset)); err != nil {
				return fmt.Errorf("node %d: log store: restart at snapshot %s: %w", n.id, s.id, err)
			}
			if err := n.disk.sync(); err != nil {
				return fmt.Errorf("node %d: log store: sync: %w", n.id, err)
			}
			c.witness.StoreStartMoves++
		}
		l.install(s)
		c.tracef("%d start: log restarts at snapshot %s", n.id, s.id)
	} else {
		k := 0
		for k < len(l.snaps)-1 && l.snaps[k].id.Offset < l.start {
			k++
		}
		if oldest := l.snaps[k].id.Offset; l.start < oldest {
			if n.disk != nil {
				if err := n.disk.log.AdvanceLogStart(int64(oldest)); err != nil {
					return fmt.Errorf("node %d: log store: advance log start to %d: %w", n.id, oldest, err)
				}
				c.witness.StoreStartMoves++
			}
			l.trimBelow(oldest)
		}
		l.snaps = slices.Clone(l.snaps[k:])
	}
	if n.disk != nil {
		n.disk.setSnapshots(l)
	}
	return nil
}

// writeChunks carries out a Ready's SnapshotWrites into n's download, as
// the runtime writes the .checkpoint.part file: a write at position 0, or
// of another snapshot, starts afresh; any other write must continue the
// file exactly.
func (c *cluster) writeChunks(n *simNode, writes []kraft.SnapshotWrite) error {
	for _, w := range writes {
		chunk, ok := c.handles.chunks[w.Handle]
		if !ok || int64(len(chunk)) < w.Length {
			return fmt.Errorf("node %d: snapshot write %s@%d+%d names handle %d that holds no such chunk", n.id, w.SnapshotID, w.Position, w.Length, w.Handle)
		}
		if w.Position == 0 || n.dl == nil || n.dl.id != w.SnapshotID {
			if n.dl != nil && len(n.dl.data) > 0 {
				c.witness.SnapshotRestarts++
			}
			n.dl = &download{id: w.SnapshotID}
		}
		if w.Position != int64(len(n.dl.data)) {
			return fmt.Errorf("node %d: snapshot %s write at %d, the download holds %d bytes", n.id, w.SnapshotID, w.Position, len(n.dl.data))
		}
		n.dl.data = append(n.dl.data, chunk[:w.Length]...)
		c.witness.SnapshotChunks++
	}
	return nil
}

// installFor returns the snapshot a Ready's InstallSnapshot names: the
// completed download, verified, or the node's own latest snapshot.
func (c *cluster) installFor(n *simNode, id kraft.OffsetAndEpoch) (*simSnapshot, error) {
	if s := n.log.latest(); s != nil && s.id == id && (n.dl == nil || n.dl.id != id) {
		return s, nil
	}
	if n.dl == nil || n.dl.id != id {
		return nil, fmt.Errorf("node %d: install snapshot %s with no download of it", n.id, id)
	}
	s, err := decodeSnapshot(id, n.dl.data)
	if err != nil {
		return nil, fmt.Errorf("node %d: install snapshot %s from %d downloaded bytes: %w", n.id, id, len(n.dl.data), err)
	}
	n.dl = nil
	return s, nil
}

// wipe erases n's disk: log, snapshots and quorum state, as an operator
// who replaces a dead disk and formats it anew. Only observers are wiped:
// a voter that forgets its vote can vote twice in one epoch under
// kraft.version 0, which Kafka does not protect against either.
func (c *cluster) wipe(n *simNode) error {
	if n.disk != nil {
		d, err := newDisk()
		if err != nil {
			return fmt.Errorf("node %d: wipe: %w", n.id, err)
		}
		n.disk = d
	}
	n.log = &memLog{}
	n.dl = nil
	n.qs = kraft.ElectionState{LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	n.prevQS = n.qs
	delete(c.chk.snapHigh, n.id)
	c.witness.Wipes++
	c.tracef("%d wiped", n.id)
	return nil
}

// fillChunk plays the leader runtime's part for a FetchSnapshot answer:
// the bytes of the range it names, read from the snapshot now.
func (c *cluster) fillChunk(n *simNode, r *kraft.FetchSnapshotResponse) error {
	s := n.log.snapshot(r.SnapshotID)
	if s == nil {
		return fmt.Errorf("node %d: FetchSnapshot answer names snapshot %s, which it does not hold", n.id, r.SnapshotID)
	}
	if r.Position < 0 || r.Position+r.Length > int64(len(s.data)) || r.Size != int64(len(s.data)) {
		return fmt.Errorf("node %d: FetchSnapshot answer reads [%d,+%d) of size %d from snapshot %s of %d bytes", n.id, r.Position, r.Length, r.Size, r.SnapshotID, len(s.data))
	}
	c.handles.next++
	c.handles.chunks[c.handles.next] = s.data[r.Position : r.Position+r.Length]
	r.Chunk = c.handles.next
	return nil
}

// onSnapshot checks S1/S3 for a snapshot n takes or installs: its id is a
// valid position at or below the node's high watermark (taken) or the
// committed prefix (installed), and its content is the committed prefix
// up to its end offset, batch for batch.
func (k *checker) onSnapshot(n *simNode, s *simSnapshot, verb string) error {
	if verb == "takes" && s.id.Offset > n.hw {
		return violation(invSnapshotValid, "node %d takes snapshot %s above its high watermark %d", n.id, s.id, n.hw)
	}
	if end := k.committedEnd(); s.id.Offset > end {
		return violation(invSnapshotValid, "node %d %s snapshot %s beyond the committed prefix ending at %d", n.id, verb, s.id, end)
	}
	if len(s.entries) == 0 || s.entries[len(s.entries)-1].Batch.LastOffset+1 != s.id.Offset || s.entries[len(s.entries)-1].Batch.Epoch != s.id.Epoch {
		return violation(invSnapshotValid, "node %d %s snapshot %s whose last batch does not end there", n.id, verb, s.id)
	}
	for i, e := range s.entries {
		if i >= len(k.committed) {
			return violation(invSnapshotContent, "node %d %s snapshot %s of %d batches; the committed prefix has %d", n.id, verb, s.id, len(s.entries), len(k.committed))
		}
		if !sameEntry(e, k.committed[i]) {
			return violation(invSnapshotContent, "node %d %s snapshot %s holding %s where %s was committed", n.id, verb, s.id, e, k.committed[i])
		}
	}
	k.verified[s] = true
	return nil
}

// onInstall checks an install on n: the snapshot is the committed prefix
// (onSnapshot) and never older than one the node already has.
func (k *checker) onInstall(n *simNode, s *simSnapshot) error {
	if cur := n.log.latest(); cur != nil && s.id.Offset < cur.id.Offset {
		return violation(invSnapshotMonotonic, "node %d installs snapshot %s over its newer %s", n.id, s.id, cur.id)
	}
	return k.onSnapshot(n, s, "installs")
}

// checkSnapshots checks, after every event, S2 on every node's durable
// state (a log start above 0 is the end offset of one of its snapshots),
// S3 for any snapshot a node holds that was not checked when taken or
// installed (snapshots are immutable, so one check each suffices: with
// S2 nothing below a log start is lost), and that a node's newest
// snapshot never goes back, crashes included.
func (k *checker) checkSnapshots() error {
	for _, n := range k.c.nodes {
		l := n.log
		for _, s := range l.snaps {
			if !k.verified[s] {
				if err := k.onSnapshot(n, s, "holds"); err != nil {
					return err
				}
			}
		}
		if l.start > 0 && !slices.ContainsFunc(l.snaps, func(s *simSnapshot) bool { return s.id.Offset == l.start }) {
			return violation(invLogStartCovered, "node %d's log starts at %d where none of its snapshots %v ends", n.id, l.start, snapIDs(l.snaps))
		}
		s := l.latest()
		if s == nil {
			if hi, ok := k.snapHigh[n.id]; ok {
				return violation(invSnapshotMonotonic, "node %d had snapshot %s and now has none", n.id, hi)
			}
			continue
		}
		if hi, ok := k.snapHigh[n.id]; ok && s.id.Offset < hi.Offset {
			return violation(invSnapshotMonotonic, "node %d's newest snapshot went back from %s to %s", n.id, hi, s.id)
		}
		k.snapHigh[n.id] = s.id
	}
	return nil
}

func snapIDs(ss []*simSnapshot) []kraft.OffsetAndEpoch {
	out := make([]kraft.OffsetAndEpoch, len(ss))
	for i, s := range ss {
		out[i] = s.id
	}
	return out
}
