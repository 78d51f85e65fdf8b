//go:build !bugzoo_z22

package raft

// bugZ22 is off: the runtime is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ22 = false
