package recordbatch

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/snappy"
	"go.uber.org/goleak"
)

// TestMain checks that no compressor or decompressor leaves goroutines
// behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// uncompressedRecords returns the records section of a batch of n records.
func uncompressedRecords(t *testing.T, n int) []byte {
	t.Helper()
	var b Builder
	b.Reset(nil, DefaultParams())
	for i := range n {
		b.Append(100, nil, bytes.Repeat([]byte{byte(i)}, 1000), []RecordHeader{{Key: []byte("k"), Value: nil}})
	}
	enc, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return enc[HeaderSize:]
}

// TestSnappyRawBlock checks that an unframed snappy block, as librdkafka and
// franz-go write it, decodes like the xerial-framed stream Kafka writes.
func TestSnappyRawBlock(t *testing.T) {
	recs := uncompressedRecords(t, 50)
	in := rawBatch(50, uint16(CompressionSnappy), snappy.Encode(nil, recs))
	batch, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Records) != 50 || batch.Records[49].Value[0] != 49 || string(batch.Records[3].Headers[0].Key) != "k" {
		t.Fatalf("decoded %d records", len(batch.Records))
	}
}

// TestXerialFraming checks the framing of the snappy stream we write: the
// snappy-java magic, version 1, compatible version 1, then 32 KiB blocks.
func TestXerialFraming(t *testing.T) {
	var b Builder
	p := DefaultParams()
	p.Attributes = p.Attributes.WithCompression(CompressionSnappy)
	b.Reset(nil, p)
	for range 50 {
		b.Append(100, nil, bytes.Repeat([]byte("abc"), 400), nil)
	}
	enc, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	body := enc[HeaderSize:]
	want := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	if !bytes.HasPrefix(body, want) {
		t.Fatalf("snappy stream starts %x, want %x", body[:16], want)
	}
	blocks, total := 0, 0
	for p := body[16:]; len(p) > 0; blocks++ {
		n := int(p[0])<<24 | int(p[1])<<16 | int(p[2])<<8 | int(p[3])
		dec, err := snappy.Decode(nil, p[4:4+n])
		if err != nil {
			t.Fatal(err)
		}
		if len(dec) > 32<<10 {
			t.Fatalf("block of %d bytes exceeds 32 KiB", len(dec))
		}
		total += len(dec)
		p = p[4+n:]
	}
	if blocks < 2 || total != len(uncompressedOf(t, enc)) {
		t.Fatalf("%d blocks, %d bytes", blocks, total)
	}
}

// uncompressedOf re-encodes a compressed batch without compression and
// returns its records section.
func uncompressedOf(t *testing.T, enc []byte) []byte {
	t.Helper()
	batch, err := Parse(enc)
	if err != nil {
		t.Fatal(err)
	}
	h := batch.Header
	h.Attributes = h.Attributes.WithCompression(CompressionNone)
	var b Builder
	out, err := b.Encode(nil, &h, batch.Records)
	if err != nil {
		t.Fatal(err)
	}
	return out[HeaderSize:]
}

// TestDecoderReuseAcrossCodecs decodes batches of every codec with one
// Decoder, in turn, twice.
func TestDecoderReuseAcrossCodecs(t *testing.T) {
	var d Decoder
	var b Builder
	for round := range 2 {
		for c := CompressionNone; c <= CompressionZstd; c++ {
			p := DefaultParams()
			p.Attributes = p.Attributes.WithCompression(c)
			b.Reset(nil, p)
			for i := range 10 {
				b.Append(int64(i), []byte{byte(round)}, bytes.Repeat([]byte{byte(c)}, 100*i), nil)
			}
			enc, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			batch, err := d.Decode(enc)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if batch.Compression() != c || len(batch.Records) != 10 || batch.Records[9].Key[0] != byte(round) ||
				!bytes.Equal(batch.Records[9].Value, bytes.Repeat([]byte{byte(c)}, 900)) || batch.MaxTimestamp != 9 {
				t.Fatalf("%s round %d: wrong batch", c, round)
			}
		}
	}
}

// TestLZ4FrameDescriptor checks that our LZ4 frames carry the descriptor
// Kafka's KafkaLZ4BlockOutputStream writes: magic 0x184D2204, FLG 0x60
// (version 1, independent blocks, no block or content checksum, no content
// size) and BD 0x40 (64 KiB blocks).
func TestLZ4FrameDescriptor(t *testing.T) {
	var b Builder
	p := DefaultParams()
	p.Attributes = p.Attributes.WithCompression(CompressionLZ4)
	b.Reset(nil, p)
	b.Append(1, nil, bytes.Repeat([]byte("lz4"), 100), nil)
	enc, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := enc[HeaderSize:HeaderSize+6], []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40}; !bytes.Equal(got, want) {
		t.Fatalf("lz4 frame starts %x, want %x", got, want)
	}
}
