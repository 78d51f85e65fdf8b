package recordbatch

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// genBytes draws nil (null), empty or random bytes.
func genBytes(t *rapid.T, label string) []byte {
	switch rapid.IntRange(0, 3).Draw(t, label+"Kind") {
	case 0:
		return nil
	case 1:
		return []byte{}
	default:
		return rapid.SliceOfN(rapid.Byte(), 1, 300).Draw(t, label)
	}
}

type inRecord struct {
	ts         int64
	key, value []byte
	headers    []RecordHeader
}

func genRecords(t *rapid.T) []inRecord {
	n := rapid.IntRange(0, 20).Draw(t, "records")
	base := rapid.Int64Range(-1<<50, 1<<50).Draw(t, "baseTimestamp")
	recs := make([]inRecord, n)
	for i := range recs {
		recs[i].ts = base + rapid.Int64Range(-1<<40, 1<<40).Draw(t, "tsDelta")
		recs[i].key = genBytes(t, "key")
		recs[i].value = genBytes(t, "value")
		for range rapid.IntRange(0, 3).Draw(t, "headers") {
			recs[i].headers = append(recs[i].headers, RecordHeader{
				Key:   rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "headerKey"),
				Value: genBytes(t, "headerValue"),
			})
		}
	}
	return recs
}

// sameBytes compares contents and null-ness.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func TestRoundTripProperty(t *testing.T) {
	var b Builder // reused across runs to exercise Reset
	var d Decoder
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		p := DefaultParams()
		p.BaseOffset = rapid.Int64Range(0, 1<<62).Draw(t, "baseOffset")
		p.PartitionLeaderEpoch = rapid.Int32Range(-1, 1<<30).Draw(t, "epoch")
		codec := Compression(rapid.IntRange(0, 4).Draw(t, "codec"))
		p.Attributes = p.Attributes.WithCompression(codec)
		if rapid.Bool().Draw(t, "control") {
			p.Attributes |= AttrControl
		}
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 10).Draw(t, "prefix")
		b.Reset(bytes.Clone(prefix), p)
		for _, r := range recs {
			b.Append(r.ts, r.key, r.value, r.headers)
		}
		out, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[:len(prefix)], prefix) {
			t.Fatalf("Finish changed the caller's prefix")
		}
		enc := out[len(prefix):]
		batch, err := d.Decode(enc)
		if err != nil {
			t.Fatalf("decode own batch: %v", err)
		}
		h := batch.Header
		if h.Size() != len(enc) || h.BaseOffset != p.BaseOffset || h.PartitionLeaderEpoch != p.PartitionLeaderEpoch ||
			h.Attributes != p.Attributes || h.Compression() != codec || h.IsControl() != p.Attributes.Control() ||
			h.NumRecords != int32(len(recs)) || h.LastOffsetDelta != int32(len(recs)-1) ||
			h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 || h.Magic != 2 {
			t.Fatalf("header %+v for params %+v and %d records", h, p, len(recs))
		}
		if len(recs) == 0 {
			if h.BaseTimestamp != -1 || h.MaxTimestamp != -1 {
				t.Fatalf("empty batch timestamps %d %d", h.BaseTimestamp, h.MaxTimestamp)
			}
		} else {
			maxTS := recs[0].ts
			for _, r := range recs {
				maxTS = max(maxTS, r.ts)
			}
			if h.BaseTimestamp != recs[0].ts || h.MaxTimestamp != maxTS {
				t.Fatalf("timestamps %d %d, want %d %d", h.BaseTimestamp, h.MaxTimestamp, recs[0].ts, maxTS)
			}
		}
		for i, r := range batch.Records {
			in := recs[i]
			if r.OffsetDelta != int32(i) || r.TimestampDelta != in.ts-recs[0].ts || r.Attributes != 0 ||
				!sameBytes(r.Key, in.key) || !sameBytes(r.Value, in.value) || len(r.Headers) != len(in.headers) {
				t.Fatalf("record %d = %+v, want %+v", i, r, in)
			}
			for j, hd := range r.Headers {
				if !bytes.Equal(hd.Key, in.headers[j].Key) || hd.Key == nil || !sameBytes(hd.Value, in.headers[j].Value) {
					t.Fatalf("record %d header %d = %+v, want %+v", i, j, hd, in.headers[j])
				}
			}
		}
		// Re-encoding the decoded batch gives the same bytes (the
		// compressors are deterministic for equal input).
		var b2 Builder
		again, err := b2.Encode(nil, &batch.Header, batch.Records)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, enc) {
			t.Fatalf("re-encode differs\n got %x\nwant %x", again, enc)
		}
		// franz-go reads the same header, and the same records when
		// they are not compressed.
		checkWithKmsg(t, enc, &batch)
	})
}

// checkWithKmsg decodes enc with kmsg and compares it with ours.
func checkWithKmsg(t interface{ Fatalf(string, ...any) }, enc []byte, batch *Batch) {
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(enc); err != nil {
		t.Fatalf("kmsg: %v", err)
	}
	h := batch.Header
	if kb.FirstOffset != h.BaseOffset || kb.Length != h.BatchLength || kb.PartitionLeaderEpoch != h.PartitionLeaderEpoch ||
		kb.Magic != h.Magic || uint32(kb.CRC) != h.CRC || kb.Attributes != int16(h.Attributes) ||
		kb.LastOffsetDelta != h.LastOffsetDelta || kb.FirstTimestamp != h.BaseTimestamp || kb.MaxTimestamp != h.MaxTimestamp ||
		kb.ProducerID != h.ProducerID || kb.ProducerEpoch != h.ProducerEpoch || kb.FirstSequence != h.BaseSequence ||
		kb.NumRecords != h.NumRecords {
		t.Fatalf("kmsg header %+v, ours %+v", kb, h)
	}
	if crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)) != uint32(kb.CRC) {
		t.Fatalf("CRC of kmsg's view does not match")
	}
	if h.Compression() != CompressionNone {
		return
	}
	p := kb.Records
	for i := range int(kb.NumRecords) {
		length, n := binary.Varint(p)
		if n <= 0 || int(length)+n > len(p) {
			t.Fatalf("kmsg record %d: bad length", i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(p[:n+int(length)]); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		p = p[n+int(length):]
		r := batch.Records[i]
		if int64(kr.Attributes) != int64(r.Attributes) || kr.TimestampDelta64 != r.TimestampDelta || kr.OffsetDelta != r.OffsetDelta ||
			!sameBytes(kr.Key, r.Key) || !sameBytes(kr.Value, r.Value) || len(kr.Headers) != len(r.Headers) {
			t.Fatalf("kmsg record %d = %+v, ours %+v", i, kr, r)
		}
		for j := range kr.Headers {
			if kr.Headers[j].Key != string(r.Headers[j].Key) || !sameBytes(kr.Headers[j].Value, r.Headers[j].Value) {
				t.Fatalf("kmsg record %d header %d = %+v, ours %+v", i, j, kr.Headers[j], r.Headers[j])
			}
		}
	}
	if len(p) != 0 {
		t.Fatalf("kmsg: %d bytes after the records", len(p))
	}
}

// TestDecodeKmsgBatches builds batches with kmsg (records with arbitrary
// deltas and attributes, CRC computed here) and checks that we decode
// every field.
func TestDecodeKmsgBatches(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 10).Draw(t, "records")
		var recs []byte
		var want []kmsg.Record
		for i := range n {
			kr := kmsg.NewRecord()
			kr.Attributes = rapid.Int8().Draw(t, "attrs")
			kr.TimestampDelta64 = rapid.Int64Range(-1<<40, 1<<40).Draw(t, "tsDelta")
			kr.OffsetDelta = int32(i * rapid.IntRange(1, 3).Draw(t, "gap"))
			kr.Key = genBytes(t, "key")
			kr.Value = genBytes(t, "value")
			for range rapid.IntRange(0, 2).Draw(t, "headers") {
				kr.Headers = append(kr.Headers, kmsg.Header{Key: rapid.StringN(0, 10, -1).Draw(t, "hk"), Value: genBytes(t, "hv")})
			}
			// kmsg leaves Length to the caller: the size of the rest.
			body := kr.AppendTo(nil)
			kr.Length = int32(len(body) - 1) // Length 0 encodes in one byte
			for {
				body = kr.AppendTo(nil)
				_, ln := binary.Varint(body)
				if int(kr.Length) == len(body)-ln {
					break
				}
				kr.Length = int32(len(body) - ln)
			}
			recs = append(recs, body...)
			want = append(want, kr)
		}
		kb := kmsg.NewRecordBatch()
		kb.FirstOffset = rapid.Int64().Draw(t, "base")
		kb.PartitionLeaderEpoch = rapid.Int32().Draw(t, "epoch")
		kb.Magic = 2
		kb.Attributes = int16(rapid.IntRange(0, 0x7f).Draw(t, "battrs")) &^ 0x07 // uncompressed
		kb.LastOffsetDelta = rapid.Int32().Draw(t, "lod")
		kb.FirstTimestamp = rapid.Int64().Draw(t, "bts")
		kb.MaxTimestamp = rapid.Int64().Draw(t, "mts")
		kb.ProducerID = rapid.Int64().Draw(t, "pid")
		kb.ProducerEpoch = rapid.Int16().Draw(t, "pe")
		kb.FirstSequence = rapid.Int32().Draw(t, "seq")
		kb.NumRecords = int32(n)
		kb.Records = recs
		kb.Length = int32(49 + len(recs))
		enc := kb.AppendTo(nil)
		kb.CRC = int32(crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
		enc = kb.AppendTo(nil)

		batch, err := Parse(enc)
		if err != nil {
			t.Fatalf("decode kmsg batch: %v", err)
		}
		checkWithKmsg(t, enc, &batch)
		for i := range want {
			if !sameBytes(batch.Records[i].Key, want[i].Key) || batch.Records[i].OffsetDelta != want[i].OffsetDelta {
				t.Fatalf("record %d differs", i)
			}
		}
		var b Builder
		again, err := b.Encode(nil, &batch.Header, batch.Records)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("re-encode of kmsg batch differs (%v)\n got %x\nwant %x", err, again, enc)
		}
	})
}
