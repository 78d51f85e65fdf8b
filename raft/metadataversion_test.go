package raft

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// metadataVersionAt is a FeatureLevelRecord finalizing metadata.version
// level.
func metadataVersionAt(level int16) metadata.Record {
	r := metadata.NewFeatureLevelRecord()
	r.Name, r.FeatureLevel = metadata.FeatureMetadataVersion, level
	return r
}

// TestCommittedUnsupportedMetadataVersionStopsTheNode (a fatal fault): a
// log whose second record finalizes a metadata.version above the range
// this release supports (as a newer leader writes) stops the node once
// that record commits, with a CommittedReplayError that names it and
// matches ErrUnsupportedMetadataVersion; the fatal-fault check fails.
func TestCommittedUnsupportedMetadataVersionStopsTheNode(t *testing.T) {
	c := startOnForeignLog(t, metadataVersionRecord(), metadataVersionAt(metadata.MaxMetadataVersion+1))
	waitStopped(t, c, "a committed metadata.version it does not support")
	var re *CommittedReplayError
	err := c.Err()
	if !errors.As(err, &re) || re.Offset != 1 || re.Epoch != 1 || !errors.Is(err, metadata.ErrUnsupportedMetadataVersion) || !errors.Is(err, metadata.ErrUnsupportedFeature) {
		t.Fatalf("Err = %v, want a CommittedReplayError for offset 1 matching ErrUnsupportedMetadataVersion", err)
	}
	if !strings.Contains(err.Error(), "outside the supported range") {
		t.Errorf("Err = %v, want it to name the supported range", err)
	}
	rs, err := c.LiveChecks(DefaultHealthOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := checkErr(rs, CheckFatalFault); !errors.Is(err, metadata.ErrUnsupportedMetadataVersion) {
		t.Errorf("%s = %v, want the unsupported metadata.version", CheckFatalFault, err)
	}
}

// TestSnapshotOfUnsupportedMetadataVersionRefusesToStart: a node whose
// newest snapshot finalizes a metadata.version outside the supported
// range does not start, says why, and keeps the snapshot (it is not
// damaged: a release that supports the level can load it).
func TestSnapshotOfUnsupportedMetadataVersionRefusesToStart(t *testing.T) {
	for _, level := range []int16{metadata.MaxMetadataVersion + 1, metadata.MinMetadataVersion - 1} {
		cfg := ForTests(1, t.TempDir())
		dir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
		if err := logstore.MkdirAllDurable(vfs.OS(), dir); err != nil {
			t.Fatal(err)
		}
		id := kraft.OffsetAndEpoch{Offset: 5, Epoch: 1}
		now := time.Now().UnixMilli()
		w, err := snapshot.Create(vfs.OS(), dir, id, 1, snapshot.Header{LastContainedLogTimestamp: now}, now, snapshot.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := metadata.Encode(metadataVersionAt(level))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(now, v); err != nil {
			t.Fatal(err)
		}
		if err := w.Freeze(now); err != nil {
			t.Fatal(err)
		}
		c, err := Start(t.Context(), cfg)
		if err == nil {
			_ = c.Shutdown(context.Background())
			t.Fatalf("level %d: the node started on a snapshot of a metadata.version it does not support", level)
		}
		var ue *UnsupportedMetadataVersionError
		if !errors.As(err, &ue) || ue.Snapshot != id.String() || !errors.Is(err, metadata.ErrUnsupportedMetadataVersion) {
			t.Errorf("level %d: Start = %v, want an UnsupportedMetadataVersionError for snapshot %s", level, err, id)
		}
		if _, err := os.Stat(filepath.Join(dir, snapshot.FileName(id))); err != nil {
			t.Errorf("level %d: the snapshot is gone: %v", level, err)
		}
	}
}

// TestBootstrapOfUnsupportedMetadataVersionRefusesToStart: a
// bootstrap.checkpoint finalizing a metadata.version outside the
// supported range (one this release's format never writes) stops the
// node at start, naming the file and the range, before a leader could
// write it into the log.
func TestBootstrapOfUnsupportedMetadataVersionRefusesToStart(t *testing.T) {
	for _, level := range []int16{metadata.MaxMetadataVersion + 1, metadata.MinMetadataVersion - 1} {
		cfg := ForTests(1, t.TempDir())
		formatBootstrap(t, cfg, level)
		c, err := Start(t.Context(), cfg)
		if err == nil {
			_ = c.Shutdown(context.Background())
			t.Fatalf("level %d: the node started", level)
		}
		if !errors.Is(err, metadata.ErrUnsupportedMetadataVersion) || !strings.Contains(err.Error(), snapshot.BootstrapFile) || !strings.Contains(err.Error(), "outside the range") {
			t.Errorf("level %d: Start = %v, want an error naming %s and the supported range", level, err, snapshot.BootstrapFile)
		}
	}
}
