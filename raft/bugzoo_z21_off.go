//go:build !bugzoo_z21

package raft

// bugZ21 is off: the runtime is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ21 = false
