package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// copyDir copies the directory tree src into a fresh temporary directory
// and returns the copy.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// logEndProps writes a server.properties for node id with its metadata
// log in dir and returns its path; voters is the quorum line.
func logEndProps(t *testing.T, id int, dir, voters string) string {
	t.Helper()
	props := filepath.Join(t.TempDir(), "server.properties")
	writeFile(t, props, []byte(strings.Join([]string{"process.roles=controller", "node.id=" + itoa(id),
		"controller.listener.names=CONTROLLER", "listeners=CONTROLLER://:9093", voters,
		"metadata.log.dir=" + dir}, "\n")+"\n"))
	return props
}

// logEndJSON runs log-end --json on props and decodes the report.
func logEndJSON(t *testing.T, props string) logEnd {
	t.Helper()
	var r logEnd
	if err := json.Unmarshal([]byte(mustSucceed(t, "storage", "log-end", "-c", props, "--json").stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLogEndKafkaSamples(t *testing.T) {
	samples := samplesDir(t)
	const kafka35Voters = "controller.quorum.voters=1@kafka1:9093,2@kafka2:9093,3@kafka3:9093"
	for _, tc := range []struct {
		name, sample string
		id           int
		voters       string
	}{
		{"kafka35-node1", "kafka35-3node-static/kafka1", 1, kafka35Voters},
		{"kafka35-node2", "kafka35-3node-static/kafka2", 2, kafka35Voters},
		{"kafka35-node3", "kafka35-3node-static/kafka3", 3, kafka35Voters},
		{"kafka37", "kafka37-single-static", 1, staticVoters},
		{"kafka39", "kafka39-single-logstart", 1, staticVoters},
		{"kafka41", "kafka41-dynamic-bootstrap-nolog", 1, dynamicServers},
		{"kafka42", "kafka42-single-static", 1, staticVoters},
		// Read with the wrong node.id, the report says the node would
		// not start.
		{"kafka42-wrong-node", "kafka42-single-static", 2, "controller.quorum.voters=1@localhost:9093,2@localhost:9094"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The lock file is written into the directory, so the test
			// reads a copy.
			dir := copyDir(t, filepath.Join(samples, tc.sample))
			props := logEndProps(t, tc.id, dir, tc.voters)
			out := mustSucceed(t, "storage", "log-end", "-c", props).stdout
			checkGolden(t, "storage-log-end-"+tc.name+".txt", strings.ReplaceAll(out, dir, "DIR"))
			js := mustSucceed(t, "storage", "log-end", "-c", props, "--json").stdout
			if tc.name == "kafka41" {
				checkGolden(t, "storage-log-end-kafka41.json", strings.ReplaceAll(js, dir, "DIR"))
			}
			var r logEnd
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				t.Fatal(err)
			}
			if r.String() != out {
				t.Errorf("the JSON report prints as\n%s\nnot as the text\n%s", r.String(), out)
			}
		})
	}
}

// TestLogEndDamagedSegment: the report ends the log where recovery would,
// and says where the damage is; zeros after the last batch are not damage.
func TestLogEndDamagedSegment(t *testing.T) {
	seg := func(dir string) string { return filepath.Join(dir, "__cluster_metadata-0", "00000000000000000000.log") }
	clean := copyDir(t, filepath.Join(samplesDir(t), "kafka37-single-static"))
	data, err := os.ReadFile(seg(clean))
	if err != nil {
		t.Fatal(err)
	}
	starts := batchStarts(data, 4814)
	lastStart := starts[len(starts)-1]
	base100 := int64(binary.BigEndian.Uint64(data[starts[100]:]))
	for _, tc := range []struct {
		name    string
		damage  func(data []byte) []byte
		leo     int64
		noteHas string
	}{
		{"clean", func(d []byte) []byte { return d }, 4929, ""},
		{"zeros after the last batch", func(d []byte) []byte { return append(d, make([]byte, 4096)...) }, 4929, ""},
		{"torn last batch", func(d []byte) []byte { return d[:len(d)-3] }, 4928,
			fmt.Sprintf("damaged at byte %d (offset 4928): the file ends inside a batch", lastStart)},
		{"bad checksum in the middle", func(d []byte) []byte {
			d = append([]byte(nil), d...)
			d[starts[100]+40] ^= 0xff
			return d
		}, base100, fmt.Sprintf("damaged at byte %d (offset %d): recordbatch: crc mismatch", starts[100], base100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, clean)
			writeFile(t, seg(dir), tc.damage(data))
			r := logEndJSON(t, logEndProps(t, 1, dir, staticVoters))
			if r.LogEndOffset != tc.leo || r.LogEndEpoch != 1 {
				t.Errorf("log end %d epoch %d, want %d epoch 1", r.LogEndOffset, r.LogEndEpoch, tc.leo)
			}
			notes := strings.Join(r.Notes, "\n")
			if (tc.noteHas == "") != (notes == "") || !strings.Contains(notes, tc.noteHas) {
				t.Errorf("notes %q, want %q", notes, tc.noteHas)
			}
			after, err := os.ReadFile(seg(dir))
			if err != nil || string(after) != string(tc.damage(data)) {
				t.Errorf("log-end changed the segment (%v)", err)
			}
		})
	}
}

// startNode launches the node of props and waits until it leads.
func startNode(t *testing.T, props string) *raft.Controller {
	t.Helper()
	c := launchNode(t, props)
	deadline := time.Now().Add(20 * time.Second)
	for c.QuorumState().Role != raft.RoleLeader {
		if time.Now().After(deadline) {
			t.Fatalf("no leader after 20s: %+v", c.QuorumState())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

// submitTopics commits a metadata.version record (first) and n topics.
func submitTopics(t *testing.T, c *raft.Controller, first, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if first == 0 {
		mv := metadata.NewFeatureLevelRecord()
		mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
		if _, err := c.SubmitChange(ctx, []metadata.Record{mv}); err != nil {
			t.Fatal(err)
		}
	}
	for i := first; i < first+n; i++ {
		topic := metadata.NewTopicRecord()
		topic.Name = fmt.Sprintf("topic-%d", i)
		topic.TopicId[0], topic.TopicId[1] = 1, byte(i+1)
		submitOnce(ctx, t, c, topic)
	}
}

// submitOnce commits topic through c, retrying while leadership moves (an
// election under load). A submission that failed that way may still have
// committed, so before each retry a linearizable read tells whether it
// did.
func submitOnce(ctx context.Context, t *testing.T, c *raft.Controller, topic *metadata.TopicRecord) {
	t.Helper()
	for {
		_, err := c.SubmitChange(ctx, []metadata.Record{topic})
		if err == nil {
			return
		}
		if !errors.Is(err, raft.ErrLeaderUnknown) && !errors.Is(err, raft.ErrNotLeader) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if img, rerr := c.ReadImage(ctx); rerr == nil {
			if _, ok := img.Topics().ByName(topic.Name); ok {
				return
			}
		} else if ctx.Err() != nil {
			t.Fatalf("%v (then %v)", err, rerr)
		}
	}
}

// launchNode starts the node of props with raft's public API and stops it
// when the test ends, if the test has not (Shutdown returns the same result
// when called again).
func launchNode(t *testing.T, props string) *raft.Controller {
	t.Helper()
	return launchNodeLogging(t, props, nil)
}

// launchNodeLogging is launchNode with the node's log lines written as
// text to logs (nil: the default logger).
func launchNodeLogging(t *testing.T, props string, logs io.Writer) *raft.Controller {
	t.Helper()
	cfg, _, err := raft.LoadConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	c, err := raft.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Shutdown(ctx)
	})
	return c
}

func shutdown(t *testing.T, c *raft.Controller) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLogEndOfAStoppedStaticNode runs a one-voter static quorum, writes
// records, takes a snapshot, writes more and stops it: log-end reports what
// the node last reported about itself.
func TestLogEndOfAStoppedStaticNode(t *testing.T) {
	n, port := newFormattedVoter(t)
	c := startNode(t, n.props)
	submitTopics(t, c, 0, 5)
	snap, err := c.TriggerSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	submitTopics(t, c, 5, 5)
	mustFail(t, "metadata log directory "+n.meta+" is locked: a node is running on it; stop it first", "storage", "log-end", "-c", n.props)
	shutdown(t, c)
	qs := c.QuorumState()

	r := logEndJSON(t, n.props)
	if r.LogEndOffset != qs.LogEndOffset || r.LogEndEpoch != qs.Epoch || r.QuorumState == nil ||
		r.QuorumState.LeaderEpoch != qs.Epoch || r.QuorumState.LeaderID != 1 {
		t.Errorf("log end %d epoch %d, quorum state %+v; the node reported %+v", r.LogEndOffset, r.LogEndEpoch, r.QuorumState, qs)
	}
	if r.NewestSnapshot == nil || r.NewestSnapshot.EndOffset != snap.EndOffset || r.NewestSnapshot.Epoch != snap.Epoch ||
		r.CommittedOffset != snap.EndOffset || r.CommittedFrom != committedFromSnapshot {
		t.Errorf("snapshot %+v committed %d from %s, want %v", r.NewestSnapshot, r.CommittedOffset, r.CommittedFrom, snap)
	}
	// The node starts its log at the snapshot, the oldest one at or above
	// its first segment.
	if r.LogStartOffset != snap.EndOffset || r.NodeID != 1 || r.ClusterID != testClusterID || r.DirectoryID != readMeta(t, n.meta).DirectoryID.String() {
		t.Errorf("report %+v", r)
	}
	want := voterSet{Source: votersFromConfig, Voters: []voter{{ID: 1, Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", port)}}}}
	if fmt.Sprint(r.Voters) != fmt.Sprint(want) || len(r.Notes) != 0 {
		t.Errorf("voters %+v notes %q, want %+v and no notes", r.Voters, r.Notes, want)
	}
	// The text has the same facts.
	text := mustSucceed(t, "storage", "log-end", "-c", n.props).stdout
	if text != r.String() {
		t.Errorf("text\n%s\nJSON as text\n%s", text, r.String())
	}
	for _, line := range []string{
		fmt.Sprintf("LogEndOffset:           %d\n", qs.LogEndOffset),
		fmt.Sprintf("NewestSnapshot:         %d-%d\n", snap.EndOffset, snap.Epoch),
		fmt.Sprintf("Voter:                  1 127.0.0.1:%d\n", port),
	} {
		if !strings.Contains(text, line) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}
}

// TestLogEndOfADynamicNode: formatted --standalone, the voter set is the
// bootstrap snapshot's; once the node has led, it is the VotersRecord its
// first leadership copied into the log.
func TestLogEndOfADynamicNode(t *testing.T) {
	node := newDynamicNodes(t, 1)[0]
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", node.props, "--standalone")
	dirID := readMeta(t, node.meta).DirectoryID.String()
	wantVoter := voter{ID: 1, DirectoryID: dirID, Endpoints: []string{"CONTROLLER://" + node.addr}}

	r := logEndJSON(t, node.props)
	if !r.Voters.Dynamic || r.Voters.Source != votersFromBootstrap || fmt.Sprint(r.Voters.Voters) != fmt.Sprint([]voter{wantVoter}) {
		t.Errorf("before the first start: voters %+v, want %+v from the bootstrap snapshot", r.Voters, wantVoter)
	}
	if r.LogEndOffset != 0 || r.QuorumState != nil || r.NewestSnapshot != nil || r.CommittedFrom != committedFromNothing {
		t.Errorf("before the first start: %+v", r)
	}
	if !strings.Contains(r.String(), "VoterSet:               dynamic, from bootstrap snapshot\n") {
		t.Errorf("text:\n%s", r.String())
	}

	c := startNode(t, node.props)
	submitTopics(t, c, 0, 3)
	shutdown(t, c)
	r = logEndJSON(t, node.props)
	if !r.Voters.Dynamic || r.Voters.Source != votersFromLog || r.Voters.Offset == nil || *r.Voters.Offset >= r.LogEndOffset ||
		fmt.Sprint(r.Voters.Voters) != fmt.Sprint([]voter{wantVoter}) {
		t.Errorf("after leading: voters %+v, want %+v from the log", r.Voters, wantVoter)
	}
	if r.LogEndOffset != c.QuorumState().LogEndOffset {
		t.Errorf("log end %d, the node reported %+v", r.LogEndOffset, c.QuorumState())
	}
	if !strings.Contains(r.String(), fmt.Sprintf("VoterSet:               dynamic, from the VotersRecord at log offset %d\n", *r.Voters.Offset)) {
		t.Errorf("text:\n%s", r.String())
	}
}

func TestLogEndErrors(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	mustFail(t, `required flag(s) "config" not set`, "storage", "log-end")
	mustFail(t, "metadata log directory "+n.meta+": stat "+n.meta+": no such file or directory", "storage", "log-end", "-c", n.props)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	lock, err := logstore.LockDir(vfs.OS(), n.meta)
	if err != nil {
		t.Fatal(err)
	}
	mustFail(t, "metadata log directory "+n.meta+" is locked: a node is running on it; stop it first, log-end reads a stopped node", "storage", "log-end", "-c", n.props)
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	// A formatted node that never ran: an empty log, nothing committed.
	r := logEndJSON(t, n.props)
	if r.LogStartOffset != 0 || r.LogEndOffset != 0 || r.LogEndEpoch != 0 || r.QuorumState != nil || r.NewestSnapshot != nil || len(r.Notes) != 0 {
		t.Errorf("fresh node: %+v", r)
	}
}

// TestLogEndChoosesTheSurvivor runs a three-voter static quorum, stops one
// follower, writes more with the other two and stops them: each node's
// log-end matches what it reported when it stopped, and comparing the log
// ends (epoch, then offset) ranks the follower stopped early last.
func TestLogEndChoosesTheSurvivor(t *testing.T) {
	nodes, ctls, _, leader := startStaticQuorum(t, 3)
	early := stopBehind(t, ctls, leader, 3, 5)
	var reports []logEnd
	for i, n := range nodes {
		r := logEndJSON(t, n.props)
		qs := ctls[i].QuorumState()
		if r.LogEndOffset != qs.LogEndOffset || r.NodeID != int32(i+1) || len(r.Voters.Voters) != 3 || r.Voters.Dynamic {
			t.Errorf("node %d: log end %d, voters %+v; it reported %+v", i+1, r.LogEndOffset, r.Voters, qs)
		}
		reports = append(reports, r)
	}
	ahead := func(a, b logEnd) bool {
		return a.LogEndEpoch > b.LogEndEpoch || a.LogEndEpoch == b.LogEndEpoch && a.LogEndOffset > b.LogEndOffset
	}
	for i := range reports {
		if i != early && !ahead(reports[i], reports[early]) {
			t.Errorf("node %d (%d, epoch %d) is not ahead of node %d stopped early (%d, epoch %d)", i+1,
				reports[i].LogEndOffset, reports[i].LogEndEpoch, early+1, reports[early].LogEndOffset, reports[early].LogEndEpoch)
		}
	}
}

// TestLogEndLogBehindTheSnapshot: a log that ends before the newest
// snapshot is restarted at the snapshot, so the snapshot is the log end.
func TestLogEndLogBehindTheSnapshot(t *testing.T) {
	dir := copyDir(t, filepath.Join(samplesDir(t), "kafka39-single-logstart"))
	seg := filepath.Join(dir, "__cluster_metadata-0", "00000000000000128356.log")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	starts := batchStarts(data, 1001)
	cut := int64(binary.BigEndian.Uint64(data[starts[1000]:]))
	writeFile(t, seg, data[:starts[1000]])
	r := logEndJSON(t, logEndProps(t, 1, dir, staticVoters))
	if r.LogStartOffset != 149809 || r.LogEndOffset != 149809 || r.LogEndEpoch != 21 {
		t.Errorf("log %d..%d epoch %d, want the snapshot 149809-21", r.LogStartOffset, r.LogEndOffset, r.LogEndEpoch)
	}
	want := fmt.Sprintf("the log segments hold offsets from 128356 up to %d, which do not reach the newest snapshot 149809-21: the node restarts its log at the snapshot", cut)
	if len(r.Notes) != 1 || r.Notes[0] != want {
		t.Errorf("notes %q, want %q", r.Notes, want)
	}
}

// TestLogEndSkipsADamagedSnapshot: the newest snapshot that does not read
// back whole is skipped, as the node skips it, and the next one counts.
func TestLogEndSkipsADamagedSnapshot(t *testing.T) {
	dir := copyDir(t, filepath.Join(samplesDir(t), "kafka39-single-logstart"))
	newest := filepath.Join(dir, "__cluster_metadata-0", "00000000000000149809-0000000021.checkpoint")
	data, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	writeFile(t, newest, data)
	r := logEndJSON(t, logEndProps(t, 1, dir, staticVoters))
	if r.NewestSnapshot == nil || *r.NewestSnapshot != (snapshotID{EndOffset: 142667, Epoch: 21}) || r.CommittedOffset != 142667 {
		t.Errorf("newest snapshot %+v, committed %d; want 142667-21", r.NewestSnapshot, r.CommittedOffset)
	}
	if r.LogEndOffset != 149995 || len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], "snapshot 149809-21 is skipped: ") {
		t.Errorf("log end %d, notes %q", r.LogEndOffset, r.Notes)
	}
}
