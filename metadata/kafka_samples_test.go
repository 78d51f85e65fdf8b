package metadata_test

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

// sampleRecord is one record of a real Kafka metadata log or snapshot.
type sampleRecord struct {
	where   string
	control bool
	key     []byte
	value   []byte
}

// readSampleRecords splits a log segment or checkpoint into records with
// franz-go's kmsg, an implementation independent of ours.
func readSampleRecords(t *testing.T, path string) []sampleRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []sampleRecord
	for off := 0; off < len(data); {
		if len(data)-off < 12 {
			t.Fatalf("%s: %d trailing bytes at %d", path, len(data)-off, off)
		}
		length := int(int32(binary.BigEndian.Uint32(data[off+8:])))
		end := off + 12 + length
		if length < 0 || end > len(data) {
			t.Fatalf("%s: batch at %d has bad length %d", path, off, length)
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(data[off:end]); err != nil {
			t.Fatalf("%s: batch at %d: %v", path, off, err)
		}
		if batch.Attributes&0x07 != 0 {
			t.Fatalf("%s: batch at %d is compressed; samples are not", path, off)
		}
		isControl := batch.Attributes&0x20 != 0
		recs := batch.Records
		for i := range int(batch.NumRecords) {
			l, n := binary.Varint(recs)
			if n <= 0 || int(l) > len(recs)-n {
				t.Fatalf("%s: batch at %d: record %d: bad length", path, off, i)
			}
			var rec kmsg.Record
			if err := rec.ReadFrom(recs[:n+int(l)]); err != nil {
				t.Fatalf("%s: batch at %d: record %d: %v", path, off, i, err)
			}
			out = append(out, sampleRecord{
				where:   path + " offset " + strconv.FormatInt(batch.FirstOffset+int64(rec.OffsetDelta), 10),
				control: isControl, key: rec.Key, value: rec.Value,
			})
			recs = recs[n+int(l):]
		}
		if len(recs) != 0 {
			t.Fatalf("%s: batch at %d: %d bytes after the last record", path, off, len(recs))
		}
		off = end
	}
	return out
}

// sampleFiles lists every .log and .checkpoint file of the samples.
func sampleFiles(t *testing.T) []string {
	t.Helper()
	root := sharedtest.Dir(t, "kafka-samples")
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".log") || strings.HasSuffix(p, ".checkpoint")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no sample files found")
	}
	return files
}

// TestKafkaSamplesRoundTrip decodes every record that real Kafka nodes
// (3.5 to 4.2) wrote into their metadata logs and snapshots, and requires
// that encoding each decoded record reproduces Kafka's bytes exactly.
func TestKafkaSamplesRoundTrip(t *testing.T) {
	seenMeta := map[metadata.APIKey]map[int16]int{}
	seenControl := map[control.Type]int{}
	total := 0
	for _, path := range sampleFiles(t) {
		for _, r := range readSampleRecords(t, path) {
			total++
			if r.control {
				msg, err := control.Decode(r.key, r.value)
				if err != nil {
					t.Fatalf("%s: control.Decode: %v", r.where, err)
				}
				key, value, err := control.Encode(msg)
				if err != nil {
					t.Fatalf("%s: control.Encode: %v", r.where, err)
				}
				if !bytes.Equal(key, r.key) || !bytes.Equal(value, r.value) {
					t.Fatalf("%s: re-encoded control record differs:\nkey   %x\nwant  %x\nvalue %x\nwant  %x", r.where, key, r.key, value, r.value)
				}
				seenControl[msg.ControlType()]++
				continue
			}
			if r.key != nil {
				t.Fatalf("%s: metadata record with a key", r.where)
			}
			rec, err := metadata.Decode(r.value)
			if err != nil {
				t.Fatalf("%s: metadata.Decode: %v", r.where, err)
			}
			got, err := metadata.Encode(rec)
			if err != nil {
				t.Fatalf("%s: metadata.Encode(%T): %v", r.where, rec, err)
			}
			if !bytes.Equal(got, r.value) {
				t.Fatalf("%s: re-encoded %T v%d differs:\n got %x\nwant %x", r.where, rec, rec.GetVersion(), got, r.value)
			}
			if seenMeta[rec.APIKey()] == nil {
				seenMeta[rec.APIKey()] = map[int16]int{}
			}
			seenMeta[rec.APIKey()][rec.GetVersion()]++
		}
	}
	t.Logf("%d records; metadata %v; control %v", total, seenMeta, seenControl)
	// The samples' README lists what they contain; make sure the walk
	// really saw it, so that a broken splitter cannot pass vacuously.
	for _, want := range []struct {
		key     metadata.APIKey
		version int16
	}{
		{metadata.APIKeyRegisterBrokerRecord, 2}, {metadata.APIKeyRegisterBrokerRecord, 3},
		{metadata.APIKeyPartitionRecord, 0}, {metadata.APIKeyPartitionRecord, 1}, {metadata.APIKeyPartitionRecord, 2},
		{metadata.APIKeyPartitionChangeRecord, 0}, {metadata.APIKeyPartitionChangeRecord, 2},
		{metadata.APIKeyBrokerRegistrationChangeRecord, 1}, {metadata.APIKeyRegisterControllerRecord, 0},
		{metadata.APIKeyFeatureLevelRecord, 0}, {metadata.APIKeyTopicRecord, 0}, {metadata.APIKeyConfigRecord, 0},
		{metadata.APIKeyNoOpRecord, 0}, {metadata.APIKeyBeginTransactionRecord, 0}, {metadata.APIKeyEndTransactionRecord, 0},
		{metadata.APIKeyProducerIdsRecord, 0}, {metadata.APIKeyZkMigrationStateRecord, 0},
	} {
		if seenMeta[want.key][want.version] == 0 {
			t.Errorf("no %s v%d record seen in the samples", want.key, want.version)
		}
	}
	for _, ty := range []control.Type{control.LeaderChange, control.SnapshotHeader, control.SnapshotFooter, control.KRaftVersion, control.KRaftVoters} {
		if seenControl[ty] == 0 {
			t.Errorf("no %s control record seen in the samples", ty)
		}
	}
	if total < 50000 {
		t.Errorf("only %d records seen; the samples hold more than 50000", total)
	}
}
