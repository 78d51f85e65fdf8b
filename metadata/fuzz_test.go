package metadata_test

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/krabka-go/krabka/metadata"
)

// allocLimit bounds what decoding n bytes may allocate: a small multiple
// of the input (Go structs are larger than their encodings) plus a
// constant. A length field that is trusted without a bounds check blows
// far past it.
func allocLimit(n int) uint64 { return 64*uint64(n) + 16<<10 }

// FuzzMetadataRecord feeds arbitrary bytes to Decode. It must never panic,
// must allocate in proportion to the input, and every input that decodes
// must encode back to exactly the same bytes. The seed corpus in
// testdata/fuzz/FuzzMetadataRecord holds one real record of every type and
// version found in Kafka's sample logs, and is replayed by go test.
func FuzzMetadataRecord(f *testing.F) {
	for _, key := range metadata.APIKeys() {
		rec := metadata.NewRecord(key)
		for v := rec.MinVersion(); v <= rec.MaxVersion(); v++ {
			rec.SetVersion(v)
			b, err := metadata.Encode(rec)
			if err != nil {
				f.Fatalf("Encode(default %s v%d): %v", key, v, err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rec, err := metadata.Decode(b)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > allocLimit(len(b)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(b), grew)
		}
		if err != nil {
			return
		}
		out, err := metadata.Encode(rec)
		if err != nil {
			t.Fatalf("Decode(%x) succeeded but Encode failed: %v", b, err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", out, b)
		}
	})
}
