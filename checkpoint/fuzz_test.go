package checkpoint_test

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krabka-go/krabka/checkpoint"
	"github.com/krabka-go/krabka/metadata"
)

// fuzzDecoder has small limits, so that an allocation a length field
// asked for stands out against the bound the test checks.
var fuzzDecoder = checkpoint.Decoder{MaxBatchBytes: 1 << 16, MaxDecompressedBytes: 1 << 16}

// allocBound is the most decoding data may allocate: a constant
// multiple of the input and of the decompression limit (a decoded record
// is a bounded multiple of its encoding), plus a fixed allowance.
func allocBound(data []byte) uint64 {
	return 64*uint64(len(data)+fuzzDecoder.MaxDecompressedBytes) + 256<<10
}

// FuzzDecode decodes arbitrary bytes as a snapshot and as a bootstrap
// checkpoint. It must never panic, never allocate beyond allocBound,
// and whatever it accepts must encode, and decode again to the same
// content. The seeds run with plain go test.
func FuzzDecode(f *testing.F) {
	for _, s := range []*checkpoint.Snapshot{
		{Epoch: 5, Control: checkpoint.Control{LastContainedLogTimestamp: 9}, Records: testRecords()},
		{Epoch: 5, Control: checkpoint.Control{KRaftVersion: 1, Voters: testVoters()}, Records: testRecords(), Times: checkpoint.BatchTimes{Header: 1, Records: 2, Footer: 3}},
		{Control: checkpoint.Control{KRaftVersion: 1, Voters: testVoters()[:1]}},
	} {
		b, err := checkpoint.EncodeSnapshot(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	b, err := checkpoint.EncodeBootstrap(&checkpoint.Bootstrap{Records: testRecords()[:2]})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, serr := fuzzDecoder.DecodeSnapshot(data)
		bs, berr := fuzzDecoder.DecodeBootstrap(data)
		runtime.ReadMemStats(&after)
		if got, bound := after.TotalAlloc-before.TotalAlloc, 2*allocBound(data); got > bound {
			t.Fatalf("decoding %d bytes allocated %d bytes, more than %d", len(data), got, bound)
		}
		if serr == nil {
			reencode(t, s, checkpoint.EncodeSnapshot, fuzzDecoder.DecodeSnapshot)
		}
		if berr == nil {
			reencode(t, bs, checkpoint.EncodeBootstrap, fuzzDecoder.DecodeBootstrap)
		}
	})
}

// reencode checks that what decoding accepted encodes, and that the
// encoding decodes to the same content. (The bytes may differ: the
// decoder accepts what Kafka's reader accepts, such as compressed
// batches, per-record timestamps and unknown control records, and the
// encoder writes what Kafka's writer writes.)
func reencode[T any](t *testing.T, v *T, encode func(*T) ([]byte, error), decode func([]byte) (*T, error)) {
	t.Helper()
	b, err := encode(v)
	if err != nil {
		t.Fatalf("accepted input does not encode: %v", err)
	}
	again, err := decode(b)
	if err != nil {
		t.Fatalf("encoding of accepted input does not decode: %v", err)
	}
	if d := cmp.Diff(v, again, recordCmp); d != "" {
		t.Fatalf("decode(encode(decoded)) differs (-decoded +again):\n%s", d)
	}
}

// TestDecodeAllocation checks the allocation bound on real inputs, where
// records are many and small.
func TestDecodeAllocation(t *testing.T) {
	recs := make([]metadata.Record, 0, 20000)
	for i := range 20000 {
		recs = append(recs, metadata.NewNoOpRecord(), topic("t", byte(i)))
	}
	data, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Epoch: 1, Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	d := checkpoint.Decoder{}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := d.DecodeSnapshot(data); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("decoding %d bytes allocated %d bytes (%.1fx)", len(data), got, float64(got)/float64(len(data)))
	if got > 64*uint64(len(data))+256<<10 {
		t.Errorf("decoding %d bytes allocated %d bytes", len(data), got)
	}
}
