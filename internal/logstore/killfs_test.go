package logstore

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/krabka-go/krabka/internal/vfs"
)

// errKilled is what every call returns once a killFS has "killed the
// process".
var errKilled = errors.New("process killed")

// killFS wraps an FS and lets exactly budget mutating calls (writes,
// truncates, syncs, creations, renames, removals) through; from then on
// every call fails with errKilled, as if the process had died at that
// point. Together with MemFS.Crash afterwards it simulates a crash at any
// chosen system call.
type killFS struct {
	vfs.FS
	budget int  // mutating calls left; negative means unlimited
	calls  int  // mutating calls made
	killed bool // a mutating call was refused: everything fails
	// syncs names every file and directory fsynced, in order.
	syncs []string
}

func (k *killFS) dead() bool { return k.killed }

// step accounts for one mutating call and reports whether it may run.
func (k *killFS) step() error {
	if k.killed || k.budget == 0 {
		k.killed = true
		return errKilled
	}
	if k.budget > 0 {
		k.budget--
	}
	k.calls++
	return nil
}

func (k *killFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if k.dead() {
		return nil, errKilled
	}
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		if err := k.step(); err != nil {
			return nil, err
		}
	}
	f, err := k.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &killFile{File: f, k: k}, nil
}

func (k *killFS) Remove(name string) error {
	if err := k.step(); err != nil {
		return err
	}
	return k.FS.Remove(name)
}

func (k *killFS) Rename(o, n string) error {
	if err := k.step(); err != nil {
		return err
	}
	return k.FS.Rename(o, n)
}

func (k *killFS) MkdirAll(name string, perm fs.FileMode) error {
	if k.dead() {
		return errKilled
	}
	return k.FS.MkdirAll(name, perm)
}

func (k *killFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if k.dead() {
		return nil, errKilled
	}
	return k.FS.ReadDir(name)
}

func (k *killFS) Stat(name string) (fs.FileInfo, error) {
	if k.dead() {
		return nil, errKilled
	}
	return k.FS.Stat(name)
}

func (k *killFS) SyncDir(name string) error {
	if err := k.step(); err != nil {
		return err
	}
	k.syncs = append(k.syncs, name)
	return k.FS.SyncDir(name)
}

func (k *killFS) Lock(name string) (io.Closer, error) {
	if k.dead() {
		return nil, errKilled
	}
	return k.FS.Lock(name)
}

type killFile struct {
	vfs.File
	k *killFS
}

func (f *killFile) Read(p []byte) (int, error) {
	if f.k.dead() {
		return 0, errKilled
	}
	return f.File.Read(p)
}

func (f *killFile) ReadAt(p []byte, off int64) (int, error) {
	if f.k.dead() {
		return 0, errKilled
	}
	return f.File.ReadAt(p, off)
}

func (f *killFile) Write(p []byte) (int, error) {
	if err := f.k.step(); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *killFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.k.step(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *killFile) Sync() error {
	if err := f.k.step(); err != nil {
		return err
	}
	f.k.syncs = append(f.k.syncs, f.File.Name())
	return f.File.Sync()
}

func (f *killFile) Truncate(size int64) error {
	if err := f.k.step(); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
