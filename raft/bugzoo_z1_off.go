//go:build !bugzoo_z1

package raft

// zooSkipLogSync is false: the engine fsyncs its appends before the core
// may count or report them (bugzoo_z1.go re-injects the bug).
const zooSkipLogSync = false
