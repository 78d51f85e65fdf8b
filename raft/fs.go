package raft

import "github.com/krabka-go/krabka/internal/vfs"

// baseFS is the file system under a started controller's log, snapshots
// and quorum state: the operating system's, unless the writeback build tag
// swaps it (fs_writeback.go).
var baseFS = vfs.OS

// newFS returns the file system a started controller uses: baseFS, seen
// through the bug zoo's Z2 hook (zooFS).
func newFS() vfs.FS { return zooFS(baseFS()) }
