//go:build !writeback

package raft

import "github.com/krabka-go/krabka/internal/vfs"

// newFS returns the file system a started controller uses for its log,
// snapshots and quorum state when the caller gives none: the operating
// system's. The writeback build has its own (fs_writeback.go). Start sees
// either, or the one a test gives, through the bug zoo's Z2 hook (zooFS).
func newFS() vfs.FS { return vfs.OS() }
