package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// dirContents returns every file under root with its bytes, keyed by
// path relative to root.
func dirContents(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		out[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBackupAndRestore saves the snapshot of a running three-voter quorum,
// restores three fresh nodes from it, and starts them: the new quorum
// starts at the snapshot's end offset with the source's image there,
// elects a leader and commits.
func TestBackupAndRestore(t *testing.T) {
	s := newSnapshotSource(t)
	file := filepath.Join(t.TempDir(), "backup.checkpoint")
	mustSucceed(t, "metadata-quorum", "--bootstrap-controller", s.addr(0), "snapshot", "save", file)
	for _, c := range s.ctls {
		shutdown(t, c)
	}

	q := newQuorumNodes(t, 3)
	restore := []string{"storage", "restore", "--snapshot", file, "--snapshot-id", snapshotIDText(s.id), "-c"}
	r := mustSucceed(t, append(restore, q.nodes[0].props)...)
	m := regexp.MustCompile(`Generated cluster id (\S+);`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("restore printed %q, without the generated cluster id", r.stdout)
	}
	clusterID := m[1]
	if clusterID == testClusterID {
		t.Fatal("restore reused the source's cluster id")
	}
	for _, n := range q.nodes[1:] {
		mustSucceed(t, append(restore, n.props, "--cluster-id", clusterID)...)
	}
	features := map[string]int16{}
	for i, n := range q.nodes {
		for _, d := range []string{n.meta, n.data1, n.data2} {
			mp, err := logstore.ReadMetaProperties(vfs.OS(), d)
			if err != nil {
				t.Fatal(err)
			}
			if mp.ClusterID != clusterID || mp.NodeID != kraft.NodeID(i+1) || mp.DirectoryID.IsZero() {
				t.Errorf("%s: meta.properties %+v, want cluster %s and node %d", d, mp, clusterID, i+1)
			}
		}
		br, err := snapshot.Open(vfs.OS(), filepath.Join(n.meta, snapshot.BootstrapFile), snapshot.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for br.Next() {
			for _, rec := range br.Batch().Records {
				f, err := metadata.Decode(rec.Value)
				if err != nil {
					t.Fatal(err)
				}
				features[f.(*metadata.FeatureLevelRecord).Name] = f.(*metadata.FeatureLevelRecord).FeatureLevel
			}
		}
		_ = br.Close()
		restored, _ := os.ReadFile(filepath.Join(n.meta, metadataPartitionDir, snapshot.FileName(s.id)))
		saved, _ := os.ReadFile(file)
		if !bytes.Equal(restored, saved) {
			t.Errorf("node %d: the restored snapshot differs from the saved file", i+1)
		}
	}
	if features[metadata.FeatureMetadataVersion] != metadata.MaxMetadataVersion {
		t.Errorf("bootstrap.checkpoint features %v, want metadata.version %d from the snapshot", features, metadata.MaxMetadataVersion)
	}

	q.start(t)
	leader := q.ctls[q.leader]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, c := range q.ctls {
		img := c.CurrentImage()
		if got := imageRecords(t, img); !bytes.Equal(got, s.image) {
			t.Errorf("node %d: the image at %d differs from the source's at the snapshot %s", i+1, img.Offset(), s.id)
		}
		if st := c.QuorumState(); st.LogEndOffset < int64(s.id.Offset) {
			t.Errorf("node %d: log end %d, below the snapshot's end %d", i+1, st.LogEndOffset, s.id.Offset)
		}
	}
	if st := leader.QuorumState(); st.Epoch <= int32(s.id.Epoch) {
		t.Errorf("the restored quorum elected in epoch %d, not after the snapshot's %d", st.Epoch, s.id.Epoch)
	}
	for _, name := range []string{"topic-0", "topic-4"} {
		if _, ok := leader.CurrentImage().Topics().ByName(name); !ok {
			t.Errorf("the restored image lacks %s", name)
		}
	}
	if _, ok := leader.CurrentImage().Topics().ByName("topic-5"); ok {
		t.Error("the restored image holds topic-5, committed after the snapshot")
	}
	topic := metadata.NewTopicRecord()
	topic.Name, topic.TopicId[0] = "after-restore", 9
	res, err := leader.SubmitChange(ctx, []metadata.Record{topic})
	if err != nil {
		t.Fatal(err)
	}
	if res.LastOffset < int64(s.id.Offset) {
		t.Errorf("the restored quorum committed at %d, below the snapshot's end %d", res.LastOffset, s.id.Offset)
	}
	img, err := q.ctls[(q.leader+1)%3].ReadImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := img.Topics().ByName("after-restore"); !ok {
		t.Error("a follower of the restored quorum does not see the committed topic")
	}
}

// TestRestoreRefuses: a damaged snapshot, a formatted directory and a
// snapshot without its id are refused, and nothing is written.
func TestRestoreRefuses(t *testing.T) {
	s := newSnapshotSource(t)
	good, err := os.ReadFile(s.leaderSnapshotPath())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range damagedCopies(t, good) {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			writeFile(t, file, data)
			n := newTestNode(t, 1, "controller.quorum.voters=1@localhost:9093")
			mustFail(t, "--snapshot "+file+" is damaged: snapshot: ", "storage", "restore", "--snapshot", file, "--snapshot-id", snapshotIDText(s.id), "-c", n.props)
			for _, d := range []string{n.meta, n.data1, n.data2} {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("a refused restore created %s", d)
				}
			}
		})
	}

	file := filepath.Join(dir, snapshot.FileName(s.id))
	writeFile(t, file, good)
	n := newTestNode(t, 1, "controller.quorum.voters=1@localhost:9093")
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	before := dirContents(t, n.root)
	mustFail(t, "log directory "+n.data1+" is already formatted; restore writes only into unformatted directories and changed nothing",
		"storage", "restore", "--snapshot", file, "-c", n.props)
	if after := dirContents(t, n.root); len(after) != len(before) {
		t.Errorf("a refused restore changed the files from %d to %d", len(before), len(after))
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("a refused restore changed %s", k)
			}
		}
	}

	// Only the metadata directory is formatted: the data directories stay
	// empty too.
	n = newTestNode(t, 1, "controller.quorum.voters=1@localhost:9093")
	if err := os.MkdirAll(n.meta, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(n.meta, logstore.MetaPropertiesFileName), []byte("version=1\n"))
	mustFail(t, "log directory "+n.meta+" is already formatted", "storage", "restore", "--snapshot", file, "-c", n.props)
	for _, d := range []string{n.data1, n.data2} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("a refused restore created %s", d)
		}
	}

	other := filepath.Join(dir, "backup")
	writeFile(t, other, good)
	n = newTestNode(t, 1, "controller.quorum.voters=1@localhost:9093")
	mustFail(t, "the file name does not give the snapshot id; give --snapshot-id", "storage", "restore", "--snapshot", other, "-c", n.props)
	mustFail(t, "--snapshot-id \"12-x\": want OFFSET-EPOCH", "storage", "restore", "--snapshot", other, "--snapshot-id", "12-x", "-c", n.props)
	// The epoch of the id must be the epoch every batch carries.
	wrong := kraft.OffsetAndEpoch{Offset: s.id.Offset, Epoch: s.id.Epoch + 1}
	mustFail(t, "partition leader epoch", "storage", "restore", "--snapshot", other, "--snapshot-id", snapshotIDText(wrong), "-c", n.props)
	mustFail(t, "is of a static quorum", "storage", "restore", "--snapshot", file, "-c", newTestNode(t, 1, "controller.quorum.bootstrap.servers=localhost:9093").props)
	mustSucceed(t, "storage", "restore", "--snapshot", file, "-c", n.props, "--cluster-id", testClusterID)
}

// TestRestoreDynamicQuorum: the voter set of a dynamic quorum's snapshot
// (its header's VotersRecord) stays the voter set: the restored voter keeps
// the directory id its entry names and leads again at the same endpoint; a
// node the record does not list gets a new directory id; a node configured
// with controller.quorum.voters is refused.
func TestRestoreDynamicQuorum(t *testing.T) {
	src := newDynamicNodes(t, 1)[0]
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", src.props, "--standalone")
	voterDir := readMeta(t, src.meta).DirectoryID
	c := startNode(t, src.props)
	submitTopics(t, c, 0, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	img, err := c.ReadImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TriggerSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	want := imageRecords(t, img)
	dir := t.TempDir()
	r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", src.addr, "snapshot", "save", filepath.Join(dir, "backup"))
	id := regexp.MustCompile(`^Snapshot (\S+) in `).FindStringSubmatch(r.stdout)
	if id == nil {
		t.Fatalf("save printed %q", r.stdout)
	}
	shutdown(t, c)
	file := filepath.Join(dir, id[1]+snapshot.Suffix)
	if err := os.Rename(filepath.Join(dir, "backup"), file); err != nil {
		t.Fatal(err)
	}

	mustFail(t, "is of a dynamic quorum", "storage", "restore", "--snapshot", file, "-c",
		newTestNode(t, 1, "controller.quorum.voters=1@"+src.addr).props)
	observer := newTestNode(t, 2, "controller.quorum.bootstrap.servers="+src.addr)
	mustSucceed(t, "storage", "restore", "--snapshot", file, "-c", observer.props, "--cluster-id", testClusterID)
	if got := readMeta(t, observer.meta).DirectoryID; got == voterDir || got.IsZero() {
		t.Errorf("node 2, not a voter of the snapshot, restored with directory id %s (the voter's is %s)", got, voterDir)
	}

	restored := newTestNode(t, 1, "listeners=CONTROLLER://"+src.addr, "advertised.listeners=CONTROLLER://"+src.addr,
		"controller.quorum.bootstrap.servers="+src.addr, "controller.quorum.election.timeout.ms=200")
	mustSucceed(t, "storage", "restore", "--snapshot", file, "-c", restored.props, "--cluster-id", testClusterID)
	if got := readMeta(t, restored.meta).DirectoryID; got != voterDir {
		t.Errorf("the restored voter's directory id is %s, want %s from the snapshot's voter set", got, voterDir)
	}
	c = startNode(t, restored.props)
	if got := imageRecords(t, c.CurrentImage()); !bytes.Equal(got, want) {
		t.Error("the restored voter's image differs from the source's at the snapshot")
	}
	topic := metadata.NewTopicRecord()
	topic.Name, topic.TopicId[0] = "after-restore", 9
	if _, err := c.SubmitChange(ctx, []metadata.Record{topic}); err != nil {
		t.Fatal(err)
	}
}
