package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrLocked is the error inside the *fs.PathError that [FS.Lock] returns
// when another holder has the lock: another process for [OS], another Lock
// call on the same file for [MemFS].
var ErrLocked = errors.New("vfs: file is locked by another process")

// OS returns the operating system's file system. Its files are *os.File
// values; File.Sync is fsync(2), SyncDir opens the directory and fsyncs it,
// and Lock is flock(2) with LOCK_EX|LOCK_NB.
//
// Errors are the os package's own (*fs.PathError, or *os.LinkError for
// Rename), so errors.Is(err, fs.ErrNotExist) and similar checks work.
func OS() FS { return osFS{} }

// osFS implements FS with the os package. It has no state: every value is
// the same file system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		// Return a nil interface, not a typed nil *os.File.
		return nil, err
	}
	return f, nil
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// SyncDir fsyncs the directory name. On Linux this is what makes creations,
// renames and removals of its entries durable; fsync of a file does not.
func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	fi, err := d.Stat()
	if err == nil && !fi.IsDir() {
		// fsync would succeed on a regular file too, silently syncing the
		// wrong thing; say so instead.
		err = &fs.PathError{Op: "syncdir", Path: name, Err: syscall.ENOTDIR}
	}
	if err == nil {
		err = d.Sync()
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lock opens (creating when missing) and locks name. The lock belongs to the
// open file description, so a second Lock of the same file fails even
// within one process, and the lock ends when the returned Closer is closed
// or the process exits.
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		_ = f.Close() // the lock error is the one worth reporting
		return nil, err
	}
	return osLock{f}, nil
}

// osLock holds a locked file open; closing the file releases the lock.
type osLock struct{ f *os.File }

func (l osLock) Close() error { return l.f.Close() }
