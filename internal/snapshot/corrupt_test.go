package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// smallSnapshot returns a complete snapshot with a kraft.version header,
// three records in two data batches, and its id.
func smallSnapshot(t *testing.T) ([]byte, kraft.OffsetAndEpoch) {
	t.Helper()
	id := kraft.OffsetAndEpoch{Offset: 42, Epoch: 5}
	h := Header{LastContainedLogTimestamp: 99, KRaftVersion: 1, Voters: testVoters()}
	return writeSnapshot(t, vfs.NewMem(), "/d", id, h, testValues(3), 2, WriterOptions{MaxBatchRecords: 2}), id
}

func openBytes(t *testing.T, name string, data []byte, o ReadOptions) (*Reader, error) {
	t.Helper()
	m := vfs.NewMem()
	writeFile(t, m, "/d/"+name, data)
	r, err := Open(m, "/d/"+name, o)
	checkStreamAgrees(t, m, "/d/"+name, o, r, err)
	if err == nil {
		// Iterating a verified file must not fail.
		for r.Next() {
		}
		if r.Err() != nil {
			t.Fatalf("Next after a successful Open: %v", r.Err())
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return r, err
}

// TestEveryBitFlipIsDetected flips each bit of a small snapshot in turn:
// Open must refuse every one of them with a *CorruptError. The CRC covers
// bytes 21 on of each batch; the rest of the header is covered by the
// offset, length, epoch and magic checks.
func TestEveryBitFlipIsDetected(t *testing.T) {
	data, id := smallSnapshot(t)
	if _, err := openBytes(t, FileName(id), data, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range data {
		for bit := range 8 {
			c := append([]byte(nil), data...)
			c[i] ^= 1 << bit
			_, err := openBytes(t, FileName(id), c, ReadOptions{})
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip of bit %d at byte %d: Open = %v, want a *CorruptError", bit, i, err)
			}
			if ce.Path != "/d/"+FileName(id) || ce.Pos < 0 || ce.Pos > int64(len(data)) {
				t.Fatalf("flip at byte %d: error names %q at %d", i, ce.Path, ce.Pos)
			}
		}
	}
}

// TestEveryTruncationIsDetected cuts a small snapshot at every length and
// appends garbage after it: a torn snapshot is an error, never a partial
// load.
func TestEveryTruncationIsDetected(t *testing.T) {
	data, id := smallSnapshot(t)
	for n := range len(data) {
		_, err := openBytes(t, FileName(id), data[:n], ReadOptions{})
		if !errors.Is(err, ErrTruncated) || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: Open = %v, want ErrTruncated", n, len(data), err)
		}
	}
	for _, tail := range [][]byte{{0}, make([]byte, 12), data[:83]} {
		_, err := openBytes(t, FileName(id), append(append([]byte(nil), data...), tail...), ReadOptions{})
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Pos != int64(len(data)) {
			t.Errorf("%d bytes after the footer: Open = %v, want a *CorruptError at %d", len(tail), err, len(data))
		}
	}
}

// Builders of hand-made snapshot files for the structural checks.

func ctlBatch(t *testing.T, off int64, epoch int32, msgs ...control.Message) []byte {
	t.Helper()
	kvs := make([]recordbatch.KeyValue, len(msgs))
	for i, m := range msgs {
		k, v, err := control.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		kvs[i] = recordbatch.KeyValue{Key: k, Value: v}
	}
	return rawCtlBatch(t, off, epoch, kvs...)
}

func rawCtlBatch(t *testing.T, off int64, epoch int32, kvs ...recordbatch.KeyValue) []byte {
	t.Helper()
	p := recordbatch.DefaultParams()
	p.BaseOffset, p.PartitionLeaderEpoch = off, epoch
	b, err := recordbatch.AppendControlBatch(nil, p, 1, kvs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dataBatch(t *testing.T, off int64, epoch int32, attrs recordbatch.Attributes, vals ...[]byte) []byte {
	t.Helper()
	p := recordbatch.DefaultParams()
	p.BaseOffset, p.PartitionLeaderEpoch, p.Attributes = off, epoch, attrs
	var b recordbatch.Builder
	b.Reset(nil, p)
	for _, v := range vals {
		b.Append(1, nil, v, nil)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// TestStructuralViolations feeds files whose every batch is valid but
// whose sequence breaks a snapshot rule (Kafka's
// RecordsSnapshotReader.nextBatch; D16 in docs/reliability.md): each must
// be refused with a *CorruptError at the right byte.
func TestStructuralViolations(t *testing.T) {
	const e = 5
	name := FileName(kraft.OffsetAndEpoch{Offset: 42, Epoch: e})
	hdr := &control.SnapshotHeaderRecord{LastContainedLogTimestamp: 7}
	kv := &control.KRaftVersionRecord{KRaftVersion: 1}
	foot := &control.SnapshotFooterRecord{}
	h := ctlBatch(t, 0, e, hdr)
	hn := int64(len(h))
	unknown := recordbatch.KeyValue{Key: []byte{0, 0, 0, 99}, Value: []byte{1, 2}}
	footerKV := func() recordbatch.KeyValue {
		k, v, err := control.Encode(foot)
		if err != nil {
			t.Fatal(err)
		}
		return recordbatch.KeyValue{Key: k, Value: v}
	}()
	cases := []struct {
		name   string
		data   []byte
		pos    int64
		trunc  bool
		opts   ReadOptions
		reason string
	}{
		{name: "empty file", data: nil, pos: 0, trunc: true},
		{name: "no header batch", data: cat(dataBatch(t, 0, e, 0, noOp), ctlBatch(t, 1, e, foot)), pos: 0},
		{name: "header batch starts with KRaftVersion", data: cat(ctlBatch(t, 0, e, kv, hdr), ctlBatch(t, 2, e, foot)), pos: 0},
		{name: "header batch starts with an unknown type", data: cat(rawCtlBatch(t, 0, e, unknown), ctlBatch(t, 1, e, foot)), pos: 0},
		{name: "missing footer", data: cat(h, dataBatch(t, 1, e, 0, noOp)), pos: hn + int64(len(dataBatch(t, 1, e, 0, noOp))), trunc: true},
		{name: "header only", data: h, pos: hn, trunc: true},
		{name: "footer in the header batch", data: ctlBatch(t, 0, e, hdr, foot), pos: 0},
		{name: "data after the footer", data: cat(h, ctlBatch(t, 1, e, foot), dataBatch(t, 2, e, 0, noOp)), pos: hn + int64(len(ctlBatch(t, 1, e, foot)))},
		{name: "records after the footer", data: cat(h, rawCtlBatch(t, 1, e, footerKV, unknown)), pos: hn},
		{name: "control batch without footer in the middle", data: cat(h, ctlBatch(t, 1, e, kv), ctlBatch(t, 2, e, foot)), pos: hn},
		{name: "Voters without KRaftVersion", data: cat(ctlBatch(t, 0, e, hdr, testVoters()), ctlBatch(t, 2, e, foot)), pos: 0},
		{name: "KRaftVersion twice", data: cat(ctlBatch(t, 0, e, hdr, kv, kv), ctlBatch(t, 3, e, foot)), pos: 0},
		{name: "negative kraft.version", data: cat(ctlBatch(t, 0, e, hdr, &control.KRaftVersionRecord{KRaftVersion: -1}), ctlBatch(t, 2, e, foot)), pos: 0},
		{name: "LeaderChange in the header batch", data: cat(ctlBatch(t, 0, e, hdr, &control.LeaderChangeMessage{LeaderId: 1}), ctlBatch(t, 2, e, foot)), pos: 0},
		{name: "transaction marker", data: cat(h, rawCtlBatch(t, 1, e, recordbatch.KeyValue{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}), ctlBatch(t, 2, e, foot)), pos: hn},
		{name: "undecodable footer", data: cat(h, rawCtlBatch(t, 1, e, recordbatch.KeyValue{Key: []byte{0, 0, 0, 4}, Value: []byte{0}})), pos: hn},
		{name: "first offset not 0", data: cat(ctlBatch(t, 1, e, hdr), ctlBatch(t, 2, e, foot)), pos: 0},
		{name: "offset gap", data: cat(h, dataBatch(t, 2, e, 0, noOp), ctlBatch(t, 3, e, foot)), pos: hn},
		{name: "offset overlap", data: cat(h, dataBatch(t, 0, e, 0, noOp), ctlBatch(t, 1, e, foot)), pos: hn},
		{name: "epoch differs from the name", data: cat(h, dataBatch(t, 1, e+1, 0, noOp), ctlBatch(t, 2, e, foot)), pos: hn},
		{name: "header epoch differs", data: cat(ctlBatch(t, 0, e-1, hdr), ctlBatch(t, 1, e, foot)), pos: 0},
		{name: "transactional data batch", data: cat(h, dataBatch(t, 1, e, recordbatch.AttrTransactional, noOp), ctlBatch(t, 2, e, foot)), pos: hn},
		{name: "null value", data: cat(h, dataBatch(t, 1, e, 0, noOp, nil), ctlBatch(t, 3, e, foot)), pos: hn},
		{name: "empty data batch", data: cat(h, dataBatch(t, 1, e, 0), ctlBatch(t, 1, e, foot)), pos: hn},
		{name: "batch above the read limit", data: cat(h, dataBatch(t, 1, e, 0, make([]byte, 200)), ctlBatch(t, 2, e, foot)), pos: hn, opts: ReadOptions{MaxBatchBytes: 200}},
		{name: "batch length below the minimum", data: cat(h, make([]byte, 12)), pos: hn},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := openBytes(t, name, c.data, c.opts)
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open = %v, want a *CorruptError", err)
			}
			if ce.Pos != c.pos || ce.Truncated != c.trunc || errors.Is(err, ErrTruncated) != c.trunc {
				t.Errorf("error at byte %d truncated %v (%v); want byte %d truncated %v", ce.Pos, ce.Truncated, err, c.pos, c.trunc)
			}
		})
	}
}

// TestReaderAccepts lists unusual files that Kafka would read and so must
// we: unknown control types are skipped, and a data batch may hold a key.
func TestReaderAccepts(t *testing.T) {
	const e = 5
	name := FileName(kraft.OffsetAndEpoch{Offset: 42, Epoch: e})
	hdr := &control.SnapshotHeaderRecord{LastContainedLogTimestamp: 7}
	foot := &control.SnapshotFooterRecord{}
	unknown := recordbatch.KeyValue{Key: []byte{0, 0, 0, 99}, Value: []byte{1, 2}}
	k, v, err := control.Encode(hdr)
	if err != nil {
		t.Fatal(err)
	}
	fk, fv, err := control.Encode(foot)
	if err != nil {
		t.Fatal(err)
	}
	var compressed [][]byte
	for _, c := range []recordbatch.Compression{recordbatch.CompressionGzip, recordbatch.CompressionSnappy, recordbatch.CompressionLZ4, recordbatch.CompressionZstd} {
		// Kafka compresses snapshot batches when the metadata log is
		// configured to; the records come back decompressed.
		compressed = append(compressed, cat(ctlBatch(t, 0, e, hdr), dataBatch(t, 1, e, recordbatch.Attributes(0).WithCompression(c), testValues(20)...), ctlBatch(t, 21, e, foot)))
	}
	for _, data := range append([][]byte{
		cat(rawCtlBatch(t, 0, e, recordbatch.KeyValue{Key: k, Value: v}, unknown), rawCtlBatch(t, 2, e, unknown, recordbatch.KeyValue{Key: fk, Value: fv})),
		cat(ctlBatch(t, 0, e, hdr), rawCtlBatch(t, 1, e, unknown), ctlBatch(t, 2, e, foot)),
	}, compressed...) {
		if _, err := openBytes(t, name, data, ReadOptions{}); err != nil {
			t.Errorf("Open: %v", err)
		}
	}
	for _, data := range compressed {
		m := vfs.NewMem()
		writeFile(t, m, "/d/"+name, data)
		_, vals, err := readAll(m, "/d/"+name)
		if err != nil || !slices.EqualFunc(vals, testValues(20), bytes.Equal) {
			t.Errorf("compressed batch read back %d values, %v", len(vals), err)
		}
		if _, err := Open(m, "/d/"+name, ReadOptions{MaxDecompressedSize: 100}); !errors.Is(err, recordbatch.ReasonTooLarge) {
			t.Errorf("decompression above the limit: %v, want ReasonTooLarge", err)
		}
	}
	// bootstrap.checkpoint must be at epoch 0.
	good := cat(ctlBatch(t, 0, 0, hdr), ctlBatch(t, 1, 0, foot))
	if _, err := openBytes(t, BootstrapFile, good, ReadOptions{}); err != nil {
		t.Errorf("bootstrap.checkpoint at epoch 0: %v", err)
	}
	if _, err := openBytes(t, BootstrapFile, cat(ctlBatch(t, 0, 1, hdr), ctlBatch(t, 1, 1, foot)), ReadOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bootstrap.checkpoint at epoch 1: %v, want ErrCorrupt", err)
	}
	for _, name := range []string{PartFileName(kraft.OffsetAndEpoch{Offset: 42, Epoch: e}, 1), DeletedFileName(kraft.OffsetAndEpoch{Offset: 42, Epoch: e})} {
		var ne *NameError
		if _, err := openBytes(t, name, good, ReadOptions{}); !errors.As(err, &ne) {
			t.Errorf("Open of %s: %v, want a *NameError", name, err)
		}
	}
	if _, err := openBytes(t, name, good, ReadOptions{MaxBatchBytes: -1}); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("Open with a negative limit: %v", err)
	}
	if _, err := openBytes(t, "notes.txt", good, ReadOptions{}); !errors.Is(err, ErrNotSnapshotName) {
		t.Errorf("Open of a non-snapshot name: %v", err)
	}
	if _, err := Open(vfs.NewMem(), "/d/"+name, ReadOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open of a missing file: %v, want ErrNotFound", err)
	}
}

func TestCorruptErrorText(t *testing.T) {
	err := &CorruptError{Path: "/d/x", Pos: 83, Reason: "batch base offset 2, want 1", Err: fmt.Errorf("cause")}
	if got, want := err.Error(), "snapshot: corrupt snapshot /d/x at byte 83: batch base offset 2, want 1: cause"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
