//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package vfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock(2) on f.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return &fs.PathError{Op: "lock", Path: f.Name(), Err: err}
	}
	var lerr error
	err = rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(lerr, syscall.EINTR) {
				return
			}
		}
	})
	switch {
	case err != nil:
		return &fs.PathError{Op: "lock", Path: f.Name(), Err: err}
	case errors.Is(lerr, syscall.EWOULDBLOCK):
		return &fs.PathError{Op: "lock", Path: f.Name(), Err: ErrLocked}
	case lerr != nil:
		return &fs.PathError{Op: "lock", Path: f.Name(), Err: lerr}
	}
	return nil
}
