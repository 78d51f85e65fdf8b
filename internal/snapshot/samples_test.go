package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/vfs"
)

// sampleCounts are, per snapshot file of kafka-samples, the number of
// records including the control records (as kafka-samples/README.md and
// the recordbatch sample test count them), the number of control records,
// and whether the header carries kraft.version 1 with a voter set.
var sampleCounts = map[string]struct {
	all, control int
	kraft        bool
}{
	"kafka35-3node-static/kafka1/__cluster_metadata-0/00000000000000028869-0000000189.checkpoint":     {72, 2, false},
	"kafka35-3node-static/kafka2/__cluster_metadata-0/00000000000000028869-0000000189.checkpoint":     {72, 2, false},
	"kafka35-3node-static/kafka3/__cluster_metadata-0/00000000000000028870-0000000189.checkpoint":     {72, 2, false},
	"kafka35-3node-static/kafka1/bootstrap.checkpoint":                                                {3, 2, false},
	"kafka35-3node-static/kafka2/bootstrap.checkpoint":                                                {3, 2, false},
	"kafka35-3node-static/kafka3/bootstrap.checkpoint":                                                {3, 2, false},
	"kafka37-single-static/bootstrap.checkpoint":                                                      {3, 2, false},
	"kafka39-single-logstart/__cluster_metadata-0/00000000000000128356-0000000020.checkpoint":         {62, 2, false},
	"kafka39-single-logstart/__cluster_metadata-0/00000000000000135517-0000000021.checkpoint":         {62, 2, false},
	"kafka39-single-logstart/__cluster_metadata-0/00000000000000142667-0000000021.checkpoint":         {62, 2, false},
	"kafka39-single-logstart/__cluster_metadata-0/00000000000000149809-0000000021.checkpoint":         {62, 2, false},
	"kafka39-single-logstart/bootstrap.checkpoint":                                                    {3, 2, false},
	"kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint": {4, 4, true},
	"kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint": {68, 4, true},
	"kafka41-dynamic-bootstrap-nolog/bootstrap.checkpoint":                                            {6, 2, false},
	"kafka42-single-static/__cluster_metadata-0/00000000000000012666-0000000003.checkpoint":           {69, 2, false},
	"kafka42-single-static/bootstrap.checkpoint":                                                      {8, 2, false},
}

// sampleFiles returns every .checkpoint file under kafka-samples, relative
// to root, with its bytes.
func sampleFiles(t *testing.T) map[string][]byte {
	t.Helper()
	return sharedtest.Files(t, "kafka-samples", Suffix)
}

// TestKafkaSamplesReadAndRewrite reads every checkpoint Kafka 3.5-4.2
// wrote (snapshots, bootstrap.checkpoint files, and the 0-0 bootstrap
// snapshot of a --standalone dynamic quorum), checks its counts and
// header, and writes the same header, voters and records with the same
// batch timestamps through Writer: the result must be byte-identical.
// Kafka's batching (one data batch below 8 MiB) and its per-batch
// timestamps (the time each batch was opened) are the only inputs that
// vary, and the test feeds the writer the times read from the file.
func TestKafkaSamplesReadAndRewrite(t *testing.T) {
	files := sampleFiles(t)
	if len(files) != len(sampleCounts) {
		t.Errorf("found %d checkpoint files, the table lists %d", len(files), len(sampleCounts))
	}
	for rel, data := range files {
		t.Run(rel, func(t *testing.T) {
			want, ok := sampleCounts[rel]
			if !ok {
				t.Fatalf("no expected counts for %s", rel)
			}
			m := vfs.NewMem()
			dir := "/in"
			if err := m.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, filepath.Base(rel))
			writeFile(t, m, path, data)
			r, err := Open(m, path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.Records(); got != int64(want.all-want.control) {
				t.Errorf("Records() = %d, want %d", got, want.all-want.control)
			}
			h := r.Header()
			if (h.KRaftVersion == 1 && h.Voters != nil) != want.kraft {
				t.Errorf("header kraft.version %d voters %v, want kraft records %v", h.KRaftVersion, h.Voters != nil, want.kraft)
			}
			isBootstrap := filepath.Base(rel) == BootstrapFile
			if isBootstrap && h.LastContainedLogTimestamp != 0 {
				t.Errorf("bootstrap.checkpoint LastContainedLogTimestamp = %d, want 0", h.LastContainedLogTimestamp)
			}
			if want.kraft {
				v := h.Voters.Voters
				if len(v) != 1 || v[0].VoterId != 1 || len(v[0].Endpoints) != 1 || v[0].Endpoints[0].Name != "CONTROLLER" ||
					v[0].Endpoints[0].Port != 9093 || v[0].KRaftVersionFeature.MaxSupportedVersion != 1 {
					t.Errorf("voters = %+v", v)
				}
			}

			// Times of the batches, from the raw file: header, data..., footer.
			var times []int64
			it := recordbatch.NewIterator(nil, data)
			for it.Next() {
				times = append(times, it.Batch().BaseTimestamp)
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}

			out := vfs.NewMem()
			odir := "/out"
			if err := out.MkdirAll(odir, 0o755); err != nil {
				t.Fatal(err)
			}
			var w *Writer
			if isBootstrap {
				w, err = CreateBootstrap(out, odir, times[0], WriterOptions{})
			} else {
				w, err = Create(out, odir, r.ID(), 1, h, times[0], WriterOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			all := 0
			for r.Next() {
				b := r.Batch()
				vals := make([][]byte, len(b.Records))
				for i := range b.Records {
					vals[i] = b.Records[i].Value
				}
				if err := w.Append(b.BaseTimestamp, vals...); err != nil {
					t.Fatal(err)
				}
				all += len(vals)
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if int64(all) != r.Records() {
				t.Errorf("iterated %d records, verify pass counted %d", all, r.Records())
			}
			if err := w.Freeze(times[len(times)-1]); err != nil {
				t.Fatal(err)
			}
			got, err := out.ReadDurable(w.Path())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("rewritten file differs from Kafka's (%d vs %d bytes)\n got %x\nwant %x", len(got), len(data), got, data)
			}
		})
	}
}

// TestKafkaBootstrapSnapshotLayout checks the 0-0 bootstrap snapshot that
// kafka-storage format --standalone wrote (Kafka 4.1): a header batch with
// SnapshotHeader{format time}, KRaftVersion 1 and Voters, then the footer
// batch, no data batch, epoch 0.
func TestKafkaBootstrapSnapshotLayout(t *testing.T) {
	files := sampleFiles(t)
	data := files["kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"]
	if data == nil {
		t.Fatal("0-0 bootstrap snapshot missing from kafka-samples")
	}
	m := vfs.NewMem()
	writeFile(t, m, "/d/"+FileName(Bootstrap), data)
	r, err := Open(m, "/d/"+FileName(Bootstrap), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.ID() != Bootstrap || r.Batches() != 2 || r.Records() != 0 || r.Size() != 241 {
		t.Errorf("id %v, %d batches, %d records, %d bytes; want 0-0, 2, 0, 241", r.ID(), r.Batches(), r.Records(), r.Size())
	}
	h := r.Header()
	if h.LastContainedLogTimestamp != 1760258513916 || h.KRaftVersion != 1 || h.Voters == nil {
		t.Errorf("header %+v", h)
	}
	if r.Next() {
		t.Error("Next() = true on a snapshot without data batches")
	}
	var dirID [16]byte
	copy(dirID[:], []byte{43, 133, 134, 73, 203, 83, 72, 97, 163, 100, 246, 164, 235, 203, 30, 137}) // K4WGSctTSGGjZPak68seiQ
	want := control.VotersRecordVoter{VoterId: 1, VoterDirectoryId: dirID,
		Endpoints:           []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}},
		KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1}}
	got := h.Voters.Voters[0]
	if got.VoterId != want.VoterId || got.VoterDirectoryId != want.VoterDirectoryId || got.Endpoints[0].Host != "localhost" {
		t.Errorf("voter = %+v, want %+v", got, want)
	}
}

func writeFile(t testing.TB, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	mkdirDurable(t, fsys, filepath.Dir(path))
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
}

// mkdirDurable creates dir and syncs it and every parent, so that the
// directory survives a simulated crash.
func mkdirDurable(t testing.TB, fsys vfs.FS, dir string) {
	t.Helper()
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := fsys.SyncDir(d); err != nil {
			t.Fatal(err)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
}
