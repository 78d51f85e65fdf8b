package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// rawBatch hand-assembles a batch around already encoded records, with
// the given count and attributes, and a correct CRC (computed by the
// test's own withCRC).
func rawBatch(count int32, attrs uint16, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	binary.BigEndian.PutUint64(b[0:], 42)
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(records)))
	binary.BigEndian.PutUint32(b[12:], 1)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint32(b[23:], 0)
	for i := 43; i < 57; i++ {
		b[i] = 0xff
	}
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	return withCRC(append(b, records...))
}

// wantErr checks that err is an *Error with the reason (via errors.Is and
// errors.As) and, when pos >= 0, the position.
func wantErr(t *testing.T, err error, reason Reason, pos int64) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", reason)
	}
	if !errors.Is(err, reason) {
		t.Fatalf("got %v, want reason %v", err, reason)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T, want *Error", err)
	}
	if pos >= 0 && e.Pos != pos {
		t.Fatalf("got position %d, want %d (%v)", e.Pos, pos, err)
	}
	if !strings.Contains(err.Error(), reason.String()) || !strings.HasPrefix(err.Error(), "recordbatch: ") {
		t.Fatalf("message %q does not name the reason", err)
	}
}

func TestTruncatedAtEveryBytePosition(t *testing.T) {
	for name, full := range map[string][]byte{"noop": noOpBatch(t), "leader change": leaderChangeBatch(t), "voters": votersBatch(t)} {
		t.Run(name, func(t *testing.T) {
			for k := range len(full) {
				_, err := Parse(full[:k])
				wantErr(t, err, ReasonTruncated, int64(k))
				var e *Error
				errors.As(err, &e)
				if wantBase := baseOffsetOf(full); (k >= 8 && e.BaseOffset != wantBase) || (k < 8 && e.BaseOffset != -1) {
					t.Fatalf("prefix %d: base offset %d", k, e.BaseOffset)
				}
				if _, err := Validate(full[:k]); !errors.Is(err, ReasonTruncated) {
					t.Fatalf("Validate(prefix %d) = %v, want truncated", k, err)
				}
				// The same torn batch after a valid one: the iterator
				// yields the first, then reports the position in the
				// whole input.
				in := append(append([]byte{}, full...), full[:k]...)
				it := NewIterator(nil, in)
				n := 0
				for it.Next() {
					n++
				}
				if k == 0 {
					if n != 1 || it.Err() != nil {
						t.Fatalf("iterator over one batch: %d batches, err %v", n, it.Err())
					}
					continue
				}
				if n != 1 || it.Offset() != len(full) {
					t.Fatalf("iterator: %d batches, offset %d", n, it.Offset())
				}
				wantErr(t, it.Err(), ReasonTruncated, int64(len(full)+k))
			}
		})
	}
}

func TestFlippedBytesFailTheCRC(t *testing.T) {
	full := leaderChangeBatch(t)
	for i := offCRC; i < len(full); i++ {
		b := bytes.Clone(full)
		b[i] ^= 0x10
		_, err := Parse(b)
		wantErr(t, err, ReasonCRCMismatch, offCRC)
		if _, err := Validate(b); !errors.Is(err, ReasonCRCMismatch) {
			t.Fatalf("Validate with byte %d flipped = %v", i, err)
		}
	}
	// Bytes outside the CRC do not fail it.
	b := bytes.Clone(full)
	b[0] ^= 0x01
	b[13] ^= 0x01
	if _, err := Parse(b); err != nil {
		t.Fatalf("flipping base offset and epoch: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	// A valid record: length 7, attrs 0, ts 0, off 0, key null, value
	// "x", 0 headers.
	rec := []byte{0x0e, 0x00, 0x00, 0x00, 0x01, 0x02, 'x', 0x00}
	withLength := func(n int32) []byte {
		b := rawBatch(1, 0, rec)
		binary.BigEndian.PutUint32(b[8:], uint32(n))
		return b
	}
	withMagic := func(m byte) []byte {
		b := rawBatch(1, 0, rec)
		b[16] = m
		return b
	}
	cases := []struct {
		name   string
		in     []byte
		reason Reason
		pos    int64 // -1: not checked
	}{
		{"negative length", withLength(-1), ReasonLengthOutOfBounds, 8},
		{"zero length", withLength(0), ReasonLengthOutOfBounds, 8},
		{"length one below header", withLength(48), ReasonLengthOutOfBounds, 8},
		{"length past input", withLength(49 + int32(len(rec)) + 1), ReasonTruncated, int64(HeaderSize + len(rec))},
		{"max int32 length", withLength(1<<31 - 1), ReasonTruncated, -1},
		{"magic 0", withMagic(0), ReasonBadMagic, offMagic},
		{"magic 1", withMagic(1), ReasonBadMagic, offMagic},
		{"magic 3", withMagic(3), ReasonBadMagic, offMagic},
		{"count 0 with a record", rawBatch(0, 0, rec), ReasonRecordCountMismatch, HeaderSize},
		{"count 2 with one record", rawBatch(2, 0, rec), ReasonRecordCountMismatch, -1},
		{"count 2 with one record and padding", rawBatch(2, 0, append(bytes.Clone(rec), make([]byte, 14)...)), ReasonBadRecord, int64(HeaderSize + len(rec))},
		{"negative count", rawBatch(-1, 0, rec), ReasonRecordCountMismatch, offRecordsCount},
		{"count 2^31-1 with 8 bytes", rawBatch(1<<31-1, 0, rec), ReasonRecordCountMismatch, offRecordsCount},
		{"count 2 in 8 bytes", rawBatch(2, 0, rec), ReasonRecordCountMismatch, -1},
		{"non-minimal record length", rawBatch(1, 0, []byte{0x8e, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 'x', 0x00}), ReasonBadVarint, HeaderSize},
		{"unterminated varint", rawBatch(1, 0, []byte{0x0e, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), ReasonBadRecord, -1},
		{"overlong timestamp varlong", rawBatch(1, 0, []byte{0x1c, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x01, 0x01, 0x00}), ReasonBadVarint, HeaderSize + 2},
		{"offset delta overflows int32", rawBatch(1, 0, []byte{0x12, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01, 0x01, 0x00}), ReasonBadVarint, HeaderSize + 3},
		{"record length below minimum", rawBatch(1, 0, []byte{0x0a, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00}), ReasonBadRecord, HeaderSize},
		{"negative record length", rawBatch(1, 0, []byte{0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00}), ReasonBadRecord, HeaderSize},
		{"record length past section", rawBatch(1, 0, []byte{0x10, 0x00, 0x00, 0x00, 0x01, 0x02, 'x', 0x00}), ReasonBadRecord, HeaderSize},
		{"record length longer than fields", rawBatch(1, 0, []byte{0x10, 0x00, 0x00, 0x00, 0x01, 0x02, 'x', 0x00, 0x00}), ReasonBadRecord, HeaderSize + 8},
		{"key length -2", rawBatch(1, 0, []byte{0x0e, 0x00, 0x00, 0x00, 0x03, 0x02, 'x', 0x00}), ReasonBadRecord, HeaderSize + 4},
		{"value length past record", rawBatch(1, 0, []byte{0x0e, 0x00, 0x00, 0x00, 0x01, 0x06, 'x', 0x00}), ReasonBadRecord, HeaderSize + 5},
		{"negative header count", rawBatch(1, 0, []byte{0x0e, 0x00, 0x00, 0x00, 0x01, 0x02, 'x', 0x01}), ReasonBadRecord, HeaderSize + 7},
		{"header count over bytes", rawBatch(1, 0, []byte{0x12, 0x00, 0x00, 0x00, 0x01, 0x02, 'x', 0x06, 0x00, 0x01}), ReasonBadRecord, HeaderSize + 7},
		{"null header key", rawBatch(1, 0, []byte{0x12, 0x00, 0x00, 0x00, 0x01, 0x02, 'x', 0x02, 0x01, 0x01}), ReasonBadRecord, HeaderSize + 8},
		{"unknown codec 5", rawBatch(1, 5, rec), ReasonBadCompression, offAttributes},
		{"unknown codec 7", rawBatch(1, 7, rec), ReasonBadCompression, offAttributes},
		{"gzip garbage", rawBatch(1, uint16(CompressionGzip), rec), ReasonBadCompression, HeaderSize},
		{"snappy garbage", rawBatch(1, uint16(CompressionSnappy), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), ReasonBadCompression, HeaderSize},
		{"lz4 garbage", rawBatch(1, uint16(CompressionLZ4), rec), ReasonBadCompression, HeaderSize},
		{"zstd garbage", rawBatch(1, uint16(CompressionZstd), rec), ReasonBadCompression, HeaderSize},
		{"truncated xerial block", rawBatch(1, uint16(CompressionSnappy), append(append(xerialMagic[:], 0, 0, 0, 1, 0, 0, 0, 1), 0, 0, 0, 9, 1)), ReasonBadCompression, HeaderSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			wantErr(t, err, tc.reason, tc.pos)
		})
	}
}

func TestDecompressionBombIsTooLarge(t *testing.T) {
	for _, codec := range []Compression{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			var b Builder
			p := DefaultParams()
			p.Attributes = p.Attributes.WithCompression(codec)
			b.Reset(nil, p)
			big := make([]byte, 200<<10) // compresses to almost nothing
			b.Append(1, nil, big, nil)
			enc, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			d := Decoder{MaxDecompressedSize: 100 << 10}
			_, err = d.Decode(enc)
			wantErr(t, err, ReasonTooLarge, HeaderSize)
			d.MaxDecompressedSize = 300 << 10
			batch, err := d.Decode(enc)
			if err != nil || !bytes.Equal(batch.Records[0].Value, big) {
				t.Fatalf("with a sufficient limit: %v", err)
			}
		})
	}
}

func TestHugeCountDoesNotAllocate(t *testing.T) {
	// RecordsCount 2^31-1 with 10 bytes of records: sizing the record
	// slice by the count would allocate about 190 GB.
	in := rawBatch(1<<31-1, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	var d Decoder
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	for range 20 {
		if _, err := d.Decode(in); !errors.Is(err, ReasonRecordCountMismatch) {
			t.Fatalf("got %v", err)
		}
	}
	runtime.ReadMemStats(&ms)
	// Only the *Error and its message are allocated.
	if got := ms.TotalAlloc - before; got > 20*1024 {
		t.Errorf("20 decodes of a forged count allocated %d bytes", got)
	}
}

func TestHeaderHelpers(t *testing.T) {
	full := leaderChangeBatch(t)
	n, err := TotalSize(full[:12])
	if err != nil || n != len(full) {
		t.Fatalf("TotalSize = %d, %v; want %d", n, err, len(full))
	}
	_, err = TotalSize(full[:11])
	wantErr(t, err, ReasonTruncated, 11)
	h, err := PeekHeader(full[:HeaderSize])
	if err != nil || h.NumRecords != 1 || !h.IsControl() || h.PartitionLeaderEpoch != 7 || h.Size() != len(full) {
		t.Fatalf("PeekHeader = %+v, %v", h, err)
	}
	_, err = PeekHeader(full[:HeaderSize-1])
	wantErr(t, err, ReasonTruncated, HeaderSize-1)
	bad := bytes.Clone(full)
	bad[offMagic] = 1
	_, err = PeekHeader(bad)
	wantErr(t, err, ReasonBadMagic, offMagic)
	if err := Stamp(full[:20], 1, 1); !errors.Is(err, ReasonTruncated) {
		t.Fatalf("Stamp on 20 bytes = %v", err)
	}
}

func TestStampKeepsTheCRCValid(t *testing.T) {
	var in []byte
	in = append(in, noOpBatch(t)...)         // 1 record
	in = append(in, leaderChangeBatch(t)...) // 1 record
	var b Builder
	b.Reset(in, DefaultParams())
	for i := range 3 {
		b.Append(int64(i), nil, noOpValue, nil)
	}
	in, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	next, err := StampAll(in, 1000, 9)
	if err != nil || next != 1005 {
		t.Fatalf("StampAll = %d, %v; want 1005", next, err)
	}
	it := NewIterator(nil, in)
	want := []int64{1000, 1001, 1002}
	for i := 0; it.Next(); i++ {
		if got := it.Batch().BaseOffset; got != want[i] || it.Batch().PartitionLeaderEpoch != 9 {
			t.Errorf("batch %d: base offset %d epoch %d", i, got, it.Batch().PartitionLeaderEpoch)
		}
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	one := noOpBatch(t)
	if err := Stamp(one, -7, 12); err != nil {
		t.Fatal(err)
	}
	if h, err := Validate(one); err != nil || h.BaseOffset != -7 || h.PartitionLeaderEpoch != 12 {
		t.Fatalf("after Stamp: %+v, %v", h, err)
	}
	if _, err := StampAll(in[:len(in)-1], 0, 0); !errors.Is(err, ReasonTruncated) {
		t.Fatalf("StampAll of a torn input = %v", err)
	}
}
