package raft

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// onEngine runs f on n's engine goroutine and waits for it.
func onEngine(t testing.TB, n *Controller, f func(e *engine)) {
	t.Helper()
	done := make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := n.enqueue(ctx, event{call: func(e *engine) { f(e); close(done) }}); err != nil {
		t.Fatalf("engine call: %v", err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("engine call timed out")
	}
}

// sameImage reports whether two images hold the same records.
func sameImage(t *testing.T, a, b *metadata.Image) bool {
	t.Helper()
	return slices.EqualFunc(imageBytes(t, a), imageBytes(t, b), bytes.Equal)
}

// startSingle starts a lone voter on dir with cfg adjusted.
func startSingle(t testing.TB, dir string, adjust func(*Config)) (*Controller, Config) {
	t.Helper()
	cfg := ForTests(1, dir)
	if adjust != nil {
		adjust(&cfg)
	}
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n, cfg
}

func shutdown(t testing.TB, n *Controller) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

func listSnapshots(t testing.TB, cfg Config) []snapshot.Info {
	t.Helper()
	listing, err := snapshot.List(vfs.OS(), filepath.Join(cfg.MetadataLogDir, PartitionDirName))
	if err != nil {
		t.Fatal(err)
	}
	return listing.Snapshots
}

// TestTriggerSnapshotAndReadRange: TriggerSnapshot writes a snapshot of
// the applied image at once (the byte and time triggers are off), named
// by the applied offset and the epoch of the last record, and returns once
// the file is final; without new records it returns the same id.
// ReadSnapshotRange serves the file in windows that reassemble it, and
// the snapshot loads into the same image.
func TestTriggerSnapshotAndReadRange(t *testing.T) {
	n, cfg := startSingle(t, t.TempDir(), func(c *Config) {
		c.MaxRecordBytesBetweenSnapshots = 1 << 40
		c.MaxSnapshotInterval = 0
	})
	defer shutdown(t, n)
	if _, err := n.ReadSnapshotRange(nil, 0, 100); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("ReadSnapshotRange before any snapshot: %v, want ErrSnapshotNotFound", err)
	}
	submit(t, n, metadataVersionRecord())
	var last SubmitResult
	for i := range 20 {
		last = submit(t, n, topicRecord("t-"+strconv.Itoa(i)))
	}
	if s := listSnapshots(t, cfg); len(s) != 0 {
		t.Fatalf("snapshots taken with the triggers off: %v", s)
	}
	id, err := n.TriggerSnapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := SnapshotID{EndOffset: last.LastOffset + 1, Epoch: last.Epoch}
	if id != want {
		t.Fatalf("TriggerSnapshot = %s, want %s", id, want)
	}
	path := filepath.Join(cfg.MetadataLogDir, PartitionDirName, snapshot.FileName(kraft.OffsetAndEpoch{Offset: kraft.Offset(id.EndOffset), Epoch: kraft.Epoch(id.Epoch)}))
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the triggered snapshot's file: %v", err)
	}
	if latest, ok := n.LatestSnapshot(); !ok || latest != id {
		t.Errorf("LatestSnapshot = %s, %v, want %s", latest, ok, id)
	}
	again, err := n.TriggerSnapshot(t.Context())
	if err != nil || again != id {
		t.Errorf("TriggerSnapshot without new records = %s, %v, want %s", again, err, id)
	}

	var got []byte
	for pos := int64(0); ; {
		sl, err := n.ReadSnapshotRange(nil, pos, 100)
		if err != nil {
			t.Fatalf("ReadSnapshotRange at %d: %v", pos, err)
		}
		if sl.ID != id || sl.Position != pos || sl.Size != int64(len(file)) || len(sl.Bytes) == 0 || len(sl.Bytes) > 100 {
			t.Fatalf("ReadSnapshotRange at %d = {%s %d %d %d bytes}", pos, sl.ID, sl.Position, sl.Size, len(sl.Bytes))
		}
		got = append(got, sl.Bytes...)
		pos += int64(len(sl.Bytes))
		if pos == sl.Size {
			break
		}
	}
	if !bytes.Equal(got, file) {
		t.Error("the windows of ReadSnapshotRange do not reassemble the file")
	}
	if sl, err := n.ReadSnapshotRange(&id, 10, 1<<20); err != nil || !bytes.Equal(sl.Bytes, file[10:]) {
		t.Errorf("ReadSnapshotRange(%s, 10) = %d bytes, %v", id, len(sl.Bytes), err)
	}
	if _, err := n.ReadSnapshotRange(nil, int64(len(file)), 10); !errors.Is(err, ErrSnapshotPositionOutOfRange) {
		t.Errorf("read at the end: %v, want ErrSnapshotPositionOutOfRange", err)
	}
	other := SnapshotID{EndOffset: id.EndOffset - 1, Epoch: id.Epoch}
	if _, err := n.ReadSnapshotRange(&other, 0, 10); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("read of %s: %v, want ErrSnapshotNotFound", other, err)
	}
	if _, err := n.ReadSnapshotRange(nil, 0, 0); err == nil {
		t.Error("ReadSnapshotRange with maxBytes 0 succeeded")
	}

	// The snapshot holds the image at its end offset.
	r, err := snapshot.Open(vfs.OS(), path, snapshot.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delta := metadata.NewDelta(metadata.EmptyImage())
	for r.Next() {
		b := r.Batch()
		var recs []metadata.Record
		for i := range b.Records {
			rec, err := metadata.Decode(b.Records[i].Value)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
		if err := delta.ReplaySnapshot(recs, id.EndOffset-1, id.Epoch); err != nil {
			t.Fatal(err)
		}
	}
	_ = r.Close()
	if !sameImage(t, delta.Apply(), n.CurrentImage()) {
		t.Error("the snapshot does not hold the applied image")
	}
}

// TestTriggerSnapshotEmpty: a node that applied nothing has nothing to
// snapshot.
func TestTriggerSnapshotEmpty(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	// Two voters, one running: no leader, nothing committed.
	cfg.QuorumVoters = append(cfg.QuorumVoters, QuorumVoter{ID: 2, Host: "127.0.0.1", Port: 1})
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, n)
	if _, err := n.TriggerSnapshot(t.Context()); !errors.Is(err, ErrNothingToSnapshot) {
		t.Errorf("TriggerSnapshot on an empty node: %v, want ErrNothingToSnapshot", err)
	}
}

// committedBatch is one batch of a node's log.
type committedBatch struct {
	next, maxTimestamp int64
	epoch              int32
	size               int64
}

func readBatches(t testing.TB, cfg Config, hw int64) []committedBatch {
	t.Helper()
	raw := readCommittedFrom(t, cfg, 0, hw)
	var out []committedBatch
	var dec recordbatch.Decoder
	it := recordbatch.NewIterator(&dec, raw)
	for it.Next() {
		b := it.Batch()
		out = append(out, committedBatch{next: b.NextOffset(), maxTimestamp: b.MaxTimestamp, epoch: b.PartitionLeaderEpoch, size: int64(len(b.Raw))})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSnapshotByteTrigger (KIP-630; Kafka's SnapshotGenerator and KafkaRaftLog.maybeClean): a snapshot is taken at the first
// batch boundary where the bytes of the committed batches since the last
// snapshot reach metadata.log.max.record.bytes.between.snapshots, named by
// that boundary and the epoch of the batch ending there, with that batch's
// timestamp as LastContainedLogTimestamp; later ones follow the same
// count from the previous snapshot's end.
func TestSnapshotByteTrigger(t *testing.T) {
	const between = 1500
	n, cfg := startSingle(t, t.TempDir(), func(c *Config) {
		c.MaxRecordBytesBetweenSnapshots = between
		c.MaxSnapshotInterval = 0
		c.MaxRetentionBytes = -1
		c.MaxRetentionTime = -time.Millisecond
	})
	submit(t, n, metadataVersionRecord())
	var last SubmitResult
	for i := range 60 {
		last = submit(t, n, topicRecord("bytes-"+strconv.Itoa(i)))
	}
	onEngine(t, n, func(*engine) {})
	waitFor(t, "the snapshot writer to finish", func() bool {
		busy := true
		onEngine(t, n, func(e *engine) { busy = e.snap.inFlight })
		return !busy
	})
	shutdown(t, n)

	batches := readBatches(t, cfg, last.LastOffset+1)
	snaps := listSnapshots(t, cfg)
	if len(snaps) < 3 {
		t.Fatalf("%d snapshots after %d batches of about %d bytes each, want at least 3", len(snaps), len(batches), batches[len(batches)-1].size)
	}
	from := int64(0) // the previous snapshot's end offset
	for i, s := range snaps {
		var sum int64
		var first int64 = -1 // the first boundary where the count is reached
		var end *committedBatch
		for j := range batches {
			b := &batches[j]
			if b.next <= from {
				continue
			}
			sum += b.size
			if first < 0 && sum >= between {
				first = b.next
			}
			if b.next == int64(s.ID.Offset) {
				end = b
				break
			}
		}
		switch {
		case end == nil:
			t.Errorf("snapshot %s does not end at a batch boundary", s.ID)
		case sum < between:
			t.Errorf("snapshot %s taken after %d bytes since offset %d, want at least %d", s.ID, sum, from, between)
		case i == 0 && int64(s.ID.Offset) != first:
			t.Errorf("first snapshot %s, want it at offset %d where %d bytes were reached", s.ID, first, between)
		case int32(s.ID.Epoch) != end.epoch:
			t.Errorf("snapshot %s named by epoch %d, its last batch has epoch %d", s.ID, s.ID.Epoch, end.epoch)
		}
		if end != nil {
			r, err := snapshot.Open(vfs.OS(), filepath.Join(cfg.MetadataLogDir, PartitionDirName, snapshot.FileName(s.ID)), snapshot.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ts := r.Header().LastContainedLogTimestamp; ts != end.maxTimestamp {
				t.Errorf("snapshot %s: LastContainedLogTimestamp %d, want %d", s.ID, ts, end.maxTimestamp)
			}
			_ = r.Close()
		}
		from = int64(s.ID.Offset)
	}
}

// TestSnapshotIntervalTrigger (KIP-630; Kafka's SnapshotGenerator and KafkaRaftLog.maybeClean): with the byte trigger out of
// reach, a snapshot is taken once metadata.log.max.snapshot.interval.ms
// passed since the last one and new records were committed; with the
// interval 0 none is.
func TestSnapshotIntervalTrigger(t *testing.T) {
	const interval = 150 * time.Millisecond
	began := time.Now()
	n, cfg := startSingle(t, t.TempDir(), func(c *Config) {
		c.MaxRecordBytesBetweenSnapshots = 1 << 40
		c.MaxSnapshotInterval = interval
	})
	defer shutdown(t, n)
	submit(t, n, metadataVersionRecord())
	i := 0
	waitFor(t, "a snapshot after the interval", func() bool {
		submit(t, n, topicRecord("tick-"+strconv.Itoa(i)))
		i++
		_, ok := n.LatestSnapshot()
		return ok
	})
	if d := time.Since(began); d < interval {
		t.Errorf("snapshot after %v, before the interval %v", d, interval)
	}
	first, _ := n.LatestSnapshot()
	// No new record: no new snapshot, however long.
	stop := time.Now().Add(2 * interval)
	waitFor(t, "twice the interval to pass", func() bool {
		onEngine(t, n, func(e *engine) { e.maybeSnapshot() })
		return !time.Now().Before(stop)
	})
	waitFor(t, "the snapshot writer to finish", func() bool {
		busy := true
		onEngine(t, n, func(e *engine) { busy = e.snap.inFlight })
		return !busy
	})
	if id, _ := n.LatestSnapshot(); id.EndOffset < first.EndOffset {
		t.Errorf("latest snapshot %s went back from %s", id, first)
	}
	if got := len(listSnapshots(t, cfg)); got == 0 {
		t.Error("no snapshot on disk")
	}

	m, _ := startSingle(t, t.TempDir(), func(c *Config) {
		c.MaxRecordBytesBetweenSnapshots = 1 << 40
		c.MaxSnapshotInterval = 0
	})
	defer shutdown(t, m)
	submit(t, m, metadataVersionRecord())
	for j := range 10 {
		submit(t, m, topicRecord("never-"+strconv.Itoa(j)))
	}
	onEngine(t, m, func(*engine) {})
	if id, ok := m.LatestSnapshot(); ok {
		t.Errorf("snapshot %s taken with the interval 0 and the byte count unreached", id)
	}
}

// checkLogStartCovered checks, on n's engine, that the log start is 0 or
// the end offset of the oldest snapshot on disk, that no snapshot ends
// below it, and that the newest snapshot is the engine's latest.
func checkLogStartCovered(t testing.TB, n *Controller) (start int64, snaps []snapshot.Info) {
	t.Helper()
	onEngine(t, n, func(e *engine) {
		start = e.log.LogStartOffset()
		listing, err := snapshot.List(e.fsys, e.rc.dir)
		if err != nil {
			t.Error(err)
			return
		}
		snaps = listing.Snapshots
		if start > 0 && (len(snaps) == 0 || int64(snaps[0].ID.Offset) != start) {
			t.Errorf("log start %d is not covered by the oldest snapshot (snapshots %v)", start, snaps)
		}
		// The writer freezes the file before the engine hears of it.
		if len(snaps) > 0 && !e.snap.inFlight && (!e.snap.hasLatest || snaps[len(snaps)-1].ID != e.snap.latest) {
			t.Errorf("newest snapshot on disk %s, engine's latest %s", snaps[len(snaps)-1].ID, e.snap.latest)
		}
		if segs := e.log.Segments(); len(segs) > 0 && segs[0].BaseOffset > start {
			t.Errorf("first segment starts at %d, above the log start %d", segs[0].BaseOffset, start)
		}
	})
	return start, snaps
}

// TestRetentionBySize (KIP-630; Kafka's SnapshotGenerator and KafkaRaftLog.maybeClean): with many snapshots and segments,
// retention deletes the oldest snapshots while the log and the snapshots
// exceed metadata.max.retention.bytes, never the newest, and moves the
// log start to the oldest kept snapshot, deleting whole segments; the log
// start stays covered by a snapshot throughout. A snapshot being served
// when it is deleted stays readable until its reader closes. The node
// restarts with the same image.
func TestRetentionBySize(t *testing.T) {
	const limit = 12 << 10
	dir := t.TempDir()
	adjust := func(c *Config) {
		c.MaxRecordBytesBetweenSnapshots = 1 << 10
		c.InternalSegmentBytes = 2 << 10
		c.MaxRetentionBytes = limit
		c.MaxRetentionTime = -time.Millisecond
		c.MaxSnapshotInterval = 0
	}
	n, cfg := startSingle(t, dir, adjust)
	submit(t, n, metadataVersionRecord())

	var served *snapshot.RangeReader
	var servedSize int64
	var last SubmitResult
	topics := 0
	for i := range 250 {
		recs := []metadata.Record{topicRecord("ret-" + strconv.Itoa(i))}
		last = submit(t, n, recs...)
		topics++
		start, snaps := checkLogStartCovered(t, n)
		if served == nil && start == 0 && len(snaps) > 0 {
			// A follower starts downloading the oldest snapshot.
			onEngine(t, n, func(e *engine) {
				r, err := e.snap.store.OpenRange(snaps[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				served, servedSize = r, r.Size()
			})
		}
	}
	waitFor(t, "the snapshot writer to finish", func() bool {
		busy := true
		onEngine(t, n, func(e *engine) { busy = e.snap.inFlight })
		return !busy
	})
	start, snaps := checkLogStartCovered(t, n)
	if start == 0 {
		t.Fatal("the log start never moved")
	}
	var total int64
	for _, s := range snaps {
		total += s.Size
	}
	var segs []logstore.SegmentInfo
	onEngine(t, n, func(e *engine) { segs = e.log.Segments() })
	for _, s := range segs {
		total += s.Bytes
	}
	// Soft limit: what is over it is the newest snapshot, the log after
	// it, and the oldest kept snapshot.
	if len(snaps) > 2 && total > limit+snaps[0].Size {
		t.Errorf("%d snapshots and %d segments hold %d bytes, over the %d limit", len(snaps), len(segs), total, limit)
	}
	if segs[0].BaseOffset == 0 {
		t.Error("the first segment was never deleted")
	}

	// The served snapshot was deleted (it is no longer listed) but its
	// reader still reads the whole file; the file goes when it closes.
	if served == nil {
		t.Fatal("no snapshot was served")
	}
	for _, s := range snaps {
		if s.ID == served.ID() {
			t.Fatalf("snapshot %s, the oldest, was never deleted", s.ID)
		}
	}
	if b, size, err := served.ReadRange(0, int(servedSize)); err != nil || int64(len(b)) != size {
		t.Errorf("reading a deleted snapshot being served: %d bytes, %v", len(b), err)
	}
	deleted := filepath.Join(cfg.MetadataLogDir, PartitionDirName, snapshot.DeletedFileName(served.ID()))
	if _, err := os.Stat(deleted); err != nil {
		t.Errorf("the served snapshot's file is gone while read: %v", err)
	}
	if err := served.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(deleted); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the served snapshot's file outlived its reader: %v", err)
	}

	want := n.CurrentImage()
	shutdown(t, n)
	n, _ = startSingle(t, dir, adjust)
	defer shutdown(t, n)
	waitFor(t, "the restarted node to apply its log", func() bool {
		return n.QuorumState().AppliedOffset > last.LastOffset
	})
	if !sameImage(t, n.CurrentImage(), want) {
		t.Error("the restarted node's image differs")
	}
	if got := n.CurrentImage().Topics().Len(); got != topics {
		t.Errorf("restarted node holds %d topics, want %d", got, topics)
	}
	if s, _ := checkLogStartCovered(t, n); s < start {
		t.Errorf("restarted with log start %d, below %d", s, start)
	}
}

// TestRetentionByTime (KIP-630; Kafka's SnapshotGenerator and KafkaRaftLog.maybeClean): with the size rule off, a snapshot
// whose LastContainedLogTimestamp is older than metadata.max.retention.ms
// is deleted, except the newest, and the log start follows.
func TestRetentionByTime(t *testing.T) {
	n, _ := startSingle(t, t.TempDir(), func(c *Config) {
		c.MaxRecordBytesBetweenSnapshots = 1 << 40
		c.InternalSegmentBytes = 2 << 10
		c.MaxRetentionBytes = -1
		c.MaxRetentionTime = time.Millisecond
		c.MaxSnapshotInterval = 0
	})
	defer shutdown(t, n)
	submit(t, n, metadataVersionRecord())
	var ids []SnapshotID
	for round := range 4 {
		for i := range 20 {
			submit(t, n, topicRecord("time-"+strconv.Itoa(round)+"-"+strconv.Itoa(i)))
		}
		// The records' timestamps must be more than 1 ms old.
		began := time.Now()
		waitFor(t, "2 ms to pass", func() bool { return time.Since(began) > 2*time.Millisecond })
		id, err := n.TriggerSnapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		start, snaps := checkLogStartCovered(t, n)
		if round > 0 {
			if len(snaps) != 1 || int64(snaps[0].ID.Offset) != id.EndOffset {
				t.Errorf("round %d: snapshots %v, want only the newest %s", round, snaps, id)
			}
			if start != id.EndOffset {
				t.Errorf("round %d: log start %d, want %d", round, start, id.EndOffset)
			}
		}
	}
	if ids[0] == ids[len(ids)-1] {
		t.Error("no new snapshot was taken")
	}
}

// TestStartDropsSnapshotsBelowLogStart: a snapshot that ends below the
// log's first segment (retention stopped between moving the log start
// and deleting it) is deleted at start-up, and the log start is the
// oldest snapshot kept.
func TestStartDropsSnapshotsBelowLogStart(t *testing.T) {
	dir := t.TempDir()
	cfg, want := runUntilTrimmed(t, dir, "below")

	snaps := listSnapshots(t, cfg)
	pdir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
	b, err := os.ReadFile(filepath.Join(pdir, snapshot.FileName(snaps[0].ID)))
	if err != nil {
		t.Fatal(err)
	}
	stale := kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}
	if err := os.WriteFile(filepath.Join(pdir, snapshot.FileName(stale)), b, 0o644); err != nil {
		t.Fatal(err)
	}

	n, _ := startSingle(t, dir, trimmedConfig)
	defer shutdown(t, n)
	start, after := checkLogStartCovered(t, n)
	if len(after) == 0 || after[0].ID == stale {
		t.Errorf("snapshots after start-up: %v, want %s deleted", after, stale)
	}
	if start != int64(snaps[0].ID.Offset) {
		t.Errorf("log start %d, want %d", start, snaps[0].ID.Offset)
	}
	waitFor(t, "the restarted node to apply its log", func() bool {
		return n.QuorumState().AppliedOffset > want.Offset()
	})
	if !sameImage(t, n.CurrentImage(), want) {
		t.Error("the restarted node's image differs")
	}
}
