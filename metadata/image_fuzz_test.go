package metadata_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

// FuzzImageReplay replays arbitrary records (the input is a sequence of
// uvarint-length-prefixed record values; undecodable ones are skipped)
// and checks that replay never panics, that rejected records change
// nothing (a delta that saw them ends like one that saw only the
// accepted records), and that the final image survives its own snapshot.
func FuzzImageReplay(f *testing.F) {
	recs := readMetadataRecords(f, filepath.Join(sharedtest.Dir(f, "kafka-samples"), "kafka42-single-static", "__cluster_metadata-0", "00000000000000000000.log"))
	var seed []byte
	for i, r := range recs {
		seed = binary.AppendUvarint(seed, uint64(len(r.value)))
		seed = append(seed, r.value...)
		if i%40 == 39 {
			f.Add(seed)
		}
		if i == 400 {
			break
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var decoded []metadata.Record
		for len(data) > 0 {
			n, k := binary.Uvarint(data)
			if k <= 0 || n > uint64(len(data)-k) {
				break
			}
			if rec, err := metadata.Decode(data[k : k+int(n)]); err == nil {
				decoded = append(decoded, rec)
			}
			data = data[k+int(n):]
		}
		all, accepted := metadata.NewDelta(metadata.EmptyImage()), metadata.NewDelta(metadata.EmptyImage())
		for i, r := range decoded {
			if all.Replay(r, int64(i), 1) == nil {
				if err := accepted.Replay(r, int64(i), 1); err != nil {
					t.Fatalf("record %d accepted once, then rejected: %v", i, err)
				}
			}
		}
		img := all.Apply()
		if err := imagesEqual(t, img, accepted.Apply()); err != nil {
			t.Fatal(err)
		}
		if img.Offset() < 0 {
			return
		}
		d := metadata.NewDelta(metadata.EmptyImage())
		for r := range img.SnapshotRecords() {
			b, err := metadata.Encode(r)
			if err != nil {
				t.Fatalf("encode %s: %v", r.APIKey(), err)
			}
			r2, err := metadata.Decode(b)
			if err != nil {
				t.Fatalf("decode %s: %v", r.APIKey(), err)
			}
			if err := d.Replay(r2, img.Offset(), img.Epoch()); err != nil {
				t.Fatalf("reload: %v", err)
			}
		}
		if losslessSnapshot(img) {
			if err := imagesEqual(t, d.Apply(), img); err != nil {
				t.Fatalf("reload: %v", err)
			}
		}
	})
}

// losslessSnapshot reports whether img's metadata.version lets its
// snapshot records carry everything it holds: directories need 3.7-IV2,
// cordoned log directories 4.3-IV0, and 4.x levels drop the ZooKeeper
// migration state.
func losslessSnapshot(img *metadata.Image) bool {
	mv := img.Features().MetadataVersion()
	if mv < metadata.MetadataVersion3_7_IV2 {
		return false
	}
	if mv > metadata.MetadataVersion3_9_IV0 && img.Features().ZkMigrationState() != 0 {
		return false
	}
	for b := range img.Cluster().Brokers() {
		if b.CordonedLogDirs != nil && mv < metadata.MetadataVersion4_3_IV0 {
			return false
		}
	}
	return true
}
