package vfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// allocate is fallocate(2) with mode 0: blocks are reserved as unwritten
// extents and the size is set, so later writes into the range change no
// size. A file system without fallocate (EOPNOTSUPP) gets growTo.
func allocate(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), 0, off, n)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if errors.Is(ferr, syscall.EOPNOTSUPP) {
		return growTo(f, off+n)
	}
	if ferr != nil {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: ferr}
	}
	return nil
}
