package recordbatch

import (
	"errors"
	"fmt"
	"slices"
)

// Batch is a decoded record batch.
type Batch struct {
	// Header is the batch's fixed header.
	Header
	// Records are the decoded records. For an uncompressed batch their
	// byte slices alias Raw; for a compressed one they alias the
	// decoder's decompression buffer.
	Records []Record
	// Raw is the whole encoded batch, Header.Size() bytes of the input.
	Raw []byte
}

// Decoder decodes record batches, reusing its record slice and its
// decompression state and buffers between calls. The zero value is ready
// to use with the default limit. A Decoder is not safe for concurrent use.
//
// Ownership: the Batch returned by [Decoder.Decode] aliases the input and
// the Decoder's buffers; its Records (and, for compressed batches, their
// keys, values and headers) are valid only until the next call on the same
// Decoder. Use [Parse] for a batch that owns its records.
type Decoder struct {
	// MaxDecompressedSize bounds the decompressed size of the records of
	// one compressed batch; zero means [DefaultMaxDecompressedSize]. A
	// batch that decompresses to more fails with ReasonTooLarge.
	MaxDecompressedSize int

	records []Record
	headers []RecordHeader
	buf     []byte
	dec     decompressors
}

// Parse decodes the batch at the start of b with a fresh [Decoder]: the
// returned records are not shared with any other call. Bytes after the
// batch are ignored; the batch is Raw = b[:h.Size()].
func Parse(b []byte) (Batch, error) {
	var d Decoder
	return d.Decode(b)
}

// Decode validates and decodes the batch at the start of b: completeness,
// length bounds, magic, CRC-32C, compression codec, record count and every
// record's framing. Failures are *[Error] values whose Pos is relative to b.
// Bytes after the batch are ignored.
//
// Decode allocates nothing whose size comes from an unchecked length: the
// record slice is sized by the record count only after checking that the
// records section could hold that many records, and decompression stops at
// MaxDecompressedSize.
func (d *Decoder) Decode(b []byte) (Batch, error) {
	return d.decode(b, 0)
}

func (d *Decoder) limit() int {
	if d.MaxDecompressedSize > 0 {
		return d.MaxDecompressedSize
	}
	return DefaultMaxDecompressedSize
}

func (d *Decoder) decode(b []byte, pos int64) (Batch, error) {
	h, err := validate(b, pos)
	if err != nil {
		return Batch{}, err
	}
	size := h.Size()
	raw := b[:size:size]
	area := raw[HeaderSize:]
	if h.NumRecords < 0 {
		return Batch{}, errAt(b, pos, offRecordsCount, ReasonRecordCountMismatch, fmt.Sprintf("negative record count %d", h.NumRecords), nil)
	}
	codec := h.Compression()
	if !codec.valid() {
		return Batch{}, errAt(b, pos, offAttributes, ReasonBadCompression, fmt.Sprintf("unknown codec %d", uint8(codec)), nil)
	}
	compressed := codec != CompressionNone
	if compressed {
		out, err := d.dec.decompress(codec, d.buf, area, d.limit())
		d.buf = out[:0]
		if errors.Is(err, errTooLarge) {
			return Batch{}, errAt(b, pos, HeaderSize, ReasonTooLarge, fmt.Sprintf("%s records exceed %d bytes", codec, d.limit()), nil)
		}
		if err != nil {
			return Batch{}, errAt(b, pos, HeaderSize, ReasonBadCompression, codec.String(), err)
		}
		area = out
	}
	if int64(h.NumRecords) > int64(len(area)/minRecordSize) {
		return Batch{}, errAt(b, pos, offRecordsCount, ReasonRecordCountMismatch,
			fmt.Sprintf("record count %d cannot fit in %d bytes of records", h.NumRecords, len(area)), nil)
	}
	recs := slices.Grow(d.records[:0], int(h.NumRecords))
	d.headers = d.headers[:0]
	off := 0
	for i := range int(h.NumRecords) {
		if off == len(area) {
			return Batch{}, errAt(b, pos, HeaderSize+recPos(compressed, off), ReasonRecordCountMismatch,
				fmt.Sprintf("records end after %d of %d records", i, h.NumRecords), nil)
		}
		recs = recs[:i+1]
		n, rerr := decodeRecord(area[off:], &recs[i], &d.headers)
		if rerr != nil {
			detail := fmt.Sprintf("record %d: %s", i, rerr.detail)
			if compressed {
				detail += fmt.Sprintf(" (decompressed byte %d)", off+rerr.rel)
			}
			return Batch{}, errAt(b, pos, HeaderSize+recPos(compressed, off+rerr.rel), rerr.reason, detail, nil)
		}
		off += n
	}
	if off != len(area) {
		return Batch{}, errAt(b, pos, HeaderSize+recPos(compressed, off), ReasonRecordCountMismatch,
			fmt.Sprintf("%d bytes after the last of %d records", len(area)-off, h.NumRecords), nil)
	}
	d.records = recs
	return Batch{Header: h, Records: recs, Raw: raw}, nil
}

// recPos maps a position in the records section to a position relative to
// the records start in the input: itself when uncompressed, 0 (the start
// of the compressed bytes) when compressed.
func recPos(compressed bool, off int) int {
	if compressed {
		return 0
	}
	return off
}

// Iterator walks the concatenated batches of a byte slice, such as a log
// segment or a snapshot file:
//
//	it := recordbatch.NewIterator(nil, segment)
//	for it.Next() {
//		b := it.Batch()
//		...
//	}
//	if err := it.Err(); err != nil { ... } // *Error, Pos relative to segment
//
// Iteration stops at the first invalid batch. [Iterator.Offset] is then the
// end of the valid prefix, where a log store cuts a torn tail.
type Iterator struct {
	d     *Decoder
	b     []byte
	off   int
	cur   Batch
	start int
	err   error
}

// NewIterator returns an iterator over the batches in b, decoding with d
// (a fresh default [Decoder] when d is nil). Batches returned by the
// iterator share d's buffers: each is valid until the next call to Next.
func NewIterator(d *Decoder, b []byte) *Iterator {
	if d == nil {
		d = new(Decoder)
	}
	return &Iterator{d: d, b: b}
}

// Next decodes the next batch and reports whether there was one. It
// returns false at the end of the input or on error; see [Iterator.Err].
func (it *Iterator) Next() bool {
	if it.err != nil || it.off >= len(it.b) {
		return false
	}
	batch, err := it.d.decode(it.b[it.off:], int64(it.off))
	if err != nil {
		it.err = err
		it.cur = Batch{}
		return false
	}
	it.cur = batch
	it.start = it.off
	it.off += batch.Size()
	return true
}

// Batch returns the batch decoded by the last successful Next.
func (it *Iterator) Batch() *Batch { return &it.cur }

// Pos returns the byte position of the current batch in the input.
func (it *Iterator) Pos() int { return it.start }

// Offset returns the number of input bytes consumed by valid batches.
func (it *Iterator) Offset() int { return it.off }

// Err returns the error that stopped iteration, or nil at a clean end.
func (it *Iterator) Err() error { return it.err }
