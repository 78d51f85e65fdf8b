package recordbatch

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
)

// hx decodes hex written with spaces, newlines and "|" separators.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// withCRC writes the CRC-32C of b[21:] into b[17:21], computed here with
// hash/crc32 independently of the package under test.
func withCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// noOpBatch is a data batch at offset 5, epoch 3, timestamp 1700000000000
// (0x18bcfe56800) holding one record whose value is the framed NoOpRecord.
func noOpBatch(t testing.TB) []byte {
	return withCRC(hx(t, `
		00 00 00 00 00 00 00 05 | 00 00 00 3c | 00 00 00 03 | 02 | 00 00 00 00
		00 00 | 00 00 00 00 | 00 00 01 8b cf e5 68 00 | 00 00 01 8b cf e5 68 00
		ff ff ff ff ff ff ff ff | ff ff | ff ff ff ff | 00 00 00 01
		14 | 00 | 00 | 00 | 01 | 08 | 01 14 00 00 | 00`))
	// record: length 10 (zig-zag 0x14), attributes 0, timestamp delta 0,
	// offset delta 0, key null (-1 = 0x01), value length 4 (0x08),
	// NoOpRecord frame (version 1, api key 20, record version 0, no
	// tagged fields), 0 headers. BatchLength = 49 + 11 = 60.
}

var noOpValue = []byte{0x01, 0x14, 0x00, 0x00}

// leaderChangeValue is a LeaderChange (LeaderChangeMessage.json, version 0)
// for leader 1, voters {1,2,3}, granting {1,2}.
func leaderChangeValue(t testing.TB) []byte {
	return hx(t, `0000 00000001 04 00000001 00 00000002 00 00000003 00 03 00000001 00 00000002 00 00`)
}

// leaderChangeBatch is a control batch at offset 0, epoch 7, timestamp
// 0x18bcfe56800 with that record under key 00 00 00 02.
func leaderChangeBatch(t testing.TB) []byte {
	return withCRC(hx(t, `
		00 00 00 00 00 00 00 00 | 00 00 00 5e | 00 00 00 07 | 02 | 00 00 00 00
		00 20 | 00 00 00 00 | 00 00 01 8b cf e5 68 00 | 00 00 01 8b cf e5 68 00
		ff ff ff ff ff ff ff ff | ff ff | ff ff ff ff | 00 00 00 01
		58 | 00 | 00 | 00 | 08 | 00 00 00 02 | 44
		0000 00000001 04 00000001 00 00000002 00 00000003 00 03 00000001 00 00000002 00 00
		00`))
	// record body: 1+1+1+1+4+1+34+1 = 44 (0x58); value length 34 (0x44);
	// BatchLength = 49 + 45 = 94 (0x5e); attributes 0x20 = control.
}

// dirID is the directory id of the kafka41 sample's voter 1
// (K4WGSctTSGGjZPak68seiQ).
const dirID = "2b858649cb534861a364f6a4ebcb1e89"

// votersValue is a VotersRecord v0 built from VotersRecord.json: version 0,
// one voter (id 1, directory id, endpoint CONTROLLER localhost:9093,
// kraft.version 0..1), all tagged-field sections empty.
func votersValue(t testing.TB) []byte {
	return hx(t, `
		00 00 | 02 | 00 00 00 01 | `+dirID+` | 02
		0b 434f4e54524f4c4c4552 | 0a 6c6f63616c686f7374 | 23 85 | 00
		00 00 | 00 01 | 00
		00
		00`)
	// Version int16; compact array of 1 voter (0x02); VoterId; uuid;
	// compact array of 1 endpoint; Name "CONTROLLER" (10+1); Host
	// "localhost" (9+1); Port 9093 = 0x2385; endpoint tags; feature
	// min 0, max 1, struct tags; voter tags; record tags. 55 bytes.
}

func votersBatch(t testing.TB) []byte {
	return withCRC(hx(t, `
		00 00 00 00 00 00 00 00 | 00 00 00 74 | 00 00 00 01 | 02 | 00 00 00 00
		00 20 | 00 00 00 00 | 00 00 01 8b cf e5 68 00 | 00 00 01 8b cf e5 68 00
		ff ff ff ff ff ff ff ff | ff ff | ff ff ff ff | 00 00 00 01
		82 01 | 00 | 00 | 00 | 08 | 00 00 00 06 | 6e`+
		hex.EncodeToString(votersValue(t))+`
		00`))
	// record body 1+1+1+1+4+1+55+1 = 65, zig-zag 130 = 0x82 0x01; value
	// length 55 = 0x6e; BatchLength = 49 + 67 = 116 (0x74).
}

const goldenTS = 0x18bcfe56800

func TestGoldenNoOpDataBatch(t *testing.T) {
	want := noOpBatch(t)
	var b Builder
	p := DefaultParams()
	p.BaseOffset, p.PartitionLeaderEpoch = 5, 3
	b.Reset(nil, p)
	b.Append(goldenTS, nil, noOpValue, nil)
	got, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Builder output differs from hand-built batch\n got %x\nwant %x", got, want)
	}
	batch, err := Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	if batch.BaseOffset != 5 || batch.PartitionLeaderEpoch != 3 || batch.NumRecords != 1 || batch.LastOffset() != 5 ||
		batch.IsControl() || batch.Compression() != CompressionNone || batch.BaseTimestamp != goldenTS || batch.MaxTimestamp != goldenTS ||
		batch.ProducerID != -1 || batch.ProducerEpoch != -1 || batch.BaseSequence != -1 {
		t.Errorf("Parse header = %+v", batch.Header)
	}
	r := batch.Records[0]
	if r.Key != nil || !bytes.Equal(r.Value, noOpValue) || r.Headers != nil || r.OffsetDelta != 0 || r.TimestampDelta != 0 {
		t.Errorf("Parse record = %+v", r)
	}
}

func TestGoldenLeaderChangeControlBatch(t *testing.T) {
	want := leaderChangeBatch(t)
	p := DefaultParams()
	p.PartitionLeaderEpoch = 7
	got, err := AppendControlBatch(nil, p, goldenTS, KeyValue{Key: []byte{0, 0, 0, 2}, Value: leaderChangeValue(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("control batch differs\n got %x\nwant %x", got, want)
	}
	batch, err := Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	if !batch.IsControl() || len(batch.Records) != 1 || !bytes.Equal(batch.Records[0].Key, []byte{0, 0, 0, 2}) ||
		!bytes.Equal(batch.Records[0].Value, leaderChangeValue(t)) {
		t.Errorf("Parse = %+v", batch)
	}
}

func TestGoldenVotersControlBatch(t *testing.T) {
	want := votersBatch(t)
	if len(votersValue(t)) != 55 {
		t.Fatalf("hand-built VotersRecord is %d bytes, want 55", len(votersValue(t)))
	}
	var b Builder
	p := DefaultParams()
	p.PartitionLeaderEpoch, p.Attributes = 1, AttrControl
	b.Reset(nil, p)
	b.Append(goldenTS, []byte{0, 0, 0, 6}, votersValue(t), nil)
	got, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("control batch differs\n got %x\nwant %x", got, want)
	}
	if _, err := Validate(want); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenKafkaBootstrapSnapshotHeaderBatch rebuilds, from hand-written
// record values, the first batch of the 0-0 bootstrap snapshot written by
// Kafka 4.1 (SnapshotHeader, KRaftVersion 1, Voters) and compares it with
// Kafka's bytes.
func TestGoldenKafkaBootstrapSnapshotHeaderBatch(t *testing.T) {
	dir := sharedtest.Dir(t, "kafka-samples")
	file, err := os.ReadFile(filepath.Join(dir, "kafka41-dynamic-bootstrap-nolog", "__cluster_metadata-0", "00000000000000000000-0000000000.checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	const ts = 0x0199d7955c0f
	got, err := AppendControlBatch(nil, DefaultParams(), ts,
		KeyValue{Key: hx(t, "0000 0003"), Value: hx(t, "0000 0000 0199 d795 5bfc 00")}, // SnapshotHeader
		KeyValue{Key: hx(t, "0000 0005"), Value: hx(t, "0000 0001 00")},                // KRaftVersion 1
		KeyValue{Key: hx(t, "0000 0006"), Value: votersValue(t)},                       // Voters
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(file) < len(got) || !bytes.Equal(file[:len(got)], got) {
		t.Fatalf("rebuilt batch differs from Kafka's\n got %x\nwant %x", got, file[:min(len(got), len(file))])
	}
}

// TestUncompressedRecordsAliasTheInput checks the zero-copy contract: keys
// and values of an uncompressed batch point into the input, with capacity
// capped so that appending to one cannot overwrite the next field.
func TestUncompressedRecordsAliasTheInput(t *testing.T) {
	in := leaderChangeBatch(t)
	batch, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	r := batch.Records[0]
	keyAt := HeaderSize + 5 // length, attributes, ts delta, offset delta, key length
	if &r.Key[0] != &in[keyAt] || &r.Value[0] != &in[keyAt+5] || &batch.Raw[0] != &in[0] {
		t.Fatalf("records do not alias the input")
	}
	if cap(r.Key) != len(r.Key) || cap(r.Value) != len(r.Value) {
		t.Fatalf("capacities %d/%d not capped at lengths %d/%d", cap(r.Key), cap(r.Value), len(r.Key), len(r.Value))
	}
	_ = append(r.Key, 0xee)
	if !bytes.Equal(in, leaderChangeBatch(t)) {
		t.Fatalf("appending to a decoded key modified the input")
	}
}

func TestRecordOffsetAndTimestamp(t *testing.T) {
	var b Builder
	p := DefaultParams()
	p.BaseOffset = 100
	b.Reset(nil, p)
	b.Append(1000, nil, nil, nil)
	b.Append(900, nil, nil, nil)
	b.Append(1500, nil, nil, nil)
	enc, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	batch, err := Parse(enc)
	if err != nil {
		t.Fatal(err)
	}
	if batch.BaseTimestamp != 1000 || batch.MaxTimestamp != 1500 {
		t.Fatalf("timestamps %d %d, want 1000 1500", batch.BaseTimestamp, batch.MaxTimestamp)
	}
	for i, want := range []int64{1000, 900, 1500} {
		r := &batch.Records[i]
		if got := batch.RecordTimestamp(r); got != want {
			t.Errorf("record %d timestamp = %d, want %d", i, got, want)
		}
		if got := batch.RecordOffset(r); got != 100+int64(i) {
			t.Errorf("record %d offset = %d, want %d", i, got, 100+i)
		}
	}
	batch.Attributes |= AttrLogAppendTime
	if got := batch.RecordTimestamp(&batch.Records[1]); got != 1500 {
		t.Errorf("LogAppendTime record timestamp = %d, want MaxTimestamp 1500", got)
	}
}
