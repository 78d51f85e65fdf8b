// Package dumplog prints the files of a KRaft metadata log directory in
// the layout of Kafka's kafka-dump-log tool (DumpLogSegments): log
// segments (<base offset>.log), snapshots (<end offset>-<epoch>.checkpoint)
// and the bootstrap.checkpoint that kafka-storage format writes. Scripts
// and runbooks written against Kafka's output keep working on ours.
//
// # Output
//
// For every file, [Dump] prints "Dumping <path>", a line that says what
// the file is ("Log starting offset: N", "Snapshot end offset: N, epoch: E"
// or "KRaft bootstrap snapshot"), then one line per batch:
//
//	baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1713000000000 size: 80 magic: 2 compresscodec: none crc: 1234567 isvalid: true
//
// With deep iteration (--deep-iteration, implied by --print-data-log and
// --cluster-metadata-decoder) every record follows its batch on a line
// starting with "| offset:". Control records are decoded after the
// record's metadata (" SnapshotHeader {...}", " KRaftVersion {...}",
// " KRaftVoters {...}", " LeaderChange: {...}"); with the metadata
// decoder a data record ends in
//
//	payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":21}}
//
// in the JSON form of Kafka's generated JsonConverter classes (see
// appendMessageJSON for the conventions).
//
// # Damaged files
//
// A batch whose CRC does not match prints isvalid: false, and its records
// are still printed when they can be decoded, as Kafka does. Records that
// cannot be decoded print one line naming the batch position and the
// reason, and the dump continues with the next batch. A metadata record
// that does not decode prints "payload: Error at <offset>, skipping.
// <reason>". Bytes at the end that do not form a complete batch end the
// file with "Found N invalid bytes at the end of <name>"; when the batch
// header there is not just cut short but malformed (a length below the
// minimum, a wrong magic), a line "Invalid batch at position P: <reason>"
// comes first. [Summary] counts all of these for the caller.
//
// Zeros that end a segment after its last batch are not damage: a running
// node keeps its active segment's file allocated ahead of its batches, so
// dumping it shows the batches and stops where they end, printing nothing
// for the zeros ([Summary].ZeroTailBytes counts them).
package dumplog
