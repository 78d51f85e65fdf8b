package raft

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/metadata"
)

// damageFile flips one byte in the middle of the file at path.
func damageFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trimmedConfig makes snapshots every KiB, 2 KiB segments and retention
// that keeps only the newest snapshot.
func trimmedConfig(c *Config) {
	c.MaxRecordBytesBetweenSnapshots = 1 << 10
	c.InternalSegmentBytes = 2 << 10
	c.MaxRetentionBytes = 1
	c.MaxSnapshotInterval = 0
}

// runUntilTrimmed starts a lone voter on dir with trimmedConfig, submits
// topics named prefix-N until retention has deleted the log's first
// segment, and shuts it down. It returns the node's configuration and
// the image it had.
func runUntilTrimmed(t *testing.T, dir, prefix string) (Config, *metadata.Image) {
	t.Helper()
	n, cfg := startSingle(t, dir, trimmedConfig)
	submit(t, n, metadataVersionRecord())
	i := 0
	waitFor(t, "the first segment to be deleted", func() bool {
		submit(t, n, topicRecord(prefix+"-"+strconv.Itoa(i)))
		i++
		var base int64
		onEngine(t, n, func(e *engine) { base = e.log.Segments()[0].BaseOffset })
		return base > 1
	})
	img := n.CurrentImage()
	shutdown(t, n)
	return cfg, img
}

// manualSnapshots makes snapshots only on TriggerSnapshot and turns
// retention off.
func manualSnapshots(c *Config) {
	c.MaxRecordBytesBetweenSnapshots = 1 << 40
	c.MaxSnapshotInterval = 0
	c.MaxRetentionBytes = -1
	c.MaxRetentionTime = -time.Millisecond
}

// twoSnapshotsAndTail runs a lone voter on dir that takes snapshots only
// when asked and deletes nothing: it submits perRound topics named
// prefix-ROUND-N and takes a snapshot, twice, then submits prefix-tail
// and shuts down. It returns the node's configuration, the two snapshot
// ids, the tail's result and the image the node had.
func twoSnapshotsAndTail(t *testing.T, dir, prefix string, perRound int) (Config, []SnapshotID, SubmitResult, *metadata.Image) {
	t.Helper()
	n, cfg := startSingle(t, dir, manualSnapshots)
	submit(t, n, metadataVersionRecord())
	var ids []SnapshotID
	for round := range 2 {
		for i := range perRound {
			submit(t, n, topicRecord(prefix+"-"+strconv.Itoa(round)+"-"+strconv.Itoa(i)))
		}
		id, err := n.TriggerSnapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	last := submit(t, n, topicRecord(prefix+"-tail"))
	want := n.CurrentImage()
	shutdown(t, n)
	return cfg, ids, last, want
}

// TestStartFallsBackFromDamagedSnapshot (invariant S5 in docs/reliability.md): when the
// newest snapshot is damaged and the log still holds every record after an
// older one, start-up loads the older snapshot, replays the log from there
// to the same image, and deletes the damaged file.
func TestStartFallsBackFromDamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	cfg, ids, last, want := twoSnapshotsAndTail(t, dir, "fall", 10)

	pdir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
	newest := kraft.OffsetAndEpoch{Offset: kraft.Offset(ids[1].EndOffset), Epoch: kraft.Epoch(ids[1].Epoch)}
	damageFile(t, filepath.Join(pdir, snapshot.FileName(newest)))

	n, _ := startSingle(t, dir, manualSnapshots)
	defer shutdown(t, n)
	waitFor(t, "the restarted node to apply its log", func() bool {
		return n.QuorumState().AppliedOffset >= last.LastOffset
	})
	if !sameImage(t, n.CurrentImage(), want) {
		t.Error("the image rebuilt from the older snapshot and the log differs")
	}
	snaps := listSnapshots(t, cfg)
	if len(snaps) != 1 || int64(snaps[0].ID.Offset) != ids[0].EndOffset {
		t.Errorf("snapshots after start-up: %v, want only %s (the damaged %s deleted)", snaps, ids[0], newest)
	}
	if latest, ok := n.LatestSnapshot(); !ok || latest.EndOffset != ids[0].EndOffset {
		t.Errorf("LatestSnapshot = %v, %v; want %s", latest, ok, ids[0])
	}
}

// TestStartRefusesDamagedSnapshotOverTrimmedLog (invariant S2 in docs/reliability.md): when
// every snapshot is damaged and retention has deleted the log below them,
// nothing can rebuild the image: start-up fails with an error that names
// the damage and the missing offsets, and deletes nothing.
func TestStartRefusesDamagedSnapshotOverTrimmedLog(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := runUntilTrimmed(t, dir, "trim")
	pdir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
	snaps := listSnapshots(t, cfg)
	for _, s := range snaps {
		damageFile(t, filepath.Join(pdir, snapshot.FileName(s.ID)))
	}
	rc := ForTests(1, dir)
	trimmedConfig(&rc)
	_, err := Start(t.Context(), rc)
	if err == nil {
		t.Fatal("started from damaged snapshots over a trimmed log")
	}
	for _, want := range []string{"corrupt snapshot", "does not cover offsets", "format it again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start-up error lacks %q:\n%v", want, err)
		}
	}
	if after := listSnapshots(t, cfg); len(after) != len(snaps) {
		t.Errorf("start-up deleted snapshots: %v, had %v", after, snaps)
	}
}

// TestStartRefusesLogStartWithoutSnapshot (invariant S2 in docs/reliability.md): a log that
// starts above offset 0 with no snapshot at all (the snapshot files were
// lost) is refused at start-up, naming the log start.
func TestStartRefusesLogStartWithoutSnapshot(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := runUntilTrimmed(t, dir, "lost")
	pdir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
	for _, s := range listSnapshots(t, cfg) {
		if err := os.Remove(filepath.Join(pdir, snapshot.FileName(s.ID))); err != nil {
			t.Fatal(err)
		}
	}
	rc := ForTests(1, dir)
	trimmedConfig(&rc)
	_, err := Start(t.Context(), rc)
	if err == nil || !strings.Contains(err.Error(), "no snapshot covers the records below it") {
		t.Fatalf("start-up with a trimmed log and no snapshot: %v", err)
	}
}

// TestStartLoadsNewestSnapshotThenTheLogAfterIt: with two snapshots and
// the whole log on disk, start-up loads the newest snapshot (before any
// election, the applied offset is its end offset, not 0 and not the older
// snapshot's) and then replays only the log after it, to the same image.
func TestStartLoadsNewestSnapshotThenTheLogAfterIt(t *testing.T) {
	dir := t.TempDir()
	_, ids, last, want := twoSnapshotsAndTail(t, dir, "newest", 5)

	// A long election timeout: nothing is applied from the log before the
	// first check.
	n, _ := startSingle(t, dir, func(c *Config) {
		manualSnapshots(c)
		c.ElectionTimeout = 3 * time.Second
		c.FetchTimeout = 6 * time.Second
	})
	defer shutdown(t, n)
	if got := n.QuorumState().AppliedOffset; got != ids[1].EndOffset {
		t.Errorf("applied offset right after start-up %d, want the newest snapshot's end offset %d", got, ids[1].EndOffset)
	}
	waitFor(t, "the restarted node to apply the log after the snapshot", func() bool {
		return n.QuorumState().AppliedOffset > last.LastOffset
	})
	if !sameImage(t, n.CurrentImage(), want) {
		t.Error("the image from the newest snapshot and the log after it differs")
	}
}
