//go:build bugzoo_z21

package raft

// bugZ21 re-injects bug-zoo entry Z21 (RELIABILITY.md §6); see bugzoo.go.
const bugZ21 = true
