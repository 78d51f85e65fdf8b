package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// Snapshots (KIP-630) in the runtime: every node takes its own snapshots
// of the applied image, at a batch boundary, once
// metadata.log.max.record.bytes.between.snapshots bytes were applied since
// the last one (or metadata.log.max.snapshot.interval.ms passed with new
// records); when the log and snapshots together exceed
// metadata.max.retention.bytes, the log start advances to the new
// snapshot and older snapshots are deleted. A leader serves FetchSnapshot
// chunks from the snapshot store; a follower whose fetch offset fell below
// the leader's log start downloads the snapshot, installs it, restarts its
// log at the snapshot's end offset and reloads its image from it. At
// start-up the newest snapshot is loaded before the log.

// snapshotState is the engine's snapshot bookkeeping.
type snapshotState struct {
	store    *snapshot.Store
	download *snapshot.Download
	unique   uint64
	// latest is the newest snapshot on disk, if any.
	latest    snapshot.ID
	hasLatest bool
	// appliedBytes counts record bytes applied since the latest snapshot;
	// lastTaken is when that snapshot was taken.
	appliedBytes int64
	lastTaken    time.Time
	// inFlight is set while a snapshot is being written.
	inFlight bool
	// boundary describes the applied position when it is at a batch
	// boundary: the epoch and timestamp of the batch that ends there.
	atBoundary    bool
	boundaryEpoch int32
	boundaryTime  int64
}

func toID(o kraft.OffsetAndEpoch) snapshot.ID {
	return snapshot.ID{EndOffset: int64(o.Offset), Epoch: int32(o.Epoch)}
}

func toStoreID(id snapshot.ID) logstore.OffsetAndEpoch {
	return logstore.OffsetAndEpoch{Offset: id.EndOffset, Epoch: id.Epoch}
}

// loadSnapshots recovers the snapshot directory at start-up (deleting
// unfinished downloads and deletions), tells the log which snapshots
// exist, and loads the newest into a fresh image. It returns the delta
// holding that image and the offset to apply from.
func (e *engine) loadSnapshots() error {
	e.snap.store = snapshot.NewStore(e.fsys, e.rc.dir)
	e.snap.unique = uint64(time.Now().UnixNano())
	e.snap.lastTaken = time.Now()
	listing, err := snapshot.Recover(e.fsys, e.rc.dir)
	if err != nil {
		return fmt.Errorf("raft: recover snapshots: %w", err)
	}
	if len(listing.Invalid) > 0 {
		return fmt.Errorf("raft: snapshot files with invalid names in %s: %v", e.rc.dir, listing.Invalid)
	}
	var snaps []snapshot.Info
	for _, s := range listing.Snapshots {
		if s.ID != snapshot.Bootstrap {
			snaps = append(snaps, s)
		}
	}
	if len(snaps) == 0 {
		return nil
	}
	latest := snaps[len(snaps)-1].ID
	e.log.SetEarliestSnapshot(toStoreID(snaps[0].ID))
	e.log.SetLatestSnapshot(toStoreID(latest))
	e.snap.latest, e.snap.hasLatest = latest, true
	// The image first: a snapshot this node refuses leaves the log as it
	// was.
	if err := e.loadImage(latest); err != nil {
		return err
	}
	if e.log.LogEndOffset() < latest.EndOffset || e.log.LogStartOffset() > latest.EndOffset {
		// The log is behind the snapshot (or has a gap after it): it
		// restarts at the snapshot, as Kafka's truncateToLatestSnapshot.
		if err := e.log.TruncateFullyAndStartAt(latest.EndOffset); err != nil {
			return fmt.Errorf("raft: restart log at snapshot %s: %w", latest, err)
		}
		if _, err := e.log.Sync(); err != nil {
			return fmt.Errorf("raft: fsync log: %w", err)
		}
	}
	return nil
}

// loadImage replaces the image with the content of snapshot id and makes
// id's end offset the next offset to apply.
func (e *engine) loadImage(id snapshot.ID) error {
	r, err := snapshot.Open(e.fsys, e.snap.store.Path(id), snapshot.ReadOptions{})
	if err != nil {
		return fmt.Errorf("raft: open snapshot %s: %w", id, err)
	}
	defer func() { _ = r.Close() }()
	if v := r.Header().KRaftVersion; v > 0 {
		// The voter set is in the log (KIP-853), and a node that took
		// controller.quorum.voters instead would count votes and commits
		// against the wrong set.
		return fmt.Errorf("raft: snapshot %s is of a dynamic quorum (kraft.version %d); this runtime runs static voter sets (kraft.version 0) only", id, v)
	}
	delta := metadata.NewDelta(metadata.EmptyImage())
	var recs []metadata.Record
	for r.Next() {
		b := r.Batch()
		recs = recs[:0]
		for i := range b.Records {
			rec, err := metadata.Decode(b.Records[i].Value)
			if err != nil {
				return fmt.Errorf("raft: snapshot %s: record %d: %w", id, b.RecordOffset(&b.Records[i]), err)
			}
			recs = append(recs, rec)
		}
		if err := delta.ReplaySnapshot(recs, id.EndOffset-1, id.Epoch); err != nil {
			return fmt.Errorf("raft: snapshot %s: %w", id, err)
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("raft: read snapshot %s: %w", id, err)
	}
	e.delta = delta
	e.applied = kraft.Offset(id.EndOffset)
	e.snap.appliedBytes = 0
	e.snap.atBoundary = false
	e.pub.publishImage(delta.Apply())
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "loaded snapshot", slog.String(logKeySnapshotID, id.String()))
	return nil
}

// snapshotSize reports the size of snapshot id, for the core's LogView.
func (e *engine) snapshotSize(id kraft.OffsetAndEpoch) (int64, bool) {
	info, err := e.fsys.Stat(e.snap.store.Path(toID(id)))
	if err != nil {
		return 0, false
	}
	return info.Size(), true
}

// readSnapshotChunk reads the bytes a leader's FetchSnapshot answer
// carries.
func (e *engine) readSnapshotChunk(m *kraft.FetchSnapshotResponse) ([]byte, error) {
	b, _, err := e.snap.store.ReadRange(toID(m.SnapshotID), m.Position, int(m.Length))
	return b, err
}

// writeSnapshotChunks carries out a Ready's SnapshotWrites: a write at
// position 0 starts the download afresh.
func (e *engine) writeSnapshotChunks(writes []kraft.SnapshotWrite) error {
	for _, w := range writes {
		held := e.handles[w.Handle]
		if held == nil {
			panic(fmt.Sprintf("raft: invariant: snapshot write names unknown records handle %d", w.Handle))
		}
		id := toID(w.SnapshotID)
		if w.Position == 0 || e.snap.download == nil || e.snap.download.ID() != id {
			if e.snap.download != nil {
				_ = e.snap.download.Abort()
			}
			e.snap.unique++
			d, err := snapshot.NewDownload(e.fsys, e.rc.dir, id, e.snap.unique, snapshot.DownloadOptions{})
			if err != nil {
				return fmt.Errorf("raft: start snapshot download %s: %w", id, err)
			}
			e.snap.download = d
		}
		if err := e.snap.download.Write(w.Position, held.size, held.raw[:w.Length]); err != nil {
			return fmt.Errorf("raft: write snapshot %s at %d: %w", id, w.Position, err)
		}
	}
	return nil
}

// installSnapshot completes a download: the file is verified and frozen,
// the log restarts at the snapshot's end offset, older snapshots go, and
// the image is reloaded from the snapshot. The caller fsyncs the log.
func (e *engine) installSnapshot(o kraft.OffsetAndEpoch) error {
	id := toID(o)
	d := e.snap.download
	if d == nil || d.ID() != id {
		return fmt.Errorf("raft: install snapshot %s: no complete download of it", id)
	}
	if err := d.Install(); err != nil {
		return fmt.Errorf("raft: install snapshot %s: %w", id, err)
	}
	e.snap.download = nil
	if err := e.log.TruncateFullyAndStartAt(id.EndOffset); err != nil {
		return fmt.Errorf("raft: restart log at snapshot %s: %w", id, err)
	}
	e.log.SetLatestSnapshot(toStoreID(id))
	e.log.SetEarliestSnapshot(toStoreID(id))
	e.deleteSnapshotsBefore(id)
	e.snap.latest, e.snap.hasLatest = id, true
	e.snap.lastTaken = time.Now()
	return e.loadImage(id)
}

// abortDownload gives up an unfinished snapshot download (closing its
// file; the .part file is deleted at the next start-up).
func (e *engine) abortDownload() {
	if e.snap.download != nil {
		_ = e.snap.download.Abort()
		e.snap.download = nil
	}
}

// deleteSnapshotsBefore deletes every snapshot older than id. A failure
// only leaves a file behind, which the next start-up lists again.
func (e *engine) deleteSnapshotsBefore(id snapshot.ID) {
	listing, err := snapshot.List(e.fsys, e.rc.dir)
	if err != nil {
		return
	}
	for _, s := range listing.Snapshots {
		if s.ID.Compare(id) < 0 {
			if _, err := e.snap.store.Delete(s.ID); err != nil {
				e.logger.LogAttrs(context.Background(), slog.LevelWarn, "delete old snapshot",
					slog.String(logKeySnapshotID, s.ID.String()), slog.String(logKeyError, err.Error()))
			}
		}
	}
}

// noteApplied records that a batch was applied up to next (exclusive),
// for the snapshot trigger.
func (e *engine) noteApplied(bytes int, epoch int32, maxTimestamp int64, atBoundary bool) {
	e.snap.appliedBytes += int64(bytes)
	e.snap.atBoundary = atBoundary
	e.snap.boundaryEpoch, e.snap.boundaryTime = epoch, maxTimestamp
}

// maybeSnapshot starts a snapshot of the applied image when enough was
// applied since the last one. The image is immutable, so a goroutine of
// its own writes the file (STYLE.md §3) while the engine goes on; the
// result comes back through the inbox ([engine.snapshotTaken]). One
// snapshot is written at a time.
func (e *engine) maybeSnapshot() {
	s := &e.snap
	if s.inFlight || !s.atBoundary || e.applied <= 0 || (s.hasLatest && int64(e.applied) <= s.latest.EndOffset) {
		return
	}
	due := s.appliedBytes >= e.rc.snapshotBytes ||
		(e.rc.snapshotInterval > 0 && s.appliedBytes > 0 && time.Since(s.lastTaken) >= e.rc.snapshotInterval)
	if !due {
		return
	}
	id := snapshot.ID{EndOffset: int64(e.applied), Epoch: s.boundaryEpoch}
	img := e.pub.image.Load()
	header := snapshot.Header{LastContainedLogTimestamp: s.boundaryTime}
	s.unique++
	unique := s.unique
	s.inFlight = true
	fsys, dir, inbox := e.fsys, e.rc.dir, e.inbox
	e.spawn(func(ctx context.Context) {
		size, err := writeSnapshot(ctx, fsys, dir, id, unique, header, img)
		select {
		case inbox <- event{call: func(e *engine) { e.snapshotTaken(id, size, err) }}:
		case <-ctx.Done():
		}
	})
}

// writeSnapshot writes img as snapshot id: header, records, footer, fsync,
// rename. It gives up when ctx ends.
func writeSnapshot(ctx context.Context, fsys vfs.FS, dir string, id snapshot.ID, unique uint64, h snapshot.Header, img *metadata.Image) (int64, error) {
	now := time.Now().UnixMilli()
	w, err := snapshot.Create(fsys, dir, id, unique, h, now, snapshot.WriterOptions{})
	if err != nil {
		return 0, fmt.Errorf("raft: create snapshot %s: %w", id, err)
	}
	for rec := range img.SnapshotRecords() {
		b, err := metadata.Encode(rec)
		if err == nil {
			err = w.Append(now, b)
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			_ = w.Abort()
			return 0, fmt.Errorf("raft: write snapshot %s: %w", id, err)
		}
	}
	if err := w.Freeze(now); err != nil {
		return 0, fmt.Errorf("raft: freeze snapshot %s: %w", id, err)
	}
	return w.Size(), nil
}

// snapshotTaken registers a snapshot the writer finished (on the engine
// goroutine, between Readys) and applies retention. A failed write is
// logged and retried after the next interval's worth of records: the log
// only grows meanwhile.
func (e *engine) snapshotTaken(id snapshot.ID, size int64, err error) {
	s := &e.snap
	s.inFlight = false
	s.appliedBytes, s.lastTaken = 0, time.Now()
	if err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelError, "snapshot failed",
			slog.String(logKeySnapshotID, id.String()), slog.String(logKeyError, err.Error()))
		return
	}
	if s.hasLatest && id.Compare(s.latest) <= 0 {
		// An installed snapshot overtook this one while it was written.
		e.deleteSnapshotsBefore(s.latest)
		return
	}
	e.log.SetLatestSnapshot(toStoreID(id))
	if !s.hasLatest {
		e.log.SetEarliestSnapshot(toStoreID(id))
	}
	s.latest, s.hasLatest = id, true
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "took snapshot",
		slog.String(logKeySnapshotID, id.String()), slog.Int64("bytes", size))
	if err := e.enforceRetention(id, size); err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelError, "log retention failed",
			slog.String(logKeySnapshotID, id.String()), slog.String(logKeyError, err.Error()))
	}
}

// enforceRetention advances the log start to snapshot id, and deletes the
// older snapshots, once the log and the snapshot together exceed
// metadata.max.retention.bytes (negative: never).
func (e *engine) enforceRetention(id snapshot.ID, snapshotBytes int64) error {
	if e.rc.retentionBytes < 0 {
		return nil
	}
	total := snapshotBytes
	for _, seg := range e.log.Segments() {
		total += seg.Bytes
	}
	if total <= e.rc.retentionBytes || e.log.LogStartOffset() >= id.EndOffset {
		return nil
	}
	if err := e.log.AdvanceLogStart(id.EndOffset); err != nil {
		if errors.Is(err, logstore.ErrOffsetOutOfRange) {
			return nil
		}
		return fmt.Errorf("raft: advance log start to snapshot %s: %w", id, err)
	}
	e.log.SetEarliestSnapshot(toStoreID(id))
	e.deleteSnapshotsBefore(id)
	return nil
}
