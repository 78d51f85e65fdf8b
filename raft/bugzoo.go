package raft

import "github.com/krabka-go/krabka/internal/kraft"

// The runtime's bug-zoo entries (RELIABILITY.md §6; the core's are in
// internal/kraft/bugzoo.go): bugs real systems shipped, re-injected one at
// a time behind a build tag so that the tests and fault campaigns meant to
// catch them can be shown to do so. Each is a constant, bugZ<n>, true only
// in a build with the tag bugzoo_z<n>; a normal build compiles the hooks
// away.
//
//   - Z5 (etcd #20418), tag bugzoo_z5: the leader serves a linearizable
//     read from its image at once, without confirming that it still
//     leads in its epoch; a deposed leader cut off from the quorum then
//     returns a stale image (K5).
//   - Z21 (Redpanda 21.10.1), tag bugzoo_z21: a forwarded SubmitChange
//     whose forwarding timed out or lost its connection is sent again,
//     internally, to the (new) leader, without an idempotence key; a
//     change the old leader committed is then applied twice (K1–K3, K7).
//     The correct runtime reports the failure to the caller as
//     [ErrOutcomeUnknown] and never retries on its own.
//   - Z22 (Bufstream 0.1.0), tag bugzoo_z22: SubmitChange is
//     acknowledged once its records are appended and fsynced on the
//     leader instead of once they are committed; an acknowledged change
//     can then be lost with the leader (K1).

// bugZ22AckAppended is Z22's acknowledgement: every waiting submission
// whose records are now in the local log succeeds, committed or not.
func (e *engine) bugZ22AckAppended() {
	end := kraft.Offset(e.log.LogEndOffset())
	done := 0
	for _, w := range e.waiters {
		if w.last >= end {
			break
		}
		w.complete(SubmitResult{Offset: int64(w.base), LastOffset: int64(w.last), Epoch: int32(w.epoch)}, nil)
		done++
	}
	e.waiters = e.waiters[done:]
}
