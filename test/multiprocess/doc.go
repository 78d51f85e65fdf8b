// Package multiprocess holds tests that build the krabka binary and run a
// quorum of real processes with it, as an operator would: storage format,
// server-start, metadata-quorum describe, a crash of the leader with
// SIGKILL and a restart, and a follower whose wiped and re-formatted
// directory rejoins through FetchSnapshot under load. It has no code
// outside its tests.
package multiprocess
