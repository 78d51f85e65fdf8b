package metadata_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

// replayPrepared replays values as a snapshot load does: decoded into
// runs of at most run records, each replayed with ReplayRun, all at
// offset and epoch. It returns the delta and the first error (of a
// decode or a replay).
func replayPrepared(values [][]byte, run int, pack func(int) bool, offset int64, epoch int32) (*metadata.Delta, error) {
	d := metadata.NewDelta(metadata.EmptyImage())
	var r metadata.PreparedRun
	for i := 0; i < len(values); i += run {
		r.Reset()
		var decodeErr error
		for _, v := range values[i:min(i+run, len(values))] {
			if decodeErr = r.Add(v); decodeErr != nil {
				break
			}
		}
		if pack(i / run) {
			r.Pack()
		}
		if err := d.ReplayRun(&r, offset, epoch); err != nil {
			return d, err
		}
		if decodeErr != nil {
			return d, decodeErr
		}
	}
	return d, nil
}

// replayEach replays values one at a time with ReplayNext, all at offset
// and epoch, and stops at the first error.
func replayEach(values [][]byte, offset int64, epoch int32) (*metadata.Delta, error) {
	d := metadata.NewDelta(metadata.EmptyImage())
	var dec metadata.Decoder
	for _, v := range values {
		rec, err := dec.Decode(v)
		if err != nil {
			return d, err
		}
		if err := d.ReplayNext(rec, offset, epoch); err != nil {
			return d, err
		}
	}
	return d, nil
}

// checkPreparedMatches fails unless replaying values in prepared runs of
// each size, packed, unpacked or every other one packed, ends as
// replaying them one at a time: the same error, the same image.
func checkPreparedMatches(t fatalT, values [][]byte, offset int64, epoch int32) {
	want, wantErr := replayEach(values, offset, epoch)
	packs := map[string]func(int) bool{
		"packed":    func(int) bool { return true },
		"unpacked":  func(int) bool { return false },
		"alternate": func(i int) bool { return i%2 == 0 },
	}
	for _, run := range []int{1, 7, 1024} {
		for name, pack := range packs {
			got, err := replayPrepared(values, run, pack, offset, epoch)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("runs of %d, %s: ReplayRun: %v, ReplayNext: %v", run, name, err, wantErr)
			}
			if err := imagesEqual(t, got.Apply(), want.Apply()); err != nil {
				t.Fatalf("runs of %d, %s: %v", run, name, err)
			}
		}
	}
}

// TestReplayRunMatchesReplayNext: the snapshots of generated images, the
// records Kafka wrote and random records (refused ones too) replay into
// the same image, or fail with the same error, in prepared runs as one
// record at a time.
func TestReplayRunMatchesReplayNext(t *testing.T) {
	t.Run("generated", func(t *testing.T) {
		checkPreparedMatches(t, snapshotValues(t, buildImage(t, 3000, 10)), 99, 2)
	})
	t.Run("kafka", func(t *testing.T) {
		root := sharedtest.Dir(t, "kafka-samples")
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".checkpoint") && !strings.HasSuffix(p, ".log") {
				return err
			}
			var values [][]byte
			for _, r := range readMetadataRecords(t, p) {
				values = append(values, r.value)
			}
			checkPreparedMatches(t, values, 1000, 3)
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no Kafka samples")
		}
	})
	t.Run("random", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			// The records the image accepts, one at a time (a refusal
			// changes nothing), then the first one it refuses.
			var values [][]byte
			var refused []byte
			ref := metadata.NewDelta(metadata.EmptyImage())
			for _, r := range genRecords(t) {
				v, err := metadata.Encode(r)
				if err != nil {
					continue
				}
				if ref.ReplayNext(r, 5, 1) == nil {
					values = append(values, v)
				} else if refused == nil {
					refused = v
				}
			}
			checkPreparedMatches(t, values, 5, 1)
			if refused != nil {
				checkPreparedMatches(t, append(values, refused), 5, 1)
			}
			checkPreparedMatches(t, append(values, []byte{1, 3, 0, 0xff}), 5, 1)
		})
	})
}

// TestPreparedRunAllocations bounds the objects a snapshot load
// allocates per record through prepared runs: a partition, its slab and
// its node in the topic's partition map come from blocks, so what is
// left is mostly the topics' (a topic, its name and its two map nodes).
func TestPreparedRunAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates differently")
	}
	values := snapshotValues(t, buildImage(t, 1000, 10))
	var r metadata.PreparedRun
	got := testing.AllocsPerRun(3, func() {
		d := metadata.NewDelta(metadata.EmptyImage())
		for i := 0; i < len(values); i += 1024 {
			r.Reset()
			for _, v := range values[i:min(i+1024, len(values))] {
				if err := r.Add(v); err != nil {
					t.Fatal(err)
				}
			}
			r.Pack()
			if err := d.ReplayRun(&r, 99, 1); err != nil {
				t.Fatal(err)
			}
		}
		_ = d.Apply()
	}) / float64(len(values))
	if got > 0.5 {
		t.Errorf("%.2f objects allocated per record, want at most 0.5", got)
	}
	t.Logf("%.2f objects per record", got)
}
