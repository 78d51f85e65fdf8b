// Package multiprocess holds tests that build the krabka binary and run a
// quorum of real processes with it, as an operator would: storage format,
// server-start, metadata-quorum describe, a crash of the leader with
// SIGKILL and a restart, a follower whose wiped and re-formatted
// directory rejoins through FetchSnapshot under load, a static quorum
// upgraded to kraft.version 1 whose voters then change, a removed
// controller that restarts on its static configuration and follows as
// an observer, and static
// quorums of three and of five that lose a majority for good and are
// rebuilt on a survivor. It has no code outside its tests.
package multiprocess
