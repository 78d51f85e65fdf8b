package recordbatch

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
)

// segmentCounts are the batch and record counts and offset ranges that
// kafka-samples/README.md gives for each log segment.
var segmentCounts = map[string]struct {
	batches, records int
	first, last      int64
}{
	"kafka37-single-static/__cluster_metadata-0/00000000000000000000.log":       {4814, 4929, 0, 4928},
	"kafka35-3node-static/kafka1/__cluster_metadata-0/00000000000000000000.log": {26880, 30638, 0, 30637},
	"kafka35-3node-static/kafka2/__cluster_metadata-0/00000000000000000000.log": {26879, 30637, 0, 30636},
	"kafka35-3node-static/kafka3/__cluster_metadata-0/00000000000000000000.log": {26879, 30637, 0, 30636},
	"kafka39-single-logstart/__cluster_metadata-0/00000000000000128356.log":     {21586, 21639, 128356, 149994},
	"kafka42-single-static/__cluster_metadata-0/00000000000000000000.log":       {16464, 16956, 0, 16955},
}

// checkpointRecords are the record counts (control records included) of
// the snapshot files, as given in kafka-samples/README.md.
var checkpointRecords = map[string]int{
	"kafka35-3node-static/kafka1/__cluster_metadata-0/00000000000000028869-0000000189.checkpoint":     72,
	"kafka35-3node-static/kafka2/__cluster_metadata-0/00000000000000028869-0000000189.checkpoint":     72,
	"kafka35-3node-static/kafka3/__cluster_metadata-0/00000000000000028870-0000000189.checkpoint":     72,
	"kafka39-single-logstart/__cluster_metadata-0/00000000000000128356-0000000020.checkpoint":         62,
	"kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint": 68,
	"kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint": 4,
	"kafka42-single-static/__cluster_metadata-0/00000000000000012666-0000000003.checkpoint":           69,
	"kafka42-single-static/bootstrap.checkpoint":                                                      8,
}

// TestKafkaSamples walks every segment and snapshot written by real Kafka
// (3.5-4.2): every batch must decode with a valid CRC, offsets must be
// contiguous, re-encoding each batch with the Builder must reproduce
// Kafka's bytes exactly, and the counts must match the README.
func TestKafkaSamples(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-samples")
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".log") || strings.HasSuffix(path, ".checkpoint")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seenSegments := 0
	var b Builder
	var enc []byte
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var batches, records int
			var first, next int64 = -1, -1
			var firstControl, lastControl bool
			epochs := map[int32]bool{}
			it := NewIterator(nil, data)
			for it.Next() {
				batch := it.Batch()
				if batch.Compression() != CompressionNone || batch.ProducerID != -1 {
					t.Errorf("batch at byte %d: compression %s, producer id %d", it.Pos(), batch.Compression(), batch.ProducerID)
				}
				if first < 0 {
					first = batch.BaseOffset
				} else if batch.BaseOffset != next {
					t.Errorf("batch at byte %d: base offset %d, want %d (contiguous)", it.Pos(), batch.BaseOffset, next)
				}
				next = batch.NextOffset()
				if batches == 0 {
					firstControl = batch.IsControl()
				}
				lastControl = batch.IsControl()
				epochs[batch.PartitionLeaderEpoch] = true
				batches++
				records += len(batch.Records)
				enc, err = b.Encode(enc[:0], &batch.Header, batch.Records)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(enc, batch.Raw) {
					t.Fatalf("batch at byte %d: re-encoding differs\n got %x\nwant %x", it.Pos(), enc, batch.Raw)
				}
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if it.Offset() != len(data) || batches == 0 {
				t.Fatalf("consumed %d of %d bytes in %d batches", it.Offset(), len(data), batches)
			}
			if want, ok := segmentCounts[rel]; ok {
				seenSegments++
				if batches != want.batches || records != want.records || first != want.first || next-1 != want.last {
					t.Errorf("got %d batches / %d records / offsets %d-%d, README says %d / %d / %d-%d",
						batches, records, first, next-1, want.batches, want.records, want.first, want.last)
				}
			}
			if strings.HasSuffix(rel, ".checkpoint") {
				// KIP-630 layout: offsets from 0, header and footer
				// control batches, every batch at the snapshot epoch.
				if first != 0 || !firstControl || !lastControl || len(epochs) != 1 {
					t.Errorf("snapshot starts at offset %d, control first %v last %v, epochs %v", first, firstControl, lastControl, epochs)
				}
				var wantEpoch int32
				if base := filepath.Base(rel); base != "bootstrap.checkpoint" {
					e, err := strconv.ParseInt(strings.TrimSuffix(base[21:], ".checkpoint"), 10, 32)
					if err != nil {
						t.Fatal(err)
					}
					wantEpoch = int32(e)
				}
				if !epochs[wantEpoch] {
					t.Errorf("batch epochs %v, want %d from the file name", epochs, wantEpoch)
				}
				if want, ok := checkpointRecords[rel]; ok && records != want {
					t.Errorf("got %d records, README says %d", records, want)
				}
			}
		})
	}
	if seenSegments != len(segmentCounts) {
		t.Errorf("found %d of the %d segments listed in the README", seenSegments, len(segmentCounts))
	}
}
