// Package checkpoint encodes and decodes Kafka's KRaft checkpoint files in
// memory: metadata snapshots (KIP-630, with the KIP-853 control state) and
// the bootstrap.checkpoint that kafka-storage format writes. A program
// that stores, ships, inspects or builds metadata outside a running node,
// such as a broker that keeps its own copy of the metadata, a backup tool
// or a test fixture, uses it instead of the node's internals. It is the
// code the controller itself writes and loads snapshots with, so its bytes
// are the controller's bytes, and those are Kafka's.
//
// # The two files
//
// A snapshot is the file <end offset>-<epoch>.checkpoint in
// __cluster_metadata-0 (see [FileName] and [ParseFileName]). It holds the
// whole metadata image at its end offset as record batches v2, offsets
// counted from 0 inside the file, every batch carrying the snapshot epoch:
//
//	control batch   SnapshotHeader{LastContainedLogTimestamp}
//	                [KRaftVersion{level}  [VotersRecord{voters}]]   when kraft.version >= 1
//	data batches    metadata records, at most 8 MiB a batch
//	control batch   SnapshotFooter
//
// [Snapshot] is that content: the epoch, the [Control] state of the header
// batch (last contained timestamp, kraft.version, voter set) and the
// metadata records as [metadata.Record] values.
//
// A bootstrap checkpoint ([BootstrapFile]) has the same layout at epoch 0,
// with LastContainedLogTimestamp 0 and no kraft.version records. Its
// records, which the first leader of a new cluster commits, are the
// FeatureLevelRecord for metadata.version, one per other finalized
// feature, and SCRAM credentials. [Bootstrap] is that content.
//
// The bootstrap snapshot of a dynamic quorum, which kafka-storage format
// --standalone or --initial-controllers writes as
// 00000000000000000000-0000000000.checkpoint, is an ordinary [Snapshot]:
// epoch 0, a [Control] with the format time, kraft.version 1 and the
// initial voters, and no records.
//
// # Encoding
//
// [EncodeSnapshot] and [EncodeBootstrap] return the file's bytes. Kafka
// stamps every batch with the wall-clock time at which it opened it; this
// package never reads a clock, and the caller supplies those times in
// [BatchTimes]. They are the only bytes in which two files of the same
// content differ, so decoding a file Kafka wrote and encoding the result
// gives Kafka's file back, byte for byte (the tests check this for
// Kafka 3.5 to 4.2). Records are written at their own versions, in the
// order given; a bootstrap checkpoint must set metadata.version.
//
// # Decoding
//
// [DecodeSnapshot] and [DecodeBootstrap] verify every byte before they
// decode the first record, as a controller does before it loads a
// snapshot: lengths, CRCs, record framing, offsets, epochs, the header
// batch, the footer at the very end. A torn or damaged file is a
// *[CorruptError] (matching [ErrCorrupt], and [ErrTruncated] when the
// bytes end early) naming the byte position and the reason, never half a
// snapshot. A [Decoder] sets the size limits; allocation is bounded by
// the input size and those limits, whatever the bytes claim.
//
// # NoOp records
//
// An idle active controller appends a NoOpRecord every
// metadata.max.idle.interval.ms (KIP-835), so that followers see the high
// watermark move. [IsNoOp] tells one apart from a framed record value
// without decoding anything else, and [IsNoOpRecord] does the same for a
// decoded record.
package checkpoint
