package snapshot

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// TestWriterRandomRoundTrip writes snapshots of random records with random
// batch limits and groupings (seeded) and checks that every one reads back
// exactly, that no batch exceeds the limit, and that each batch but the
// last was closed only because the next record did not fit.
func TestWriterRandomRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 60 {
		n := rng.IntN(400)
		vals := make([][]byte, n)
		for i := range vals {
			vals[i] = make([]byte, 1+rng.IntN(rng.IntN(3000)+1))
			for j := range vals[i] {
				vals[i][j] = byte(rng.Uint32())
			}
		}
		limit := recordbatch.HeaderSize + 3100 + rng.IntN(20000)
		group := 1 + rng.IntN(50)
		id := kraft.OffsetAndEpoch{Offset: kraft.Offset(rng.Int64N(1 << 40)), Epoch: kraft.Epoch(rng.Int32N(1 << 20))}
		m := vfs.NewMem()
		data := writeSnapshot(t, m, "/d", id, Header{LastContainedLogTimestamp: rng.Int64()}, vals, group, WriterOptions{MaxBatchBytes: limit})
		_, got, err := readAll(m, "/d/"+FileName(id))
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		if !slices.EqualFunc(got, vals, bytes.Equal) {
			t.Fatalf("iteration %d: read %d values, wrote %d, or contents differ", iter, len(got), len(vals))
		}
		batches := bytesOfBatches(t, data)
		next := 0 // index in vals of the first record of the batch
		for bi, raw := range batches[1 : len(batches)-1] {
			if len(raw) > limit {
				t.Fatalf("iteration %d: batch of %d bytes, limit %d", iter, len(raw), limit)
			}
			b, err := recordbatch.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			next += len(b.Records)
			if bi < len(batches)-3 && len(raw)+recordSize(len(b.Records), len(vals[next])) <= limit {
				t.Fatalf("iteration %d: batch %d closed although the next record fit", iter, bi)
			}
		}
	}
}
