// Package recordbatch reads and writes Kafka's record batch v2, the unit of
// the KRaft metadata log (`__cluster_metadata-0/*.log`), of snapshot files
// (`<offset>-<epoch>.checkpoint`, `bootstrap.checkpoint`) and of the records
// carried by Fetch and FetchSnapshot. Every byte it writes is what Kafka's
// DefaultRecordBatch and DefaultRecord would write for the same fields, so
// Kafka can read our files and we can read Kafka's.
//
// # Layout
//
// A batch is a 61-byte header followed by its records (big-endian
// integers; byte offsets on the left):
//
//	 0 BaseOffset           int64  offset of the first record      ┐ not covered
//	 8 BatchLength          int32  bytes after this field          │ by the CRC;
//	12 PartitionLeaderEpoch int32  epoch of the writing leader     │ Stamp rewrites
//	16 Magic                int8   2                               ┘ 0-7 and 12-15
//	17 CRC                  uint32 CRC-32C of bytes 21..end
//	21 Attributes           int16  bits 0-2 codec, 3 timestamp type,
//	                               4 transactional, 5 control, 6 delete horizon
//	23 LastOffsetDelta      int32
//	27 BaseTimestamp        int64
//	35 MaxTimestamp         int64
//	43 ProducerId           int64  -1 in KRaft
//	51 ProducerEpoch        int16  -1 in KRaft
//	53 BaseSequence         int32  -1 in KRaft
//	57 RecordsCount         int32
//	61 Records                     compressed as a whole when codec != 0
//
// Each record is: length (varint, bytes that follow), attributes (int8),
// timestamp delta (varlong), offset delta (varint), key length (varint, -1 =
// null) and key, value length and value likewise, header count (varint),
// then per header a key (varint length, never null) and a value (varint
// length, -1 = null). Varints are zig-zag, seven bits per byte, low group
// first.
//
// KRaft data batches hold framed metadata records as values with null keys;
// control batches (attribute bit 5) hold control records whose key is
// `int16 version, int16 type` and whose value is the type's message. The
// typed control records live in package control; this package knows only
// the control bit ([Header.IsControl], [AppendControlBatch]).
//
// # Writing
//
// [Builder] appends one batch to a caller's buffer: [Builder.Reset] with
// [Params] (from [DefaultParams]), [Builder.Append] per record (offset
// deltas 0..n-1, BaseTimestamp = first timestamp), [Builder.Finish].
// Compression, when the attributes select a codec, happens in Finish.
// A leader that learns the offset only when it appends uses [Stamp] or
// [StampAll]: BaseOffset and PartitionLeaderEpoch are outside the CRC.
// [Builder.Encode] re-encodes a decoded batch exactly.
//
// # Reading
//
// [Validate] checks length, magic and CRC without decoding records;
// [PeekHeader] and [TotalSize] read the header or just the size. [Parse]
// and [Decoder.Decode] decode one batch, [Iterator] a sequence of them.
// Every failure is an *[Error] carrying the [Reason], the byte position in
// the input and the batch's base offset; errors.Is(err, ReasonTruncated)
// and friends select by reason. Reading is stricter than Kafka in one way:
// varints must use their minimal encoding and lengths below -1 are
// rejected. Kafka never writes either, and the strictness makes decoding
// followed by encoding the identity.
//
// # Zero copy and bounded allocation
//
// Records of an uncompressed batch are not copied: keys, values and headers
// are subslices of the input (capacity-capped, so appending to one cannot
// overwrite its neighbour). The caller must not modify the input while they
// are in use. Records of a compressed batch alias the [Decoder]'s
// decompression buffer, valid until the Decoder's next call.
//
// No length read from the input drives an allocation before it has been
// checked against the bytes actually present: the record slice is sized
// only after checking that RecordsCount records fit in the records section
// (every record takes at least 7 bytes), header slices likewise (2 bytes
// per header), and decompression stops with ReasonTooLarge at
// [Decoder.MaxDecompressedSize] ([DefaultMaxDecompressedSize], 64 MiB, by
// default). Memory use is therefore proportional to the input, or to the
// limit for compressed batches. Compressed batches may use gzip, snappy
// (xerial-framed as Kafka's Java code writes it, or a raw block), LZ4
// frames or zstd.
package recordbatch
