package logstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/sharedtest"
)

func TestQuorumStateKRaftExamples(t *testing.T) {
	// The two examples of FileQuorumStateStore's class comment (Kafka):
	// parsing and re-encoding gives the same bytes.
	tests := []struct {
		name string
		text string
		want QuorumStateData
	}{
		{
			name: "data_version 0",
			text: `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}`,
			want: QuorumStateData{DataVersion: 0, LeaderID: 1, LeaderEpoch: 2, VotedID: -1, CurrentVoters: []kraft.NodeID{}},
		},
		{
			name: "data_version 1",
			text: `{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}`,
			want: QuorumStateData{DataVersion: 1, LeaderID: -1, LeaderEpoch: 2, VotedID: 1, VotedDirectoryID: mustUUID(t, "J8aAPcfLQt2bqs1JT_rMgQ")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuorumState([]byte(tt.text))
			if err != nil {
				t.Fatalf("ParseQuorumState: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseQuorumState mismatch (-want +got):\n%s", diff)
			}
			enc, err := got.MarshalJSON()
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if string(enc) != tt.text {
				t.Errorf("MarshalJSON = %s, want %s", enc, tt.text)
			}
		})
	}
}

func TestQuorumStateRejects(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"garbled", `{"leaderId":`, "parse quorum state"},
		{"not an object", `[]`, "parse quorum state"},
		{"missing data_version", `{"leaderId":1,"leaderEpoch":2,"votedId":-1}`, "missing data_version"},
		{"unknown data_version", `{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":2}`, "unknown data_version 2"},
		{"negative epoch", `{"leaderId":-1,"leaderEpoch":-1,"votedId":1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`, "negative leaderEpoch"},
		{"v1 without directory id", `{"leaderId":-1,"leaderEpoch":2,"votedId":1,"data_version":1}`, "missing votedDirectoryId"},
		{"v0 without voters", `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"data_version":0}`, "missing currentVoters"},
		{"epoch overflow", `{"leaderId":-1,"leaderEpoch":4294967296,"votedId":1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`, "out of range"},
		{"bad uuid", `{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"AAAA","data_version":1}`, "parse uuid"},
		{"second line ignored but first is bad", "{\n" + `{"leaderId":1}`, "parse quorum state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQuorumState([]byte(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseQuorumState(%s) = %v, want error containing %q", tt.text, err, tt.want)
			}
		})
	}
}

func TestQuorumStateFirstLineOnly(t *testing.T) {
	text := `{"leaderId":3,"leaderEpoch":7,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}` + "\ngarbage"
	got, err := ParseQuorumState([]byte(text))
	if err != nil {
		t.Fatalf("ParseQuorumState: %v", err)
	}
	if got.LeaderID != 3 || got.LeaderEpoch != 7 {
		t.Errorf("ParseQuorumState = %+v, want leader 3 epoch 7", got)
	}
}

// sampleDirs returns every Kafka log directory in kafka-samples (a
// directory holding meta.properties), the three-node sample giving three.
func sampleDirs(t *testing.T) []string {
	t.Helper()
	root := sharedtest.Dir(t, "kafka-samples")
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == MetaPropertiesFileName {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 7 {
		t.Fatalf("found %d sample log directories, want 7: %v", len(dirs), dirs)
	}
	return dirs
}

func TestSampleFilesRoundTrip(t *testing.T) {
	for _, dir := range sampleDirs(t) {
		name := sampleName(dir)
		t.Run(name, func(t *testing.T) {
			part := filepath.Join(dir, "__cluster_metadata-0")
			qsText := readFile(t, filepath.Join(part, QuorumStateFileName))
			qs, err := ParseQuorumState(qsText)
			if err != nil {
				t.Fatalf("quorum-state: %v", err)
			}
			enc, err := qs.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(enc) != string(qsText) {
				t.Errorf("quorum-state re-encoded = %s, want Kafka's %s", enc, qsText)
			}

			mpText := readFile(t, filepath.Join(dir, MetaPropertiesFileName))
			mp, err := ParseMetaProperties(mpText)
			if err != nil {
				t.Fatalf("meta.properties: %v", err)
			}
			if mp.Version != 1 || mp.NodeID < 1 || mp.ClusterID == "" {
				t.Errorf("meta.properties = %+v, want version 1 with node and cluster ids", mp)
			}
			enc, err = mp.Encode(time.Date(2025, 1, 22, 6, 14, 12, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			mp2, err := ParseMetaProperties(enc)
			if err != nil {
				t.Fatalf("re-parse meta.properties: %v\n%s", err, enc)
			}
			if diff := cmp.Diff(mp, mp2); diff != "" {
				t.Errorf("meta.properties round trip (-want +got):\n%s", diff)
			}
			if !sameLines(enc, mpText) {
				t.Errorf("meta.properties re-encoded:\n%s\nwant the key lines of Kafka's:\n%s", enc, mpText)
			}

			epText := readFile(t, filepath.Join(part, LeaderEpochCheckpointFileName))
			entries, err := parseLeaderEpochCheckpoint(epText)
			if err != nil {
				t.Fatalf("leader-epoch-checkpoint: %v", err)
			}
			if len(entries) == 0 {
				t.Errorf("leader-epoch-checkpoint: no entries")
			}
			if got := EncodeLeaderEpochCheckpoint(entries); string(got) != string(epText) {
				t.Errorf("leader-epoch-checkpoint re-encoded = %q, want %q", got, epText)
			}

			pmText := readFile(t, filepath.Join(part, PartitionMetadataFileName))
			id, err := ParsePartitionMetadata(pmText)
			if err != nil {
				t.Fatalf("partition.metadata: %v", err)
			}
			if id != MetadataTopicID {
				t.Errorf("partition.metadata topic id = %v, want %v", id, MetadataTopicID)
			}
			if got := EncodePartitionMetadata(id); string(got) != string(pmText) {
				t.Errorf("partition.metadata re-encoded = %q, want %q", got, pmText)
			}
		})
	}
}

// sampleName names a sample log directory by its path under kafka-samples.
func sampleName(dir string) string {
	parent := filepath.Dir(dir)
	if strings.HasPrefix(filepath.Base(parent), "kafka") && filepath.Base(filepath.Dir(parent)) == "kafka-samples" {
		return filepath.Base(parent) + "/" + filepath.Base(dir)
	}
	return filepath.Base(dir)
}

// sameLines reports whether two properties files hold the same key lines
// (comment lines and order aside).
func sameLines(a, b []byte) bool {
	keys := func(d []byte) map[string]bool {
		m := map[string]bool{}
		for l := range strings.SplitSeq(string(d), "\n") {
			if l != "" && l[0] != '#' {
				m[l] = true
			}
		}
		return m
	}
	return cmp.Equal(keys(a), keys(b))
}

func TestMetaProperties(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    MetaProperties
		wantErr string
	}{
		{
			name: "kafka 3.7",
			text: "#\n#Thu Jan 01 00:00:00 UTC 2024\nnode.id=1\ndirectory.id=XHhkr4tkSsD900pOQ8pPfg\nversion=1\ncluster.id=q1w2e3r4t5y6u7i8o9p0\n",
			want: MetaProperties{Version: 1, NodeID: 1, ClusterID: "q1w2e3r4t5y6u7i8o9p0", DirectoryID: mustUUID(t, "XHhkr4tkSsD900pOQ8pPfg"), Other: map[string]string{}},
		},
		{
			name: "version 0 with broker.id and spaces",
			text: "! comment\n version : 0\nbroker.id = 7\ncluster.id=abc\\=def\n",
			want: MetaProperties{Version: 0, NodeID: 7, ClusterID: "abc=def", Other: map[string]string{}},
		},
		{
			name: "unknown keys kept",
			text: "version=1\nnode.id=2\ncluster.id=x\nfoo=bar\n",
			want: MetaProperties{Version: 1, NodeID: 2, ClusterID: "x", Other: map[string]string{"foo": "bar"}},
		},
		{name: "missing version", text: "node.id=1\ncluster.id=x\n", wantErr: "missing version"},
		{name: "version 2", text: "version=2\nnode.id=1\ncluster.id=x\n", wantErr: "unsupported version"},
		{name: "v1 missing node id", text: "version=1\ncluster.id=x\n", wantErr: "needs node.id"},
		{name: "v1 missing cluster id", text: "version=1\nnode.id=1\n", wantErr: "needs cluster.id"},
		{name: "bad node id", text: "version=1\nnode.id=-3\ncluster.id=x\n", wantErr: "is not a node id"},
		{name: "bad directory id", text: "version=1\nnode.id=1\ncluster.id=x\ndirectory.id=zz\n", wantErr: "directory.id"},
		{name: "bad utf8", text: "version=1\xff\n", wantErr: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMetaProperties([]byte(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseMetaProperties = %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMetaProperties: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseMetaProperties mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMetaPropertiesEncode(t *testing.T) {
	mp := MetaProperties{Version: 1, NodeID: 1, ClusterID: "B2B767AD-5B11-493C-A724-70595A9A0DD9", DirectoryID: mustUUID(t, "K4WGSctTSGGjZPak68seiQ")}
	got, err := mp.Encode(time.Date(2025, 10, 12, 8, 41, 53, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := "#\n#Sun Oct 12 08:41:53 UTC 2025\ncluster.id=B2B767AD-5B11-493C-A724-70595A9A0DD9\ndirectory.id=K4WGSctTSGGjZPak68seiQ\nnode.id=1\nversion=1\n"
	if string(got) != want {
		t.Errorf("Encode =\n%s\nwant\n%s", got, want)
	}
	odd := MetaProperties{Version: 1, NodeID: 1, ClusterID: "a:b c#é\U0001F600", Other: map[string]string{"k ey": "v"}}
	enc, err := odd.Encode(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseMetaProperties(enc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(odd, back); diff != "" {
		t.Errorf("escaped round trip (-want +got):\n%s\n%s", diff, enc)
	}
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	// LeaderEpochFileCache.endOffsetFor with entries {1@0, 3@10, 5@20}, LEO 30.
	c := epochCache{entries: []EpochEntry{{1, 0}, {3, 10}, {5, 20}}}
	tests := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
		wantFound bool
	}{
		{epoch: 5, wantEpoch: 5, wantEnd: 30, wantFound: true}, // latest: LEO
		{epoch: 3, wantEpoch: 3, wantEnd: 20, wantFound: true},
		{epoch: 4, wantEpoch: 3, wantEnd: 20, wantFound: true}, // unknown epoch between: floor epoch, next start
		{epoch: 2, wantEpoch: 1, wantEnd: 10, wantFound: true},
		{epoch: 1, wantEpoch: 1, wantEnd: 10, wantFound: true},
		{epoch: 0, wantEpoch: 0, wantEnd: 0, wantFound: true}, // below every epoch: first start
		{epoch: 6, wantFound: false},                          // above every epoch
		{epoch: -1, wantFound: false},
	}
	for _, tt := range tests {
		e, end, found := c.endOffsetFor(tt.epoch, 30)
		if found != tt.wantFound || (found && (e != tt.wantEpoch || end != tt.wantEnd)) {
			t.Errorf("endOffsetFor(%d) = (%d, %d, %v), want (%d, %d, %v)", tt.epoch, e, end, found, tt.wantEpoch, tt.wantEnd, tt.wantFound)
		}
	}
	var empty epochCache
	if _, _, found := empty.endOffsetFor(1, 0); found {
		t.Errorf("empty cache endOffsetFor found an answer")
	}
}

func TestEpochCacheTruncate(t *testing.T) {
	c := epochCache{entries: []EpochEntry{{1, 0}, {3, 10}, {5, 20}}}
	if !c.truncateFromEnd(15) || !cmp.Equal(c.entries, []EpochEntry{{1, 0}, {3, 10}}) {
		t.Errorf("truncateFromEnd(15) = %v", c.entries)
	}
	if c.truncateFromEnd(15) {
		t.Errorf("second truncateFromEnd(15) reported a change")
	}
	if !c.truncateFromStart(12) || !cmp.Equal(c.entries, []EpochEntry{{3, 12}}) {
		t.Errorf("truncateFromStart(12) = %v", c.entries)
	}
	if c.truncateFromStart(12) || c.truncateFromStart(5) {
		t.Errorf("truncateFromStart at or below the first entry reported a change")
	}
	if !c.assign(4, 14) || c.assign(4, 16) || !cmp.Equal(c.entries, []EpochEntry{{3, 12}, {4, 14}}) {
		t.Errorf("assign = %v", c.entries)
	}
	// A lower epoch or offset replaces non-monotonic entries.
	if !c.assign(4, 13) || !cmp.Equal(c.entries, []EpochEntry{{3, 12}, {4, 13}}) {
		t.Errorf("assign(4, 13) = %v", c.entries)
	}
}

func TestMetadataTopicID(t *testing.T) {
	if got := MetadataTopicID.String(); got != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Errorf("MetadataTopicID = %s", got)
	}
}

func mustUUID(t *testing.T, s string) kraft.UUID {
	t.Helper()
	u, err := kraft.ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
