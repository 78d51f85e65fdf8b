package metadata_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

// loggedRecord is a metadata record of a real log or snapshot with the
// offset and epoch of its batch.
type loggedRecord struct {
	rec    metadata.Record
	value  []byte
	offset int64
	epoch  int32
}

// readMetadataRecords splits a segment or checkpoint into batches with
// recordbatch, skips control batches, and decodes every metadata record.
func readMetadataRecords(t testing.TB, path string) []loggedRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []loggedRecord
	it := recordbatch.NewIterator(nil, data)
	for it.Next() {
		b := it.Batch()
		if b.IsControl() {
			continue
		}
		for i := range b.Records {
			r := &b.Records[i]
			rec, err := metadata.Decode(r.Value)
			if err != nil {
				t.Fatalf("%s: offset %d: %v", path, b.RecordOffset(r), err)
			}
			out = append(out, loggedRecord{rec: rec, value: bytes.Clone(r.Value), offset: b.RecordOffset(r), epoch: b.PartitionLeaderEpoch})
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// snapshotID parses <offset>-<epoch>.checkpoint; bootstrap.checkpoint is
// (0, 0).
func snapshotID(t testing.TB, path string) (int64, int32) {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(path), ".checkpoint")
	if base == "bootstrap" {
		return 0, 0
	}
	off, ep, ok := strings.Cut(base, "-")
	o, err1 := strconv.ParseInt(off, 10, 64)
	e, err2 := strconv.ParseInt(ep, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("bad snapshot name %s", path)
	}
	return o, int32(e)
}

// loadSnapshot replays a checkpoint into a fresh image; every record is
// at the snapshot's last contained offset.
func loadSnapshot(t testing.TB, path string) (*metadata.Image, []loggedRecord) {
	t.Helper()
	recs := readMetadataRecords(t, path)
	end, epoch := snapshotID(t, path)
	off := max(end-1, 0)
	d := metadata.NewDelta(metadata.EmptyImage())
	list := make([]metadata.Record, len(recs))
	for i, r := range recs {
		list[i] = r.rec
	}
	if err := d.ReplaySnapshot(list, off, epoch); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d.Apply(), recs
}

// replayRuns replays records onto base with ReplayBatch, one call per
// run of consecutive offsets in one epoch, and fails on a rejection.
func replayRuns(t testing.TB, base *metadata.Image, recs []loggedRecord) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(base)
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].offset == recs[j-1].offset+1 && recs[j].epoch == recs[i].epoch {
			j++
		}
		run := make([]metadata.Record, j-i)
		for k := range run {
			run[k] = recs[i+k].rec
		}
		if n, err := d.ReplayBatch(run, recs[i].offset, recs[i].epoch); err != nil {
			t.Fatalf("record %d of the run at %d: %v", n, recs[i].offset, err)
		}
		i = j
	}
	return d.Apply()
}

// replayLog replays records onto base, stopping before offset stop (-1:
// all of them).
func replayLog(t testing.TB, base *metadata.Image, recs []loggedRecord, stop int64) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(base)
	for _, r := range recs {
		if stop >= 0 && r.offset >= stop {
			break
		}
		if r.offset <= base.Offset() {
			continue
		}
		if err := d.Replay(r.rec, r.offset, r.epoch); err != nil {
			t.Fatal(err)
		}
	}
	if d.InTransaction() {
		t.Fatalf("transaction open at the end of the replay")
	}
	return d.Apply()
}

// fatalT is the part of testing.TB and *rapid.T the helpers use.
type fatalT interface {
	Helper()
	Fatalf(format string, args ...any)
}

// snapshotValues encodes an image's snapshot records, and checks that
// AppendSnapshotRecords writes the same values.
func snapshotValues(t fatalT, img *metadata.Image) [][]byte {
	t.Helper()
	var out [][]byte
	for r := range img.SnapshotRecords() {
		b, err := metadata.Encode(r)
		if err != nil {
			t.Fatalf("encode %T: %v", r, err)
		}
		out = append(out, b)
	}
	i := 0
	err := img.AppendSnapshotRecords(func(value []byte) error {
		if i >= len(out) {
			return fmt.Errorf("value %d is %x, SnapshotRecords has %d records", i, value, len(out))
		}
		if !bytes.Equal(value, out[i]) {
			return fmt.Errorf("value %d is %x, SnapshotRecords encodes %x", i, value, out[i])
		}
		i++
		return nil
	})
	if err == nil && i != len(out) {
		err = fmt.Errorf("%d values, SnapshotRecords has %d", i, len(out))
	}
	if err != nil {
		t.Fatalf("AppendSnapshotRecords: %v", err)
	}
	return out
}

// sampleDirs returns the directories holding __cluster_metadata-0.
func sampleDirs(t *testing.T) []string {
	t.Helper()
	root := sharedtest.Dir(t, "kafka-samples")
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__cluster_metadata-0" {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 7 {
		t.Fatalf("found %d sample metadata directories, want 7", len(dirs))
	}
	return dirs
}

func globSorted(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// TestKafkaSamplesSnapshotsRewrite loads every snapshot Kafka wrote and
// requires that writing the image back yields Kafka's records, value for
// value, in Kafka's order (see compareSnapshot for the sections whose
// order Kafka does not define).
func TestKafkaSamplesSnapshotsRewrite(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-samples")
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".checkpoint") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 17 {
		t.Fatalf("found %d checkpoints", len(files))
	}
	for _, f := range files {
		if filepath.Base(f) == "bootstrap.checkpoint" {
			// Written by BootstrapMetadata, not MetadataImage.write:
			// check only that it loads.
			loadSnapshot(t, f)
			continue
		}
		t.Run(strings.TrimPrefix(f, root), func(t *testing.T) {
			img, recs := loadSnapshot(t, f)
			var want [][]byte
			for _, r := range recs {
				want = append(want, r.value)
			}
			if err := compareSnapshot(snapshotValues(t, img), want, strings.Contains(f, "kafka35")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// compareSnapshot compares written snapshot records with Kafka's, value
// by value and in order, except where Kafka's order is not canonical:
// Kafka iterates java.util.HashMaps for the features after
// metadata.version and for config resources and keys (for resources by
// identity hash code, which changes from run to run), so those runs of
// records are compared as sets; with unorderedTopics (snapshots written
// by Kafka 3.5, which kept topics in a HashMap too) so are the groups of
// a TopicRecord and its PartitionRecords.
func compareSnapshot(got, want [][]byte, unorderedTopics bool) error {
	got, want = canonicalOrder(got, unorderedTopics), canonicalOrder(want, unorderedTopics)
	n := max(len(got), len(want))
	for i := range n {
		if i >= len(got) || i >= len(want) || !bytes.Equal(got[i], want[i]) {
			return fmt.Errorf("record %d differs (got %d records, want %d):\ngot  %s\nwant %s", i, len(got), len(want), describe(got, i), describe(want, i))
		}
	}
	return nil
}

// canonicalOrder sorts the runs of records whose order Kafka leaves to a
// hash map.
func canonicalOrder(vals [][]byte, unorderedTopics bool) [][]byte {
	key := func(b []byte) metadata.APIKey {
		if len(b) < 2 {
			return -1
		}
		return metadata.APIKey(b[1])
	}
	var out [][]byte
	for i := 0; i < len(vals); {
		k := key(vals[i])
		j := i + 1
		switch {
		case k == metadata.APIKeyFeatureLevelRecord && i == 0:
			out = append(out, vals[0])
			i = 1
			continue
		case k == metadata.APIKeyFeatureLevelRecord || k == metadata.APIKeyConfigRecord:
			for j < len(vals) && key(vals[j]) == k {
				j++
			}
			run := slices.Clone(vals[i:j])
			slices.SortFunc(run, bytes.Compare)
			out = append(out, run...)
		case k == metadata.APIKeyTopicRecord && unorderedTopics:
			var groups [][][]byte
			for i < len(vals) && key(vals[i]) == metadata.APIKeyTopicRecord {
				j = i + 1
				for j < len(vals) && key(vals[j]) == metadata.APIKeyPartitionRecord {
					j++
				}
				groups = append(groups, vals[i:j])
				i = j
			}
			slices.SortFunc(groups, func(a, b [][]byte) int { return bytes.Compare(a[0], b[0]) })
			for _, g := range groups {
				out = append(out, g...)
			}
			j = i
		default:
			out = append(out, vals[i])
		}
		i = j
	}
	return out
}

func describe(vals [][]byte, i int) string {
	if i >= len(vals) {
		return "<none>"
	}
	r, err := metadata.Decode(vals[i])
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%+v", r)
}

// TestKafkaSamplesReplay replays every log segment of the samples from
// the start (or, for kafka39, from its snapshot at the log start) with
// no rejection, and checks facts stated in kafka-samples/README.md.
func TestKafkaSamplesReplay(t *testing.T) {
	for _, dir := range sampleDirs(t) {
		name := strings.TrimPrefix(dir, sharedtest.Dir(t, "kafka-samples")+"/")
		t.Run(name, func(t *testing.T) {
			segs := globSorted(t, filepath.Join(dir, "*.log"))
			if len(segs) == 0 {
				return
			}
			base := metadata.EmptyImage()
			start, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(segs[0]), ".log"), 10, 64)
			if start > 0 {
				snaps := globSorted(t, filepath.Join(dir, fmt.Sprintf("%020d-*.checkpoint", start)))
				if len(snaps) != 1 {
					t.Fatalf("no snapshot at the log start %d", start)
				}
				base, _ = loadSnapshot(t, snaps[0])
			}
			var recs []loggedRecord
			for _, s := range segs {
				recs = append(recs, readMetadataRecords(t, s)...)
			}
			img := replayLog(t, base, recs, -1)
			if img.Offset() != recs[len(recs)-1].offset {
				t.Errorf("image offset %d, want %d", img.Offset(), recs[len(recs)-1].offset)
			}
			// The same records in runs, with in-place updates within
			// each run, give the same image.
			if err := imagesEqual(t, replayRuns(t, base, recs), img); err != nil {
				t.Errorf("ReplayBatch: %v", err)
			}
			checkSampleFacts(t, name, img)
		})
	}
}

func checkSampleFacts(t *testing.T, name string, img *metadata.Image) {
	t.Helper()
	names := func() []string {
		var out []string
		for n := range img.Topics().Names() {
			out = append(out, n)
		}
		return out
	}
	switch {
	case strings.HasPrefix(name, "kafka37"):
		if img.Topics().Len() != 5 || img.Topics().NumPartitions() != 54 {
			t.Errorf("kafka37: %d topics, %d partitions; want 5 and 54", img.Topics().Len(), img.Topics().NumPartitions())
		}
		if got := img.ProducerIDs().NextProducerID(); got != 1000 {
			t.Errorf("kafka37: next producer id %d, want 1000", got)
		}
		if got := img.Features().MetadataVersion(); got != 19 {
			t.Errorf("kafka37: metadata.version %d, want 19", got)
		}
		for _, k := range []string{"cleanup.policy", "compression.type", "segment.bytes"} {
			found := false
			for res := range img.Configs().Resources() {
				if _, ok := img.Configs().Get(res, k); ok && res.Type == metadata.ConfigResourceTopic {
					found = true
				}
			}
			if !found {
				t.Errorf("kafka37: no topic config %s", k)
			}
		}
	case strings.HasPrefix(name, "kafka42"):
		if got := names(); !slices.Equal(got, []string{"__consumer_offsets", "streaming-events"}) {
			t.Errorf("kafka42: topics %v", got)
		}
		if got := img.Topics().NumPartitions(); got != 53 {
			t.Errorf("kafka42: %d partitions, want 53", got)
		}
		if got := img.Features().MetadataVersion(); got != 29 {
			t.Errorf("kafka42: metadata.version %d, want 29", got)
		}
		for f, l := range map[string]int16{"eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 1, "streams.version": 1, "transaction.version": 2} {
			if got := img.Features().Level(f); got != l {
				t.Errorf("kafka42: %s = %d, want %d", f, got, l)
			}
		}
		if _, ok := img.Configs().Get(metadata.ConfigResource{Type: metadata.ConfigResourceBroker}, "min.insync.replicas"); !ok {
			t.Errorf("kafka42: no cluster min.insync.replicas")
		}
	case strings.HasPrefix(name, "kafka35"):
		if got := img.Cluster().NumBrokers(); got != 3 {
			t.Errorf("kafka35: %d brokers, want 3", got)
		}
		if got := img.Features().MetadataVersion(); got != 11 {
			t.Errorf("kafka35: metadata.version %d, want 11", got)
		}
	case strings.HasPrefix(name, "kafka39"):
		if got := img.Features().MetadataVersion(); got != 21 {
			t.Errorf("kafka39: metadata.version %d, want 21", got)
		}
	}
}

// TestKafkaSamplesLogMatchesSnapshot replays each sample's log up to
// every snapshot inside it and requires the image to equal the image
// loaded from Kafka's snapshot: the same snapshot records.
func TestKafkaSamplesLogMatchesSnapshot(t *testing.T) {
	checked := 0
	for _, dir := range sampleDirs(t) {
		segs := globSorted(t, filepath.Join(dir, "*.log"))
		if len(segs) == 0 {
			continue
		}
		var recs []loggedRecord
		for _, s := range segs {
			recs = append(recs, readMetadataRecords(t, s)...)
		}
		base := metadata.EmptyImage()
		start, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(segs[0]), ".log"), 10, 64)
		for _, snap := range globSorted(t, filepath.Join(dir, "*-*.checkpoint")) {
			end, _ := snapshotID(t, snap)
			if end == start && start > 0 {
				base, _ = loadSnapshot(t, snap)
				continue
			}
			if end <= start {
				continue
			}
			fromLog := replayLog(t, base, recs, end)
			fromSnap, _ := loadSnapshot(t, snap)
			if fromLog.Offset() != fromSnap.Offset() {
				t.Errorf("%s: log image at offset %d, snapshot at %d", snap, fromLog.Offset(), fromSnap.Offset())
			}
			if err := compareSnapshot(snapshotValues(t, fromLog), snapshotValues(t, fromSnap), false); err != nil {
				t.Errorf("%s: %v", snap, err)
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("compared %d snapshots with their logs, want at least 5", checked)
	}
}
