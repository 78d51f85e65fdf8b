//go:build writeback

package raft

import "github.com/krabka-go/krabka/internal/vfs"

// With -tags writeback, unsynced writes stay in process memory
// (vfs.WriteBack), so that a SIGKILL of the binary loses them as a power
// loss would (docs/reliability.md). For fault tests only.
func init() {
	baseFS = func() vfs.FS { return vfs.WriteBack(vfs.OS()) }
}
