package recordbatch

import "fmt"

// Record is one record of a batch (DefaultRecord.java). Records decoded from
// an uncompressed batch alias the input: Key, Value and header slices point
// into it, so the input must not be modified while the Record is in use.
type Record struct {
	// Attributes is the record's attribute byte; Kafka writes 0 and
	// ignores it on read.
	Attributes int8
	// TimestampDelta is the record's timestamp minus the batch's
	// BaseTimestamp, in ms.
	TimestampDelta int64
	// OffsetDelta is the record's offset minus the batch's BaseOffset.
	OffsetDelta int32
	// Key is the record key; nil means null (length -1 on the wire), which
	// differs from an empty key (length 0). KRaft data records have a null
	// key; control records have a 4-byte key.
	Key []byte
	// Value is the record value; nil means null, as for Key.
	Value []byte
	// Headers are the record headers, nil when there are none.
	Headers []RecordHeader
}

// RecordHeader is one key/value header of a record. Kafka forbids a null
// header key: a nil Key is written as an empty key and always decodes as a
// non-nil slice. A nil Value is null.
type RecordHeader struct {
	// Key is the header key (a UTF-8 string in Kafka, not checked here).
	Key []byte
	// Value is the header value; nil means null.
	Value []byte
}

// bytesSize is the encoded size of a nullable byte field.
func bytesSize(b []byte) int {
	if b == nil {
		return 1
	}
	return varintSize(int64(len(b))) + len(b)
}

// appendBytes appends a nullable byte field (varint length, -1 for nil).
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 1) // zig-zag of -1
	}
	dst = appendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// recordBodySize is the size of a record after its length varint.
func recordBodySize(tsDelta int64, offDelta int32, key, value []byte, headers []RecordHeader) int {
	n := 1 + varintSize(tsDelta) + varintSize(int64(offDelta)) + bytesSize(key) + bytesSize(value) + varintSize(int64(len(headers)))
	for i := range headers {
		n += varintSize(int64(len(headers[i].Key))) + len(headers[i].Key) + bytesSize(headers[i].Value)
	}
	return n
}

// appendRecord appends one encoded record.
func appendRecord(dst []byte, attrs int8, tsDelta int64, offDelta int32, key, value []byte, headers []RecordHeader) []byte {
	body := recordBodySize(tsDelta, offDelta, key, value, headers)
	dst = appendVarint(dst, int64(body))
	dst = append(dst, byte(attrs))
	dst = appendVarint(dst, tsDelta)
	dst = appendVarint(dst, int64(offDelta))
	dst = appendBytes(dst, key)
	dst = appendBytes(dst, value)
	dst = appendVarint(dst, int64(len(headers)))
	for i := range headers {
		dst = appendVarint(dst, int64(len(headers[i].Key)))
		dst = append(dst, headers[i].Key...)
		dst = appendBytes(dst, headers[i].Value)
	}
	return dst
}

// recordErr describes a record decoding failure relative to the record.
type recordErr struct {
	reason Reason
	rel    int
	detail string
}

// recordReader decodes fields from one record body.
type recordReader struct {
	b   []byte
	off int
	err *recordErr
	// base is added to off in error positions (the size of the length
	// varint before the body).
	base int
}

func (r *recordReader) fail(reason Reason, detail string) {
	if r.err == nil {
		r.err = &recordErr{reason: reason, rel: r.base + r.off, detail: detail}
	}
}

// varint reads a varint field; what and suffix name it in errors (two
// parts so that the hot path does not concatenate strings).
func (r *recordReader) varint(what, suffix string) int32 {
	if r.err != nil {
		return 0
	}
	v, n, e := readVarint(r.b[r.off:])
	switch e {
	case varintShort:
		r.fail(ReasonBadRecord, what+suffix+" runs past the record")
	case varintBad:
		r.fail(ReasonBadVarint, what+suffix)
	}
	r.off += n
	return v
}

func (r *recordReader) varlong(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n, e := readVarlong(r.b[r.off:])
	switch e {
	case varintShort:
		r.fail(ReasonBadRecord, what+" runs past the record")
	case varintBad:
		r.fail(ReasonBadVarint, what)
	}
	r.off += n
	return v
}

// bytes reads a length-prefixed field; nullable says whether -1 (null) is
// allowed. The result aliases the record with its capacity capped.
func (r *recordReader) bytes(what string, nullable bool) []byte {
	start := r.off
	n := r.varint(what, " length")
	if r.err != nil {
		return nil
	}
	if n < 0 {
		if n == -1 && nullable {
			return nil
		}
		r.off = start
		r.fail(ReasonBadRecord, fmt.Sprintf("%s length %d", what, n))
		return nil
	}
	if left := len(r.b) - r.off; int(n) > left {
		r.off = start
		r.fail(ReasonBadRecord, fmt.Sprintf("%s length %d runs past the record (%d bytes left)", what, n, left))
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}

// decodeRecord decodes the record at the start of b into rec, appending
// its headers to *hdrs. It returns the encoded size of the record.
func decodeRecord(b []byte, rec *Record, hdrs *[]RecordHeader) (int, *recordErr) {
	length, ln, e := readVarint(b)
	switch e {
	case varintShort:
		return 0, &recordErr{reason: ReasonBadRecord, detail: "record length runs past the records section"}
	case varintBad:
		return 0, &recordErr{reason: ReasonBadVarint, detail: "record length"}
	}
	if length < minRecordSize-1 {
		return 0, &recordErr{reason: ReasonBadRecord, detail: fmt.Sprintf("record length %d below minimum %d", length, minRecordSize-1)}
	}
	if int(length) > len(b)-ln {
		return 0, &recordErr{reason: ReasonBadRecord, detail: fmt.Sprintf("record length %d runs past the records section (%d bytes left)", length, len(b)-ln)}
	}
	r := recordReader{b: b[ln : ln+int(length)], base: ln}
	rec.Attributes = int8(r.b[0])
	r.off = 1
	rec.TimestampDelta = r.varlong("timestamp delta")
	rec.OffsetDelta = r.varint("offset delta", "")
	rec.Key = r.bytes("key", true)
	rec.Value = r.bytes("value", true)
	nh := r.varint("header count", "")
	rec.Headers = nil
	if r.err == nil {
		switch {
		case nh < 0:
			r.off -= varintSize(int64(nh))
			r.fail(ReasonBadRecord, fmt.Sprintf("header count %d", nh))
		case int(nh) > (len(r.b)-r.off)/2:
			// Every header takes at least two bytes; checking first
			// keeps a forged count from driving allocation.
			r.off -= varintSize(int64(nh))
			r.fail(ReasonBadRecord, fmt.Sprintf("header count %d cannot fit in %d bytes", nh, len(r.b)-r.off))
		case nh > 0:
			start := len(*hdrs)
			for i := 0; i < int(nh) && r.err == nil; i++ {
				k := r.bytes("header key", false)
				v := r.bytes("header value", true)
				*hdrs = append(*hdrs, RecordHeader{Key: k, Value: v})
			}
			rec.Headers = (*hdrs)[start:len(*hdrs):len(*hdrs)]
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	if r.off != len(r.b) {
		return 0, &recordErr{reason: ReasonBadRecord, rel: ln + r.off, detail: fmt.Sprintf("record length %d but fields end after %d bytes", length, r.off)}
	}
	return ln + int(length), nil
}
