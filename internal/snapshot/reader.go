package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// DefaultMaxReadBatchBytes bounds the size of one batch a [Reader]
// accepts when ReadOptions.MaxBatchBytes is zero: 64 MiB, eight times the
// 8 MiB Kafka writes, so that a larger limit configured elsewhere still
// reads, while a corrupt length field cannot make the reader allocate
// more. The reader also never allocates more than the file holds.
const DefaultMaxReadBatchBytes = 64 << 20

// ReadOptions tune [Open].
type ReadOptions struct {
	// MaxBatchBytes bounds the encoded size of a batch; 0 means
	// [DefaultMaxReadBatchBytes]. A larger batch is reported as corrupt.
	MaxBatchBytes int
	// MaxDecompressedSize bounds the records of one compressed batch; 0
	// means recordbatch.DefaultMaxDecompressedSize.
	MaxDecompressedSize int
}

// resolve returns o with its defaults filled in, or an error naming path
// for a negative limit.
func (o ReadOptions) resolve(path string) (ReadOptions, error) {
	if o.MaxBatchBytes < 0 || o.MaxDecompressedSize < 0 {
		return o, fmt.Errorf("snapshot: open %s: negative limit in %+v", path, o)
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = DefaultMaxReadBatchBytes
	}
	return o, nil
}

// Reader reads a snapshot file. [Open] verifies the whole file before it
// returns, so a Reader is only ever handed out for a snapshot that is
// complete and well-formed; the caller can then stream its data batches
// with [Reader.Next] without the risk of applying half a snapshot.
//
//	r, err := snapshot.Open(fsys, path, snapshot.ReadOptions{})
//	if err != nil { ... }          // *CorruptError, ErrNotFound, I/O error
//	defer r.Close()
//	h := r.Header()                // timestamp, kraft.version, voters
//	for r.Next() {
//		for _, rec := range r.Batch().Records {
//			... metadata.Decode(rec.Value) ...
//		}
//	}
//	if err := r.Err(); err != nil { ... } // the file changed or an I/O error
//
// A Reader is used by one goroutine.
type Reader struct {
	f      io.Closer // nil once closed
	path   string
	id     kraft.OffsetAndEpoch
	epoch  int32
	size   int64
	header Header
	opts   ReadOptions

	records int64 // data records, counted by the verify pass
	batches int   // all batches
	times   BatchTimes

	sc    scanner
	batch *recordbatch.Batch
	pos   int64
	err   error
}

// Open opens the snapshot file at path and verifies it completely: every
// batch complete, within bounds, magic 2 and with a correct CRC-32C;
// record framing; base offsets starting at 0 and contiguous; each batch's
// partitionLeaderEpoch equal to the epoch of the file name (0 for
// bootstrap.checkpoint); record offset deltas 0..n-1; the first batch a
// control batch starting with SnapshotHeader, optionally followed by
// KRaftVersion and Voters; data batches holding non-null values; and a
// final control batch ending with SnapshotFooter, with nothing after it.
// Unknown control record types are skipped, as Kafka's readers do.
//
// The name must be a complete snapshot's name (see [ParseFileName]; .part
// and .deleted files are refused, they are never loaded) or
// bootstrap.checkpoint. Any violation is a *CorruptError naming the
// file, the byte position and the reason; a missing file matches
// [ErrNotFound]. Open reads the file once; iteration reads it again.
func Open(fsys vfs.FS, path string, o ReadOptions) (*Reader, error) {
	id, err := loadableID(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	return open(fsys, path, id, o)
}

// OpenAs is [Open] for a file whose name is not a snapshot name, such as a
// backup copy: it verifies the file at path as snapshot id (each batch's
// partitionLeaderEpoch must equal id's epoch) and [Reader.ID] returns id.
func OpenAs(fsys vfs.FS, path string, id kraft.OffsetAndEpoch, o ReadOptions) (*Reader, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	return open(fsys, path, id, o)
}

// loadableID returns the id a loadable file's name gives (the zero id for
// bootstrap.checkpoint). Names of .part and .deleted files are refused:
// those are never loaded (S5 and D15 in docs/reliability.md).
func loadableID(path string) (kraft.OffsetAndEpoch, error) {
	base := filepath.Base(path)
	if base == BootstrapFile {
		return kraft.OffsetAndEpoch{}, nil
	}
	id, kind, err := ParseFileName(base)
	if err != nil {
		return kraft.OffsetAndEpoch{}, err
	}
	if kind != KindSnapshot {
		return kraft.OffsetAndEpoch{}, &NameError{Name: base, Reason: "a " + kind.String() + " file is never loaded"}
	}
	return id, nil
}

func open(fsys vfs.FS, path string, id kraft.OffsetAndEpoch, o ReadOptions) (*Reader, error) {
	o, err := o.resolve(path)
	if err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("snapshot: open %s: %w: %w", path, ErrNotFound, err)
		}
		return nil, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close() // the Stat error is the one to report
		return nil, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	r, err := verified(f, f, path, id, fi.Size(), o)
	if err != nil {
		_ = f.Close() // the verification error is the one to report
		return nil, err
	}
	return r, nil
}

// OpenBytes is [OpenAs] for a snapshot file held in memory: it verifies
// data as the snapshot id, exactly as Open verifies a file, and returns a
// Reader over it. name stands for the file in errors. The Reader copies
// each batch out of data into its own buffer, so it allocates at most
// the size of data plus the decompression limit, and data may be reused
// once the Reader is no longer used.
func OpenBytes(name string, data []byte, id kraft.OffsetAndEpoch, o ReadOptions) (*Reader, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("snapshot: open %s: %w", name, err)
	}
	o, err := o.resolve(name)
	if err != nil {
		return nil, err
	}
	return verified(bytes.NewReader(data), nopCloser{}, name, id, int64(len(data)), o)
}

// nopCloser is what a Reader over bytes closes.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// verified returns a Reader over src, of size bytes, once it has
// verified it; c is what Close closes.
func verified(src io.ReaderAt, c io.Closer, path string, id kraft.OffsetAndEpoch, size int64, o ReadOptions) (*Reader, error) {
	r := &Reader{f: c, path: path, id: id, epoch: int32(id.Epoch), size: size, opts: o}
	r.sc = scanner{f: src, path: path, size: size, epoch: r.epoch, max: o.MaxBatchBytes,
		dec: recordbatch.Decoder{MaxDecompressedSize: o.MaxDecompressedSize}}
	if err := r.verify(); err != nil {
		return nil, err
	}
	return r, nil
}

// verify runs one full pass over the file, records the header and the
// counts, and rewinds the scanner for iteration (keeping its buffers).
func (r *Reader) verify() error {
	sc := &r.sc
	for {
		b, _, err := sc.next()
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		if !b.IsControl() {
			r.records += int64(len(b.Records))
		}
	}
	r.header = sc.header
	r.times = sc.times
	r.batches = sc.index
	sc.rewind()
	return nil
}

// ID returns the snapshot id from the file name (the zero id for
// bootstrap.checkpoint).
func (r *Reader) ID() kraft.OffsetAndEpoch { return r.id }

// Path returns the file's path.
func (r *Reader) Path() string { return r.path }

// Size returns the file size in bytes.
func (r *Reader) Size() int64 { return r.size }

// Header returns what the header control batch says. Voters is shared
// with the Reader; do not modify it.
func (r *Reader) Header() Header { return r.header }

// Times returns the timestamps of the file's batches: the header batch,
// the first data batch (0 when there is none) and the footer batch.
func (r *Reader) Times() BatchTimes { return r.times }

// Records returns the number of metadata records (data records; control
// records not counted).
func (r *Reader) Records() int64 { return r.records }

// Batches returns the number of batches, control batches included.
func (r *Reader) Batches() int { return r.batches }

// Next advances to the next data batch and reports whether there is one.
// Control batches are skipped (their content is in Header). At the end,
// or on an error (see Err), it returns false.
func (r *Reader) Next() bool {
	if r.err != nil || r.f == nil {
		return false
	}
	for {
		b, pos, err := r.sc.next()
		if err != nil {
			r.err = err
			return false
		}
		if b == nil {
			r.batch = nil
			return false
		}
		if !b.IsControl() {
			r.batch, r.pos = b, pos
			return true
		}
	}
}

// Batch returns the data batch of the last successful Next. Its records'
// values are the framed metadata records (metadata.Decode reads them);
// they alias the Reader's buffer and are valid until the next call to
// Next. Batch().BaseOffset is the offset within the snapshot file and
// Batch().BaseTimestamp the time the batch was written.
func (r *Reader) Batch() *recordbatch.Batch { return r.batch }

// Pos returns the byte position in the file of the last batch Next
// returned.
func (r *Reader) Pos() int64 { return r.pos }

// Err returns the error that stopped Next, or nil at a clean end. Open
// verified the file, so an error here means an I/O error or a file that
// changed after Open.
func (r *Reader) Err() error { return r.err }

// Close closes the file. It is safe to call more than once.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	f := r.f
	r.f = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("snapshot: close %s: %w", r.path, err)
	}
	return nil
}

// scanner reads and checks one batch at a time. Its checks are the
// snapshot rules listed on [Open].
type scanner struct {
	f     io.ReaderAt
	path  string
	size  int64
	epoch int32
	max   int
	dec   recordbatch.Decoder
	buf   []byte

	pos        int64 // byte position of the next batch
	nextOffset int64 // expected base offset of the next batch
	index      int   // batches read
	footer     bool  // the footer has been read
	data       bool  // a data batch has been read
	header     Header
	times      BatchTimes
	cur        recordbatch.Batch
}

func (s *scanner) corrupt(pos int64, truncated bool, err error, format string, args ...any) *CorruptError {
	return &CorruptError{Path: s.path, Pos: pos, Reason: fmt.Sprintf(format, args...), Truncated: truncated, Err: err}
}

// next returns the next batch and its position, or nil at the clean end.
func (s *scanner) next() (*recordbatch.Batch, int64, error) {
	pos := s.pos
	rest := s.size - pos
	if rest == 0 {
		if !s.footer {
			if s.index == 0 {
				return nil, pos, s.corrupt(pos, true, nil, "empty file")
			}
			return nil, pos, s.corrupt(pos, true, nil, "file ends without a SnapshotFooter")
		}
		return nil, pos, nil
	}
	if s.footer {
		return nil, pos, s.corrupt(pos, false, nil, "%d bytes after the SnapshotFooter batch", rest)
	}
	if rest < recordbatch.LogOverhead {
		return nil, pos, s.corrupt(pos, true, nil, "%d bytes left, less than a batch's length prefix", rest)
	}
	if err := s.read(0, pos, recordbatch.LogOverhead); err != nil {
		return nil, pos, err
	}
	total, err := recordbatch.TotalSize(s.buf[:recordbatch.LogOverhead])
	if err != nil {
		return nil, pos, s.corrupt(pos, false, err, "bad batch length")
	}
	if total > s.max {
		return nil, pos, s.corrupt(pos, false, nil, "batch of %d bytes exceeds the limit of %d", total, s.max)
	}
	if int64(total) > rest {
		return nil, pos, s.corrupt(pos, true, nil, "batch of %d bytes but only %d bytes left", total, rest)
	}
	// The length prefix is already in the buffer; read the rest.
	if err := s.read(recordbatch.LogOverhead, pos+recordbatch.LogOverhead, total); err != nil {
		return nil, pos, err
	}
	b, err := s.dec.Decode(s.buf[:total])
	if err != nil {
		var be *recordbatch.Error
		at := pos
		if errors.As(err, &be) {
			at += be.Pos
		}
		return nil, pos, s.corrupt(at, false, err, "invalid batch")
	}
	if err := s.check(&b, pos); err != nil {
		return nil, pos, err
	}
	s.pos += int64(total)
	s.nextOffset = b.NextOffset()
	s.index++
	s.cur = b
	return &s.cur, pos, nil
}

// rewind starts the scan again from the first batch.
func (s *scanner) rewind() {
	s.pos, s.nextOffset, s.index, s.footer, s.data, s.header, s.times = 0, 0, 0, false, false, Header{}, BatchTimes{}
}

// read fills s.buf[from:n] from the file at pos, keeping s.buf[:from].
func (s *scanner) read(from int, pos int64, n int) error {
	if cap(s.buf) < n {
		nb := make([]byte, n)
		copy(nb, s.buf[:from])
		s.buf = nb
	}
	s.buf = s.buf[:n]
	got, err := s.f.ReadAt(s.buf[from:], pos)
	if got == n-from {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return s.corrupt(pos, true, err, "file shrank while reading")
	}
	return fmt.Errorf("snapshot: read %s at byte %d: %w", s.path, pos, err)
}

// check applies the snapshot rules to a decoded batch at pos.
func (s *scanner) check(b *recordbatch.Batch, pos int64) error {
	if b.BaseOffset != s.nextOffset {
		return s.corrupt(pos, false, nil, "batch base offset %d, want %d (offsets start at 0 and are contiguous)", b.BaseOffset, s.nextOffset)
	}
	if b.PartitionLeaderEpoch != s.epoch {
		return s.corrupt(pos, false, nil, "batch partition leader epoch %d, want the snapshot epoch %d", b.PartitionLeaderEpoch, s.epoch)
	}
	if b.IsTransactional() {
		return s.corrupt(pos, false, nil, "transactional batch")
	}
	n := len(b.Records)
	if n == 0 || b.LastOffsetDelta != int32(n-1) {
		return s.corrupt(pos, false, nil, "batch of %d records with last offset delta %d", n, b.LastOffsetDelta)
	}
	for i := range b.Records {
		if b.Records[i].OffsetDelta != int32(i) {
			return s.corrupt(pos, false, nil, "record %d has offset delta %d", i, b.Records[i].OffsetDelta)
		}
	}
	if s.index == 0 {
		if !b.IsControl() {
			return s.corrupt(pos, false, nil, "first batch is not a control batch")
		}
		s.times.Header = b.BaseTimestamp
		return s.checkHeader(b, pos)
	}
	if !b.IsControl() {
		if !s.data {
			s.times.Data, s.data = b.BaseTimestamp, true
		}
		for i := range b.Records {
			if b.Records[i].Value == nil {
				return s.corrupt(pos, false, nil, "record %d has a null value", i)
			}
		}
		return nil
	}
	// A later control batch must be the footer batch: Kafka writes the
	// kraft.version and voter records of a snapshot only in its header.
	// Records of unknown types are skipped, as Kafka does, so a batch of
	// nothing else is skipped as a whole.
	for i := range b.Records {
		t, msg, err := s.decodeControl(b, i, pos)
		if err != nil {
			return err
		}
		if msg == nil {
			continue
		}
		if t != control.SnapshotFooter {
			return s.corrupt(pos, false, nil, "unexpected %s control record after the header batch", t)
		}
		if i != n-1 {
			return s.corrupt(pos, false, nil, "%d records after the SnapshotFooter", n-1-i)
		}
		s.footer = true
		s.times.Footer = b.BaseTimestamp
	}
	return nil
}

// checkHeader reads the header control batch: SnapshotHeader first, then
// optionally KRaftVersion, then optionally Voters (after KRaftVersion),
// in that order, as RecordsSnapshotWriter writes them.
func (s *scanner) checkHeader(b *recordbatch.Batch, pos int64) error {
	seen := control.SnapshotHeader
	for i := range b.Records {
		t, msg, err := s.decodeControl(b, i, pos)
		if err != nil {
			return err
		}
		if i == 0 {
			h, ok := msg.(*control.SnapshotHeaderRecord)
			if !ok {
				return s.corrupt(pos, false, nil, "first record is not a SnapshotHeader (type %d)", t)
			}
			s.header.LastContainedLogTimestamp = h.LastContainedLogTimestamp
			continue
		}
		switch m := msg.(type) {
		case nil:
			// unknown type: skipped
		case *control.KRaftVersionRecord:
			if seen != control.SnapshotHeader {
				return s.corrupt(pos, false, nil, "KRaftVersion record after %s", seen)
			}
			if m.KRaftVersion < 0 {
				return s.corrupt(pos, false, nil, "negative kraft.version %d", m.KRaftVersion)
			}
			s.header.KRaftVersion, seen = m.KRaftVersion, t
		case *control.VotersRecord:
			if seen != control.KRaftVersion {
				return s.corrupt(pos, false, nil, "Voters record not directly after a KRaftVersion record")
			}
			s.header.Voters, seen = m, t
		default:
			return s.corrupt(pos, false, nil, "unexpected %s control record in the header batch", t)
		}
	}
	return nil
}

// decodeControl decodes control record i of b. It returns a nil message
// for an unknown type, which the caller skips.
func (s *scanner) decodeControl(b *recordbatch.Batch, i int, pos int64) (control.Type, control.Message, error) {
	r := &b.Records[i]
	msg, err := control.Decode(r.Key, r.Value)
	if err != nil {
		if errors.Is(err, control.ErrUnknownType) {
			t, _ := control.ParseKey(r.Key)
			return t, nil, nil
		}
		return 0, nil, s.corrupt(pos, false, err, "control record %d", i)
	}
	return msg.ControlType(), msg, nil
}
