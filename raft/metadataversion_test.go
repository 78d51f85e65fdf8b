package raft

import (
	"context"
	"errors"
	"net"
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
		writeMetadataSnapshot(t, dir, id, level)
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

// writeMetadataSnapshot writes snapshot id into dir: a metadata.version
// record at level and a topic.
func writeMetadataSnapshot(t *testing.T, dir string, id kraft.OffsetAndEpoch, level int16) {
	t.Helper()
	now := time.Now().UnixMilli()
	w, err := snapshot.Create(vfs.OS(), dir, id, 1, snapshot.Header{LastContainedLogTimestamp: now}, now, snapshot.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []metadata.Record{metadataVersionAt(level), topicRecord("t")} {
		v, err := metadata.Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(now, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Freeze(now); err != nil {
		t.Fatal(err)
	}
}

// TestFetchedSnapshotOfUnsupportedMetadataVersionStopsTheNode (a fatal
// fault): a node that downloads from its leader a snapshot finalizing a
// metadata.version outside the range it supports (as a leader of a newer
// release serves) stops with an UnsupportedMetadataVersionError naming the
// snapshot once the download is complete, and its fatal-fault check
// fails. The leader is a node of this release whose snapshot file is
// replaced, after it loaded it, by one of the same id at the unsupported
// level: it serves the file's bytes without reading them.
func TestFetchedSnapshotOfUnsupportedMetadataVersionStopsTheNode(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	dir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
	if err := logstore.MkdirAllDurable(vfs.OS(), dir); err != nil {
		t.Fatal(err)
	}
	id := kraft.OffsetAndEpoch{Offset: 5, Epoch: 1}
	writeMetadataSnapshot(t, dir, id, metadata.MaxMetadataVersion)
	leader, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leader.Shutdown(context.Background()) })
	waitFor(t, "node 1 to lead", func() bool { return leader.QuorumState().Role == RoleLeader })
	if _, ok := leader.CurrentImage().Topics().ByName("t"); !ok {
		t.Fatal("the leader did not load its snapshot")
	}
	newer := t.TempDir()
	writeMetadataSnapshot(t, newer, id, metadata.MaxMetadataVersion+1)
	if err := os.Rename(filepath.Join(newer, snapshot.FileName(id)), filepath.Join(dir, snapshot.FileName(id))); err != nil {
		t.Fatal(err)
	}

	ocfg := ForTests(2, t.TempDir())
	port := leader.Addr().(*net.TCPAddr).Port
	ocfg.QuorumVoters = []QuorumVoter{{ID: 1, Host: "127.0.0.1", Port: uint16(port)}}
	o, err := StartObserver(t.Context(), ocfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	select {
	case <-o.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("the node still runs on a downloaded snapshot of a metadata.version it does not support: %+v", o.QuorumState())
	}
	var ue *UnsupportedMetadataVersionError
	if err := o.Err(); !errors.As(err, &ue) || ue.Snapshot != id.String() || !errors.Is(err, metadata.ErrUnsupportedMetadataVersion) {
		t.Fatalf("Err = %v, want an UnsupportedMetadataVersionError for snapshot %s", err, id)
	}
	rs, err := o.c.LiveChecks(DefaultHealthOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := checkErr(rs, CheckFatalFault); !errors.Is(err, metadata.ErrUnsupportedMetadataVersion) {
		t.Errorf("%s = %v, want the unsupported metadata.version", CheckFatalFault, err)
	}
	if st := leader.QuorumState(); st.Role != RoleLeader {
		t.Errorf("the leader stopped leading: %+v", st)
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
