package raft

import (
	"context"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// The crash tests of this file run the real runtime on a vfs.MemFS, stop
// the machine after the k-th file-system operation of the step under
// test (every later operation fails with EIO, so what was done up to
// there is exactly what a crash sees), power the file system off in each
// of its crash modes, start a node on what survived and check that it
// holds the old state or the new one, never a mixture, and loses nothing
// that was acknowledged. k grows until the step completes without
// reaching the stop.

// crashModes are the ways a MemFS loses power.
var crashModes = []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix, vfs.CrashReorder}

// allFSOps are the operations a stop fails.
const allFSOps = vfs.OpOpen | vfs.OpWrite | vfs.OpTruncate | vfs.OpSync | vfs.OpSyncDir | vfs.OpRename | vfs.OpRemove | vfs.OpMkdir

// stopAfter arms m to fail every operation after the first k that follow
// the first operation on a path from selects (nil: from now on). It
// returns a function reporting whether the stop was reached.
func stopAfter(m *vfs.MemFS, from func(path string) bool, k int64) func() bool {
	var started atomic.Bool
	var calls atomic.Int64
	m.InjectFault(vfs.Fault{Ops: allFSOps, Err: syscall.EIO, Count: vfs.Forever, Match: func(p string) bool {
		if !started.Load() && (from == nil || from(p)) {
			started.Store(true)
		}
		return started.Load() && calls.Add(1) > k
	}})
	return func() bool { return calls.Load() > k }
}

// submitTopics submits 40 topics named prefix-i-j, ten per change.
func submitTopics(t *testing.T, n *Controller, prefix string) {
	t.Helper()
	for i := range 4 {
		var recs []metadata.Record
		for j := range 10 {
			recs = append(recs, topicRecord(prefix+"-"+strconv.Itoa(i)+"-"+strconv.Itoa(j)))
		}
		submit(t, n, recs...)
	}
}

// startOn starts a controller with cfg on fsys.
func startOn(t *testing.T, cfg Config, fsys vfs.FS) *Controller {
	t.Helper()
	n, err := start(t.Context(), cfg, startOptions{fsys: fsys})
	if err != nil {
		t.Fatalf("start node %d: %v", cfg.NodeID, err)
	}
	return n
}

// stopQuietly shuts n down, ignoring the error of an engine a stop
// already failed.
func stopQuietly(n *Controller) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.Shutdown(ctx)
}

// crashed returns a copy of m after a power loss in mode.
func crashed(m *vfs.MemFS, mode vfs.CrashMode, seed, step uint64) *vfs.MemFS {
	c := m.Clone()
	c.ClearFaults()
	c.Crash(rand.New(rand.NewPCG(seed, step)), mode)
	return c
}

// checkSnapshotFiles checks what a crash left in the partition directory
// dir of fsys (invariant S5 in docs/reliability.md): after start-up recovery, at most the
// one snapshot want (complete: it opens), and want if it was acknowledged.
func checkSnapshotFiles(t *testing.T, fsys vfs.FS, dir string, want kraft.OffsetAndEpoch, acked bool, what string) {
	t.Helper()
	l, err := snapshot.Recover(fsys, dir)
	if err != nil {
		t.Fatalf("%s: recover snapshots: %v", what, err)
	}
	var got []kraft.OffsetAndEpoch
	for _, s := range l.Snapshots {
		if s.ID != snapshot.Bootstrap {
			got = append(got, s.ID)
		}
	}
	switch {
	case len(got) == 0 && acked:
		t.Fatalf("%s: acknowledged snapshot %s lost", what, want)
	case len(got) > 1 || (len(got) == 1 && got[0] != want):
		t.Fatalf("%s: snapshots %v, want none or %s", what, got, want)
	case len(got) == 1:
		r, err := snapshot.Open(fsys, path.Join(dir, snapshot.FileName(want)), snapshot.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: snapshot %s under its final name does not open: %v", what, want, err)
		}
		for r.Next() {
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: snapshot %s under its final name is torn: %v", what, want, err)
		}
		_ = r.Close()
	}
}

// TestSnapshotWriteCrashAtEveryStep: a node that stops at any step of
// writing a snapshot (create, each batch, fsync, close, rename, directory
// fsync, retention) and loses power then holds either no snapshot or the
// complete one, restarts to the same image, and has the snapshot whenever
// TriggerSnapshot had returned it.
func TestSnapshotWriteCrashAtEveryStep(t *testing.T) {
	const dir = "/meta"
	pdir := path.Join(dir, PartitionDirName)
	cfg := ForTests(1, dir)
	cfg.MaxRecordBytesBetweenSnapshots = 1 << 40
	cfg.MaxSnapshotInterval = 0
	// prepare starts a node on m with the same records every time.
	prepare := func(m *vfs.MemFS) (*Controller, *metadata.Image, int64) {
		n := startOn(t, cfg, m)
		submit(t, n, metadataVersionRecord())
		submitTopics(t, n, "w")
		return n, n.CurrentImage(), n.QuorumState().AppliedOffset
	}
	// The snapshot's id, from a write that is not stopped.
	n, _, _ := prepare(vfs.NewMem())
	id, err := n.TriggerSnapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	stopQuietly(n)
	want := kraft.OffsetAndEpoch{Offset: kraft.Offset(id.EndOffset), Epoch: kraft.Epoch(id.Epoch)}
	for k := int64(0); ; k++ {
		m := vfs.NewMem()
		n, image, applied := prepare(m)
		stopped := stopAfter(m, nil, k)
		got, err := n.TriggerSnapshot(t.Context())
		acked := err == nil
		if acked && got != id {
			t.Fatalf("TriggerSnapshot = %s, the unstopped run gave %s", got, id)
		}
		stopQuietly(n)
		done := !stopped()
		if done && !acked {
			t.Fatalf("TriggerSnapshot failed without a stop: %v", err)
		}
		for i, mode := range crashModes {
			if !done && (int(k)+i)%2 == 1 {
				continue // half the modes per stop keep the test short; k+1 takes the others
			}
			what := "stop after " + strconv.FormatInt(k, 10) + " operations, " + mode.String()
			c := crashed(m, mode, uint64(i), uint64(k))
			checkSnapshotFiles(t, c, pdir, want, acked, what)
			r := startOn(t, cfg, c)
			waitFor(t, what+": the restarted node to apply its log", func() bool { return r.QuorumState().AppliedOffset >= applied })
			if !sameImage(t, r.CurrentImage(), image) {
				t.Errorf("%s: the restarted node's image differs", what)
			}
			if latest, ok := r.LatestSnapshot(); acked && (!ok || latest != id) {
				t.Errorf("%s: LatestSnapshot = %s, %v after an acknowledged %s", what, latest, ok, id)
			}
			stopQuietly(r)
		}
		if done {
			t.Logf("checked a stop after each of %d operations", k)
			return
		}
	}
}

// TestSnapshotInstallCrashAtEveryStep: a follower on an empty disk
// downloads the leader's snapshot; stopped at any step from its first
// snapshot file operation on (the .part file, each chunk, fsync,
// verification, rename, directory fsync, the log's restart at the
// snapshot and its fsync) and powered off, it holds no snapshot and the
// old log, or the complete snapshot; restarted, it catches up to the
// leader's image; and an install it completed survives.
func TestSnapshotInstallCrashAtEveryStep(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		cfg.MaxRecordBytesBetweenSnapshots = 1 << 40
		cfg.MaxSnapshotInterval = 0
		cfg.FetchSnapshotMaxBytes = 1024
	})
	leader := c.leader()
	lead := c.node(leader)
	submit(t, lead, metadataVersionRecord())
	submitTopics(t, lead, "i")
	c.waitApplied(lead.QuorumState().AppliedOffset)
	// Every node takes the same snapshot, so that a leader change during
	// the test (a loaded machine) still leaves a leader that serves it.
	sid, err := lead.TriggerSnapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range c.nodes {
		if id, err := n.TriggerSnapshot(t.Context()); err != nil || id != sid {
			t.Fatalf("node %d takes snapshot %s, %v; the leader took %s", i+1, id, err, sid)
		}
	}
	want := kraft.OffsetAndEpoch{Offset: kraft.Offset(sid.EndOffset), Epoch: kraft.Epoch(sid.Epoch)}
	f := c.follower(leader)
	c.stop(f)
	cfg := c.cfgs[f-1]
	cfg.MetadataLogDir = "/meta"
	pdir := path.Join(cfg.MetadataLogDir, PartitionDirName)
	caughtUp := func(n *Controller) bool {
		target := lead.QuorumState().AppliedOffset
		return n.Err() == nil && n.QuorumState().AppliedOffset >= target && sameImage(t, n.CurrentImage(), lead.CurrentImage())
	}
	for k := int64(0); ; k++ {
		m := vfs.NewMem()
		stopped := stopAfter(m, func(p string) bool { return strings.HasSuffix(p, ".checkpoint.part") }, k)
		n := startOn(t, cfg, m)
		waitFor(t, "the follower to install the snapshot or stop", func() bool {
			if n.Err() != nil {
				return true
			}
			id, ok := n.LatestSnapshot()
			return ok && id == sid && n.QuorumState().AppliedOffset >= sid.EndOffset
		})
		acked := n.Err() == nil
		stopQuietly(n)
		done := !stopped()
		if done && !acked {
			t.Fatalf("the install failed without a stop: %v", n.Err())
		}
		for i, mode := range crashModes {
			if !done && (int(k)+i)%2 == 1 {
				continue // half the modes per stop keep the test short; k+1 takes the others
			}
			what := "stop after " + strconv.FormatInt(k, 10) + " operations, " + mode.String()
			cm := crashed(m, mode, uint64(i), uint64(k))
			checkSnapshotFiles(t, cm, pdir, want, acked, what)
			if l, _, err := logstore.Open(cm, pdir, logstore.DefaultOptions()); err == nil {
				if s := l.LogStartOffset(); s != 0 && s != int64(want.Offset) {
					t.Fatalf("%s: the log starts at %d, neither the old 0 nor the snapshot's %d", what, s, want.Offset)
				}
				_ = l.Close()
			}
			r := startOn(t, cfg, cm)
			waitFor(t, what+": the restarted follower to catch up", func() bool { return caughtUp(r) })
			if id, ok := r.LatestSnapshot(); !ok || id != sid {
				t.Errorf("%s: LatestSnapshot = %s, %v; want %s", what, id, ok, sid)
			}
			stopQuietly(r)
		}
		if done {
			t.Logf("checked a stop after each of %d operations", k)
			return
		}
	}
}
