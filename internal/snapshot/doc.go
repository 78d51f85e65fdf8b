// Package snapshot reads and writes KRaft snapshot files (KIP-630
// checkpoints): the <end offset>-<epoch>.checkpoint files of the
// __cluster_metadata-0 directory, the 0-0 bootstrap snapshot of a dynamic
// quorum, and the bootstrap.checkpoint that kafka-storage format writes
// into every log directory. It also serves snapshots in FetchSnapshot
// chunks, installs downloaded ones, cleans up at start-up and decides
// retention. Every byte follows Kafka: a snapshot written here is one
// Kafka loads, and writing a Kafka snapshot's header and records again
// with the same batch times gives Kafka's file byte for byte (the tests
// check this for every checkpoint in kafka-samples, Kafka 3.5 to 4.2).
//
// The package works at the level of framed records: the writer takes the
// record values of the metadata log (what metadata.Encode returns) and the
// reader yields them. Turning a metadata image into records and records
// into an image is the runtime's job, so this package depends on neither.
//
// # The file
//
// A snapshot is a sequence of record batches v2 (KIP-630; Kafka's
// RecordsSnapshotWriter and FileRawSnapshotWriter), with offsets counted from
// 0 inside the file and every batch's partitionLeaderEpoch equal to the
// snapshot epoch:
//
//	control batch   SnapshotHeader{LastContainedLogTimestamp}
//	                [KRaftVersion{level}  [Voters{...}]]   only when kraft.version >= 1
//	data batches    framed metadata records, each batch at most 8 MiB
//	control batch   SnapshotFooter
//
// The name is the snapshot id, a kraft.OffsetAndEpoch: the end offset (the
// offset after the last record the snapshot covers) in 20 digits and the
// epoch of that last record in 10, e.g.
// 00000000000000012666-0000000003.checkpoint. While being written or
// downloaded the file is <id>-<unique>.checkpoint.part;
// a snapshot marked for deletion is <id>.checkpoint.deleted. Kafka draws
// the unique part at random; here the caller supplies it, so that a run
// is reproducible from its seed. bootstrap.checkpoint has the same layout
// at epoch 0 with LastContainedLogTimestamp 0 and no kraft.version
// records.
//
// # Writing
//
// [Create] writes the header batch into the .part file, [Writer.Append] adds
// record values, and [Writer.Freeze] writes the footer, fsyncs the file,
// renames it to its final name and fsyncs the directory: the atomic file
// recipe of docs/storage.md. Until Freeze returns, a crash leaves no snapshot
// (a .part at most, which [Recover] deletes); after it, the complete one
// (invariant S5 in docs/reliability.md). The tests stop the machine after
// every single file-system operation and crash it every way vfs.MemFS can.
//
// Batches are split as Kafka's BatchAccumulator splits them: by encoded
// size (8 MiB), not by how records are grouped into calls. Kafka stamps
// each batch with the wall-clock time at which it was opened; the writer
// never reads a clock, so Create, Append and Freeze take that time as a
// parameter. The bootstrap files go through the same code:
// [CreateBootstrap] for bootstrap.checkpoint, and Create with id 0-0 and a
// Header carrying kraft.version 1 and the initial voters for the bootstrap
// snapshot of a dynamic quorum; [WriteBootstrapCheckpoint] and
// [WriteBootstrapSnapshot] do either in one call for the format command.
//
// # Reading
//
// [Open] verifies the whole file before it returns a [Reader]: lengths, CRCs,
// record framing, contiguous offsets from 0, the epoch of the name, the
// header batch, data batches, and a footer at the very end. Only then does
// the caller stream the data batches with [Reader.Next]. A snapshot is
// applied to an image as a whole or not at all, so a torn or corrupt file
// must fail before the first record is handed out, not after thousands were
// applied; the price is reading the file twice. Every violation is a
// *[CorruptError] naming the file, the byte position and the reason (D16 in
// docs/reliability.md).
//
// [Stream] reads the file once instead, with the same checks, for a
// caller that builds something it can drop (a snapshot load builds a new
// image): the batches are read, verified and decoded on a goroutine of
// their own while the caller applies the records decoded before, and
// damage anywhere in the file is the error, whatever was applied before
// it was found, so that the caller discards what it built.
//
// # FetchSnapshot
//
// The leader serves chunks with [Store.ReadRange] (the bytes from a
// position, at most MaxBytes and at most [MaxRangeBytes], and the total
// size); the 0-0 bootstrap snapshot is never served. The follower writes them in order into a
// [Download], which refuses a chunk at the wrong position, past the end or
// announcing another size, and changes nothing when it does, so the
// follower can ask again. [Download.Install] fsyncs, verifies the file as
// Open does, renames and fsyncs the directory.
//
// # Start-up, retention and deletion
//
// At start-up [Recover] deletes .part and .deleted leftovers, as Kafka does,
// and lists the snapshots by id. [PlanRetention] decides which old snapshots
// metadata.max.retention.bytes and .ms remove and where the log may then
// start (Kafka's KafkaRaftLog.maybeClean). [Store.Delete] renames a snapshot
// to .deleted at once and removes the file when the last [RangeReader]
// reading it closes, where Kafka waits a fixed 60 s instead.
//
// # Stricter than Kafka
//
// Kafka's reader checks less than [Open]: it does not compare batch
// epochs with the name, does not require KRaftVersion and Voters to follow
// the header in that order, and accepts control batches anywhere. Kafka
// never writes otherwise, so the strictness costs no compatibility and
// turns a misplaced or damaged file into an error instead of a guess.
// Unknown control record types are still skipped, as Kafka does.
package snapshot
