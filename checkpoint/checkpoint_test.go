package checkpoint_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krabka-go/krabka/checkpoint"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

func featureLevel(name string, level int16) *metadata.FeatureLevelRecord {
	r := metadata.NewFeatureLevelRecord()
	r.Name, r.FeatureLevel = name, level
	return r
}

func topic(name string, id byte) *metadata.TopicRecord {
	r := metadata.NewTopicRecord()
	r.Name = name
	r.TopicId[15] = id
	return r
}

func testRecords() []metadata.Record {
	return []metadata.Record{
		featureLevel(metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion),
		featureLevel("group.version", 1),
		topic("orders", 1),
		topic("payments", 2),
		metadata.NewNoOpRecord(),
	}
}

func testVoters() []checkpoint.Voter {
	return []checkpoint.Voter{
		{ID: 1, DirectoryID: [16]byte{1}, MaxKRaftVersion: 1,
			Endpoints: []checkpoint.Endpoint{{Name: "CONTROLLER", Host: "c1", Port: 9093}}},
		{ID: 2, DirectoryID: [16]byte{2}, MaxKRaftVersion: 1,
			Endpoints: []checkpoint.Endpoint{{Name: "CONTROLLER", Host: "c2", Port: 9093}, {Name: "SECURE", Host: "c2", Port: 9094}}},
	}
}

// recordCmp compares records by their encoding.
var recordCmp = cmp.Comparer(func(a, b metadata.Record) bool {
	ea, errA := metadata.Encode(a)
	eb, errB := metadata.Encode(b)
	return errA == nil && errB == nil && bytes.Equal(ea, eb)
})

func TestSnapshotRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    checkpoint.Snapshot
	}{
		{"static quorum", checkpoint.Snapshot{Epoch: 7, Control: checkpoint.Control{LastContainedLogTimestamp: 1700},
			Records: testRecords(), Times: checkpoint.BatchTimes{Header: 1, Records: 2, Footer: 3}}},
		{"dynamic quorum", checkpoint.Snapshot{Epoch: 3, Control: checkpoint.Control{LastContainedLogTimestamp: 9, KRaftVersion: 1, Voters: testVoters()},
			Records: testRecords(), Times: checkpoint.BatchTimes{Header: 4, Records: 5, Footer: 6}}},
		{"kraft.version 1 without voters", checkpoint.Snapshot{Epoch: 1, Control: checkpoint.Control{KRaftVersion: 1}, Records: testRecords()}},
		{"empty voter set", checkpoint.Snapshot{Epoch: 1, Control: checkpoint.Control{KRaftVersion: 1, Voters: []checkpoint.Voter{}}, Records: testRecords()}},
		{"bootstrap snapshot of a dynamic quorum", checkpoint.Snapshot{Control: checkpoint.Control{LastContainedLogTimestamp: 42, KRaftVersion: 1, Voters: testVoters()[:1]},
			Times: checkpoint.BatchTimes{Header: 42, Footer: 42}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := checkpoint.EncodeSnapshot(&tc.s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := checkpoint.DecodeSnapshot(b)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.s
			if want.Records == nil {
				want.Records = []metadata.Record{}
			}
			if d := cmp.Diff(&want, got, recordCmp); d != "" {
				t.Errorf("DecodeSnapshot(EncodeSnapshot(s)) differs (-want +got):\n%s", d)
			}
			again, err := checkpoint.EncodeSnapshot(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, b) {
				t.Error("encoding the decoded snapshot gives other bytes")
			}
		})
	}
}

func TestBootstrapRoundTrip(t *testing.T) {
	in := &checkpoint.Bootstrap{Records: testRecords()[:2], Times: checkpoint.BatchTimes{Header: 10, Records: 11, Footer: 12}}
	b, err := checkpoint.EncodeBootstrap(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.DecodeBootstrap(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, got, recordCmp); d != "" {
		t.Errorf("DecodeBootstrap(EncodeBootstrap(b)) differs (-want +got):\n%s", d)
	}
	// A bootstrap checkpoint is a snapshot at epoch 0 with an empty
	// control state.
	s, err := checkpoint.DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Epoch != 0 || s.Control.LastContainedLogTimestamp != 0 || s.Control.KRaftVersion != 0 || s.Control.Voters != nil {
		t.Errorf("bootstrap.checkpoint as a snapshot: epoch %d, control %+v", s.Epoch, s.Control)
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() error
		is   error
	}{
		{"negative epoch", func() error {
			_, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Epoch: -1})
			return err
		}, nil},
		{"voters at kraft.version 0", func() error {
			_, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Control: checkpoint.Control{Voters: testVoters()}})
			return err
		}, nil},
		{"nil record", func() error {
			_, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Records: []metadata.Record{nil}})
			return err
		}, nil},
		{"record at an unknown version", func() error {
			r := topic("t", 1)
			r.Version = 99
			_, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Records: []metadata.Record{r}})
			return err
		}, nil},
		{"bootstrap without metadata.version", func() error {
			_, err := checkpoint.EncodeBootstrap(&checkpoint.Bootstrap{Records: []metadata.Record{featureLevel("group.version", 1)}})
			return err
		}, checkpoint.ErrNoMetadataVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not match %v", err, tc.is)
			}
		})
	}
}

func TestDecodeRefusesCorruptInput(t *testing.T) {
	good, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Epoch: 2, Records: testRecords(),
		Control: checkpoint.Control{KRaftVersion: 1, Voters: testVoters()}})
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name      string
		data      []byte
		truncated bool
	}{
		{"empty", nil, true},
		{"short of a length prefix", good[:5], true},
		{"torn in the last batch", good[:len(good)-3], true},
		{"without the footer batch", good[:lastBatchStart(t, good)], true},
		{"bit flip in the records", flip(len(good) / 2), false},
		{"bit flip in a CRC", flip(17), false},
		{"trailing bytes", append(bytes.Clone(good), 0, 0, 0, 0), false},
		{"two snapshots back to back", append(bytes.Clone(good), good...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkpoint.DecodeSnapshot(tc.data)
			var ce *checkpoint.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("DecodeSnapshot = %v, want a *CorruptError", err)
			}
			if ce.Truncated != tc.truncated || errors.Is(err, checkpoint.ErrTruncated) != tc.truncated {
				t.Errorf("Truncated = %v (%v), want %v", ce.Truncated, err, tc.truncated)
			}
			if _, err := checkpoint.DecodeBootstrap(tc.data); !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Errorf("DecodeBootstrap = %v, want ErrCorrupt", err)
			}
		})
	}
	t.Run("snapshot epoch is not 0 for a bootstrap", func(t *testing.T) {
		if _, err := checkpoint.DecodeBootstrap(good); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("DecodeBootstrap of an epoch-2 snapshot = %v, want ErrCorrupt", err)
		}
	})
	t.Run("bootstrap without metadata.version", func(t *testing.T) {
		b, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Records: []metadata.Record{topic("t", 1)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := checkpoint.DecodeBootstrap(b); !errors.Is(err, checkpoint.ErrNoMetadataVersion) {
			t.Errorf("DecodeBootstrap = %v, want ErrNoMetadataVersion", err)
		}
	})
	t.Run("a record that does not decode", func(t *testing.T) {
		// A valid batch layer around a record value with an unknown API
		// key: the batches verify, the record does not.
		b, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Records: []metadata.Record{&unknownRecord{}}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = checkpoint.DecodeSnapshot(b)
		var uk *metadata.UnknownAPIKeyError
		if !errors.Is(err, checkpoint.ErrCorrupt) || !errors.As(err, &uk) {
			t.Errorf("DecodeSnapshot = %v, want ErrCorrupt caused by an unknown API key", err)
		}
	})
	t.Run("negative limits", func(t *testing.T) {
		if _, err := (checkpoint.Decoder{MaxBatchBytes: -1}).DecodeSnapshot(good); err == nil || errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("DecodeSnapshot with a negative limit = %v, want a usage error", err)
		}
	})
	t.Run("batch above the limit", func(t *testing.T) {
		if _, err := (checkpoint.Decoder{MaxBatchBytes: 100}).DecodeSnapshot(good); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("DecodeSnapshot with a 100-byte batch limit = %v, want ErrCorrupt", err)
		}
	})
}

// unknownRecord encodes as a record with API key 999, which no release
// knows.
type unknownRecord struct{ metadata.NoOpRecord }

func (*unknownRecord) APIKey() metadata.APIKey { return 999 }

// lastBatchStart returns the byte position of the last batch of data.
func lastBatchStart(t *testing.T, data []byte) int {
	t.Helper()
	pos, last := 0, 0
	for pos < len(data) {
		n := int(uint32(data[pos+8])<<24|uint32(data[pos+9])<<16|uint32(data[pos+10])<<8|uint32(data[pos+11])) + 12
		last, pos = pos, pos+n
	}
	return last
}

func TestIsNoOp(t *testing.T) {
	noop, err := metadata.Encode(metadata.NewNoOpRecord())
	if err != nil {
		t.Fatal(err)
	}
	tp, err := metadata.Encode(topic("t", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		value []byte
		want  bool
	}{
		{"NoOpRecord", noop, true},
		{"TopicRecord", tp, false},
		{"empty", nil, false},
		{"frame version 0", append([]byte{0}, noop[1:]...), false},
		{"NoOp frame at an unknown version", []byte{1, 20, 1, 0}, false},
		{"NoOp frame with trailing bytes", append(bytes.Clone(noop), 7), false},
		{"truncated frame", noop[:1], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkpoint.IsNoOp(tc.value); got != tc.want {
				t.Errorf("IsNoOp(%x) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
	if !checkpoint.IsNoOpRecord(metadata.NewNoOpRecord()) || checkpoint.IsNoOpRecord(topic("t", 1)) || checkpoint.IsNoOpRecord(nil) {
		t.Error("IsNoOpRecord misclassifies")
	}
}

func TestFileName(t *testing.T) {
	name, err := checkpoint.FileName(12666, 3)
	if err != nil || name != "00000000000000012666-0000000003.checkpoint" {
		t.Fatalf("FileName(12666, 3) = %q, %v", name, err)
	}
	off, epoch, err := checkpoint.ParseFileName(name)
	if err != nil || off != 12666 || epoch != 3 {
		t.Errorf("ParseFileName(%q) = %d, %d, %v", name, off, epoch, err)
	}
	if _, err := checkpoint.FileName(-1, 0); err == nil {
		t.Error("FileName(-1, 0) succeeded")
	}
	for _, bad := range []string{
		"00000000000000012666-0000000003-1.checkpoint.part",
		"00000000000000012666-0000000003.checkpoint.deleted",
		"12666-3.checkpoint",
		checkpoint.BootstrapFile,
	} {
		if _, _, err := checkpoint.ParseFileName(bad); err == nil {
			t.Errorf("ParseFileName(%q) succeeded", bad)
		}
	}
}

// TestKafkaSamples decodes every snapshot and bootstrap.checkpoint Kafka
// 3.5 to 4.2 wrote, checks what each holds, and encodes the result: the
// bytes must be Kafka's.
func TestKafkaSamples(t *testing.T) {
	for rel, data := range sharedtest.Files(t, "kafka-samples", ".checkpoint") {
		t.Run(rel, func(t *testing.T) {
			var got []byte
			var recs []metadata.Record
			if filepath.Base(rel) == checkpoint.BootstrapFile {
				b, err := checkpoint.DecodeBootstrap(data)
				if err != nil {
					t.Fatal(err)
				}
				if fl, ok := b.Records[0].(*metadata.FeatureLevelRecord); !ok || fl.Name != metadata.FeatureMetadataVersion {
					t.Errorf("first bootstrap record is %v, want metadata.version", b.Records[0])
				}
				recs = b.Records
				if got, err = checkpoint.EncodeBootstrap(b); err != nil {
					t.Fatal(err)
				}
			} else {
				s, err := checkpoint.DecodeSnapshot(data)
				if err != nil {
					t.Fatal(err)
				}
				_, epoch, err := checkpoint.ParseFileName(filepath.Base(rel))
				if err != nil {
					t.Fatal(err)
				}
				if s.Epoch != epoch {
					t.Errorf("epoch %d, the name says %d", s.Epoch, epoch)
				}
				dynamic := strings.Contains(rel, "dynamic")
				if dynamic != (s.Control.KRaftVersion == 1) || dynamic != (len(s.Control.Voters) == 1) {
					t.Errorf("control %+v for a sample of a %s quorum", s.Control, map[bool]string{true: "dynamic", false: "static"}[dynamic])
				}
				if dynamic {
					v := s.Control.Voters[0]
					if v.ID != 1 || v.MaxKRaftVersion != 1 || len(v.Endpoints) != 1 || v.Endpoints[0].Name != "CONTROLLER" || v.Endpoints[0].Port != 9093 {
						t.Errorf("voter %+v", v)
					}
				}
				if strings.HasSuffix(rel, "00000000000000000000-0000000000.checkpoint") != (len(s.Records) == 0) {
					t.Errorf("%d records", len(s.Records))
				}
				recs = s.Records
				if got, err = checkpoint.EncodeSnapshot(s); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range recs {
				if checkpoint.IsNoOpRecord(r) {
					t.Errorf("a checkpoint holds a NoOpRecord")
				}
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("encoding the decoded file differs from Kafka's (%d vs %d bytes)", len(got), len(data))
			}
		})
	}
}
