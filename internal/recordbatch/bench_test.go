package recordbatch

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchValues returns n values of size bytes each.
func benchValues(n, size int) [][]byte {
	vals := make([][]byte, n)
	for i := range vals {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(i*31 + j)
		}
		vals[i] = v
	}
	return vals
}

func benchBatch(b *testing.B, c Compression) []byte {
	var bld Builder
	p := DefaultParams()
	p.Attributes = p.Attributes.WithCompression(c)
	bld.Reset(nil, p)
	for _, v := range benchValues(100, 256) {
		bld.Append(1700000000000, nil, v, nil)
	}
	enc, err := bld.Finish()
	if err != nil {
		b.Fatal(err)
	}
	return enc
}

// BenchmarkEncode builds a batch of 100 records of 256 bytes into a reused
// buffer. Bytes per op: the encoded batch.
func BenchmarkEncode(b *testing.B) {
	vals := benchValues(100, 256)
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		b.Run(c.String(), func(b *testing.B) {
			var bld Builder
			var buf []byte
			p := DefaultParams()
			p.Attributes = p.Attributes.WithCompression(c)
			b.SetBytes(int64(len(benchBatch(b, CompressionNone))))
			b.ReportAllocs()
			for b.Loop() {
				bld.Reset(buf[:0], p)
				for _, v := range vals {
					bld.Append(1700000000000, nil, v, nil)
				}
				var err error
				if buf, err = bld.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode decodes (CRC, framing, every record) the same batch with
// a reused Decoder.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		b.Run(c.String(), func(b *testing.B) {
			enc := benchBatch(b, c)
			var d Decoder
			b.SetBytes(int64(len(benchBatch(b, CompressionNone))))
			b.ReportAllocs()
			for b.Loop() {
				batch, err := d.Decode(enc)
				if err != nil || len(batch.Records) != 100 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidate checks length, magic and CRC only, as log recovery does.
func BenchmarkValidate(b *testing.B) {
	enc := benchBatch(b, CompressionNone)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKmsgDecode decodes the same uncompressed batch with franz-go's
// kmsg (RecordBatch, then each Record, reusing the structs), checking the
// CRC too, for comparison with BenchmarkDecode/none.
func BenchmarkKmsgDecode(b *testing.B) {
	enc := benchBatch(b, CompressionNone)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var kb kmsg.RecordBatch
	var kr kmsg.Record
	for b.Loop() {
		if err := kb.UnsafeReadFrom(enc); err != nil {
			b.Fatal(err)
		}
		if uint32(kb.CRC) != crc32c(enc[21:]) {
			b.Fatal("crc")
		}
		p := kb.Records
		for range kb.NumRecords {
			l, n := binary.Varint(p)
			if err := kr.UnsafeReadFrom(p[:n+int(l)]); err != nil {
				b.Fatal(err)
			}
			p = p[n+int(l):]
		}
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// TestSteadyStateDoesNotAllocate checks the allocation contract: a reused
// Builder appending into a reused buffer, and a reused Decoder decoding an
// uncompressed batch, allocate nothing per batch or per record.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	vals := benchValues(100, 256)
	var bld Builder
	var buf []byte
	hdrs := []RecordHeader{{Key: []byte("a"), Value: []byte("b")}}
	encode := func() {
		bld.Reset(buf[:0], DefaultParams())
		for _, v := range vals {
			bld.Append(1, nil, v, hdrs)
		}
		var err error
		if buf, err = bld.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	encode()
	if n := testing.AllocsPerRun(50, encode); n != 0 {
		t.Errorf("encode allocates %v times per batch", n)
	}
	var d Decoder
	enc := append([]byte(nil), buf...)
	decode := func() {
		batch, err := d.Decode(enc)
		if err != nil || len(batch.Records) != 100 || len(batch.Records[99].Headers) != 1 {
			t.Fatalf("decode: %v", err)
		}
	}
	decode()
	if n := testing.AllocsPerRun(50, decode); n != 0 {
		t.Errorf("decode allocates %v times per batch", n)
	}
}
