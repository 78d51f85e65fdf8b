package snapshot

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// batchesOf returns, for each batch of a snapshot file: records, base
// offset, epoch, timestamp and the control bit.
type batchInfo struct {
	records int
	base    int64
	epoch   int32
	ts      int64
	control bool
}

func batchesOf(t *testing.T, data []byte) []batchInfo {
	t.Helper()
	var out []batchInfo
	it := recordbatch.NewIterator(nil, data)
	for it.Next() {
		b := it.Batch()
		for i := range b.Records {
			if b.Records[i].TimestampDelta != 0 {
				t.Errorf("batch at %d record %d: timestamp delta %d, want 0", it.Pos(), i, b.Records[i].TimestampDelta)
			}
		}
		if b.MaxTimestamp != b.BaseTimestamp || b.ProducerID != -1 || b.ProducerEpoch != -1 || b.BaseSequence != -1 {
			t.Errorf("batch at %d: header %+v", it.Pos(), b.Header)
		}
		out = append(out, batchInfo{len(b.Records), b.BaseOffset, b.PartitionLeaderEpoch, b.BaseTimestamp, b.IsControl()})
	}
	if err := it.Err(); err != nil || it.Offset() != len(data) {
		t.Fatalf("iterating the file: %v (consumed %d of %d)", err, it.Offset(), len(data))
	}
	return out
}

func TestWriterRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{LastContainedLogTimestamp: 1234},
		{LastContainedLogTimestamp: 1234, KRaftVersion: 1},
		{LastContainedLogTimestamp: 1234, KRaftVersion: 1, Voters: testVoters()},
	} {
		m := vfs.NewMem()
		vals := testValues(3000)
		id := kraft.OffsetAndEpoch{Offset: 50000, Epoch: 7}
		data := writeSnapshot(t, m, "/d", id, h, vals, 1024, WriterOptions{})
		got, gotVals, err := readAll(m, "/d/"+FileName(id))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Errorf("header = %+v, want %+v", got, h)
		}
		if !slices.EqualFunc(gotVals, vals, bytes.Equal) {
			t.Errorf("read %d values, wrote %d; contents differ", len(gotVals), len(vals))
		}
		bs := batchesOf(t, data)
		header := 1
		if h.KRaftVersion > 0 {
			header++
			if h.Voters != nil {
				header++
			}
		}
		// 3000 small records fit in one 8 MiB batch.
		want := []batchInfo{
			{header, 0, 7, 1000, true},
			{3000, int64(header), 7, 2000, false},
			{1, int64(header + 3000), 7, 9000, true},
		}
		if !slices.Equal(bs, want) {
			t.Errorf("batches = %+v, want %+v", bs, want)
		}
	}
}

// TestWriterBatchingFollowsKafka checks the accumulator rule described on
// Writer: a batch closes when the next record would take it past the byte
// limit, whatever the grouping of records into Append calls, and a batch
// carries the time of the call that opened it.
func TestWriterBatchingFollowsKafka(t *testing.T) {
	limit := recordbatch.HeaderSize + 5*recordSize(0, len(noOp))
	m := vfs.NewMem()
	mkdirDurable(t, m, "/d")
	w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 100, Epoch: 1}, 1, Header{}, 10, WriterOptions{MaxBatchBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		now int64
		n   int
	}{{20, 12}, {30, 3}, {40, 3}, {50, 2}}
	for _, c := range calls {
		vals := make([][]byte, c.n)
		for i := range vals {
			vals[i] = noOp
		}
		if err := w.Append(c.now, vals...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Freeze(60); err != nil {
		t.Fatal(err)
	}
	data, err := m.ReadDurable(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	want := []batchInfo{
		{1, 0, 1, 10, true},
		{5, 1, 1, 20, false}, // call 1: 12 records -> 5, 5, and 2 of the third
		{5, 6, 1, 20, false},
		{5, 11, 1, 20, false}, // call 2 fills the third
		{5, 16, 1, 40, false}, // call 3 opens the fourth, call 4 fills it
		{1, 21, 1, 60, true},
	}
	if got := batchesOf(t, data); !slices.Equal(got, want) {
		t.Errorf("batches:\n got %+v\nwant %+v", got, want)
	}
	for _, b := range bytesOfBatches(t, data) {
		if len(b) > limit {
			t.Errorf("batch of %d bytes above the limit %d", len(b), limit)
		}
	}
	if w.Records() != 20 || w.Batches() != 6 || w.Size() != int64(len(data)) {
		t.Errorf("Records %d Batches %d Size %d", w.Records(), w.Batches(), w.Size())
	}
}

// TestWriterBatchingIgnoresGrouping writes the same records in groups of
// 1, 7 and all at once, with one time: the files are identical.
func TestWriterBatchingIgnoresGrouping(t *testing.T) {
	vals := testValues(500)
	limit := 2000 // several batches
	var first []byte
	for _, group := range []int{1, 7, 500} {
		m := vfs.NewMem()
		mkdirDurable(t, m, "/d")
		w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 600, Epoch: 2}, 1, Header{}, 5, WriterOptions{MaxBatchBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(vals); i += group {
			if err := w.Append(5, vals[i:min(i+group, len(vals))]...); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Freeze(5); err != nil {
			t.Fatal(err)
		}
		data, err := m.ReadDurable(w.Path())
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
			if n := len(batchesOf(t, data)); n < 10 {
				t.Fatalf("only %d batches; the test needs several", n)
			}
			for _, b := range bytesOfBatches(t, data) {
				if len(b) > limit {
					t.Errorf("batch of %d bytes above the limit %d", len(b), limit)
				}
			}
		} else if !bytes.Equal(data, first) {
			t.Errorf("groups of %d give a different file", group)
		}
	}
}

// TestWriterDefaultLimitIs8MiB appends three 3 MiB records: two fit in one
// 8 MiB batch, the third opens the next.
func TestWriterDefaultLimitIs8MiB(t *testing.T) {
	big := make([]byte, 3<<20)
	m := vfs.NewMem()
	data := writeSnapshot(t, m, "/d", kraft.OffsetAndEpoch{Offset: 3, Epoch: 1}, Header{}, [][]byte{big, big, big}, 3, WriterOptions{})
	var counts []int
	for _, b := range batchesOf(t, data) {
		counts = append(counts, b.records)
	}
	if want := []int{1, 2, 1, 1}; !slices.Equal(counts, want) {
		t.Errorf("records per batch = %v, want %v", counts, want)
	}
	huge := make([]byte, DefaultMaxBatchBytes)
	w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 4, Epoch: 1}, 1, Header{}, 0, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Append(1, huge); !errors.Is(err, ErrRecordTooLarge) {
		t.Errorf("Append of an 8 MiB record: %v, want ErrRecordTooLarge", err)
	}
}

func bytesOfBatches(t *testing.T, data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n, err := recordbatch.TotalSize(data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

func TestWriterMaxBatchRecords(t *testing.T) {
	m := vfs.NewMem()
	data := writeSnapshot(t, m, "/d", kraft.OffsetAndEpoch{Offset: 9, Epoch: 0}, Header{}, testValues(7), 7, WriterOptions{MaxBatchRecords: 3})
	var counts []int
	for _, b := range batchesOf(t, data) {
		counts = append(counts, b.records)
	}
	if want := []int{1, 3, 3, 1, 1}; !slices.Equal(counts, want) {
		t.Errorf("records per batch = %v, want %v", counts, want)
	}
}

func TestWriterRecordTooLarge(t *testing.T) {
	m := vfs.NewMem()
	mkdirDurable(t, m, "/d")
	w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 9, Epoch: 0}, 1, Header{}, 1, WriterOptions{MaxBatchBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 40) // 61 + 47 > 100
	if err := w.Append(2, noOp, big, noOp); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("Append of a record above the limit: %v, want ErrRecordTooLarge", err)
	}
	if w.Records() != 1 {
		t.Errorf("Records() = %d after the refusal, want 1 (the record before it)", w.Records())
	}
	if err := w.Append(3, noOp); err != nil {
		t.Fatalf("writer unusable after a refused record: %v", err)
	}
	if err := w.Append(3, nil); err == nil {
		t.Error("Append(nil value) succeeded")
	}
	if err := w.Freeze(4); err != nil {
		t.Fatal(err)
	}
	if _, vals, err := readAll(m, w.Path()); err != nil || len(vals) != 2 {
		t.Errorf("read back %d values, %v; want 2", len(vals), err)
	}
}

func TestWriterRefusals(t *testing.T) {
	m := vfs.NewMem()
	mkdirDurable(t, m, "/d")
	id := kraft.OffsetAndEpoch{Offset: 10, Epoch: 1}
	for _, c := range []struct {
		name string
		h    Header
		o    WriterOptions
	}{
		{"voters with kraft.version 0", Header{Voters: testVoters()}, WriterOptions{}},
		{"negative kraft.version", Header{KRaftVersion: -1}, WriterOptions{}},
		{"tiny batches", Header{}, WriterOptions{MaxBatchBytes: 10}},
		{"negative record bound", Header{}, WriterOptions{MaxBatchRecords: -1}},
		{"voter set that cannot be encoded", Header{KRaftVersion: 1, Voters: &control.VotersRecord{Voters: []control.VotersRecordVoter{{
			Endpoints: []control.VotersRecordEndpoint{{Name: "C", Host: strings.Repeat("h", 40000)}}}}}}, WriterOptions{}},
	} {
		if _, err := Create(m, "/d", id, 1, c.h, 0, c.o); err == nil {
			t.Errorf("%s: Create succeeded", c.name)
		}
	}
	if _, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: -1, Epoch: 0}, 1, Header{}, 0, WriterOptions{}); err == nil {
		t.Error("Create with a negative id succeeded")
	}
	if l, _ := List(m, "/d"); len(l.Parts) != 0 {
		t.Errorf("refused creates left files: %v", l.Parts)
	}

	w, err := Create(m, "/d", id, 1, Header{}, 0, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(m, "/d", id, 1, Header{}, 0, WriterOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("second Create with the same unique: %v, want ErrExists", err)
	}
	if err := w.Freeze(1); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(m, "/d", id, 2, Header{}, 0, WriterOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("Create of a complete snapshot: %v, want ErrExists", err)
	}
	if err := w.Append(2, noOp); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Freeze: %v, want ErrClosed", err)
	}
	if err := w.Freeze(2); !errors.Is(err, ErrClosed) {
		t.Errorf("second Freeze: %v, want ErrClosed", err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Freeze: %v", err)
	}
	if _, err := Open(m, w.Path(), ReadOptions{}); err != nil {
		t.Errorf("Abort after Freeze damaged the snapshot: %v", err)
	}
}

func TestWriterAbort(t *testing.T) {
	m := vfs.NewMem()
	mkdirDurable(t, m, "/d")
	w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 10, Epoch: 1}, 3, Header{}, 0, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(1, testValues(10)...); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("second Abort: %v", err)
	}
	if err := w.Append(1, noOp); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Abort: %v, want ErrClosed", err)
	}
	if l, _ := List(m, "/d"); len(l.Parts) != 0 || len(l.Snapshots) != 0 {
		t.Errorf("after Abort: %+v", l)
	}
}

// TestWriterFreezeFailures injects a fault into each step of Freeze: the
// snapshot must then not exist under its final name (except after a
// failed directory sync, where it is complete), and the temporary file is
// gone. A failed fsync is final (vfs package docs, rule 4).
func TestWriterFreezeFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		op    vfs.Op
		final bool
	}{
		{"write", vfs.OpWrite, false},
		{"sync", vfs.OpSync, false},
		{"rename", vfs.OpRename, false},
		{"sync directory", vfs.OpSyncDir, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := vfs.NewMem()
			mkdirDurable(t, m, "/d")
			w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 10, Epoch: 1}, 3, Header{}, 0, WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Append(1, testValues(10)...); err != nil {
				t.Fatal(err)
			}
			m.InjectFault(vfs.Fault{Ops: c.op, Err: syscall.EIO, Count: 1})
			err = w.Freeze(2)
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("Freeze = %v, want EIO", err)
			}
			l, _ := List(m, "/d")
			if len(l.Parts) != 0 || (len(l.Snapshots) == 1) != c.final {
				t.Errorf("after failed %s: %+v", c.name, l)
			}
			if len(l.Snapshots) == 1 {
				if _, err := Open(m, w.Path(), ReadOptions{}); err != nil {
					t.Errorf("snapshot after failed directory sync: %v", err)
				}
			}
			if err := w.Freeze(3); !errors.Is(err, ErrClosed) {
				t.Errorf("Freeze after failure: %v, want ErrClosed", err)
			}
		})
	}
}

func TestWriterCreateFailure(t *testing.T) {
	m := vfs.NewMem()
	mkdirDurable(t, m, "/d")
	m.InjectFault(vfs.Fault{Ops: vfs.OpWrite, Err: syscall.ENOSPC, Count: 1})
	if _, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, 1, Header{}, 0, WriterOptions{}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Create with a failing write: %v, want ENOSPC", err)
	}
	if l, _ := List(m, "/d"); len(l.Parts) != 0 {
		t.Errorf("failed Create left %v", l.Parts)
	}
	m.InjectFault(vfs.Fault{Ops: vfs.OpOpen, Err: syscall.EIO, Count: 1})
	if _, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, 1, Header{}, 0, WriterOptions{}); !errors.Is(err, syscall.EIO) {
		t.Errorf("Create with a failing open: %v, want EIO", err)
	}
	w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 2, Epoch: 1}, 1, Header{}, 0, WriterOptions{MaxBatchRecords: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.InjectFault(vfs.Fault{Ops: vfs.OpWrite, Err: syscall.EIO, Count: 1})
	if err := w.Append(1, noOp, noOp); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append with a failing write: %v, want EIO", err)
	}
	if err := w.Append(1, noOp); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after a write error: %v, want ErrClosed", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
}

// TestBootstrapCheckpoint writes bootstrap.checkpoint as kafka-storage
// format does (Kafka's BootstrapDirectory) and reads it back.
func TestBootstrapCheckpoint(t *testing.T) {
	m := vfs.NewMem()
	mkdirDurable(t, m, "/logs")
	w, err := CreateBootstrap(m, "/logs", 500, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// FeatureLevelRecord v0 metadata.version=30, framed as Kafka's
	// AbstractApiMessageSerde frames it.
	mv := append([]byte{0x01, 0x0c, 0x00, 0x11}, append([]byte("metadata.version"), 0x00, 0x1e, 0x00)...)
	if err := w.Append(510, mv); err != nil {
		t.Fatal(err)
	}
	if err := w.Freeze(520); err != nil {
		t.Fatal(err)
	}
	if w.Path() != "/logs/"+BootstrapFile {
		t.Errorf("Path() = %q", w.Path())
	}
	data, err := m.ReadDurable("/logs/" + BootstrapFile)
	if err != nil {
		t.Fatal(err)
	}
	want := []batchInfo{{1, 0, 0, 500, true}, {1, 1, 0, 510, false}, {1, 2, 0, 520, true}}
	if got := batchesOf(t, data); !slices.Equal(got, want) {
		t.Errorf("batches = %+v, want %+v", got, want)
	}
	h, vals, err := readAll(m, "/logs/"+BootstrapFile)
	if err != nil || h != (Header{}) || len(vals) != 1 || !bytes.Equal(vals[0], mv) {
		t.Errorf("read back %+v %x %v", h, vals, err)
	}
	// Formatting again, after an interrupted attempt left its temporary
	// file, replaces the file.
	writeFile(t, m, "/logs/"+BootstrapTempFile, []byte("torn"))
	w, err = CreateBootstrap(m, "/logs", 600, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Freeze(601); err != nil {
		t.Fatal(err)
	}
	if _, vals, err := readAll(m, "/logs/"+BootstrapFile); err != nil || len(vals) != 0 {
		t.Errorf("after rewrite: %d values, %v", len(vals), err)
	}
}

// TestBootstrapSnapshot writes the 0-0 snapshot of a dynamic quorum:
// header batch with the format time, KRaftVersion 1 and Voters, then the
// footer, and nothing else (Kafka's Formatter, KIP-853).
func TestBootstrapSnapshot(t *testing.T) {
	m := vfs.NewMem()
	h := Header{LastContainedLogTimestamp: 1760258513916, KRaftVersion: 1, Voters: testVoters()}
	data := writeSnapshot(t, m, "/d", Bootstrap, h, nil, 1, WriterOptions{})
	want := []batchInfo{{3, 0, 0, 1000, true}, {1, 3, 0, 9000, true}}
	if got := batchesOf(t, data); !slices.Equal(got, want) {
		t.Errorf("batches = %+v, want %+v", got, want)
	}
	got, vals, err := readAll(m, "/d/"+FileName(Bootstrap))
	if err != nil || len(vals) != 0 || !reflect.DeepEqual(got, h) {
		t.Errorf("read back %+v, %d values, %v", got, len(vals), err)
	}
}

func TestRecordSize(t *testing.T) {
	// Cross-check recordSize against the batch builder for the sizes
	// where varints change width.
	for _, delta := range []int{0, 63, 64, 8191, 8192} {
		for _, n := range []int{0, 4, 59, 60, 63, 64, 120, 8000, 9000, 1 << 20} {
			var b recordbatch.Builder
			b.Reset(nil, recordbatch.DefaultParams())
			for range delta {
				b.Append(0, nil, nil, nil)
			}
			before := b.Size()
			b.Append(0, nil, make([]byte, n), nil)
			if got, want := recordSize(delta, n), b.Size()-before; got != want {
				t.Errorf("recordSize(%d, %d) = %d, builder says %d", delta, n, got, want)
			}
		}
	}
}

func TestWriteBootstrapHelpers(t *testing.T) {
	m := vfs.NewMem()
	mkdirDurable(t, m, "/logs/__cluster_metadata-0")
	if err := WriteBootstrapCheckpoint(m, "/logs", 77, [][]byte{noOp, noOp}); err != nil {
		t.Fatal(err)
	}
	h, vals, err := readAll(m, "/logs/"+BootstrapFile)
	if err != nil || h != (Header{}) || len(vals) != 2 {
		t.Errorf("bootstrap.checkpoint: %+v, %d values, %v", h, len(vals), err)
	}
	if err := WriteBootstrapCheckpoint(m, "/logs", 77, [][]byte{nil}); err == nil {
		t.Error("WriteBootstrapCheckpoint with a nil value succeeded")
	}
	dir := "/logs/__cluster_metadata-0"
	if err := WriteBootstrapSnapshot(m, dir, 1, 1760258513916, nil); err == nil {
		t.Error("WriteBootstrapSnapshot without voters succeeded")
	}
	if err := WriteBootstrapSnapshot(m, dir, 1, 1760258513916, testVoters()); err != nil {
		t.Fatal(err)
	}
	h, vals, err = readAll(m, dir+"/"+FileName(Bootstrap))
	if err != nil || h.LastContainedLogTimestamp != 1760258513916 || h.KRaftVersion != 1 || !reflect.DeepEqual(h.Voters, testVoters()) || len(vals) != 0 {
		t.Errorf("0-0 snapshot: %+v, %d values, %v", h, len(vals), err)
	}
	if err := WriteBootstrapSnapshot(m, dir, 2, 1, testVoters()); !errors.Is(err, ErrExists) {
		t.Errorf("second bootstrap snapshot: %v, want ErrExists", err)
	}
	if l, _ := List(m, dir); len(l.Parts) != 0 || len(l.Snapshots) != 1 {
		t.Errorf("listing: %+v", l)
	}
}
