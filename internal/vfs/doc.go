// Package vfs is the file-system seam of Krabka. Every file the log store,
// the snapshot store and the quorum-state file read or write goes through an
// [FS], so that the same code runs on the operating system ([OS]) in
// production and on [MemFS] in tests and in the deterministic simulation,
// where a crash loses exactly what a real power loss may lose.
//
// Why a seam at all: the bugs that lose acknowledged writes in replicated
// logs (etcd with LazyFS, NATS 2.12.1, Kafka's KAFKA-10533) all live in the
// gap between "written" and "durable". A test on a real disk never opens
// that gap, because nothing crashes. MemFS opens it on every simulated
// crash, deterministically, from a seed.
//
// # The durability model
//
// Both implementations follow Linux, and code must be written for its rules:
//
//  1. A write is durable only after File.Sync (fsync) of that file returns
//     nil. Sizes are durable with the data.
//  2. A file's directory entry is a separate thing. Creating, renaming or
//     removing a name is durable only after FS.SyncDir of the directory
//     holding it. fsync of the file does not make its name durable: a file
//     created, written and synced, whose directory was never synced, can
//     vanish on a crash, data and all.
//  3. Hence the atomic-replace recipe (see docs/storage.md): write
//     name.tmp, Sync it, Rename it over name, SyncDir the directory. Until
//     the SyncDir, a crash may bring back the old name.
//  4. A failed fsync is final. After fsync returns EIO, Linux may already
//     have dropped the dirty pages, or marked them clean, so a second fsync
//     can return nil without writing them (PostgreSQL's "fsyncgate", 2018).
//     Retrying Sync is therefore not a fix; the only safe reaction is to
//     stop and recover from what is durable (invariant B3 in
//     docs/reliability.md).
//
// # What MemFS keeps
//
// For each file MemFS keeps the durable content (as of the last successful
// Sync), the current content (what reads see) and the ordered list of
// pending writes and truncates since the last Sync attempt. For each
// directory it keeps the durable entries, the current entries and the
// ordered list of pending entry operations (create, remove, rename).
//
// A successful Sync applies the file's pending list to its durable content;
// a successful SyncDir applies the directory's pending list to its durable
// entries. A Sync or SyncDir failed by an injected fault drops the pending
// list without applying it: those changes stay visible until a crash but
// never become durable, not even through a later successful Sync (rule 4).
// Changes made after the failure are pending as usual.
//
// [MemFS.Crash] then builds the post-crash disk, file by file and directory
// by directory, in creation order, with choices drawn from the caller's
// *rand.Rand:
//
//   - [CrashDropUnsynced]: every pending list is lost; only durable state
//     remains.
//   - [CrashKeepPrefix]: each file keeps a uniformly chosen in-order prefix
//     of its pending writes and truncates, applied to its durable content;
//     each directory likewise keeps an in-order prefix of its pending entry
//     operations. In this mode a later write never survives without every
//     earlier one of the same file.
//   - [CrashTearPrefix]: as CrashKeepPrefix, and with probability 1/2 the
//     last kept write of a file is torn: only a random prefix of its bytes,
//     possibly empty, lands. Tears are at any byte, not only at sector
//     boundaries, which is harsher than real disks and so finds more. With
//     probability 1/2 a torn write that extended the file also leaves the
//     file extended to the write's end, the missing bytes reading as zeros:
//     the size reached the disk, the data did not (a zero-filled tail).
//     Bytes that existed before the write keep their old value.
//   - [CrashReorder]: each pending write or truncate of a file survives
//     independently with probability 1/2, and the survivors are applied in
//     their original order, because writeback does not follow write order
//     (ALICE, OSDI 2014). A later append can land while an earlier one did
//     not, leaving a hole of zeros before valid data: recovery must not
//     mistake such a tail for corruption of durable data. Directories keep
//     an in-order prefix, as in CrashKeepPrefix.
//
// Rename within one directory is one entry operation: a crash keeps the old
// name or the new one, never both or neither (after a failed SyncDir
// dropped some operations, the survivors can combine in ways a real file
// system would not produce; the program should have stopped by then). Between two directories a
// rename is an unlink in the old directory and a link in the new one, each
// made durable by SyncDir of its own directory, so both must be synced.
// Moving a directory to another parent is not supported.
//
// After a crash the MemFS is a freshly mounted disk: current state equals
// durable state, nothing is pending, files opened before the crash fail
// with [ErrCrashed], and locks are released. A file or directory that no
// surviving entry names is gone, content and all. Synced data survives byte
// for byte, except where a later unsynced write or truncate that also
// survived changed it; a synced entry never vanishes, except through a
// later unsynced operation that also survived (a removal, a rename).
//
// # Faults and corruption
//
// [MemFS.InjectFault] fails the next N (or all) calls of chosen operations
// on chosen paths with a chosen error, wrapped in *fs.PathError so that
// errors.Is(err, syscall.EIO) holds. A failing Write may still write a
// prefix ([Fault.ShortWrite]), as a disk filling up does with ENOSPC, and a
// read fault may be narrowed to a byte range ([Fault.Off], [Fault.Len]),
// as a latent sector error is.
// [MemFS.CorruptReads] flips bits in what reads of a byte range return
// without touching the stored bytes (a transient read fault);
// [MemFS.CorruptStored] flips the stored bytes themselves (latent sector
// corruption), which every crash keeps.
//
// # How tests use MemFS
//
// A test or the simulator gives each node its own MemFS, runs the node
// against it, and at a chosen moment calls Crash with the run's random
// stream, then restarts the node on the same MemFS and checks that it
// recovers everything it had acknowledged:
//
//	m := vfs.NewMem()
//	f, err := m.OpenFile("/data/00000000000000000000.log", os.O_CREATE|os.O_RDWR, 0o644)
//	...
//	_, err = f.Write(batch)
//	err = f.Sync()         // the batch is durable, the file's name not yet
//	err = m.SyncDir("/data") // now the name is too: acknowledge the batch
//	m.Crash(rand.New(rand.NewPCG(seed, 1)), vfs.CrashTearPrefix)
//	// reopen: the batch is there byte for byte; later unsynced ones may be
//	// missing or torn
//
// [MemFS.Clone] copies a state so that one moment can be crashed many ways,
// or a disk rolled back to an old image. [MemFS.Fingerprint] hashes the
// durable state, for determinism checks and for deduplicating states in an
// exhaustive search. [MemFS.List], [MemFS.ListDurable], [MemFS.Inspect] and
// [MemFS.ReadDurable] let a test check what is durable now, for example that
// the log's durable end offset covers every acknowledged record.
//
// MemFS cleans paths with path/filepath and has no working directory: a
// relative name is taken from the root "/". It has no clock; ModTime is
// always zero.
//
// # The operating system
//
// [OS] maps each method to the os package: Sync is fsync(2), SyncDir opens
// the directory and fsyncs it, Lock is flock(2) with LOCK_EX|LOCK_NB. The
// flock belongs to the open file description, so a second Lock of the same
// file fails even within one process, and the kernel releases it when the
// process dies, which is what Kafka's .lock file in a log directory needs.
// On systems without flock(2), Lock fails with errors.ErrUnsupported rather
// than pretending.
//
// # Power loss for a real process
//
// [WriteBack] wraps an FS (the OS) and keeps writes in process memory
// until Sync. The krabka binary built with -tags writeback uses it, so
// that a SIGKILL in the multi-host fault suite (test/faults) loses the
// unsynced data a power failure would lose; with the plain OS the kernel's
// page cache outlives the killed process and hides such bugs.
package vfs
