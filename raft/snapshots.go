package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// Snapshots (KIP-630) in the runtime: every node takes its own snapshots
// of the applied image, at a batch boundary, once
// metadata.log.max.record.bytes.between.snapshots bytes of committed
// batches were applied since the last one (or
// metadata.log.max.snapshot.interval.ms passed with new records, or
// TriggerSnapshot asks). Retention (Kafka's KafkaRaftLog.maybeClean, snapshot.PlanRetention)
// deletes the oldest snapshots by size and by age, never the newest, and
// advances the log start to the oldest one kept. A leader serves
// FetchSnapshot chunks from the snapshot store; a follower whose fetch
// offset fell below the leader's log start downloads the snapshot,
// installs it, restarts its log at the snapshot's end offset and reloads
// its image from it. At start-up the newest snapshot is loaded before the
// log.

// snapshotState is the engine's snapshot bookkeeping.
type snapshotState struct {
	store    *snapshot.Store
	download *snapshot.Download
	unique   uint64
	// latest is the newest snapshot on disk, if any.
	latest    kraft.OffsetAndEpoch
	hasLatest bool
	// appliedBytes counts record bytes applied since the latest snapshot;
	// lastTaken is when that snapshot was taken.
	appliedBytes int64
	lastTaken    time.Time
	// inFlight is set while a snapshot is being written.
	inFlight bool
	// triggers wait for the next snapshot (TriggerSnapshot); flight wait
	// for the one being written.
	triggers []chan<- triggerResult
	flight   []chan<- triggerResult
	// loaded is the snapshot the image was last loaded from, and
	// loadedHeader its header.
	loaded       kraft.OffsetAndEpoch
	loadedHeader snapshot.Header
	hasLoaded    bool
	// timestamps caches each snapshot's LastContainedLogTimestamp, for
	// the time rule of retention. timerRetention is when retention next
	// runs.
	timestamps map[kraft.OffsetAndEpoch]int64
	// boundary describes the applied position when it is at a batch
	// boundary: the epoch and timestamp of the batch that ends there.
	atBoundary    bool
	boundaryEpoch int32
	boundaryTime  int64
}

// loadSnapshots recovers the snapshot directory at start-up (deleting
// unfinished downloads and deletions), tells the log which snapshots
// exist, and loads the newest into a fresh image. It returns the delta
// holding that image and the offset to apply from.
func (e *engine) loadSnapshots() error {
	e.snap.store = snapshot.NewStore(e.fsys, e.rc.dir)
	now := e.clock.Now()
	e.snap.unique = uint64(now.UnixNano())
	e.snap.lastTaken = now
	e.timers.set(timerRetention, now.Add(cleanInterval))
	e.snap.timestamps = map[kraft.OffsetAndEpoch]int64{}
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
	// The image first: a snapshot this node refuses leaves the log as it
	// was.
	snaps, err = e.loadNewestValid(snaps)
	if err != nil {
		return err
	}
	if len(snaps) == 0 {
		return nil
	}
	latest := snaps[len(snaps)-1].ID
	e.log.SetEarliestSnapshot(snaps[0].ID)
	e.log.SetLatestSnapshot(latest)
	e.setLatest(latest)
	if e.log.LogEndOffset() < int64(latest.Offset) || e.log.LogStartOffset() > int64(latest.Offset) {
		// The log is behind the snapshot (or has a gap after it): it
		// restarts at the snapshot, as Kafka's truncateToLatestSnapshot.
		if err := e.log.TruncateFullyAndStartAt(int64(latest.Offset)); err != nil {
			return fmt.Errorf("raft: restart log at snapshot %s: %w", latest, err)
		}
		if _, err := e.log.Sync(); err != nil {
			return fmt.Errorf("raft: fsync log: %w", err)
		}
		e.log.SetEarliestSnapshot(latest)
		e.deleteSnapshotsBefore(latest)
		return nil
	}
	// The log reopens at its first segment's base offset, which may lie
	// below the oldest snapshot (retention deletes whole segments only):
	// the log start moves up to the oldest snapshot at or above it, so
	// that it is covered by a snapshot, as Kafka's persisted log start
	// offset keeps it. Snapshots below that one (retention stopped
	// between advancing the log start and deleting them) go now.
	start := e.log.LogStartOffset()
	k := 0
	for k < len(snaps)-1 && int64(snaps[k].ID.Offset) < start {
		k++
	}
	oldest := snaps[k].ID
	if start < int64(oldest.Offset) {
		if err := e.log.AdvanceLogStart(int64(oldest.Offset)); err != nil {
			return fmt.Errorf("raft: advance log start to snapshot %s: %w", oldest, err)
		}
	}
	e.log.SetEarliestSnapshot(oldest)
	if k > 0 {
		e.deleteSnapshotsBefore(oldest)
	}
	return nil
}

// loadNewestValid loads the newest of snaps (oldest first) that reads
// back whole into the image, and returns the snapshots up to it. A damaged
// newer snapshot (a corrupt file, a record that does not decode or
// replay) is passed over only if the log holds every record from the end
// of the one loaded (or from offset 0, loading none) up to the damaged
// one's end offset, so that replaying the log rebuilds what it held; the
// damaged files are then deleted. Otherwise start-up stops with an error
// that names the damage and the gap (invariants S2 and S5 in docs/reliability.md). A log that
// starts above 0 with no snapshot at all is refused the same way.
func (e *engine) loadNewestValid(snaps []snapshot.Info) ([]snapshot.Info, error) {
	start, end := e.log.LogStartOffset(), e.log.LogEndOffset()
	var damage []error
	for k := len(snaps) - 1; k >= -1; k-- {
		if len(damage) > 0 || k < 0 {
			from, newest := int64(0), int64(0)
			if k >= 0 {
				from = int64(snaps[k].ID.Offset)
			}
			if len(snaps) > 0 {
				newest = int64(snaps[len(snaps)-1].ID.Offset)
			}
			if start > from || end < newest {
				if len(damage) == 0 {
					return nil, fmt.Errorf("raft: the log in %s starts at offset %d and no snapshot covers the records below it: restore the snapshot files, or empty the directory and format it again so that the node fetches the leader's snapshot", e.rc.dir, start)
				}
				return nil, fmt.Errorf("raft: cannot start from the snapshots in %s: %w; the log holds [%d, %d) and does not cover offsets %d to %d to replace them: restore the snapshot files, or empty the directory and format it again so that the node fetches the leader's snapshot",
					e.rc.dir, errors.Join(damage...), start, end, from, newest)
			}
		}
		if k < 0 {
			break
		}
		id := snaps[k].ID
		delta, h, err := readSnapshot(e.fsys, e.snap.store.Path(id), id)
		if err != nil {
			if !errors.Is(err, errDamagedSnapshot) {
				return nil, err
			}
			e.logger.LogAttrs(context.Background(), slog.LevelError, "damaged snapshot",
				slog.String(logKeySnapshotID, id.String()), slog.String(logKeyError, err.Error()))
			damage = append(damage, err)
			continue
		}
		e.installImage(id, delta, h)
		break
	}
	kept := snaps[:max(0, len(snaps)-len(damage))]
	for _, s := range snaps[len(kept):] {
		if _, err := e.snap.store.Delete(s.ID); err != nil {
			return nil, fmt.Errorf("raft: delete damaged snapshot %s: %w", s.ID, err)
		}
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "deleted damaged snapshot; the log replaces it",
			slog.String(logKeySnapshotID, s.ID.String()))
	}
	return kept, nil
}

// errDamagedSnapshot marks a snapshot that does not read back whole: its
// file is corrupt or one of its records does not decode or replay.
var errDamagedSnapshot = errors.New("damaged snapshot")

// readSnapshotImage reads snapshot id at path into a delta over the empty
// image, as start-up and an install load it. A snapshot of kraft.version
// 1 is read on a node configured with controller.quorum.voters too: its
// voter set (the header's Voters record) is in force there, as after the
// kraft.version upgrade of a static quorum (loadVoterHistory). A damaged
// file or record matches errDamagedSnapshot.
func readSnapshotImage(fsys vfs.FS, path string, id kraft.OffsetAndEpoch) (*metadata.Delta, error) {
	delta, _, err := readSnapshot(fsys, path, id)
	return delta, err
}

// readSnapshot is readSnapshotImage that also returns the snapshot's
// header, read in the same pass.
func readSnapshot(fsys vfs.FS, path string, id kraft.OffsetAndEpoch) (*metadata.Delta, snapshot.Header, error) {
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w", errDamagedSnapshot, fmt.Errorf(format, args...))
	}
	// One pass over the file: its batches are read, verified and decoded
	// on the stream's goroutine while this one replays the records
	// decoded before, one run of changes from the new delta on. The
	// delta is dropped unless the whole file proves sound.
	delta := metadata.NewDelta(metadata.EmptyImage())
	h, err := snapshot.Stream(fsys, path, snapshot.ReadOptions{}, snapshot.Stage[metadata.PreparedRun]{
		Decode: func(run *metadata.PreparedRun, b *recordbatch.Batch, recs []recordbatch.Record, queued int) error {
			run.Reset()
			for i := range recs {
				if err := run.Add(recs[i].Value); err != nil {
					return damaged("raft: snapshot %s: record %d: %w", id, b.RecordOffset(&recs[i]), err)
				}
			}
			// Packing the partitions goes to whichever side is ahead:
			// here while the replay has runs waiting, else the replay.
			if queued > 0 {
				run.Pack()
			}
			return nil
		},
		Apply: func(run *metadata.PreparedRun) error {
			if err := delta.ReplayRun(run, int64(id.Offset)-1, int32(id.Epoch)); err != nil {
				return snapshotReplayError(id, err)
			}
			return nil
		},
	})
	switch {
	case err == nil:
		return delta, h, nil
	case errors.Is(err, errDamagedSnapshot), errors.As(err, new(*UnsupportedMetadataVersionError)):
		return nil, h, err
	case errors.Is(err, snapshot.ErrCorrupt):
		return nil, h, damaged("raft: open snapshot %s: %w", id, err)
	}
	return nil, h, fmt.Errorf("raft: open snapshot %s: %w", id, err)
}

// snapshotReplayError is the error of a snapshot record of snapshot id
// that the image refuses: damage, unless the record finalizes a
// metadata.version this release cannot serve. That is no damage: the
// snapshot stays, and the node stops (a fatal fault) until a release that
// supports it runs.
func snapshotReplayError(id kraft.OffsetAndEpoch, err error) error {
	if errors.Is(err, metadata.ErrUnsupportedMetadataVersion) {
		return &UnsupportedMetadataVersionError{Snapshot: id.String(), Err: err}
	}
	return fmt.Errorf("%w: %w", errDamagedSnapshot, fmt.Errorf("raft: snapshot %s: %w", id, err))
}

// loadImage replaces the image with the content of snapshot id and makes
// id's end offset the next offset to apply.
func (e *engine) loadImage(id kraft.OffsetAndEpoch) error {
	delta, h, err := readSnapshot(e.fsys, e.snap.store.Path(id), id)
	if err != nil {
		return err
	}
	e.installImage(id, delta, h)
	return nil
}

// installImage makes delta (snapshot id's content, with header h) the
// image. The header is kept for the voter history and retention, which
// need not read the file again.
func (e *engine) installImage(id kraft.OffsetAndEpoch, delta *metadata.Delta, h snapshot.Header) {
	e.snap.loaded, e.snap.loadedHeader, e.snap.hasLoaded = id, h, true
	e.snap.timestamps[id] = h.LastContainedLogTimestamp
	e.applier.delta = delta
	e.applier.applied = id.Offset
	e.snap.appliedBytes = 0
	e.snap.atBoundary = false
	e.pub.publishImage(delta.Apply())
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "loaded snapshot", slog.String(logKeySnapshotID, id.String()))
}

// snapshotHeader returns the header of snapshot id: the one kept when
// the image was loaded from it, else read from the file, which Open
// verifies whole.
func (e *engine) snapshotHeader(id kraft.OffsetAndEpoch) (snapshot.Header, error) {
	if e.snap.hasLoaded && e.snap.loaded == id {
		return e.snap.loadedHeader, nil
	}
	r, err := snapshot.Open(e.fsys, e.snap.store.Path(id), snapshot.ReadOptions{})
	if err != nil {
		return snapshot.Header{}, err
	}
	h := r.Header()
	_ = r.Close() // read-only: a close error changes nothing read
	return h, nil
}

// snapshotSize reports the size of snapshot id, for the core's LogView.
func (e *engine) snapshotSize(id kraft.OffsetAndEpoch) (int64, bool) {
	info, err := e.fsys.Stat(e.snap.store.Path(id))
	if err != nil {
		return 0, false
	}
	return info.Size(), true
}

// readSnapshotChunk reads the bytes a leader's FetchSnapshot answer
// carries.
func (e *engine) readSnapshotChunk(m *kraft.FetchSnapshotResponse) ([]byte, error) {
	b, _, err := e.snap.store.ReadRange(m.SnapshotID, m.Position, int(m.Length))
	return b, err
}

// writeSnapshotChunks carries out a Ready's SnapshotWrites: a write at
// position 0 starts the download afresh.
func (e *engine) writeSnapshotChunks(writes []kraft.SnapshotWrite) error {
	for _, w := range writes {
		held := e.handles.get(w.Handle)
		if held == nil {
			panic(fmt.Sprintf("raft: invariant: snapshot write names unknown records handle %d", w.Handle))
		}
		id := w.SnapshotID
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
	id := o
	d := e.snap.download
	if d == nil || d.ID() != id {
		return fmt.Errorf("raft: install snapshot %s: no complete download of it", id)
	}
	if err := d.Install(); err != nil {
		return fmt.Errorf("raft: install snapshot %s: %w", id, err)
	}
	e.snap.download = nil
	// The image first: a snapshot this node cannot load (one of a
	// metadata.version it does not support) leaves the log as it was,
	// and the engine stops with the error.
	if err := e.loadImage(id); err != nil {
		return err
	}
	if err := e.log.TruncateFullyAndStartAt(int64(id.Offset)); err != nil {
		return fmt.Errorf("raft: restart log at snapshot %s: %w", id, err)
	}
	e.log.SetLatestSnapshot(id)
	e.log.SetEarliestSnapshot(id)
	e.deleteSnapshotsBefore(id)
	e.setLatest(id)
	e.snap.lastTaken = e.clock.Now()
	return nil
}

// abortDownload gives up an unfinished snapshot download (closing and
// removing its .part file; should the process die first, the next
// start-up deletes it).
func (e *engine) abortDownload() {
	if e.snap.download != nil {
		_ = e.snap.download.Abort()
		e.snap.download = nil
	}
}

// deleteSnapshotsBefore deletes every snapshot older than id. A failure
// only leaves a file behind, which the next start-up lists again.
func (e *engine) deleteSnapshotsBefore(id kraft.OffsetAndEpoch) {
	listing, err := snapshot.List(e.fsys, e.rc.dir)
	if err != nil {
		return
	}
	for _, s := range listing.Snapshots {
		if snapshot.Compare(s.ID, id) < 0 {
			delete(e.snap.timestamps, s.ID)
			if _, err := e.snap.store.Delete(s.ID); err != nil {
				e.logger.LogAttrs(context.Background(), slog.LevelWarn, "delete old snapshot",
					slog.String(logKeySnapshotID, s.ID.String()), slog.String(logKeyError, err.Error()))
			}
		}
	}
}

// setLatest makes id the newest snapshot, for the engine and for
// [Controller.ReadSnapshotRange].
func (e *engine) setLatest(id kraft.OffsetAndEpoch) {
	e.snap.latest, e.snap.hasLatest = id, true
	e.pub.latestSnapshot.Store(&id)
}

// triggerResult is the outcome of a TriggerSnapshot.
type triggerResult struct {
	id  kraft.OffsetAndEpoch
	err error
}

// noteApplied records that a batch was applied up to next (exclusive),
// for the snapshot trigger: bytes counts the batch's encoded size, as
// Kafka's loader counts the bytes of every committed batch it reads.
func (e *engine) noteApplied(bytes int, epoch int32, maxTimestamp int64, atBoundary bool) {
	e.snap.appliedBytes += int64(bytes)
	e.snap.atBoundary = atBoundary
	e.snap.boundaryEpoch, e.snap.boundaryTime = epoch, maxTimestamp
}

// trigger queues a TriggerSnapshot: done receives the id of a snapshot
// that holds everything applied now, once that snapshot is frozen.
func (e *engine) trigger(done chan<- triggerResult) {
	if e.applier.applied <= 0 && !e.snap.hasLatest {
		done <- triggerResult{err: ErrNothingToSnapshot}
		return
	}
	e.snap.triggers = append(e.snap.triggers, done)
	e.maybeSnapshot()
}

// failTriggers completes every waiting TriggerSnapshot (the engine is
// stopping).
func (e *engine) failTriggers(err error) {
	for _, c := range e.snap.triggers {
		c <- triggerResult{err: err}
	}
	for _, c := range e.snap.flight {
		c <- triggerResult{err: err}
	}
	e.snap.triggers, e.snap.flight = nil, nil
}

// cleanInterval is how often retention runs without a new snapshot, as
// Kafka's raft thread calls maybeClean every 60 s: the time rule deletes
// snapshots that aged past metadata.max.retention.ms on an idle node too.
const cleanInterval = time.Minute

// maybeSnapshot starts a snapshot of the applied image when one is due
// (KIP-630; Kafka's SnapshotGenerator and KafkaRaftLog.maybeClean), as Kafka's SnapshotGenerator decides: the record bytes
// applied since the last snapshot reached
// metadata.log.max.record.bytes.between.snapshots, or
// metadata.log.max.snapshot.interval.ms passed since the last snapshot
// and records were applied since, or a TriggerSnapshot waits. It is taken
// only at a batch boundary and while no other snapshot is written; its id
// is the applied offset and the epoch of the last applied batch. The
// counters restart when the snapshot is started, as Kafka resets them
// when it schedules the snapshot, so that records applied while it is
// written count towards the next one.
//
// The image is immutable, so a goroutine of its own writes the file
// (docs/architecture.md) while the engine goes on; the result comes back through
// the inbox ([engine.snapshotTaken]).
func (e *engine) maybeSnapshot() {
	s := &e.snap
	if s.inFlight {
		return
	}
	covered := s.hasLatest && e.applier.applied <= s.latest.Offset
	if covered && len(s.triggers) > 0 {
		for _, c := range s.triggers {
			c <- triggerResult{id: s.latest}
		}
		s.triggers = nil
	}
	if covered || !s.atBoundary || e.applier.applied <= 0 {
		return
	}
	due := len(s.triggers) > 0 || s.appliedBytes >= e.rc.snapshotBytes ||
		(e.rc.snapshotInterval > 0 && s.appliedBytes > 0 && e.clock.Now().Sub(s.lastTaken) >= e.rc.snapshotInterval)
	if !due {
		return
	}
	id := kraft.OffsetAndEpoch{Offset: e.applier.applied, Epoch: kraft.Epoch(s.boundaryEpoch)}
	img := e.pub.image.Load()
	header := snapshot.Header{LastContainedLogTimestamp: s.boundaryTime}
	if voters := e.voters.at(id.Offset); e.rc.dynamic || voters != nil {
		// A dynamic quorum's snapshot (an upgraded static one's too)
		// carries the voter set in force at its end offset, so that the
		// log behind it can go.
		header.KRaftVersion = 1
		header.Voters = voters
	}
	s.timestamps[id] = s.boundaryTime
	s.unique++
	unique := s.unique
	s.inFlight = true
	s.flight, s.triggers = s.triggers, nil
	s.appliedBytes, s.lastTaken = 0, e.clock.Now()
	fsys, dir, inbox, now := e.fsys, e.rc.dir, e.inbox, s.lastTaken.UnixMilli()
	e.spawn(func(ctx context.Context) {
		size, err := writeSnapshot(ctx, fsys, dir, id, unique, header, img, now)
		select {
		case inbox <- event{call: func(e *engine) { e.snapshotTaken(id, size, err) }}:
		case <-ctx.Done():
		}
	})
}

// writeSnapshot writes img as snapshot id: header, records, footer, fsync,
// rename, with now (Unix milliseconds) as the time of its batches. It
// gives up when ctx ends.
func writeSnapshot(ctx context.Context, fsys vfs.FS, dir string, id kraft.OffsetAndEpoch, unique uint64, h snapshot.Header, img *metadata.Image, now int64) (int64, error) {
	w, err := snapshot.Create(fsys, dir, id, unique, h, now, snapshot.WriterOptions{})
	if err != nil {
		return 0, fmt.Errorf("raft: create snapshot %s: %w", id, err)
	}
	err = img.AppendSnapshotRecords(func(value []byte) error {
		// Append copies value into the batch it builds.
		if err := w.Append(now, value); err != nil {
			return err
		}
		return ctx.Err()
	})
	if err != nil {
		_ = w.Abort()
		return 0, fmt.Errorf("raft: write snapshot %s: %w", id, err)
	}
	if err := w.Freeze(now); err != nil {
		return 0, fmt.Errorf("raft: freeze snapshot %s: %w", id, err)
	}
	return w.Size(), nil
}

// snapshotTaken registers a snapshot the writer finished (on the engine
// goroutine, between Readys), applies retention and then completes the
// TriggerSnapshot calls that waited for it. A failed write is logged; the next
// one is due after another interval's worth of records: the log only
// grows meanwhile.
func (e *engine) snapshotTaken(id kraft.OffsetAndEpoch, size int64, err error) {
	s := &e.snap
	s.inFlight = false
	flight := s.flight
	s.flight = nil
	if err != nil {
		delete(s.timestamps, id)
		e.logger.LogAttrs(context.Background(), slog.LevelError, "snapshot failed",
			slog.String(logKeySnapshotID, id.String()), slog.String(logKeyError, err.Error()))
		for _, c := range flight {
			c <- triggerResult{err: err}
		}
		return
	}
	if s.hasLatest && snapshot.Compare(id, s.latest) <= 0 {
		// An installed snapshot overtook this one while it was written.
		e.deleteSnapshotsBefore(s.latest)
		for _, c := range flight {
			c <- triggerResult{id: s.latest}
		}
		return
	}
	e.log.SetLatestSnapshot(id)
	if !s.hasLatest {
		e.log.SetEarliestSnapshot(id)
	}
	e.setLatest(id)
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "took snapshot",
		slog.String(logKeySnapshotID, id.String()), slog.Int64("bytes", size))
	e.clean()
	for _, c := range flight {
		c <- triggerResult{id: id}
	}
}

// snapshotTimestamp returns the LastContainedLogTimestamp of snapshot id,
// reading its header once. ok is false when the header cannot be read;
// retention then keeps the snapshot, as Kafka does.
func (e *engine) snapshotTimestamp(id kraft.OffsetAndEpoch) (ts int64, ok bool) {
	if ts, ok := e.snap.timestamps[id]; ok {
		return ts, true
	}
	h, err := e.snapshotHeader(id)
	if err != nil {
		return 0, false
	}
	e.snap.timestamps[id] = h.LastContainedLogTimestamp
	return h.LastContainedLogTimestamp, true
}

// runRetentionIfDue runs retention when cleanInterval has passed since it
// last ran (timerRetention); the engine loop calls it every turn.
func (e *engine) runRetentionIfDue() {
	if e.timers.expired(timerRetention, e.clock.Now()) {
		e.clean()
	}
}

// clean applies retention (Kafka's KafkaRaftLog.maybeClean)
// with [snapshot.PlanRetention]: the size rule
// (metadata.max.retention.bytes over the log and every snapshot) and then
// the time rule (metadata.max.retention.ms against each snapshot's
// LastContainedLogTimestamp), oldest first, never the newest snapshot. The
// log start advances to the oldest snapshot kept (whole segments below it
// are deleted, the active one never), so that the log start is always
// covered by a snapshot; then the older snapshots are deleted. A snapshot
// being served is renamed at once and removed when its last reader closes
// ([snapshot.Store.Delete]). A failure is logged: retention runs again
// after the next snapshot.
func (e *engine) clean() {
	e.timers.set(timerRetention, e.clock.Now().Add(cleanInterval))
	if err := e.applyRetention(); err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelError, "log retention failed", slog.String(logKeyError, err.Error()))
	}
}

func (e *engine) applyRetention() error {
	listing, err := snapshot.List(e.fsys, e.rc.dir)
	if err != nil {
		return fmt.Errorf("raft: list snapshots: %w", err)
	}
	var snaps []snapshot.Retained
	for _, si := range listing.Snapshots {
		if si.ID == snapshot.Bootstrap {
			continue
		}
		ts, ok := e.snapshotTimestamp(si.ID)
		snaps = append(snaps, snapshot.Retained{ID: si.ID, Size: si.Size, LastContainedLogTimestamp: ts, TimestampKnown: ok})
	}
	if len(snaps) < 2 {
		return nil
	}
	segs := e.log.Segments()
	logBytes := func(start int64) int64 {
		var n int64
		for i, seg := range segs {
			if i < len(segs)-1 && seg.NextOffset <= start {
				continue // deleted once the log starts at start
			}
			n += seg.Bytes
		}
		return n
	}
	policy := snapshot.Policy{MaxRetentionBytes: e.rc.retentionBytes, MaxRetentionMs: e.rc.retentionTime.Milliseconds()}
	plan := snapshot.PlanRetention(snaps, e.log.LogStartOffset(), logBytes, e.clock.Now().UnixMilli(), policy)
	if len(plan.Delete) == 0 {
		return nil
	}
	var kept kraft.OffsetAndEpoch
	for _, r := range snaps {
		if int64(r.ID.Offset) == plan.LogStartOffset {
			kept = r.ID
			break
		}
	}
	if int64(kept.Offset) != plan.LogStartOffset {
		panic(fmt.Sprintf("raft: invariant: retention moves the log start to %d, where no snapshot ends", plan.LogStartOffset))
	}
	if plan.LogStartOffset > e.log.LogStartOffset() {
		if err := e.log.AdvanceLogStart(plan.LogStartOffset); err != nil {
			if errors.Is(err, logstore.ErrOffsetOutOfRange) {
				return nil
			}
			return fmt.Errorf("raft: advance log start to snapshot %s: %w", kept, err)
		}
	}
	e.log.SetEarliestSnapshot(kept)
	for _, id := range plan.Delete {
		delete(e.snap.timestamps, id)
		if _, err := e.snap.store.Delete(id); err != nil && !errors.Is(err, snapshot.ErrNotFound) {
			return fmt.Errorf("raft: delete snapshot %s: %w", id, err)
		}
	}
	return nil
}
