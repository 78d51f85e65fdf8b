package kraft

import (
	"errors"
	"fmt"
)

// ErrNotLeader is matched (with [errors.Is]) by every [*NotLeaderError].
var ErrNotLeader = errors.New("kraft: not leader")

// ErrReadyOutstanding is returned by [Node.Step] and [Node.Propose] when
// they are called after [Node.Ready] and before the matching
// [Node.Advance]: the runtime must finish a Ready first.
var ErrReadyOutstanding = errors.New("kraft: a Ready is outstanding; call Advance first")

// ErrUnknownMessage is returned by [Node.Step] for a message of a type the
// core does not handle, or a nil message.
var ErrUnknownMessage = errors.New("kraft: unknown message")

// ErrMisaddressed is returned by [Node.Step] for a message whose To is not
// this node.
var ErrMisaddressed = errors.New("kraft: message addressed to another node")

// NotLeaderError is returned by [Node.Propose] on a replica that is not the
// active leader. Leader is the replica's current belief (LeaderID NoNode if
// it knows none), so a caller can redirect.
type NotLeaderError struct {
	Leader LeaderAndEpoch
}

// Error describes the error.
func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("kraft: not leader (%s)", e.Leader)
}

// Is reports whether target is [ErrNotLeader].
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }
