package raft

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// publicErrors are the runtime's exported sentinels: the Kafka code a
// voter RPC answers each with, the other sentinels each also matches, and
// what a follower that forwarded a voter change makes of that answer.
var publicErrors = []struct {
	name      string
	err       error
	code      int16
	alsoIs    []error
	forwarded error
}{
	{"ErrNotLeader", ErrNotLeader, kerr.NotLeaderForPartition.Code, nil, ErrLeaderUnknown},
	{"ErrLeaderUnknown", ErrLeaderUnknown, kerr.NotLeaderForPartition.Code, nil, ErrLeaderUnknown},
	{"ErrShuttingDown", ErrShuttingDown, kerr.BrokerNotAvailable.Code, nil, ErrLeaderUnknown},
	{"ErrInvalidChange", ErrInvalidChange, kerr.InvalidRequest.Code, nil, ErrInvalidVoter},
	{"ErrReadTimeout", ErrReadTimeout, kerr.RequestTimedOut.Code, nil, ErrChangeUnavailable},
	{"ErrFencedLeaderEpoch", ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch.Code, nil, ErrFencedLeaderEpoch},
	{"ErrUnknownLeaderEpoch", ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch.Code, nil, ErrUnknownLeaderEpoch},
	{"ErrInconsistentClusterID", ErrInconsistentClusterID, kerr.InconsistentClusterID.Code, nil, ErrInconsistentClusterID},
	{"ErrInvalidVoter", ErrInvalidVoter, kerr.InvalidRequest.Code, []error{ErrInvalidChange}, ErrInvalidVoter},
	{"ErrDuplicateVoter", ErrDuplicateVoter, kerr.DuplicateVoter.Code, nil, ErrDuplicateVoter},
	{"ErrVoterNotFound", ErrVoterNotFound, kerr.VoterNotFound.Code, nil, ErrVoterNotFound},
	{"ErrStaticQuorum", ErrStaticQuorum, kerr.UnsupportedVersion.Code, nil, ErrStaticQuorum},
	{"ErrChangeUnavailable", ErrChangeUnavailable, kerr.RequestTimedOut.Code, nil, ErrChangeUnavailable},
	{"ErrChangeInFlight", ErrChangeInFlight, kerr.RequestTimedOut.Code, []error{ErrChangeUnavailable}, ErrChangeUnavailable},
	{"ErrVotersUncommitted", ErrVotersUncommitted, kerr.RequestTimedOut.Code, []error{ErrChangeUnavailable}, ErrChangeUnavailable},
	{"ErrNoCommitInEpoch", ErrNoCommitInEpoch, kerr.RequestTimedOut.Code, []error{ErrChangeUnavailable}, ErrChangeUnavailable},
	{"ErrVoterUnreachable", ErrVoterUnreachable, kerr.RequestTimedOut.Code, []error{ErrChangeUnavailable}, ErrChangeUnavailable},
	{"ErrVoterNotCaughtUp", ErrVoterNotCaughtUp, kerr.RequestTimedOut.Code, []error{ErrChangeUnavailable}, ErrChangeUnavailable},
	{"ErrChangeTimedOut", ErrChangeTimedOut, kerr.RequestTimedOut.Code, []error{ErrChangeUnavailable}, ErrChangeUnavailable},
}

// TestPublicErrorsMatch: every exported sentinel matches itself through
// wrapping and the sentinels listed for it, and no other.
func TestPublicErrorsMatch(t *testing.T) {
	for _, tc := range publicErrors {
		wrapped := fmt.Errorf("context: %w", tc.err)
		for _, other := range publicErrors {
			want := other.err == tc.err
			for _, k := range tc.alsoIs {
				want = want || k == other.err
			}
			if got := errors.Is(wrapped, other.err); got != want {
				t.Errorf("errors.Is(wrapped %s, %s) = %v, want %v", tc.name, other.name, got, want)
			}
		}
	}
	if nl := fmt.Errorf("x: %w", &NotLeaderError{LeaderID: 2, Epoch: 3}); !errors.Is(nl, ErrNotLeader) || errors.Is(nl, ErrLeaderUnknown) {
		t.Errorf("a NotLeaderError matches ErrNotLeader only: %v", nl)
	}
}

// TestVoterAnswerCodes: the code and message a voter RPC answers each
// condition with, and the errors AddVoter and RemoveVoter return for it
// on the leader and, forwarded, on a follower.
func TestVoterAnswerCodes(t *testing.T) {
	for _, tc := range publicErrors {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("context: %w", tc.err)
			code, msg := voterAnswer(wrapped)
			if code != tc.code || msg == nil || *msg != kerr.ErrorForCode(tc.code).(*kerr.Error).Description {
				t.Errorf("voterAnswer = %d, %v; want %d with Kafka's default message", code, msg, tc.code)
			}
			local := voterChangeError("add voter 9", wrapped)
			if !errors.Is(local, tc.err) {
				t.Errorf("on the leader: %v, want errors.Is %s", local, tc.name)
			}
			if tc.forwarded == ErrLeaderUnknown && !errors.Is(local, ErrLeaderUnknown) {
				t.Errorf("on the leader: %v, want errors.Is ErrLeaderUnknown too", local)
			}
			resp := kmsg.NewPtrAddRaftVoterResponse()
			resp.ErrorCode = code
			fwd := voterChangeError("add voter 9", voterAnswerError(resp))
			if !errors.Is(fwd, tc.forwarded) {
				t.Errorf("forwarded: %v, want errors.Is %v", fwd, tc.forwarded)
			}
			if tc.forwarded == ErrLeaderUnknown && (errors.Is(fwd, ErrShuttingDown) || errors.Is(fwd, ErrNotLeader)) {
				t.Errorf("forwarded: %v speaks of this node's state, not the leader's", fwd)
			}
		})
	}
	if code, msg := voterAnswer(nil); code != 0 || msg != nil {
		t.Errorf("voterAnswer(nil) = %d, %v; want 0, null", code, msg)
	}
	if err := voterAnswerError(kmsg.NewPtrRemoveRaftVoterResponse()); err != nil {
		t.Errorf("answer NONE: %v", err)
	}
	if code, _ := voterAnswer(errors.New("disk on fire")); code != kerr.UnknownServerError.Code {
		t.Errorf("voterAnswer(other error) = %d, want UNKNOWN_SERVER_ERROR", code)
	}
}

// TestVoterAnswerOtherCodes: an answer with a code this runtime never
// answers a voter RPC with, or of another RPC, is an error that keeps
// what the leader said.
func TestVoterAnswerOtherCodes(t *testing.T) {
	resp := kmsg.NewPtrUpdateRaftVoterResponse()
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	if err := voterAnswerError(resp); !errors.Is(err, kerr.ClusterAuthorizationFailed) || wire.CodeForError(err) != resp.ErrorCode {
		t.Errorf("CLUSTER_AUTHORIZATION_FAILED answer: %v", err)
	}
	if err := voterAnswerError(kmsg.NewPtrApiVersionsResponse()); err == nil || wire.CodeForError(err) != kerr.UnknownServerError.Code {
		t.Errorf("an ApiVersions answer to a voter request: %v", err)
	}
}

// TestProbeError: an add whose ApiVersions request to the new voter
// fails or is refused is ErrVoterUnreachable.
func TestProbeError(t *testing.T) {
	refused := kmsg.NewPtrApiVersionsResponse()
	refused.ErrorCode = kerr.UnsupportedVersion.Code
	cause := errors.New("connection refused")
	for _, tc := range []struct {
		av  *kmsg.ApiVersionsResponse
		err error
	}{{nil, cause}, {nil, nil}, {refused, nil}} {
		err := probeError(tc.av, tc.err)
		if !errors.Is(err, ErrVoterUnreachable) || wire.CodeForError(err) != kerr.RequestTimedOut.Code {
			t.Errorf("probeError(%v, %v) = %v, want ErrVoterUnreachable (REQUEST_TIMED_OUT)", tc.av, tc.err, err)
		}
		if tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("probeError drops its cause: %v", err)
		}
	}
}
