//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package vfs

import (
	"errors"
	"io/fs"
	"os"
)

// lockFile fails: this platform has no flock(2), and Krabka runs its data
// directories on Linux. Refusing is safer than pretending to lock, because
// two processes sharing a data directory corrupt it.
func lockFile(f *os.File) error {
	return &fs.PathError{Op: "lock", Path: f.Name(), Err: errors.ErrUnsupported}
}
