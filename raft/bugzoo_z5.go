//go:build bugzoo_z5

package raft

// bugZ5 re-injects bug-zoo entry Z5 (RELIABILITY.md §6); see bugzoo.go.
const bugZ5 = true
