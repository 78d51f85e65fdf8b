//go:build bugzoo_z22

package raft

// bugZ22 re-injects bug-zoo entry Z22 (RELIABILITY.md §6); see bugzoo.go.
const bugZ22 = true
