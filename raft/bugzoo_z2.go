//go:build bugzoo_z2

package raft

import (
	"io/fs"

	"github.com/krabka-go/krabka/internal/vfs"
)

// zooFS re-injects Z2 of the bug zoo (RELIABILITY.md §6; etcd #14143,
// #14140): the controller treats a write as durable. Every File.Sync and
// FS.SyncDir returns nil without doing anything, so nothing the log, the
// snapshots or the quorum state write is ever made durable. With the
// writeback build (vfs.WriteBack), a SIGKILL then loses it all, and
// test/faults must see acknowledged records lost (scripts/bugzoo-faults.sh).
func zooFS(fsys vfs.FS) vfs.FS { return noSyncFS{fsys} }

// noSyncFS is an FS whose syncs do nothing.
type noSyncFS struct{ vfs.FS }

func (f noSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{file}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }

// noSyncFile is a File whose Sync does nothing.
type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error { return nil }
