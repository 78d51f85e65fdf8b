//go:build !linux

package vfs

import "os"

// allocate grows f with ftruncate where fallocate(2) is not available: the
// size changes once per Allocate as on Linux, the blocks are only
// reserved when written.
func allocate(f *os.File, off, n int64) error { return growTo(f, off+n) }
