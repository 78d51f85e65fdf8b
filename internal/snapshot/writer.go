package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// DefaultMaxBatchBytes is the default upper bound of an encoded data batch:
// 8 MiB, Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES, which it passes to
// RecordsSnapshotWriter for every snapshot.
const DefaultMaxBatchBytes = 8 << 20

// Header is what a snapshot says about itself before its metadata
// records: the contents of its first control batch (Kafka's
// RecordsSnapshotWriter).
type Header struct {
	// LastContainedLogTimestamp is the append time (ms) of the last log
	// record the snapshot covers; time-based retention uses it. It is 0 in
	// bootstrap.checkpoint and the format time in the 0-0 bootstrap
	// snapshot.
	LastContainedLogTimestamp int64
	// KRaftVersion is the finalized kraft.version at the snapshot's end
	// offset. Kafka writes a KRaftVersion control record only when it is
	// at least 1; a reader reports 0 when the record is absent.
	KRaftVersion int16
	// Voters is the voter set at the snapshot's end offset, written as a
	// Voters control record after the KRaftVersion record. It must be nil
	// when KRaftVersion is 0 (Kafka refuses that combination too). It may
	// be nil with KRaftVersion 1 when no voter set is known.
	Voters *control.VotersRecord
}

// WriterOptions tune a [Writer]. The zero value is Kafka's behaviour.
type WriterOptions struct {
	// MaxBatchBytes bounds the encoded size of a data batch; 0 means
	// [DefaultMaxBatchBytes]. A record that does not fit in an empty
	// batch is refused with [ErrRecordTooLarge].
	MaxBatchBytes int
	// MaxBatchRecords, when positive, also bounds the number of records
	// of a data batch. Kafka has no such bound; keep it 0 for files
	// byte-identical to Kafka's.
	MaxBatchRecords int
}

// writerState is where a Writer is in its life.
type writerState uint8

const (
	writing writerState = iota
	frozen
	aborted
	failed
)

// Writer streams one snapshot file in Kafka's layout (RecordsSnapshotWriter
// over FileRawSnapshotWriter):
//
//  1. [Create] writes the header control batch at offset 0:
//     SnapshotHeader, then KRaftVersion and Voters when kraft.version ≥ 1;
//  2. [Writer.Append] adds framed metadata records to data batches;
//  3. [Writer.Freeze] writes the SnapshotFooter control batch, fsyncs the
//     .checkpoint.part file, renames it to its final name and fsyncs the
//     directory. Only then does the snapshot exist.
//
// Every batch has partitionLeaderEpoch = the snapshot epoch, offsets start
// at 0 and continue across batches, and producer id, epoch and sequence
// are -1. A batch's timestamp is the time passed to the call that opened
// it, and every record in it carries that same timestamp, as Kafka's
// BatchBuilder does; the writer never reads a clock.
//
// # How records are split into batches
//
// The writer splits as Kafka's BatchAccumulator does under
// RecordsSnapshotWriter (KafkaRaftClient passes an 8 MiB limit): records
// go into the open batch while the batch, with the next record, stays
// within MaxBatchBytes; a record that does not fit completes the batch and
// opens the next one; Freeze completes the last one. The split depends
// only on the record sizes, not on how records are grouped into Append
// calls (Kafka's snapshot generator appends groups of 1024, and with a
// linger of Integer.MAX_VALUE its accumulator drains only at freeze). So
// a snapshot below 8 MiB of records has one data batch, as every Kafka
// sample does, and a larger one has full batches and a shorter last one.
// A batch's size is at most MaxBatchBytes.
//
// A Writer is used by one goroutine. After an I/O error it is unusable
// (the error is final: a failed fsync is never retried) and Abort removes
// what it wrote.
type Writer struct {
	fs         vfs.FS
	dir        string
	tmpPath    string
	finalPath  string
	epoch      int32
	f          vfs.File
	state      writerState
	maxBytes   int
	maxRecords int

	b         recordbatch.Builder
	buf       []byte // encoded batch under construction (the Builder's dst)
	inBatch   bool   // a data batch is open
	nextOff   int64  // offset of the next record within the file
	size      int64  // bytes written to the file
	records   int64  // metadata records appended
	batches   int    // batches written, control batches included
	batchTime int64  // timestamp of the open data batch
}

// Create starts writing snapshot id into directory dir, under the
// temporary name PartFileName(id, unique), and writes the header control
// batch stamped with time now (ms). It fails with [ErrExists] when the
// snapshot is already complete (Kafka's createNewSnapshot then returns
// nothing), and when the temporary name exists (choose another unique).
func Create(fsys vfs.FS, dir string, id kraft.OffsetAndEpoch, unique uint64, h Header, now int64, o WriterOptions) (*Writer, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	final := filepath.Join(dir, FileName(id))
	if _, err := fsys.Stat(final); err == nil {
		return nil, fmt.Errorf("snapshot: create %s: %w", idString(id), ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot: create %s: %w", idString(id), err)
	}
	return create(fsys, dir, filepath.Join(dir, PartFileName(id, unique)), final, int32(id.Epoch), h, now, o)
}

// CreateBootstrap starts writing bootstrap.checkpoint into log directory dir,
// as kafka-storage format does (Kafka's BootstrapDirectory and
// BatchFileWriter): epoch 0, a header with LastContainedLogTimestamp 0 and no
// kraft.version records, then the bootstrap records given to Append
// (FeatureLevelRecord metadata.version first, then the other features by
// name, then SCRAM records), then the footer. It is written to
// bootstrap.checkpoint.tmp and renamed over any existing bootstrap.checkpoint
// by Freeze. A bootstrap.checkpoint.tmp left by an interrupted format is
// removed first: format runs before meta.properties exists, so no other
// writer can own it. now stamps the header batch.
func CreateBootstrap(fsys vfs.FS, dir string, now int64, o WriterOptions) (*Writer, error) {
	tmp := filepath.Join(dir, BootstrapTempFile)
	if err := fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot: create %s: remove leftover: %w", tmp, err)
	}
	return create(fsys, dir, tmp, filepath.Join(dir, BootstrapFile), 0, Header{}, now, o)
}

func create(fsys vfs.FS, dir, tmpPath, finalPath string, epoch int32, h Header, now int64, o WriterOptions) (*Writer, error) {
	maxBytes := o.MaxBatchBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxBatchBytes
	}
	if maxBytes < recordbatch.HeaderSize+minRecordSize || o.MaxBatchRecords < 0 {
		return nil, fmt.Errorf("snapshot: create %s: invalid options: max batch bytes %d, max batch records %d",
			finalPath, o.MaxBatchBytes, o.MaxBatchRecords)
	}
	if h.KRaftVersion < 0 || (h.KRaftVersion == 0 && h.Voters != nil) {
		return nil, fmt.Errorf("snapshot: create %s: voter set given with kraft.version %d", finalPath, h.KRaftVersion)
	}
	kvs, err := headerRecords(h)
	if err != nil {
		return nil, fmt.Errorf("snapshot: create %s: %w", finalPath, err)
	}
	// O_EXCL: a leftover with the same temporary name belongs to nobody
	// we know of; never write into it.
	f, err := fsys.OpenFile(tmpPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("snapshot: create %s: temporary file exists: %w", tmpPath, ErrExists)
		}
		return nil, fmt.Errorf("snapshot: create %s: %w", tmpPath, err)
	}
	w := &Writer{fs: fsys, dir: dir, tmpPath: tmpPath, finalPath: finalPath, epoch: epoch, f: f,
		maxBytes: maxBytes, maxRecords: o.MaxBatchRecords}
	if err := w.writeControl(now, kvs); err != nil {
		return nil, errors.Join(err, w.Abort())
	}
	return w, nil
}

// headerRecords returns the records of the header control batch.
func headerRecords(h Header) ([]recordbatch.KeyValue, error) {
	msgs := []control.Message{&control.SnapshotHeaderRecord{LastContainedLogTimestamp: h.LastContainedLogTimestamp}}
	if h.KRaftVersion > 0 {
		msgs = append(msgs, &control.KRaftVersionRecord{KRaftVersion: h.KRaftVersion})
		if h.Voters != nil {
			msgs = append(msgs, h.Voters)
		}
	}
	kvs := make([]recordbatch.KeyValue, len(msgs))
	for i, m := range msgs {
		k, v, err := control.Encode(m)
		if err != nil {
			return nil, fmt.Errorf("encode %s record: %w", m.ControlType(), err)
		}
		kvs[i] = recordbatch.KeyValue{Key: k, Value: v}
	}
	return kvs, nil
}

// Path returns the final path of the file being written.
func (w *Writer) Path() string { return w.finalPath }

// Records returns the number of metadata records appended so far.
func (w *Writer) Records() int64 { return w.records }

// Size returns the number of bytes written to the file so far; after
// Freeze, the size of the snapshot.
func (w *Writer) Size() int64 { return w.size }

// Batches returns the number of batches written so far, control batches
// included.
func (w *Writer) Batches() int { return w.batches }

// Append adds framed metadata record values to the snapshot: the record
// values of the metadata log, as metadata.Encode produces them (the
// writer takes bytes so that it does not depend on the record types).
// now (ms) stamps any batch this call opens (see [Writer] for the
// batching). The values are copied. On [ErrRecordTooLarge] the records
// before the offending one are kept and the writer stays usable; any
// other error is final.
func (w *Writer) Append(now int64, values ...[]byte) error {
	if w.state != writing {
		return fmt.Errorf("snapshot: append to %s: %w", w.finalPath, ErrClosed)
	}
	for _, v := range values {
		if v == nil {
			return fmt.Errorf("snapshot: append to %s: nil record value", w.finalPath)
		}
		// Kafka's BatchAccumulator refuses a record that would not fit
		// even in an empty batch (RecordBatchTooLargeException).
		if recordbatch.HeaderSize+recordSize(0, len(v)) > w.maxBytes {
			return fmt.Errorf("snapshot: append to %s: record of %d bytes, batch limit %d: %w",
				w.finalPath, len(v), w.maxBytes, ErrRecordTooLarge)
		}
		full := w.inBatch && (w.b.Size()+recordSize(w.b.Len(), len(v)) > w.maxBytes ||
			w.maxRecords > 0 && w.b.Len() >= w.maxRecords)
		if full {
			if err := w.completeBatch(); err != nil {
				return err
			}
		}
		if !w.inBatch {
			w.startBatch(now)
		}
		w.b.Append(w.batchTime, nil, v, nil)
		w.records++
	}
	return nil
}

func (w *Writer) startBatch(now int64) {
	p := recordbatch.DefaultParams()
	p.BaseOffset = w.nextOff
	p.PartitionLeaderEpoch = w.epoch
	w.b.Reset(w.buf[:0], p)
	w.batchTime = now
	w.inBatch = true
}

func (w *Writer) completeBatch() error {
	n := w.b.Len()
	out, err := w.b.Finish()
	if err != nil {
		panic("snapshot: invariant: finishing an uncompressed batch failed: " + err.Error())
	}
	w.buf = out
	w.inBatch = false
	w.nextOff += int64(n)
	return w.write(out)
}

func (w *Writer) writeControl(now int64, kvs []recordbatch.KeyValue) error {
	p := recordbatch.DefaultParams()
	p.BaseOffset = w.nextOff
	p.PartitionLeaderEpoch = w.epoch
	out, err := recordbatch.AppendControlBatch(w.buf[:0], p, now, kvs...)
	if err != nil {
		panic("snapshot: invariant: building a control batch failed: " + err.Error())
	}
	w.buf = out
	w.nextOff += int64(len(kvs))
	return w.write(out)
}

func (w *Writer) write(b []byte) error {
	if _, err := w.f.Write(b); err != nil {
		w.state = failed
		return fmt.Errorf("snapshot: write %s: %w", w.tmpPath, err)
	}
	w.size += int64(len(b))
	w.batches++
	return nil
}

// Freeze completes the snapshot: it writes the open data batch and the
// footer control batch (stamped with now), fsyncs the file, renames it to
// its final name and fsyncs the directory (Kafka's
// FileRawSnapshotWriter.freeze, plus the directory sync that makes the
// name durable). When Freeze returns nil the snapshot is durable and
// complete; when it fails, no file under the final name was created by
// this writer unless the failure was the final directory sync, after
// which the file under the final name is complete and valid but its name
// may not survive a crash. On failure before the rename the temporary
// file is removed.
func (w *Writer) Freeze(now int64) error {
	if w.state != writing {
		return fmt.Errorf("snapshot: freeze %s: %w", w.finalPath, ErrClosed)
	}
	err := w.freeze(now)
	if err != nil && w.state != frozen {
		w.state = failed
		return errors.Join(err, w.removeTemp())
	}
	return err
}

func (w *Writer) freeze(now int64) error {
	if w.inBatch {
		if err := w.completeBatch(); err != nil {
			return err
		}
	}
	k, v, err := control.Encode(&control.SnapshotFooterRecord{})
	if err != nil {
		panic("snapshot: invariant: encoding the footer failed: " + err.Error())
	}
	if err := w.writeControl(now, []recordbatch.KeyValue{{Key: k, Value: v}}); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("snapshot: freeze %s: sync: %w", w.tmpPath, err)
	}
	f := w.f
	w.f = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("snapshot: freeze %s: close: %w", w.tmpPath, err)
	}
	if err := w.fs.Rename(w.tmpPath, w.finalPath); err != nil {
		return fmt.Errorf("snapshot: freeze %s: rename: %w", w.finalPath, err)
	}
	w.state = frozen
	if err := w.fs.SyncDir(w.dir); err != nil {
		return fmt.Errorf("snapshot: freeze %s: sync directory: %w", w.finalPath, err)
	}
	return nil
}

// Abort gives up the snapshot: it closes and removes the temporary file.
// It is a no-op after Freeze succeeded or a previous Abort. The removal
// is not synced: a crash may bring the .part file back, and [Recover]
// removes it at the next start.
func (w *Writer) Abort() error {
	switch w.state {
	case frozen, aborted:
		return nil
	}
	w.state = aborted
	return w.removeTemp()
}

func (w *Writer) removeTemp() error {
	var errs []error
	if w.f != nil {
		if err := w.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("snapshot: abort %s: close: %w", w.tmpPath, err))
		}
		w.f = nil
	}
	if err := w.fs.Remove(w.tmpPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("snapshot: abort %s: remove: %w", w.tmpPath, err))
	}
	return errors.Join(errs...)
}

// minRecordSize is the size of the smallest data record: length,
// attributes, timestamp delta, offset delta, null key, empty value, no
// headers, one byte each.
const minRecordSize = 7

// recordSize returns the encoded size of a data record with the given
// offset delta, timestamp delta 0, a null key, a value of valueLen bytes
// and no headers: what Kafka's BatchBuilder.bytesNeeded counts
// (DefaultRecord.sizeOfBodyInBytes plus its varint length).
func recordSize(offsetDelta, valueLen int) int {
	body := 1 + 1 + varintSize(int64(offsetDelta)) + 1 + varintSize(int64(valueLen)) + valueLen + 1
	return varintSize(int64(body)) + body
}

// varintSize is the size of v as a zig-zag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
