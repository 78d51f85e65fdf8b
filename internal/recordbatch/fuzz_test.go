package recordbatch

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// fuzzSeeds returns in-code seeds: the golden vectors, a multi-batch
// input, batches of every codec and a few broken ones.
func fuzzSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{noOpBatch(t), leaderChangeBatch(t), votersBatch(t)}
	seeds = append(seeds, append(append(noOpBatch(t), leaderChangeBatch(t)...), votersBatch(t)...))
	var b Builder
	for c := CompressionNone; c <= CompressionZstd; c++ {
		p := DefaultParams()
		p.Attributes = p.Attributes.WithCompression(c)
		b.Reset(nil, p)
		b.Append(1, []byte("k"), []byte("value value value"), []RecordHeader{{Key: []byte("h"), Value: []byte("v")}})
		b.Append(2, nil, nil, nil)
		enc, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, enc)
	}
	seeds = append(seeds, rawBatch(1<<31-1, 0, make([]byte, 10)), noOpBatch(t)[:30], []byte{})
	return seeds
}

// fixCRCs returns a copy of in with the CRC of every complete batch
// recomputed, so that mutations reach the record decoder instead of
// stopping at the CRC check.
func fixCRCs(in []byte) []byte {
	in = bytes.Clone(in)
	for pos := 0; ; {
		size, err := TotalSize(in[pos:])
		if err != nil || size > len(in)-pos || size < HeaderSize {
			return in
		}
		withCRC(in[pos : pos+size])
		pos += size
	}
}

// FuzzRecordBatch feeds arbitrary bytes to the iterator, with the CRCs
// repaired first when fixCRC is set. Properties: no
// panic; allocation bounded by a constant factor of the input plus the
// decompression limit; every error is an *Error positioned inside the
// input; every accepted batch validates, and re-encodes to its own bytes
// (uncompressed) or to a batch with the same records (compressed); the
// valid prefix decodes again identically.
func FuzzRecordBatch(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	const limit = 1 << 20
	var b Builder
	f.Fuzz(func(t *testing.T, in []byte, fixCRC bool) {
		if fixCRC {
			in = fixCRCs(in)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc

		d := Decoder{MaxDecompressedSize: limit}
		it := NewIterator(&d, in)
		var raws [][]byte
		for it.Next() {
			batch := it.Batch()
			raws = append(raws, batch.Raw)
			if h, err := Validate(batch.Raw); err != nil || h != batch.Header {
				t.Fatalf("Validate of an accepted batch: %v", err)
			}
			enc, err := b.Encode(nil, &batch.Header, batch.Records)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if batch.Compression() == CompressionNone {
				if !bytes.Equal(enc, batch.Raw) {
					t.Fatalf("re-encode differs\n got %x\nwant %x", enc, batch.Raw)
				}
				continue
			}
			again, err := Parse(enc)
			if err != nil {
				t.Fatalf("parse of re-encoded compressed batch: %v", err)
			}
			if len(again.Records) != len(batch.Records) {
				t.Fatalf("re-encoded compressed batch has %d records, want %d", len(again.Records), len(batch.Records))
			}
			for i := range again.Records {
				x, y := again.Records[i], batch.Records[i]
				if x.OffsetDelta != y.OffsetDelta || x.TimestampDelta != y.TimestampDelta || !sameBytes(x.Key, y.Key) || !sameBytes(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
					t.Fatalf("record %d differs after re-encoding", i)
				}
			}
		}
		if err := it.Err(); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Reason == 0 || e.Reason.String() == "" || e.Pos < 0 || e.Pos > int64(len(in)) ||
				e.BatchPos != int64(it.Offset()) {
				t.Fatalf("bad error %#v", err)
			}
		}
		if it.Offset() > len(in) {
			t.Fatalf("offset %d past input of %d", it.Offset(), len(in))
		}

		runtime.ReadMemStats(&ms)
		if got, budget := ms.TotalAlloc-before, uint64(16<<20+256*len(in)); got > budget {
			t.Fatalf("allocated %d bytes for %d input bytes (budget %d)", got, len(in), budget)
		}

		it2 := NewIterator(nil, in[:it.Offset()])
		for i := 0; it2.Next(); i++ {
			if !bytes.Equal(it2.Batch().Raw, raws[i]) {
				t.Fatalf("valid prefix decodes differently at batch %d", i)
			}
		}
		if it2.Err() != nil {
			t.Fatalf("valid prefix fails: %v", it2.Err())
		}
	})
}
