//go:build !writeback

package raft

import "github.com/krabka-go/krabka/internal/vfs"

// newFS returns the file system a started controller uses for its log,
// snapshots and quorum state: the operating system's, seen through the
// bug zoo's Z2 hook (zooFS). The writeback build has its own
// (fs_writeback.go).
func newFS() vfs.FS { return zooFS(vfs.OS()) }
