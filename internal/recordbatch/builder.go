package recordbatch

import (
	"fmt"
	"hash/crc32"
	"math"
)

// Params are the header fields of a batch that the caller chooses. The
// builder computes the rest (BatchLength, CRC, LastOffsetDelta,
// timestamps, RecordsCount) unless told otherwise.
type Params struct {
	// BaseOffset is the offset of the first record. The leader's append
	// path may leave it 0 and [Stamp] the encoded batch later.
	BaseOffset int64
	// PartitionLeaderEpoch is the epoch of the writing leader, or the
	// snapshot epoch in a snapshot file. It can also be stamped later.
	PartitionLeaderEpoch int32
	// Attributes selects the compression codec (bits 0-2; records are
	// compressed in Finish), the timestamp type and the transactional,
	// control and delete-horizon bits. KRaft writes 0 for data batches
	// and [AttrControl] for control batches.
	Attributes Attributes
	// ProducerID, ProducerEpoch and BaseSequence are -1 in everything
	// KRaft writes; see [DefaultParams].
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
}

// DefaultParams returns the parameters of a KRaft data batch at offset 0,
// epoch 0: no compression, CreateTime, producer id, epoch and base
// sequence -1.
func DefaultParams() Params {
	return Params{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// KeyValue is the key and value of one record, e.g. a control record's
// 4-byte key and its serialized message.
type KeyValue struct {
	Key, Value []byte
}

// Builder encodes one record batch at a time, appending it to a buffer the
// caller owns. It allocates only to grow that buffer and, with compression,
// its own reusable scratch space and compressor; appending a record does
// not allocate otherwise. A Builder is reusable: [Builder.Reset] starts the
// next batch. It is not safe for concurrent use.
//
// Typical use, for the KRaft leader's accumulator:
//
//	var b recordbatch.Builder
//	b.Reset(buf[:0], recordbatch.DefaultParams())
//	for _, v := range values {
//		b.Append(appendTimeMs, nil, v, nil)
//	}
//	buf, err := b.Finish()
type Builder struct {
	buf   []byte
	start int
	p     Params
	ready bool

	n               int64
	lastOffsetDelta int32
	baseTS          int64
	haveBase        bool
	maxTSDelta      int64
	haveMax         bool

	fixedTS   bool
	fixedMax  int64
	fixedLast bool
	fixedLOD  int32

	comp    compressors
	scratch []byte
}

// Reset starts a new batch that Finish will append to dst (after
// len(dst)), with header fields from p. Any unfinished batch is dropped.
func (b *Builder) Reset(dst []byte, p Params) {
	*b = Builder{comp: b.comp, scratch: b.scratch[:0], buf: dst, start: len(dst), p: p, ready: true}
	var hdr [HeaderSize]byte
	b.buf = append(b.buf, hdr[:]...)
}

// ensure makes a zero Builder behave as Reset(nil, DefaultParams()).
func (b *Builder) ensure() {
	if !b.ready {
		b.Reset(nil, DefaultParams())
	}
}

// SetTimestamps fixes the header's BaseTimestamp and MaxTimestamp instead
// of deriving them from the records. Append computes timestamp deltas from
// base, so it must be called before the first record (it panics
// otherwise: the deltas already written would be wrong). Used to re-encode a batch exactly
// (see [Builder.Encode]) and for LogAppendTime batches.
func (b *Builder) SetTimestamps(base, max int64) {
	b.ensure()
	if b.n > 0 {
		panic("recordbatch: invariant: SetTimestamps called after records were appended")
	}
	b.baseTS, b.haveBase = base, true
	b.fixedTS, b.fixedMax = true, max
}

// SetLastOffsetDelta fixes the header's LastOffsetDelta instead of using
// the last record's offset delta (it can differ in compacted batches).
func (b *Builder) SetLastOffsetDelta(d int32) {
	b.ensure()
	b.fixedLast, b.fixedLOD = true, d
}

// Append adds a record with the next offset delta (0, 1, ...), the given
// timestamp in ms, key and value (nil = null) and headers. The first
// record's timestamp becomes BaseTimestamp unless SetTimestamps was
// called; MaxTimestamp is the largest timestamp appended.
func (b *Builder) Append(timestamp int64, key, value []byte, headers []RecordHeader) {
	b.ensure()
	if !b.haveBase {
		b.baseTS, b.haveBase = timestamp, true
	}
	if b.n > math.MaxInt32 {
		panic("recordbatch: invariant: more than 2^31 records in one batch")
	}
	b.add(0, timestamp-b.baseTS, int32(b.n), key, value, headers)
}

// AppendRecord adds r exactly as given: its attributes, timestamp delta and
// offset delta are written unchanged. Offset deltas are the caller's to
// keep increasing. Used with SetTimestamps to re-encode a decoded batch.
func (b *Builder) AppendRecord(r *Record) {
	b.ensure()
	b.add(r.Attributes, r.TimestampDelta, r.OffsetDelta, r.Key, r.Value, r.Headers)
}

func (b *Builder) add(attrs int8, tsDelta int64, offDelta int32, key, value []byte, headers []RecordHeader) {
	b.buf = appendRecord(b.buf, attrs, tsDelta, offDelta, key, value, headers)
	if !b.haveMax || tsDelta > b.maxTSDelta {
		b.maxTSDelta, b.haveMax = tsDelta, true
	}
	b.lastOffsetDelta = offDelta
	b.n++
}

// Len returns the number of records appended since Reset.
func (b *Builder) Len() int { return int(b.n) }

// Size returns the encoded size of the batch so far, before compression:
// the 61-byte header plus the records. The leader compares it with the
// 8 MiB batch limit before appending more.
func (b *Builder) Size() int {
	if !b.ready {
		return HeaderSize
	}
	return len(b.buf) - b.start
}

// Finish compresses the records if the attributes ask for it, writes the
// header and CRC-32C, and returns the buffer given to Reset with the batch
// appended. Without records, BaseTimestamp and MaxTimestamp are -1 (no
// timestamp) unless set, and LastOffsetDelta is -1 unless set. The
// returned slice is the caller's; the Builder keeps no reference to it.
// After Finish, Reset starts the next batch (a finished or zero Builder
// used without Reset behaves as after Reset(nil, DefaultParams())).
func (b *Builder) Finish() ([]byte, error) {
	b.ensure()
	codec := b.p.Attributes.Compression()
	if !codec.valid() {
		return nil, fmt.Errorf("recordbatch: finish: unknown compression codec %d", uint8(codec))
	}
	if codec != CompressionNone {
		var err error
		b.scratch, err = b.comp.compress(codec, b.scratch[:0], b.buf[b.start+HeaderSize:])
		if err != nil {
			return nil, fmt.Errorf("recordbatch: finish: compress %s: %w", codec, err)
		}
		b.buf = append(b.buf[:b.start+HeaderSize], b.scratch...)
	}
	size := len(b.buf) - b.start
	if size-LogOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("recordbatch: finish: batch of %d bytes exceeds the int32 length field", size)
	}
	h := Header{
		BaseOffset:           b.p.BaseOffset,
		BatchLength:          int32(size - LogOverhead),
		PartitionLeaderEpoch: b.p.PartitionLeaderEpoch,
		Magic:                Magic,
		Attributes:           b.p.Attributes,
		LastOffsetDelta:      -1,
		BaseTimestamp:        -1,
		MaxTimestamp:         -1,
		ProducerID:           b.p.ProducerID,
		ProducerEpoch:        b.p.ProducerEpoch,
		BaseSequence:         b.p.BaseSequence,
		NumRecords:           int32(b.n),
	}
	if b.n > 0 {
		h.LastOffsetDelta = b.lastOffsetDelta
	}
	if b.fixedLast {
		h.LastOffsetDelta = b.fixedLOD
	}
	if b.haveBase {
		h.BaseTimestamp = b.baseTS
		if b.haveMax {
			h.MaxTimestamp = b.baseTS + b.maxTSDelta
		}
	}
	if b.fixedTS {
		h.MaxTimestamp = b.fixedMax
	}
	out := b.buf[b.start:]
	putHeader(out, &h)
	h.CRC = crc32.Checksum(out[offAttributes:], castagnoli)
	putHeader(out, &h)
	res := b.buf
	b.buf, b.ready = nil, false
	return res, nil
}

// Encode appends to dst the batch with header h and records recs, writing
// every header field as given (BaseTimestamp, MaxTimestamp and
// LastOffsetDelta included) except BatchLength, CRC and RecordsCount,
// which it computes. Records are written exactly (see
// [Builder.AppendRecord]). For an uncompressed batch decoded by this
// package, Encode(nil, &batch.Header, batch.Records) reproduces batch.Raw
// byte for byte. It resets the Builder.
func (b *Builder) Encode(dst []byte, h *Header, recs []Record) ([]byte, error) {
	b.Reset(dst, Params{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes:           h.Attributes,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
	})
	b.SetTimestamps(h.BaseTimestamp, h.MaxTimestamp)
	b.SetLastOffsetDelta(h.LastOffsetDelta)
	for i := range recs {
		b.AppendRecord(&recs[i])
	}
	return b.Finish()
}

// AppendControlBatch appends to dst a control batch (p's attributes with
// [AttrControl] set) holding one record per element of recs, with offset
// deltas 0.. and the given timestamp. The keys are the 4-byte control
// record keys (int16 version, int16 type) and the values the serialized
// control messages; this package does not interpret either.
func AppendControlBatch(dst []byte, p Params, timestamp int64, recs ...KeyValue) ([]byte, error) {
	var b Builder
	p.Attributes |= AttrControl
	b.Reset(dst, p)
	for i := range recs {
		b.Append(timestamp, recs[i].Key, recs[i].Value, nil)
	}
	return b.Finish()
}
