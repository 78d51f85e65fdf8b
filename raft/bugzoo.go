package raft

import (
	"io/fs"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/vfs"
)

// The faulty paths of the bug zoo's runtime entries that take more than a
// line at their hook (package bugzoo holds the catalogue: each entry's
// shipped bug, its hooks and the tests and fault campaigns that must catch
// it). They run only when their entry is selected in a build with the tag
// bugzoo; a normal build compiles their hooks away and links none of them.

// zooFS returns fsys, or with Z2 selected a file system whose syncs do
// nothing: nothing the log, the snapshots or the quorum state write is
// ever made durable, and with the writeback build a SIGKILL loses it.
func zooFS(fsys vfs.FS) vfs.FS {
	if bugzoo.Active(bugzoo.Z2) {
		return noSyncFS{fsys}
	}
	return fsys
}

// noSyncFS is an FS whose syncs do nothing (Z2).
type noSyncFS struct{ vfs.FS }

func (f noSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{file}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }

// noSyncFile is a File whose Sync does nothing (Z2).
type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error { return nil }

// bugZ3PersistLater is Z3's quorum-state write: it runs in the
// background, so the Ready's messages (a granted vote among them) leave
// before the state that records them is durable, and a power loss
// before the write forgets the vote.
func (e *engine) bugZ3PersistLater(qs logstore.QuorumStateData, st kraft.ElectionState) {
	e.background(func() {
		if err := e.persistQuorumState(qs, st); err != nil {
			e.logger.Error("persist quorum state", "error", err)
		}
	})
}

// bugZ22AckAppended is Z22's acknowledgement: every waiting submission
// whose records are now in the local log succeeds, committed or not.
func (e *engine) bugZ22AckAppended() {
	end := kraft.Offset(e.log.LogEndOffset())
	done := 0
	for _, w := range e.sub.waiters {
		if w.last >= end {
			break
		}
		w.complete(SubmitResult{Offset: int64(w.base), LastOffset: int64(w.last), Epoch: int32(w.epoch)}, nil)
		done++
	}
	e.sub.waiters = e.sub.waiters[done:]
}
