package raft

import "github.com/krabka-go/krabka/internal/vfs"

// newFS is the file system a started controller keeps its log, snapshots
// and quorum state on: the operating system's, unless a build tag swaps it
// (fs_writeback.go).
var newFS = vfs.OS
