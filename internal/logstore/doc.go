// Package logstore keeps the replicated metadata log, __cluster_metadata-0,
// on disk in Kafka's own layout, so that a directory Kafka wrote opens here
// and a directory written here is one Kafka can read.
//
// # Layout
//
// A partition directory holds:
//
//   - segments: 00000000000000012345.log (record batches v2 back to back,
//     named by the 20-digit offset of their first batch) with a sparse
//     offset index (.index: 8-byte entries, relative offset int32 +
//     position int32) and a time index (.timeindex: 12-byte entries,
//     timestamp int64 + relative offset int32), one entry roughly every
//     Options.IndexIntervalBytes (index.interval.bytes, 4096);
//   - leader-epoch-checkpoint: for every epoch, the offset of its first
//     batch ([EpochEntry]);
//   - partition.metadata: the fixed topic id of __cluster_metadata;
//   - quorum-state: the election state ([QuorumStateData]), written by the
//     runtime through [WriteQuorumState];
//   - krabka-recovery-point: ours, not Kafka's; see below;
//   - .lock: held while a [Log] is open.
//
// Kafka preallocates the index files of the active segment to 10 MiB and
// trims them when the segment is closed. Here the index files always have
// their used size: entries are appended as they are made. It is the active
// segment's .log file that is preallocated (see Durability). Lookups never read the
// index files; the indexes live in memory and the files mirror them for
// Kafka and for tools. [Open] rebuilds them from the batches and rewrites a
// file that is missing or different (Kafka also rebuilds every index of
// the metadata log at start-up, because it recovers all segments).
//
// meta.properties ([MetaProperties]) lives one level up, in the log
// directory; [LockDir] takes Kafka's "<metadata.log.dir>/.lock".
//
// # Writing
//
// One goroutine (the runtime's engine) writes. The leader calls
// [Log.AppendAsLeader], which stamps offsets and its epoch into the encoded
// batches; a follower calls [Log.AppendAsFollower] with the batches exactly
// as fetched, which must continue the log end offset with epochs that never
// decrease. Segments roll on Options.SegmentBytes
// (metadata.log.segment.bytes) and Options.SegmentTime
// (metadata.log.segment.ms). [Log.Truncate] drops a divergent suffix,
// [Log.AdvanceLogStart] drops whole segments below a snapshot, and
// [Log.TruncateFullyAndStartAt] restarts the log at a snapshot that is ahead
// of it.
//
// # Durability
//
// An append is in the page cache only. [Log.Sync] fsyncs the active segment
// and nothing else (rolled segments were fsynced when rolled, and the
// directory when a segment was created); it returns the new log end
// offset, also reported by [Log.SyncedOffset]. Nothing at or above it may
// be acknowledged, counted toward the high watermark or reported to the
// leader as replicated.
//
// The active segment's .log file is kept written ahead of its batches:
// when an append would go past the allocated end, zeros are first written
// for Options.PreallocateBytes beyond it (1 MiB, at most to the segment
// size), so that the size changes once per chunk and the fsync after an
// append writes into existing blocks without committing file system
// metadata (fallocate(2) would leave unwritten extents, whose conversion
// an fsync of a block or more would commit every time). The log's end stays the in-memory segment size: nothing reads,
// serves, indexes or counts the zeros beyond it. A roll cuts the sealed
// segment back to its batches and fsyncs it before the next segment is
// created (recovery takes a sealed segment's size from its file), and
// Close does the same for the active one, so files at rest are exactly
// what they would be without preallocation. A crash can leave the zeros;
// recovery ends the log at them (below).
//
// A failed write or fsync poisons the log: every later write and Sync
// returns an error wrapping [ErrPoisoned], because after a failed fsync the
// kernel may have dropped the data and a retry could lie. The owner stops
// and reopens, and recovery finds out what is really on disk.
//
// # Recovery and the recovery point
//
// [Open] validates every batch of every segment (length bounds, magic,
// CRC-32C, contiguous offsets, non-decreasing epochs), as Kafka does for
// the metadata log on every start. What happens at the first bad batch
// depends on whether it can be a torn write:
//
//   - at or above the recovery point, it is the tail of writes that were
//     never synced (or never acknowledged): it is cut at the first bad byte,
//     with every later segment, logged at WARN and returned in the
//     [RecoveryReport];
//   - when everything from it to the end of the last segment is zeros,
//     at or above the recovery point, it is the preallocated end of the
//     active segment that a crash left: the log ends there, the zeros are
//     cut and counted in [RecoveryReport].ZeroTailBytes (not a
//     Truncation: no batch byte is dropped);
//   - below the recovery point, the data was durable and may be committed
//     on a majority: Open fails with a *[CorruptionError] naming the file,
//     the byte position and the offset. Silently dropping it could lose an
//     acknowledged write. docs/storage.md says what an operator does.
//
// The recovery point lives in krabka-recovery-point: two 32-byte slots
// (sequence, offset, CRC-32C) overwritten alternately in place and fsynced,
// with no rename and no directory fsync. It is a checkpoint of the synced
// offset, written off the commit path: by [Log.CheckpointRecoveryPoint]
// (the runtime calls it periodically), at every segment roll, at Close and
// after recovery. It is therefore a lower bound of the synced end that
// trails it by at most one checkpoint interval; it is never above it,
// because it is only ever set to an offset an earlier fsync made durable.
// A torn slot fails its CRC and the older slot is used. Truncations lower
// it durably before they cut anything. The price of the lag: damage to
// data synced since the last checkpoint is cut as a torn tail rather than
// refused (Kafka validates the metadata log on every start and cuts at
// the first bad batch wherever it is).
//
// A directory Kafka wrote has no recovery point. Then only the last
// segment's tail may be cut, and damage in an earlier segment is a
// *[CorruptionError]. After recovery the kept data is fsynced and the
// recovery point created, so from then on the directory is fully protected.
//
// # Reading
//
// [Log.Read] returns whole batches from the batch holding an offset up to a
// byte limit, at least one whole batch (as Kafka's Fetch does). It copies
// the bytes into a new slice: vfs offers no memory mapping, and a copy
// stays valid whatever the log does next. The consensus core's read-only
// view is [Log.LogStartOffset], [Log.LogEndOffset], [Log.LastEpoch],
// [Log.EndOffsetForEpoch] (LeaderEpochFileCache.endOffsetFor) and the
// snapshot ids the snapshot store sets with [Log.SetLatestSnapshot] and
// [Log.SetEarliestSnapshot].
//
// All file access goes through [vfs.FS], so the simulation can lose unsynced
// writes, tear the last one and fail any call.
package logstore
