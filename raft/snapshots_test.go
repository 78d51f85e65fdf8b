package raft

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// snapshotConfig makes every node snapshot after a few kilobytes of
// records and compact its log at once.
func snapshotConfig(cfg *Config) {
	cfg.MaxRecordBytesBetweenSnapshots = 2 << 10
	cfg.InternalSegmentBytes = 4 << 10
	cfg.MaxRetentionBytes = 1
}

// TestClusterSnapshotCatchUp (KIP-630): while a follower is down the
// others take snapshots and compact their logs past its position; on its
// return the leader answers its fetch with a snapshot id, the follower
// downloads the snapshot with FetchSnapshot, installs it, restarts its log
// there and catches up from the log. A restart then loads the snapshot
// before the log.
func TestClusterSnapshotCatchUp(t *testing.T) {
	c := newTestClusterWith(t, 3, "", snapshotConfig)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	lagging := c.follower(leader)
	c.stop(lagging)

	var last SubmitResult
	for i := range 40 {
		var recs []metadata.Record
		for j := range 5 {
			recs = append(recs, topicRecord("topic-"+strconv.Itoa(i)+"-"+strconv.Itoa(j)))
		}
		last = c.submitRetrying(recs...)
	}
	leader = c.leader()
	waitFor(t, "the leader to compact its log", func() bool {
		return c.node(leader).eng.log.LogStartOffset() > 0
	})

	c.restart(lagging)
	c.waitApplied(last.LastOffset + 1)
	img := c.node(lagging).CurrentImage()
	if got := img.Topics().Len(); got != 200 {
		t.Errorf("node %d after the snapshot install holds %d topics, want 200", lagging, got)
	}
	if start := c.node(lagging).eng.log.LogStartOffset(); start == 0 {
		t.Errorf("node %d caught up without a snapshot (its log starts at 0)", lagging)
	}

	// The installed node restarts from its snapshot and its log.
	c.stop(lagging)
	c.restart(lagging)
	if got := c.node(lagging).CurrentImage().Topics().Len(); got == 0 {
		t.Errorf("node %d restarted without loading its snapshot", lagging)
	}
	after := c.submitRetrying(topicRecord("after"))
	c.waitApplied(after.LastOffset + 1)
	if got := c.node(lagging).CurrentImage().Topics().Len(); got != 201 {
		t.Errorf("node %d after restart holds %d topics, want 201", lagging, got)
	}

	// Every node's snapshots load into the same image, and the logs agree
	// from the highest log start up to the common high watermark.
	var hws []int64
	for _, n := range c.nodes {
		hws = append(hws, n.QuorumState().HighWatermark)
	}
	for i := range c.nodes {
		c.stop(NodeID(i + 1))
	}
	common := min(hws[0], hws[1], hws[2])
	var start int64
	for _, cfg := range c.cfgs {
		listing, err := snapshot.List(vfs.OS(), cfg.MetadataLogDir+"/"+PartitionDirName)
		if err != nil {
			t.Fatal(err)
		}
		if len(listing.Snapshots) == 0 {
			t.Errorf("node dir %s holds no snapshot", cfg.MetadataLogDir)
		}
		log, _, err := logstore.Open(vfs.OS(), cfg.MetadataLogDir+"/"+PartitionDirName, logstore.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		start = max(start, log.LogStartOffset())
		_ = log.Close()
	}
	var want []byte
	for i, cfg := range c.cfgs {
		got := readCommittedFrom(t, cfg, start, common)
		if i == 0 {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Errorf("node %d: committed log bytes in [%d, %d) differ from node 1's", i+1, start, common)
		}
	}
}

// TestSingleNodeSnapshotRestart: a lone voter that compacted its log comes
// back with the same image, loaded from its snapshot and the log after it.
func TestSingleNodeSnapshotRestart(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	snapshotConfig(&cfg)
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	submit(t, n, metadataVersionRecord())
	// Retention deletes a snapshot, and moves the log start to the next
	// one, once a second snapshot exists: submit until it has.
	var last SubmitResult
	topics := 0
	waitFor(t, "the log to be compacted", func() bool {
		last = submit(t, n, topicRecord("solo-"+strconv.Itoa(topics)), topicRecord("duo-"+strconv.Itoa(topics)))
		topics++
		return n.eng.log.LogStartOffset() > 0
	})
	if err := n.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, err = Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Shutdown(t.Context()); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the restarted node to apply its log", func() bool {
		return n.QuorumState().AppliedOffset > last.LastOffset
	})
	if got := n.CurrentImage().Topics().Len(); got != 2*topics {
		t.Errorf("restarted node holds %d topics, want %d", got, 2*topics)
	}
	if _, ok := n.CurrentImage().Topics().ByName("solo-0"); !ok {
		t.Error("a topic from before the snapshot is missing")
	}
}

// TestClusterWipedFollowerCatchesUpBySnapshot (KIP-630): a follower is
// stopped and its metadata log directory wiped, as a disk replaced and
// formatted again with the same ids (meta.properties stays); it restarts
// while the leader, whose log start has moved past 0, keeps committing.
// It fetches from offset 0, below the leader's log start, so it downloads
// the leader's snapshot with FetchSnapshot, installs it and follows the
// log from there; at the same offset its image is the leader's.
func TestClusterWipedFollowerCatchesUpBySnapshot(t *testing.T) {
	c := newTestClusterWith(t, 3, "krabka-test-cluster", snapshotConfig)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	for i := range 30 {
		c.submitRetrying(topicRecord("before-"+strconv.Itoa(i)), topicRecord("pre-"+strconv.Itoa(i)))
	}
	leader = c.leader()
	lead := c.node(leader)
	if _, err := lead.TriggerSnapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leader's log start to move past 0", func() bool {
		c.submitRetrying(topicRecord("push-" + strconv.FormatInt(time.Now().UnixNano(), 10)))
		return lead.eng.log.LogStartOffset() > 0
	})

	wiped := c.follower(leader)
	c.stop(wiped)
	cfg := c.cfgs[wiped-1]
	if err := os.RemoveAll(filepath.Join(cfg.MetadataLogDir, PartitionDirName)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.MetadataLogDir, "meta.properties")); err != nil {
		t.Fatalf("meta.properties: %v", err)
	}

	// Submissions go on while the wiped node restarts and catches up.
	ctx, cancel := context.WithCancel(t.Context())
	var (
		wg        sync.WaitGroup
		committed atomic.Int64
	)
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := lead.SubmitChange(sctx, []metadata.Record{topicRecord("during-" + strconv.Itoa(i))})
			scancel()
			if err == nil {
				committed.Add(1)
			}
		}
	})
	c.restart(wiped)
	node := c.node(wiped)
	waitFor(t, "the wiped node to install a snapshot and follow", func() bool {
		return node.eng.log.LogStartOffset() > 0 && node.QuorumState().AppliedOffset > 0 && committed.Load() >= 20
	})
	cancel()
	wg.Wait()

	last := c.submitRetrying(topicRecord("after"))
	c.waitApplied(last.LastOffset + 1)
	leader = c.leader()
	want, got := c.node(leader).QuorumState(), node.QuorumState()
	if got.AppliedOffset != want.AppliedOffset {
		t.Fatalf("wiped node applied up to %d, the leader up to %d", got.AppliedOffset, want.AppliedOffset)
	}
	if !sameImage(t, node.CurrentImage(), c.node(leader).CurrentImage()) {
		t.Errorf("at offset %d the wiped node's image differs from the leader's", got.AppliedOffset)
	}
	if _, ok := node.CurrentImage().Topics().ByName("before-0"); !ok {
		t.Error("the wiped node lacks a topic only the snapshot holds")
	}
	if id, ok := node.LatestSnapshot(); !ok || id.EndOffset == 0 {
		t.Errorf("the wiped node holds no snapshot (%s, %v)", id, ok)
	}
}

// stoppedFollowerBehindSnapshot starts a 3-node cluster that snapshots
// often and serves snapshots in 32-byte chunks (so a download is caught
// midway), stops a follower, and submits until the leader has compacted
// its log past everything that follower holds. It returns the cluster,
// the leader and the stopped follower.
func stoppedFollowerBehindSnapshot(t *testing.T) (*testCluster, NodeID, NodeID) {
	t.Helper()
	c := newTestClusterWith(t, 3, "krabka-test-cluster", func(cfg *Config) {
		snapshotConfig(cfg)
		cfg.FetchSnapshotMaxBytes = 32
	})
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	lagging := c.follower(leader)
	c.stop(lagging)
	for i := range 120 {
		var recs []metadata.Record
		for j := range 5 {
			recs = append(recs, topicRecord("big-"+strconv.Itoa(i)+"-"+strconv.Itoa(j)))
		}
		c.submitRetrying(recs...)
	}
	leader = c.leader()
	waitFor(t, "the leader to compact its log", func() bool {
		return c.node(leader).eng.log.LogStartOffset() > 0
	})
	return c, leader, lagging
}

// TestClusterSnapshotDownloadInterrupted (KIP-630): a follower is stopped
// in the middle of a FetchSnapshot download (the download is given up and
// its file removed; the test then puts the part back, as a killed process
// would leave it); at its restart the unfinished download is discarded,
// the follower fetches again, downloads the snapshot afresh, installs it
// and catches up to the leader's image.
func TestClusterSnapshotDownloadInterrupted(t *testing.T) {
	c, leader, lagging := stoppedFollowerBehindSnapshot(t)
	snap, ok := c.node(leader).LatestSnapshot()
	if !ok {
		t.Fatal("the leader holds no snapshot")
	}

	c.restart(lagging)
	node := c.node(lagging)
	var pos, size int64
	waitFor(t, "a snapshot download midway", func() bool {
		onEngine(t, node, func(e *engine) {
			if d := e.snap.download; d != nil {
				pos, size = d.Position(), d.Size()
			}
		})
		return pos > 0 && pos < size
	})
	c.stop(lagging)
	cfg := c.cfgs[lagging-1]
	listing, err := snapshot.List(vfs.OS(), filepath.Join(cfg.MetadataLogDir, PartitionDirName))
	if err != nil {
		t.Fatal(err)
	}
	if len(listing.Parts) != 0 || len(listing.Snapshots) != 0 {
		t.Fatalf("after stopping at %d of %d bytes of %s: parts %v, snapshots %v", pos, size, snap, listing.Parts, listing.Snapshots)
	}
	// A stop gives the download up and removes its file; a killed
	// process leaves it behind: put the part downloaded so far back.
	full, err := os.ReadFile(filepath.Join(c.cfgs[leader-1].MetadataLogDir, PartitionDirName, snapshot.FileName(kraft.OffsetAndEpoch{Offset: kraft.Offset(snap.EndOffset), Epoch: kraft.Epoch(snap.Epoch)})))
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(cfg.MetadataLogDir, PartitionDirName, snapshot.PartFileName(kraft.OffsetAndEpoch{Offset: kraft.Offset(snap.EndOffset), Epoch: kraft.Epoch(snap.Epoch)}, 7))
	if err := os.WriteFile(part, full[:pos], 0o644); err != nil {
		t.Fatal(err)
	}

	c.restart(lagging)
	last := c.submitRetrying(topicRecord("after-interruption"))
	c.waitApplied(last.LastOffset + 1)
	leader = c.leader()
	node = c.node(lagging)
	if !sameImage(t, node.CurrentImage(), c.node(leader).CurrentImage()) {
		t.Error("after the interrupted download the follower's image differs from the leader's")
	}
	if got := node.CurrentImage().Topics().Len(); got != 601 {
		t.Errorf("follower holds %d topics, want 601", got)
	}
	if start := node.eng.log.LogStartOffset(); start == 0 {
		t.Error("the follower caught up without a snapshot")
	}
	listing, err = snapshot.List(vfs.OS(), filepath.Join(cfg.MetadataLogDir, PartitionDirName))
	if err != nil {
		t.Fatal(err)
	}
	if len(listing.Parts) != 0 || len(listing.Snapshots) == 0 {
		t.Errorf("after the install: parts %v, snapshots %v", listing.Parts, listing.Snapshots)
	}
}

// TestClusterSnapshotDeletedDuringDownload (KIP-630): while a follower
// downloads the leader's snapshot, the leader takes a newer one and
// retention deletes the one being downloaded; the follower's next
// FetchSnapshot gets SNAPSHOT_NOT_FOUND, it fetches again, downloads the
// newer snapshot, installs it and catches up.
func TestClusterSnapshotDeletedDuringDownload(t *testing.T) {
	c, leader, lagging := stoppedFollowerBehindSnapshot(t)
	lead := c.node(leader)
	first, _ := lead.LatestSnapshot()

	c.restart(lagging)
	node := c.node(lagging)
	waitFor(t, "the download of the leader's snapshot midway", func() bool {
		var pos, size int64
		onEngine(t, node, func(e *engine) {
			if d := e.snap.download; d != nil && int64(d.ID().Offset) == first.EndOffset {
				pos, size = d.Position(), d.Size()
			}
		})
		return pos > 0 && pos < size/2
	})
	submit(t, lead, topicRecord("newer"))
	newer, err := lead.TriggerSnapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if newer == first {
		t.Fatal("no newer snapshot was taken")
	}
	if _, err := lead.ReadSnapshotRange(&first, 0, 1); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("the leader still serves %s: %v", first, err)
	}

	last := c.submitRetrying(topicRecord("after-deletion"))
	c.waitApplied(last.LastOffset + 1)
	leader = c.leader()
	if !sameImage(t, node.CurrentImage(), c.node(leader).CurrentImage()) {
		t.Error("the follower's image differs from the leader's")
	}
	if got := node.CurrentImage().Topics().Len(); got != 602 {
		t.Errorf("follower holds %d topics, want 602", got)
	}
	if start := node.eng.log.LogStartOffset(); start < newer.EndOffset {
		t.Errorf("the follower's log starts at %d, below the newer snapshot %s it must have installed", start, newer)
	}
}

// TestWriteSnapshotAllocationsPerImage: the snapshot writer allocates no
// objects per record: an image of 300 topics of ten partitions (3,300
// records more than one of 3 topics) costs fewer than one object more per
// 100 records (the file's batches hold over 100 records each; the old
// writer allocated about six objects per record).
func TestWriteSnapshotAllocationsPerImage(t *testing.T) {
	dir := t.TempDir()
	allocs := func(img *metadata.Image) float64 {
		unique := uint64(0)
		return testing.AllocsPerRun(3, func() {
			unique++
			id := kraft.OffsetAndEpoch{Offset: kraft.Offset(int64(unique)), Epoch: 1}
			if _, err := writeSnapshot(t.Context(), vfs.OS(), dir, id, unique, snapshot.Header{LastContainedLogTimestamp: 1}, img, time.Now().UnixMilli()); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, snapshot.FileName(id))); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(benchImage(t, 3)), allocs(benchImage(t, 300))
	if large-small >= 3300/100 {
		t.Fatalf("writeSnapshot allocated %.0f objects for 3 topics, %.0f for 300 (want fewer than 33 more)", small, large)
	}
}
