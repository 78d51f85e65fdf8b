//go:build writeback

package raft

import "github.com/krabka-go/krabka/internal/vfs"

// newFS, in a build with -tags writeback, keeps unsynced writes in
// process memory (vfs.WriteBack), so that a SIGKILL of the binary loses
// them as a power loss would (the fault suite's power failures, see
// docs/reliability.md). For fault tests only.
func newFS() vfs.FS { return vfs.WriteBack(vfs.OS()) }
