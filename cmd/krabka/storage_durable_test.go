package main

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
)

// A format that returned survives a power loss: every log directory it
// created, with meta.properties, bootstrap.checkpoint and the bootstrap
// snapshot, is still there when only what was made durable is kept.
func TestFormatIsDurable(t *testing.T) {
	n := newTestNode(t, 1, dynamicServers)
	mem := vfs.NewMem()
	a := &app{stdout: io.Discard, stderr: io.Discard, log: slog.New(slog.DiscardHandler)}
	o := formatOptions{clusterID: testClusterID, config: n.props, standalone: true, fsys: mem}
	if err := runFormat(a, o, time.Now()); err != nil {
		t.Fatal(err)
	}
	mem.Crash(nil, vfs.CrashDropUnsynced)
	for _, d := range []string{n.meta, n.data1, n.data2} {
		mp, err := logstore.ReadMetaProperties(mem, d)
		if err != nil {
			t.Fatalf("after a power loss: %v", err)
		}
		if mp.ClusterID != testClusterID {
			t.Errorf("%s: cluster id %q after a power loss", d, mp.ClusterID)
		}
		if _, err := mem.Stat(filepath.Join(d, "bootstrap.checkpoint")); err != nil {
			t.Errorf("after a power loss: %v", err)
		}
	}
	if _, err := mem.Stat(filepath.Join(n.meta, metadataPartitionDir, snapshot.FileName(snapshot.Bootstrap))); err != nil {
		t.Errorf("bootstrap snapshot after a power loss: %v", err)
	}
}
