package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

func TestRandomUUID(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		r := mustSucceed(t, "storage", "random-uuid")
		s := strings.TrimSuffix(r.stdout, "\n")
		if len(s) != 22 || strings.HasPrefix(s, "-") || strings.Contains(s, "\n") {
			t.Fatalf("random-uuid printed %q", r.stdout)
		}
		u, err := kraft.ParseUUID(s)
		if err != nil {
			t.Fatal(err)
		}
		if u.IsZero() || u == logstore.MetadataTopicID {
			t.Fatalf("reserved uuid %s", s)
		}
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("%s is not a version 4 UUID", s)
		}
		if seen[s] {
			t.Fatalf("%s drawn twice", s)
		}
		seen[s] = true
	}
	mustFail(t, "unknown command", "storage", "random-uuid", "extra")
}

// testNode is a node's directory layout for format tests.
type testNode struct {
	root, meta, data1, data2, props string
}

// newTestNode writes a server.properties for a controller with node id
// id into a fresh directory; extra lines are appended.
func newTestNode(t *testing.T, id int, extra ...string) testNode {
	t.Helper()
	root := t.TempDir()
	n := testNode{root: root, meta: filepath.Join(root, "meta"), data1: filepath.Join(root, "data1"),
		data2: filepath.Join(root, "data2"), props: filepath.Join(root, "server.properties")}
	lines := []string{
		"process.roles=controller",
		fmt.Sprintf("node.id=%d", id),
		"controller.listener.names=CONTROLLER",
		"listeners=CONTROLLER://:9093",
		"advertised.listeners=CONTROLLER://localhost:9093",
		"metadata.log.dir=" + n.meta,
		"log.dirs=" + n.data2 + "," + n.data1,
	}
	lines = append(lines, extra...)
	if err := os.WriteFile(n.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

const (
	staticVoters   = "controller.quorum.voters=1@localhost:9093"
	dynamicServers = "controller.quorum.bootstrap.servers=localhost:9093"
	testClusterID  = "MkU3OEVBNTcwNTJENDM2Qk"
)

// readBootstrapFeatures opens dir/bootstrap.checkpoint and returns its
// feature levels in order as name=level.
func readBootstrapFeatures(t *testing.T, dir string) []string {
	t.Helper()
	r, err := snapshot.Open(vfs.OS(), filepath.Join(dir, snapshot.BootstrapFile), snapshot.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Header(); h.LastContainedLogTimestamp != 0 || h.KRaftVersion != 0 || h.Voters != nil {
		t.Errorf("bootstrap.checkpoint header %+v, want timestamp 0 and no kraft.version records", h)
	}
	var out []string
	for r.Next() {
		for _, rec := range r.Batch().Records {
			m, err := metadata.Decode(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			fl, ok := m.(*metadata.FeatureLevelRecord)
			if !ok {
				t.Fatalf("bootstrap record %T, want FeatureLevelRecord", m)
			}
			out = append(out, fmt.Sprintf("%s=%d", fl.Name, fl.FeatureLevel))
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readMeta(t *testing.T, dir string) logstore.MetaProperties {
	t.Helper()
	mp, err := logstore.ReadMetaProperties(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return mp
}

func bootstrapSnapshotPath(dir string) string {
	return filepath.Join(dir, metadataPartitionDir, snapshot.FileName(snapshot.Bootstrap))
}

var release43Features = []string{
	"metadata.version=30", "eligible.leader.replicas.version=1", "group.version=1",
	"share.version=1", "streams.version=1", "transaction.version=2",
}

func TestFormatStaticQuorum(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	r := mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	want := fmt.Sprintf("Formatting data directory %s with metadata.version 4.3-IV0.\n"+
		"Formatting data directory %s with metadata.version 4.3-IV0.\n"+
		"Formatting metadata directory %s with metadata.version 4.3-IV0.\n", n.data1, n.data2, n.meta)
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	ids := map[kraft.UUID]bool{}
	for _, d := range []string{n.meta, n.data1, n.data2} {
		if got := readBootstrapFeatures(t, d); !reflect.DeepEqual(got, release43Features) {
			t.Errorf("%s: bootstrap features %v, want %v", d, got, release43Features)
		}
		mp := readMeta(t, d)
		if mp.Version != 1 || mp.ClusterID != testClusterID || mp.NodeID != 1 || mp.DirectoryID.IsZero() {
			t.Errorf("%s: meta.properties %+v", d, mp)
		}
		ids[mp.DirectoryID] = true
	}
	if len(ids) != 3 {
		t.Errorf("directory ids are not distinct: %v", ids)
	}
	if _, err := os.Stat(bootstrapSnapshotPath(n.meta)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("static quorum got a bootstrap snapshot: %v", err)
	}
}

func TestFormatStandaloneMatchesKafka(t *testing.T) {
	n := newTestNode(t, 1, dynamicServers)
	r := mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "--standalone")
	if !strings.Contains(r.stdout, "Formatting dynamic metadata voter directory "+n.meta+" with metadata.version 4.3-IV0.\n") {
		t.Errorf("stdout %q", r.stdout)
	}
	mp := readMeta(t, n.meta)
	got := readBootstrapSnapshot(t, bootstrapSnapshotPath(n.meta))
	if got.Voters == nil || len(got.Voters.Voters) != 1 {
		t.Fatalf("voters %+v", got.Voters)
	}
	if got.Voters.Voters[0].VoterDirectoryId != mp.DirectoryID {
		t.Errorf("voter directory id %v, meta.properties directory.id %v", got.Voters.Voters[0].VoterDirectoryId, mp.DirectoryID)
	}
	// Kafka 4.1 formatted its sample the same way (node 1, CONTROLLER
	// listener at localhost:9093): only the directory id and the time
	// may differ, and the files have the same size.
	sample := filepath.Join(sharedtest.Dir(t, "kafka-samples"), "kafka41-dynamic-bootstrap-nolog")
	want := readBootstrapSnapshot(t, bootstrapSnapshotPath(sample))
	want.Voters.Voters[0].VoterDirectoryId = mp.DirectoryID
	want.LastContainedLogTimestamp = got.LastContainedLogTimestamp
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bootstrap snapshot header\n got %+v\nwant %+v", got, want)
	}
	fiGot, err := os.Stat(bootstrapSnapshotPath(n.meta))
	if err != nil {
		t.Fatal(err)
	}
	fiWant, err := os.Stat(bootstrapSnapshotPath(sample))
	if err != nil {
		t.Fatal(err)
	}
	if fiGot.Size() != fiWant.Size() {
		t.Errorf("bootstrap snapshot of %d bytes, Kafka's has %d", fiGot.Size(), fiWant.Size())
	}
	// The dump of both files has the same structure line by line.
	ours := maskDump(mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--files", bootstrapSnapshotPath(n.meta)).stdout, n.meta)
	kafka := maskDump(mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--files", bootstrapSnapshotPath(sample)).stdout, sample)
	if ours != kafka {
		t.Errorf("dump of our bootstrap snapshot:\n%s\nKafka's:\n%s", ours, kafka)
	}
}

// maskDump replaces what legitimately differs between two bootstrap
// snapshots in a dump: the directory, times, checksums and directory ids.
func maskDump(s, dir string) string {
	s = strings.ReplaceAll(s, dir, "DIR")
	var out []string
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		for i := range f {
			if i > 0 && (f[i-1] == "CreateTime:" || f[i-1] == "crc:") {
				f[i] = "X"
			}
		}
		line = strings.Join(f, " ")
		if i := strings.Index(line, `"lastContainedLogTimestamp":`); i >= 0 {
			line = line[:i] + `"lastContainedLogTimestamp":X}`
		}
		if i := strings.Index(line, `"voterDirectoryId":"`); i >= 0 {
			j := i + len(`"voterDirectoryId":"`)
			line = line[:j] + "X" + line[j+22:]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func readBootstrapSnapshot(t *testing.T, path string) snapshot.Header {
	t.Helper()
	r, err := snapshot.Open(vfs.OS(), path, snapshot.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Records() != 0 {
		t.Errorf("%s: %d metadata records, want none", path, r.Records())
	}
	return r.Header()
}

func TestFormatInitialControllers(t *testing.T) {
	ids := []string{"K4WGSctTSGGjZPak68seiQ", "J8aAPcfLQt2bqs1JT_rMgQ", "3Db5QLSqSZieL3rJBUUegA"}
	list := "1@host-1:9093:" + ids[0] + ",2@[::1]:9094:" + ids[1] + ",3@host-3:9095:" + ids[2]
	want := &control.VotersRecord{}
	for i, hp := range [][2]any{{"host-1", 9093}, {"::1", 9094}, {"host-3", 9095}} {
		u, _ := kraft.ParseUUID(ids[i])
		want.Voters = append(want.Voters, control.VotersRecordVoter{
			VoterId: int32(i + 1), VoterDirectoryId: u,
			Endpoints:           []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: hp[0].(string), Port: uint16(hp[1].(int))}},
			KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MaxSupportedVersion: 1},
		})
	}

	t.Run("a listed voter takes its directory id", func(t *testing.T) {
		n := newTestNode(t, 2, dynamicServers)
		r := mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "--initial-controllers", list)
		if !strings.Contains(r.stdout, "Formatting dynamic metadata voter directory "+n.meta) {
			t.Errorf("stdout %q", r.stdout)
		}
		if got := readMeta(t, n.meta).DirectoryID.String(); got != ids[1] {
			t.Errorf("metadata directory id %s, want %s", got, ids[1])
		}
		if got := readMeta(t, n.data1).DirectoryID.String(); got == ids[1] {
			t.Errorf("data directory took the voter's directory id")
		}
		h := readBootstrapSnapshot(t, bootstrapSnapshotPath(n.meta))
		if h.KRaftVersion != 1 || !reflect.DeepEqual(h.Voters, want) {
			t.Errorf("header %+v voters %+v, want %+v", h, h.Voters, want)
		}
	})
	t.Run("a node outside the list gets the snapshot and a random id", func(t *testing.T) {
		n := newTestNode(t, 4, dynamicServers)
		r := mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "-I", list)
		if !strings.Contains(r.stdout, "Formatting dynamic metadata directory "+n.meta) {
			t.Errorf("stdout %q", r.stdout)
		}
		got := readMeta(t, n.meta).DirectoryID.String()
		for _, id := range ids {
			if got == id {
				t.Errorf("non-voter took voter directory id %s", id)
			}
		}
		if h := readBootstrapSnapshot(t, bootstrapSnapshotPath(n.meta)); !reflect.DeepEqual(h.Voters, want) {
			t.Errorf("voters %+v", h.Voters)
		}
	})
}

func TestFormatNoInitialControllers(t *testing.T) {
	n := newTestNode(t, 5, dynamicServers)
	r := mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "--no-initial-controllers", "--release-version", "3.9")
	if !strings.Contains(r.stdout, "Formatting metadata directory "+n.meta+" with metadata.version 3.9-IV0.\n") {
		t.Errorf("stdout %q", r.stdout)
	}
	if _, err := os.Stat(bootstrapSnapshotPath(n.meta)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--no-initial-controllers wrote a bootstrap snapshot: %v", err)
	}
	if got := readBootstrapFeatures(t, n.meta); !reflect.DeepEqual(got, []string{"metadata.version=21"}) {
		t.Errorf("features %v", got)
	}
}

func TestFormatFeatures(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"release 4.1", []string{"-r", "4.1"}, []string{"metadata.version=27", "eligible.leader.replicas.version=1", "group.version=1", "transaction.version=2"}},
		{"release 3.7-IV4", []string{"--release-version", "3.7-IV4"}, []string{"metadata.version=19"}},
		// streams.version 1 comes with 4.2-IV1 (StreamsVersion.SV_1).
		{"release 4.2-IV0", []string{"-r", "4.2-IV0"}, []string{"metadata.version=28", "eligible.leader.replicas.version=1", "group.version=1", "share.version=1", "transaction.version=2"}},
		{"release 4.2", []string{"-r", "4.2"}, []string{"metadata.version=29", "eligible.leader.replicas.version=1", "group.version=1", "share.version=1", "streams.version=1", "transaction.version=2"}},
		{"explicit metadata.version", []string{"-f", "metadata.version=22"}, []string{"metadata.version=22", "group.version=1"}},
		{"feature turned off and down", []string{"-f", "group.version=0", "--feature", "transaction.version=1"},
			[]string{"metadata.version=30", "eligible.leader.replicas.version=1", "share.version=1", "streams.version=1", "transaction.version=1"}},
		{"kraft.version is never written", []string{"-f", "kraft.version=0", "-r", "3.9"}, []string{"metadata.version=21"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t, 1, staticVoters)
			mustSucceed(t, append([]string{"storage", "format", "-t", testClusterID, "-c", n.props}, tc.args...)...)
			if got := readBootstrapFeatures(t, n.meta); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("features %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFormatWithUnstableFeatureVersions checks that format reads
// unstable.feature.versions.enable from the configuration: accepted, and,
// with this release's rows, where every known level is a production
// one, formatting the same records as without it.
func TestFormatWithUnstableFeatureVersions(t *testing.T) {
	var got [][]string
	for _, v := range []string{"false", "true"} {
		n := newTestNode(t, 1, staticVoters, "unstable.feature.versions.enable="+v)
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
		got = append(got, readBootstrapFeatures(t, n.meta))
		mustFail(t, "--feature transaction.version=3: supported levels are 0 to 2", "storage", "format", "-t", testClusterID, "-c", n.props, "--ignore-formatted", "-f", "transaction.version=3")
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Errorf("records without unstable feature versions %v, with %v", got[0], got[1])
	}
}

func TestFormatRefusesFormattedDirectory(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	before, err := os.ReadFile(filepath.Join(n.meta, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	mustFail(t, "Log directory "+n.data1+" is already formatted. Use --ignore-formatted to ignore this directory and format the others.",
		"storage", "format", "-t", "J8aAPcfLQt2bqs1JT_rMgQ", "-c", n.props)
	r := mustSucceed(t, "storage", "format", "-t", "J8aAPcfLQt2bqs1JT_rMgQ", "-c", n.props, "--ignore-formatted")
	if r.stdout != "All of the log directories are already formatted.\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	after, err := os.ReadFile(filepath.Join(n.meta, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("meta.properties changed")
	}
	// A new directory is formatted, the others are skipped.
	if err := os.RemoveAll(n.data2); err != nil {
		t.Fatal(err)
	}
	r = mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "-g")
	if r.stdout != "Formatting data directory "+n.data2+" with metadata.version 4.3-IV0.\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestFormatBadInputs(t *testing.T) {
	static := newTestNode(t, 1, staticVoters)
	dynamic := newTestNode(t, 1, dynamicServers)
	base := func(n testNode, extra ...string) []string {
		return append([]string{"storage", "format", "-t", testClusterID, "-c", n.props}, extra...)
	}
	for _, tc := range []struct {
		name string
		want string
		args []string
	}{
		{"missing flags", `required flag(s) "cluster-id", "config" not set`, []string{"storage", "format"}},
		{"20-character cluster id", `cluster id "q1w2e3r4t5y6u7i8o9p0" is not a valid Kafka Uuid`, []string{"storage", "format", "-t", "q1w2e3r4t5y6u7i8o9p0", "-c", static.props}},
		{"textual UUID cluster id", "is not a valid Kafka Uuid", []string{"storage", "format", "-t", "B2B767AD-5B11-493C-A724-70595A9A0DD9", "-c", static.props}},
		{"zero cluster id", "is a reserved Uuid", []string{"storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", static.props}},
		{"metadata topic id", "is a reserved Uuid", []string{"storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAQ", "-c", static.props}},
		{"missing config", "no-such.properties", []string{"storage", "format", "-t", testClusterID, "-c", filepath.Join(static.root, "no-such.properties")}},
		{"dynamic without a mode", "Because controller.quorum.voters is not set on this controller, you must specify one of the following: --standalone, --initial-controllers, or --no-initial-controllers.", base(dynamic)},
		{"two modes", "cannot be used together", base(dynamic, "--standalone", "--no-initial-controllers")},
		{"static with a mode", "controller.quorum.voters is set", base(static, "--standalone")},
		{"unknown feature", "--feature foo.version: unknown feature; supported features are eligible.leader.replicas.version, group.version, kraft.version, metadata.version, share.version, streams.version, transaction.version", base(static, "-f", "foo.version=1")},
		{"feature without level", `--feature "group.version": want NAME=LEVEL`, base(static, "-f", "group.version")},
		{"feature level too high", "--feature group.version=2: supported levels are 0 to 1", base(static, "-f", "group.version=2")},
		{"feature twice", "--feature group.version is given more than once", base(static, "-f", "group.version=1", "-f", "group.version=0")},
		{"a level whose metadata.version is too old", "--feature: eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 24",
			base(static, "-r", "4.0-IV0", "-f", "eligible.leader.replicas.version=1")},
		{"share groups before 4.1-IV1", "--feature: share.version could not be set to 1 because it depends on metadata.version level 27",
			base(static, "-r", "4.1-IV0", "-f", "share.version=1")},
		{"release and metadata.version", "--release-version and --feature metadata.version cannot be used together", base(static, "-r", "3.9", "-f", "metadata.version=21")},
		{"unknown release", `unknown release version "2.8"`, base(static, "-r", "2.8")},
		{"metadata.version too old", "supported levels are 7 (3.3-IV3) to 30 (4.3-IV0)", base(static, "-f", "metadata.version=6")},
		{"kraft.version 0 on a dynamic quorum", "kraft.version=0 cannot be used with a dynamic quorum", base(dynamic, "--standalone", "-f", "kraft.version=0")},
		{"kraft.version 1 on a static quorum", "kraft.version=1 needs a dynamic quorum", base(static, "-f", "kraft.version=1")},
		{"initial controller without @", `entry "1localhost:9093:K4WGSctTSGGjZPak68seiQ": want ID@HOST:PORT:DIRECTORY_ID`, base(dynamic, "-I", "1localhost:9093:K4WGSctTSGGjZPak68seiQ")},
		{"initial controller bad id", `node id "x" is not a non-negative integer`, base(dynamic, "-I", "x@localhost:9093:K4WGSctTSGGjZPak68seiQ")},
		{"initial controller bad port", `port "99999" is not a number from 1 to 65535`, base(dynamic, "-I", "1@localhost:99999:K4WGSctTSGGjZPak68seiQ")},
		{"initial controller bad directory id", `directory id "short" is not a Kafka Uuid`, base(dynamic, "-I", "1@localhost:9093:short")},
		{"initial controller unclosed bracket", "IPv6 host without closing bracket", base(dynamic, "-I", "1@[::1:9093:K4WGSctTSGGjZPak68seiQ")},
		{"initial controller duplicate id", "node id 1 is listed twice", base(dynamic, "-I", "1@a:9093:K4WGSctTSGGjZPak68seiQ,1@b:9093:J8aAPcfLQt2bqs1JT_rMgQ")},
		{"initial controller duplicate directory", "is listed twice", base(dynamic, "-I", "1@a:9093:K4WGSctTSGGjZPak68seiQ,2@b:9093:K4WGSctTSGGjZPak68seiQ")},
		{"unexpected argument", "unknown command", append(base(static), "extra")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustFail(t, tc.want, tc.args...)
		})
	}
	for _, n := range []testNode{static, dynamic} {
		for _, d := range []string{n.meta, n.data1, n.data2} {
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed format created %s", d)
			}
		}
	}
}

func TestFormatAfterAnInterruptedFormat(t *testing.T) {
	n := newTestNode(t, 1, dynamicServers)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "--standalone")
	// meta.properties is written last, so a format that stopped before it
	// leaves directories that count as unformatted and are formatted again.
	for _, d := range []string{n.meta, n.data1} {
		if err := os.Remove(filepath.Join(d, "meta.properties")); err != nil {
			t.Fatal(err)
		}
	}
	r := mustSucceed(t, "storage", "format", "-t", "J8aAPcfLQt2bqs1JT_rMgQ", "-c", n.props, "--standalone", "--ignore-formatted", "-r", "4.2")
	want := "Formatting data directory " + n.data1 + " with metadata.version 4.2-IV1.\n" +
		"Formatting dynamic metadata voter directory " + n.meta + " with metadata.version 4.2-IV1.\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	mp := readMeta(t, n.meta)
	if mp.ClusterID != "J8aAPcfLQt2bqs1JT_rMgQ" {
		t.Errorf("cluster id %s", mp.ClusterID)
	}
	if h := readBootstrapSnapshot(t, bootstrapSnapshotPath(n.meta)); h.Voters.Voters[0].VoterDirectoryId != mp.DirectoryID {
		t.Errorf("bootstrap snapshot voter %v, directory.id %v", h.Voters.Voters[0].VoterDirectoryId, mp.DirectoryID)
	}
	if got := readBootstrapFeatures(t, n.meta); got[0] != "metadata.version=29" {
		t.Errorf("features %v", got)
	}
	entries, err := os.ReadDir(filepath.Join(n.meta, metadataPartitionDir))
	if err != nil || len(entries) != 1 {
		t.Errorf("partition directory holds %v (%v), want the bootstrap snapshot only", entries, err)
	}
}

func TestFormatUnwritableDirectory(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	if err := os.WriteFile(n.data1, []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "check log directory "+n.data1+": stat "+n.data1+"/meta.properties: not a directory", "storage", "format", "-t", testClusterID, "-c", n.props)
}

// TestFormatBootstrapCheckpointMatchesKafka formats at the release of each
// sample and compares the dump of our bootstrap.checkpoint with the dump
// of Kafka's: the same batches, sizes and records, only times and
// checksums differ.
func TestFormatBootstrapCheckpointMatchesKafka(t *testing.T) {
	samples := samplesDir(t)
	for _, tc := range []struct{ release, sample string }{
		{"3.7", "kafka37-single-static"},
		{"3.9", "kafka39-single-logstart"},
		{"4.1", "kafka41-dynamic-bootstrap-nolog"},
		{"4.2", "kafka42-single-static"},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			n := newTestNode(t, 1, staticVoters)
			mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props, "-r", tc.release)
			ours := maskDump(mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--files", filepath.Join(n.meta, snapshot.BootstrapFile)).stdout, n.meta)
			kafkaDir := filepath.Join(samples, tc.sample)
			kafka := maskDump(mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--files", filepath.Join(kafkaDir, snapshot.BootstrapFile)).stdout, kafkaDir)
			if ours != kafka {
				t.Errorf("our bootstrap.checkpoint:\n%s\nKafka's:\n%s", ours, kafka)
			}
		})
	}
}

// TestReleaseNamesCoverTheFeatureRows checks that every metadata.version
// the feature rows support, unstable ones included, has a release name
// for --release-version.
func TestReleaseNamesCoverTheFeatureRows(t *testing.T) {
	if _, hi := knownFeatures.MetadataVersions(true); int(hi) >= len(metadataVersions) {
		t.Errorf("metadata.version %d has no release name (names end at %d)", hi, len(metadataVersions)-1)
	}
}
