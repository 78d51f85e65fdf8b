package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// File name parts (Kafka's Snapshots.java).
const (
	// Suffix ends the name of a complete snapshot.
	Suffix = ".checkpoint"
	// PartSuffix ends the name of a snapshot being written or downloaded.
	PartSuffix = ".checkpoint.part"
	// DeletedSuffix ends the name of a snapshot marked for deletion.
	DeletedSuffix = ".checkpoint.deleted"
	// BootstrapFile is the name of the bootstrap checkpoint that
	// kafka-storage format writes into the root of every log directory
	// (Kafka's BootstrapDirectory). It has the snapshot layout at epoch 0.
	BootstrapFile = "bootstrap.checkpoint"
	// BootstrapTempFile is the temporary name the bootstrap checkpoint is
	// written under before the rename (Kafka's BootstrapDirectory uses
	// the same ".tmp" suffix).
	BootstrapTempFile = BootstrapFile + ".tmp"

	offsetWidth = 20
	epochWidth  = 10
	idWidth     = offsetWidth + 1 + epochWidth
)

// A snapshot is named by its id, a [kraft.OffsetAndEpoch]: Offset is the
// offset after the last record it contains (exclusive end), Epoch the
// epoch of that last record. Kafka names the file after it. The bootstrap
// snapshot of a dynamic quorum has id 0-0.

// Bootstrap is the id of the bootstrap snapshot that kafka-storage format
// writes for a dynamic quorum (00000000000000000000-0000000000.checkpoint).
// It is never served through FetchSnapshot
// (KafkaRaftClient.handleFetchSnapshotRequest answers SNAPSHOT_NOT_FOUND).
var Bootstrap = kraft.OffsetAndEpoch{}

// idString formats a snapshot id as "endOffset-epoch", the order of its
// file name.
func idString(id kraft.OffsetAndEpoch) string {
	return strconv.FormatInt(int64(id.Offset), 10) + "-" + strconv.FormatInt(int64(id.Epoch), 10)
}

// Compare orders snapshot ids by end offset, then epoch, the order of a
// [Listing]. It returns -1, 0 or +1.
func Compare(a, b kraft.OffsetAndEpoch) int {
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	return cmp.Compare(a.Epoch, b.Epoch)
}

// checkID reports an id that cannot be written as a file name: one with
// a negative part ([kraft.OffsetAndEpoch.Valid]; an int64 always fits in
// 20 digits, an int32 in 10).
func checkID(id kraft.OffsetAndEpoch) error {
	if !id.Valid() {
		return fmt.Errorf("snapshot: invalid id %s: offset and epoch must be non-negative", idString(id))
	}
	return nil
}

// namePrefix returns "<20d>-<10d>".
func namePrefix(id kraft.OffsetAndEpoch) string {
	return fmt.Sprintf("%0*d-%0*d", offsetWidth, id.Offset, epochWidth, id.Epoch)
}

// FileName returns the name of the complete snapshot id:
// "<20-digit end offset>-<10-digit epoch>.checkpoint". It panics on a
// negative offset or epoch, which no caller may construct.
func FileName(id kraft.OffsetAndEpoch) string {
	mustValid(id)
	return namePrefix(id) + Suffix
}

// PartFileName returns the temporary name under which snapshot id is
// written or downloaded: "<20d>-<10d>-<unique>.checkpoint.part". Kafka
// draws the unique part from Files.createTempFile; here the caller
// supplies it (from its seeded random source or a counter), so that runs
// are reproducible. Two writers of the same id need different uniques.
func PartFileName(id kraft.OffsetAndEpoch, unique uint64) string {
	mustValid(id)
	return namePrefix(id) + "-" + strconv.FormatUint(unique, 10) + PartSuffix
}

// DeletedFileName returns the name a snapshot is renamed to when it is
// marked for deletion: "<20d>-<10d>.checkpoint.deleted".
func DeletedFileName(id kraft.OffsetAndEpoch) string {
	mustValid(id)
	return namePrefix(id) + DeletedSuffix
}

func mustValid(id kraft.OffsetAndEpoch) {
	if !id.Valid() {
		panic("snapshot: invariant: snapshot id " + idString(id) + " has a negative offset or epoch")
	}
}

// Kind is what a snapshot-related file name denotes.
type Kind uint8

// The kinds of snapshot file names.
const (
	// KindSnapshot is a complete snapshot, "<20d>-<10d>.checkpoint".
	KindSnapshot Kind = iota + 1
	// KindPart is a snapshot being written or downloaded,
	// "<20d>-<10d>-<unique>.checkpoint.part". It is never loaded.
	KindPart
	// KindDeleted is a snapshot marked for deletion,
	// "<20d>-<10d>.checkpoint.deleted". It is never loaded.
	KindDeleted
)

// String returns "snapshot", "part" or "deleted".
func (k Kind) String() string {
	switch k {
	case KindSnapshot:
		return "snapshot"
	case KindPart:
		return "part"
	case KindDeleted:
		return "deleted"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ErrNotSnapshotName is matched by the error of [ParseFileName] for a name
// that does not end in one of the snapshot suffixes: the file is not a
// snapshot file at all (a segment, an index, quorum-state).
var ErrNotSnapshotName = errors.New("snapshot: not a snapshot file name")

// NameError reports a file name that ends like a snapshot file but is not
// a valid one. Kafka's parser would read some of these leniently; here
// they are refused (D17 in docs/reliability.md: an unparsable snapshot
// name is durable corruption, not something to guess at).
type NameError struct {
	// Name is the base name.
	Name string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *NameError) Error() string {
	return fmt.Sprintf("snapshot: invalid snapshot file name %q: %s", e.Name, e.Reason)
}

// ParseFileName parses a base name produced by [FileName], [PartFileName]
// or [DeletedFileName] (or by Kafka). The offset must be exactly 20
// decimal digits and fit an int64, the epoch exactly 10 digits fitting an
// int32, and the unique part of a part name one or more ASCII letters,
// digits, '_' or '-'. A name without a snapshot suffix yields an error
// matching [ErrNotSnapshotName]; a name with one but otherwise malformed a
// *NameError.
func ParseFileName(name string) (kraft.OffsetAndEpoch, Kind, error) {
	var kind Kind
	var stem string
	switch {
	case strings.HasSuffix(name, PartSuffix):
		kind, stem = KindPart, strings.TrimSuffix(name, PartSuffix)
	case strings.HasSuffix(name, DeletedSuffix):
		kind, stem = KindDeleted, strings.TrimSuffix(name, DeletedSuffix)
	case strings.HasSuffix(name, Suffix):
		kind, stem = KindSnapshot, strings.TrimSuffix(name, Suffix)
	default:
		return kraft.OffsetAndEpoch{}, 0, fmt.Errorf("%w: %q", ErrNotSnapshotName, name)
	}
	bad := func(reason string) (kraft.OffsetAndEpoch, Kind, error) {
		return kraft.OffsetAndEpoch{}, 0, &NameError{Name: name, Reason: reason}
	}
	if len(stem) < idWidth {
		return bad("shorter than <20-digit offset>-<10-digit epoch>")
	}
	if stem[offsetWidth] != '-' {
		return bad("no '-' after the 20-digit offset")
	}
	off, ok := parseDigits(stem[:offsetWidth], 63)
	if !ok {
		return bad("offset is not 20 decimal digits fitting an int64")
	}
	ep, ok := parseDigits(stem[offsetWidth+1:idWidth], 31)
	if !ok {
		return bad("epoch is not 10 decimal digits fitting an int32")
	}
	rest := stem[idWidth:]
	switch kind {
	case KindPart:
		if len(rest) < 2 || rest[0] != '-' || !uniqueOK(rest[1:]) {
			return bad("part name needs -<unique> (letters, digits, '_', '-') after the epoch")
		}
	default:
		if rest != "" {
			return bad("unexpected characters after the epoch")
		}
	}
	return kraft.OffsetAndEpoch{Offset: kraft.Offset(off), Epoch: kraft.Epoch(ep)}, kind, nil
}

// parseDigits parses s, which must be all ASCII digits, as a value below
// 1<<bits.
func parseDigits(s string, bits int) (int64, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, bits+1)
	return v, err == nil
}

func uniqueOK(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Info describes a complete snapshot file found in a directory.
type Info struct {
	// ID is the snapshot id from the file name.
	ID kraft.OffsetAndEpoch
	// Size is the file size in bytes.
	Size int64
}

// Listing is what [List] found in a partition directory.
type Listing struct {
	// Snapshots are the complete snapshots, sorted by id ([Compare]).
	Snapshots []Info
	// Parts are the base names of .checkpoint.part files, sorted:
	// snapshots whose writing or download never finished. They must never
	// be loaded.
	Parts []string
	// Deleted are the base names of .checkpoint.deleted files, sorted:
	// snapshots marked for deletion.
	Deleted []string
	// Invalid are base names that end in a snapshot suffix but do not
	// parse (see [ParseFileName]), sorted. Neither List nor [Recover]
	// touches them; the caller decides (D17 in docs/reliability.md says
	// fail-stop).
	Invalid []string
}

// List reads directory dir and classifies its snapshot files. Files that
// are not snapshot files (segments, indexes, quorum-state, ...) and
// directories are ignored. It changes nothing on disk.
func List(fsys vfs.FS, dir string) (Listing, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return Listing{}, fmt.Errorf("snapshot: list %s: %w", dir, err)
	}
	var l Listing
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		id, kind, err := ParseFileName(name)
		if err != nil {
			if !errors.Is(err, ErrNotSnapshotName) {
				l.Invalid = append(l.Invalid, name)
			}
			continue
		}
		switch kind {
		case KindSnapshot:
			fi, err := fsys.Stat(filepath.Join(dir, name))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since ReadDir
				}
				return Listing{}, fmt.Errorf("snapshot: list %s: %w", dir, err)
			}
			l.Snapshots = append(l.Snapshots, Info{ID: id, Size: fi.Size()})
		case KindPart:
			l.Parts = append(l.Parts, name)
		case KindDeleted:
			l.Deleted = append(l.Deleted, name)
		}
	}
	slices.SortFunc(l.Snapshots, func(a, b Info) int { return Compare(a.ID, b.ID) })
	slices.Sort(l.Parts)
	slices.Sort(l.Deleted)
	slices.Sort(l.Invalid)
	return l, nil
}

// Recover does at start-up what Kafka's KafkaRaftLog.recoverSnapshots
// does: it deletes every .checkpoint.part (a write or download that did
// not finish; never loadable) and every .checkpoint.deleted (a deletion
// that did not finish), makes the removals durable with one SyncDir, and
// returns the listing of what remains (Parts and Deleted empty).
//
// Deleting snapshots below the log start offset is the caller's part,
// because only it knows that offset; it uses [MarkDeleted] and
// [RemoveDeleted] or [Store.Delete].
func Recover(fsys vfs.FS, dir string) (Listing, error) {
	l, err := List(fsys, dir)
	if err != nil {
		return Listing{}, err
	}
	removed := 0
	for _, name := range slices.Concat(l.Parts, l.Deleted) {
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Listing{}, fmt.Errorf("snapshot: recover %s: remove leftover: %w", dir, err)
		}
		removed++
	}
	if removed > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			return Listing{}, fmt.Errorf("snapshot: recover %s: sync directory: %w", dir, err)
		}
	}
	l.Parts, l.Deleted = nil, nil
	return l, nil
}

// MarkDeleted renames snapshot id in dir to its .checkpoint.deleted name
// and syncs the directory, as Kafka's Snapshots.markForDelete does: from
// then on the snapshot is no longer listed or loaded, while a reader that
// already has the file open keeps reading it. [RemoveDeleted] removes the
// file later (Kafka waits file.delete.delay.ms for readers to finish;
// [Store.Delete] instead waits until no range reader holds it).
func MarkDeleted(fsys vfs.FS, dir string, id kraft.OffsetAndEpoch) error {
	if err := checkID(id); err != nil {
		return err
	}
	from, to := filepath.Join(dir, FileName(id)), filepath.Join(dir, DeletedFileName(id))
	if err := fsys.Rename(from, to); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("snapshot: mark %s deleted: %w", idString(id), ErrNotFound)
		}
		return fmt.Errorf("snapshot: mark %s deleted: %w", idString(id), err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("snapshot: mark %s deleted: sync directory: %w", idString(id), err)
	}
	return nil
}

// RemoveDeleted removes the .checkpoint.deleted file of snapshot id. A
// missing file is not an error (the deletion already happened, or
// [Recover] cleaned it). The removal is not synced: a crash may bring the
// file back, and Recover removes it again.
func RemoveDeleted(fsys vfs.FS, dir string, id kraft.OffsetAndEpoch) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := fsys.Remove(filepath.Join(dir, DeletedFileName(id))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot: remove deleted %s: %w", idString(id), err)
	}
	return nil
}
