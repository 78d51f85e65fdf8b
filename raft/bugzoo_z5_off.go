//go:build !bugzoo_z5

package raft

// bugZ5 is off: the runtime is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ5 = false
