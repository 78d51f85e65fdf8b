package raft

import (
	"errors"
	"fmt"
)

// ErrNotLeader is matched (with [errors.Is]) by every [*NotLeaderError].
var ErrNotLeader = errors.New("raft: not leader")

// ErrLeaderUnknown is returned when a change cannot be submitted because
// this node knows no leader (an election is under way, or the leader is
// going away); retry after a short backoff.
var ErrLeaderUnknown = errors.New("raft: leader unknown")

// ErrShuttingDown is returned by calls made while, or after, the controller
// shuts down, and to submissions still waiting when it does.
var ErrShuttingDown = errors.New("raft: shutting down")

// ErrOutcomeUnknown is matched (together with [ErrLeaderUnknown]) by the
// error of a SubmitChange that a follower forwarded to the leader when
// the forwarding failed after the records may have left the node: the
// answer timed out or the connection was lost. The leader may or may not
// have committed them. The runtime never sends them again on its own (an
// internal resend without an idempotence key applies a change twice,
// bug-zoo entry Z21 in docs/reliability.md); a caller that retries must make the retry safe
// to apply twice, or check the image first.
var ErrOutcomeUnknown = errors.New("raft: outcome unknown")

// ErrReadTimeout is returned by [Controller.ReadImage] when its deadline
// passed before the read was confirmed and applied. It also matches
// context.DeadlineExceeded when the caller's context ran out.
var ErrReadTimeout = errors.New("raft: read timed out")

// ErrInvalidChange is matched by the error of a submission whose records
// the metadata image rejects (a topic that already exists, a partition of
// an unknown topic, ...). The error also wraps the [*metadata.ReplayError]
// when the rejection happened on this node.
var ErrInvalidChange = errors.New("raft: invalid metadata change")

// NotLeaderError is returned by [Controller.SubmitChange] when the node it
// reached is not the leader but knows which node is. The write was not
// made, or (when leadership was lost while the submission waited) may
// still commit under the new leader: the caller cannot tell, so a retry
// must be safe to apply twice or be checked against the image first.
type NotLeaderError struct {
	// LeaderID is the leader this node knows of.
	LeaderID NodeID
	// Epoch is that leader's epoch.
	Epoch int32
}

// Error describes the error.
func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("raft: not leader (leader %d in epoch %d)", e.LeaderID, e.Epoch)
}

// Is reports whether target is [ErrNotLeader].
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }
