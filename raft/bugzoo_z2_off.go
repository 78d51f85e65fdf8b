//go:build !bugzoo_z2

package raft

import "github.com/krabka-go/krabka/internal/vfs"

// zooFS returns fsys unchanged: syncs are real (bugzoo_z2.go re-injects
// the bug).
func zooFS(fsys vfs.FS) vfs.FS { return fsys }
