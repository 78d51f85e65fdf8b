package dumplog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/metadata"
)

// Options select what [Dump] prints; they mirror kafka-dump-log's flags.
type Options struct {
	// MetadataDecoder is --cluster-metadata-decoder: decode data records
	// as metadata records and print them as JSON payloads. It implies
	// deep iteration.
	MetadataDecoder bool
	// PrintDataLog is --print-data-log: print record keys and values (as
	// text, unless MetadataDecoder decodes them). It implies deep
	// iteration.
	PrintDataLog bool
	// DeepIteration is --deep-iteration: print every record, not only
	// the batches.
	DeepIteration bool
	// SkipRecordMetadata is --skip-record-metadata: leave out the
	// "| offset: ..." part of record lines.
	SkipRecordMetadata bool
	// MaxBytes is --max-bytes: stop before a batch that starts at or
	// ends after this many bytes into the file; 0 means no limit.
	MaxBytes int64
}

// deep reports whether records are printed: --deep-iteration, or any
// flag that implies it, as in Kafka's tool.
func (o Options) deep() bool { return o.DeepIteration || o.PrintDataLog || o.MetadataDecoder }

// Summary counts what [Dump] found in one file.
type Summary struct {
	// Batches is the number of batches printed.
	Batches int
	// InvalidBatches counts batches printed with isvalid: false.
	InvalidBatches int
	// Errors counts batches whose records could not be decoded, control
	// records that could not be decoded and metadata records printed as
	// "Error at <offset>".
	Errors int
	// InvalidTrailingBytes is the number of bytes at the end of the file
	// that do not form a complete batch.
	InvalidTrailingBytes int
	// ZeroTailBytes is the number of zero bytes that end a segment after
	// its last batch: the preallocated end of a running node's active
	// segment (or what a crash left of it). That is where the log ends,
	// not damage: nothing is printed for it.
	ZeroTailBytes int
}

// FileKind is what kind of metadata log file a name denotes.
type FileKind int

// File kinds Dump understands.
const (
	// Segment is a log segment, <20-digit base offset>.log.
	Segment FileKind = iota + 1
	// Snapshot is a snapshot, <20-digit end offset>-<10-digit epoch>.checkpoint.
	Snapshot
	// Bootstrap is bootstrap.checkpoint.
	Bootstrap
)

// Describe returns the kind of the file at path, from its name, and the
// line Dump prints after "Dumping <path>". It fails for a name that is
// not a segment, a snapshot or bootstrap.checkpoint.
func Describe(path string) (FileKind, string, error) {
	name := filepath.Base(path)
	if name == snapshot.BootstrapFile {
		return Bootstrap, "KRaft bootstrap snapshot", nil
	}
	if base, ok := strings.CutSuffix(name, ".log"); ok {
		off, err := strconv.ParseInt(base, 10, 64)
		if err != nil || len(base) != 20 || off < 0 {
			return 0, "", fmt.Errorf("%s: a log segment is named <20-digit base offset>.log", path)
		}
		return Segment, fmt.Sprintf("Log starting offset: %d", off), nil
	}
	if strings.HasSuffix(name, ".checkpoint") {
		id, kind, err := snapshot.ParseFileName(name)
		if err != nil || kind != snapshot.KindSnapshot {
			return 0, "", fmt.Errorf("%s: a snapshot is named <20-digit end offset>-<10-digit epoch>.checkpoint", path)
		}
		return Snapshot, fmt.Sprintf("Snapshot end offset: %d, epoch: %d", id.Offset, id.Epoch), nil
	}
	return 0, "", fmt.Errorf("%s: not a metadata log file: dump-log reads .log segments, <offset>-<epoch>.checkpoint snapshots and bootstrap.checkpoint", path)
}

// Dump prints the file at path, whose content is data, to w in
// kafka-dump-log's layout. It fails only when the name is not one
// [Describe] accepts or when writing to w fails; damage inside the file
// is printed and counted in the Summary.
func Dump(w io.Writer, path string, data []byte, o Options) (Summary, error) {
	kind, line, err := Describe(path)
	if err != nil {
		return Summary{}, err
	}
	bw := bufio.NewWriter(w)
	d := &dumper{w: bw, o: o, name: filepath.Base(path), segment: kind == Segment}
	fmt.Fprintf(bw, "Dumping %s\n", path)
	fmt.Fprintln(bw, line)
	d.batches(data)
	if err := bw.Flush(); err != nil {
		return d.sum, fmt.Errorf("dumplog: write: %w", err)
	}
	return d.sum, nil
}

// dumper holds the state of one Dump.
type dumper struct {
	w       *bufio.Writer
	o       Options
	name    string
	segment bool // a .log segment, whose end may be preallocated
	sum     Summary
	dec     recordbatch.Decoder
	line    []byte
}

// batches prints every batch of data.
func (d *dumper) batches(data []byte) {
	pos := 0
	for pos < len(data) {
		rest := data[pos:]
		size, err := recordbatch.TotalSize(rest)
		if err == nil && size <= len(rest) {
			_, err = recordbatch.PeekHeader(rest)
		}
		if d.o.MaxBytes > 0 && (int64(pos) >= d.o.MaxBytes || (err == nil && int64(pos+size) > d.o.MaxBytes)) {
			return
		}
		if err != nil || size > len(rest) {
			if d.segment && allZero(rest) {
				// The preallocated end of an active segment: the end of
				// the log, as recovery sees it too.
				d.sum.ZeroTailBytes = len(rest)
				return
			}
			// A batch cut short is the torn tail Kafka reports as
			// invalid bytes; a malformed header also gets its reason.
			var be *recordbatch.Error
			if errors.As(err, &be) && be.Reason != recordbatch.ReasonTruncated {
				fmt.Fprintf(d.w, "Invalid batch at position %d: %s\n", pos, describeError(be))
			}
			d.sum.InvalidTrailingBytes = len(rest)
			fmt.Fprintf(d.w, "Found %d invalid bytes at the end of %s\n", len(rest), d.name)
			return
		}
		d.batch(rest[:size], pos)
		pos += size
	}
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// describeError formats a batch error without the package prefix and
// with positions relative to the file.
func describeError(e *recordbatch.Error) string {
	s := e.Reason.String()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batch prints the complete batch raw found at file position pos.
func (d *dumper) batch(raw []byte, pos int) {
	h, _ := recordbatch.PeekHeader(raw)
	_, verr := recordbatch.Validate(raw)
	valid := verr == nil
	d.sum.Batches++
	if !valid {
		d.sum.InvalidBatches++
	}
	deleteHorizon := "OptionalLong.empty"
	if h.Attributes.DeleteHorizon() {
		deleteHorizon = fmt.Sprintf("OptionalLong[%d]", h.BaseTimestamp)
	}
	fmt.Fprintf(d.w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		h.BaseOffset, h.LastOffset(), h.NumRecords, h.BaseSequence, lastSequence(h), h.ProducerID, h.ProducerEpoch,
		h.PartitionLeaderEpoch, h.IsTransactional(), h.IsControl(), deleteHorizon,
		pos, h.TimestampType(), h.MaxTimestamp, len(raw), h.Magic, codecName(h.Compression()), h.CRC, valid)
	if !d.o.deep() {
		return
	}
	buf := raw
	if !valid {
		// Print what the records say even though the checksum does not
		// match, as Kafka does: decode a copy with the CRC recomputed.
		buf = append([]byte(nil), raw...)
		binary.BigEndian.PutUint32(buf[17:], crc32.Checksum(buf[21:], castagnoli))
	}
	b, err := d.dec.Decode(buf)
	if err != nil {
		d.sum.Errors++
		var be *recordbatch.Error
		if errors.As(err, &be) {
			fmt.Fprintf(d.w, "Could not read the records of the batch at position %d: %s at position %d\n", pos, describeError(be), int64(pos)+be.Pos)
		} else {
			fmt.Fprintf(d.w, "Could not read the records of the batch at position %d: %v\n", pos, err)
		}
		return
	}
	for i := range b.Records {
		d.record(&b.Header, &b.Records[i])
	}
}

// lastSequence is Kafka's DefaultRecordBatch.lastSequence: -1 without a
// base sequence, else the base sequence plus the last offset delta,
// wrapping at the int32 maximum.
func lastSequence(h recordbatch.Header) int32 {
	if h.BaseSequence == -1 {
		return -1
	}
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// incrementSequence adds delta to a producer sequence, wrapping past
// the int32 maximum to 0 as Kafka does.
func incrementSequence(seq, delta int32) int32 {
	if seq > (1<<31-1)-delta {
		return delta - ((1<<31 - 1) - seq) - 1
	}
	return seq + delta
}

// codecName returns Kafka's CompressionType name.
func codecName(c recordbatch.Compression) string {
	switch c {
	case recordbatch.CompressionNone:
		return "none"
	case recordbatch.CompressionGzip:
		return "gzip"
	case recordbatch.CompressionSnappy:
		return "snappy"
	case recordbatch.CompressionLZ4:
		return "lz4"
	case recordbatch.CompressionZstd:
		return "zstd"
	}
	return "unknown(" + strconv.Itoa(int(c)) + ")"
}

// record prints one record line.
func (d *dumper) record(h *recordbatch.Header, r *recordbatch.Record) {
	offset := h.RecordOffset(r)
	l := d.line[:0]
	if !d.o.SkipRecordMetadata {
		seq := int32(-1)
		if h.BaseSequence != -1 {
			seq = incrementSequence(h.BaseSequence, r.OffsetDelta)
		}
		l = fmt.Appendf(l, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [",
			offset, h.TimestampType(), h.RecordTimestamp(r), size(r.Key), size(r.Value), seq)
		for i, hd := range r.Headers {
			if i > 0 {
				l = append(l, ',')
			}
			l = append(l, hd.Key...)
		}
		l = append(l, ']')
	}
	switch {
	case h.IsControl():
		l = d.appendControl(l, r)
	case d.o.MetadataDecoder:
		l = append(l, " payload: "...)
		l = d.appendMetadata(l, r, offset)
	case d.o.PrintDataLog:
		if r.Key != nil {
			l = append(l, " key: "...)
			l = append(l, strings.ToValidUTF8(string(r.Key), "\uFFFD")...)
		}
		if r.Value != nil {
			l = append(l, " payload: "...)
			l = append(l, strings.ToValidUTF8(string(r.Value), "\uFFFD")...)
		}
	}
	l = append(l, '\n')
	d.w.Write(l)
	d.line = l
}

// size is Kafka's keySize/valueSize: -1 for null.
func size(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// controlLabels are the words Kafka prints before a decoded control
// record's JSON.
var controlLabels = map[control.Type]string{
	control.LeaderChange:   " LeaderChange: ",
	control.SnapshotHeader: " SnapshotHeader ",
	control.SnapshotFooter: " SnapshotFooter ",
	control.KRaftVersion:   " KRaftVersion ",
	control.KRaftVoters:    " KRaftVoters ",
}

// appendControl appends the decoded control record r.
func (d *dumper) appendControl(l []byte, r *recordbatch.Record) []byte {
	t, err := control.ParseKey(r.Key)
	if err != nil {
		d.sum.Errors++
		return fmt.Appendf(l, " controlType: UNKNOWN(-1) error: %v", err)
	}
	switch t {
	case control.Abort, control.Commit:
		// Transaction markers: int16 version, int32 coordinator epoch.
		if len(r.Value) < 6 {
			d.sum.Errors++
			return fmt.Appendf(l, " endTxnMarker: %s error: value of %d bytes is too short", t, len(r.Value))
		}
		return fmt.Appendf(l, " endTxnMarker: %s coordinatorEpoch: %d", t, int32(binary.BigEndian.Uint32(r.Value[2:])))
	}
	label, known := controlLabels[t]
	if !known {
		return fmt.Appendf(l, " controlType: UNKNOWN(-1)")
	}
	msg, err := control.Decode(r.Key, r.Value)
	if err != nil {
		d.sum.Errors++
		return fmt.Appendf(l, " controlType: %s(%d) error: %v", t, int16(t), err)
	}
	start := len(l)
	l = append(l, label...)
	l, err = appendMessageJSON(l, msg, messageVersion(msg))
	if err != nil {
		d.sum.Errors++
		return fmt.Appendf(l[:start], " controlType: %s(%d) error: %v", t, int16(t), err)
	}
	return l
}

// messageVersion returns the Version field of a control message, the
// version Kafka's dump writes its JSON at.
func messageVersion(msg any) int16 {
	v := reflect.ValueOf(msg).Elem().FieldByName("Version")
	if !v.IsValid() {
		return 0
	}
	return int16(v.Int())
}

// appendMetadata appends the payload of a metadata data record.
func (d *dumper) appendMetadata(l []byte, r *recordbatch.Record, offset int64) []byte {
	rec, err := metadata.Decode(r.Value)
	if err != nil {
		d.sum.Errors++
		return fmt.Appendf(l, "Error at %d, skipping. %v", offset, err)
	}
	start := len(l)
	l, err = AppendPayload(l, rec)
	if err != nil {
		d.sum.Errors++
		return fmt.Appendf(l[:start], "Error at %d, skipping. %v", offset, err)
	}
	return l
}

// AppendPayload appends the JSON form Kafka's dump tool prints for a
// metadata record: {"type":"<RECORD_TYPE>","version":<v>,"data":{...}}.
func AppendPayload(dst []byte, rec metadata.Record) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, RecordTypeName(rec))
	dst = fmt.Appendf(dst, `,"version":%d,"data":`, rec.GetVersion())
	dst, err := appendMessageJSON(dst, rec, rec.GetVersion())
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// RecordTypeName returns Kafka's MetadataRecordType name of a record,
// such as TOPIC_RECORD or ZK_MIGRATION_STATE_RECORD: its type name in
// upper snake case.
func RecordTypeName(rec metadata.Record) string {
	name := reflect.TypeOf(rec).Elem().Name()
	var b strings.Builder
	prevUpper := true
	for _, c := range name {
		if unicode.IsUpper(c) {
			if !prevUpper {
				b.WriteByte('_')
			}
			prevUpper = true
		} else {
			prevUpper = false
		}
		b.WriteRune(unicode.ToUpper(c))
	}
	return b.String()
}

// AppendControlJSON appends the JSON form of a control message at its
// Version, as Kafka's dump prints it after the control type's label.
func AppendControlJSON(dst []byte, msg control.Message) ([]byte, error) {
	return appendMessageJSON(dst, msg, messageVersion(msg))
}
