package vfs

import (
	"io"
	"io/fs"
)

// FS is the file system as Krabka uses it. Every file Krabka reads or
// writes goes through an FS, so that tests can swap the operating system
// for [MemFS], which loses unsynced writes on a simulated crash.
//
// Paths are slash- or OS-separated absolute or relative names as accepted by
// the os package; MemFS cleans them with path/filepath.
//
// Durability follows Linux: data written to a file is durable only after
// File.Sync; a created, renamed or removed directory entry is durable only
// after SyncDir on its parent directory. The package documentation states
// the model exactly, including what a failed Sync means.
//
// Errors are *fs.PathError (*os.LinkError for Rename) wrapping the
// syscall.Errno, so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, syscall.EIO) work for both implementations.
type FS interface {
	// OpenFile opens name with os.OpenFile flags (os.O_RDONLY, os.O_RDWR,
	// os.O_CREATE, os.O_EXCL, os.O_TRUNC, os.O_APPEND, os.O_WRONLY).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname by oldname. The rename is durable
	// after SyncDir of the directory holding both names; a rename between
	// two directories needs SyncDir of both. An existing directory as
	// newname is refused (fs.ErrExist), as os.Rename does.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(name string, perm fs.FileMode) error
	// ReadDir lists a directory, sorted by file name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Stat describes a file or directory.
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable.
	SyncDir(name string) error
	// Lock takes an exclusive advisory lock on the file name, creating it
	// when missing. It fails at once, without waiting, when another holder
	// (another process for the OS, another Lock call for MemFS) has it.
	// Closing the returned Closer releases the lock. A held lock is
	// reported as an *fs.PathError wrapping [ErrLocked].
	Lock(name string) (io.Closer, error)
}

// File is an open file. Methods are not safe for concurrent use on one File
// unless stated.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	// Name returns the name the file was opened with.
	Name() string
	// Stat describes the file.
	Stat() (fs.FileInfo, error)
	// Sync makes all data written to the file so far durable (fdatasync
	// semantics are enough: sizes are durable with the data). It does not
	// make the file's name durable; see FS.SyncDir. When Sync fails, the
	// unsynced data may be lost even though reads still return it, and a
	// later Sync that succeeds does not make it durable: never retry a
	// failed Sync as if nothing happened.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
}
