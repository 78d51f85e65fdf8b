package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKRaftErrorCodes covers every error code the KRaft RPCs use (Kafka's
// org.apache.kafka.common.protocol.Errors): the kerr error it maps to,
// Kafka's name for it, and whether Kafka classifies it as retriable (its
// exception class extends RetriableException in
// org.apache.kafka.common.errors).
func TestKRaftErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		code      int16
		kafkaName string
		want      *kerr.Error
		retriable bool
	}{
		{-1, "UNKNOWN_SERVER_ERROR", kerr.UnknownServerError, false},
		{1, "OFFSET_OUT_OF_RANGE", kerr.OffsetOutOfRange, false},
		{3, "UNKNOWN_TOPIC_OR_PARTITION", kerr.UnknownTopicOrPartition, true},
		// kerr keeps the pre-2.7 name of code 6.
		{6, "NOT_LEADER_OR_FOLLOWER", kerr.NotLeaderForPartition, true},
		{7, "REQUEST_TIMED_OUT", kerr.RequestTimedOut, true},
		// BrokerNotAvailableException extends ApiException; kerr says
		// retriable, Kafka does not.
		{8, "BROKER_NOT_AVAILABLE", kerr.BrokerNotAvailable, false},
		{13, "NETWORK_EXCEPTION", kerr.NetworkException, true},
		{31, "CLUSTER_AUTHORIZATION_FAILED", kerr.ClusterAuthorizationFailed, false},
		{35, "UNSUPPORTED_VERSION", kerr.UnsupportedVersion, false},
		{42, "INVALID_REQUEST", kerr.InvalidRequest, false},
		{74, "FENCED_LEADER_EPOCH", kerr.FencedLeaderEpoch, true},
		{75, "UNKNOWN_LEADER_EPOCH", kerr.UnknownLeaderEpoch, true},
		{94, "INCONSISTENT_VOTER_SET", kerr.InconsistentVoterSet, false},
		{95, "INVALID_UPDATE_VERSION", kerr.InvalidUpdateVersion, false},
		{96, "FEATURE_UPDATE_FAILED", kerr.FeatureUpdateFailed, false},
		{98, "SNAPSHOT_NOT_FOUND", kerr.SnapshotNotFound, false},
		{99, "POSITION_OUT_OF_RANGE", kerr.PositionOutOfRange, false},
		{100, "UNKNOWN_TOPIC_ID", kerr.UnknownTopicID, true},
		{104, "INCONSISTENT_CLUSTER_ID", kerr.InconsistentClusterID, false},
		{114, "MISMATCHED_ENDPOINT_TYPE", kerr.MismatchedEndpointType, false},
		{115, "UNSUPPORTED_ENDPOINT_TYPE", kerr.UnsupportedEndpointType, false},
		{125, "INVALID_VOTER_KEY", kerr.InvalidVoterKey, false},
		{126, "DUPLICATE_VOTER", kerr.DuplicateVoter, false},
		{127, "VOTER_NOT_FOUND", kerr.VoterNotFound, false},
	} {
		t.Run(tc.kafkaName, func(t *testing.T) {
			err := ErrorForCode(tc.code)
			if err != tc.want {
				t.Fatalf("ErrorForCode(%d) = %v, want %v", tc.code, err, tc.want)
			}
			if tc.code != 6 && tc.want.Message != tc.kafkaName {
				t.Errorf("kerr name %q, Kafka's %q", tc.want.Message, tc.kafkaName)
			}
			if got := CodeForError(fmt.Errorf("raft: fetch: %w", err)); got != tc.code {
				t.Errorf("CodeForError(wrapped %v) = %d, want %d", err, got, tc.code)
			}
			if got := Retriable(tc.code); got != tc.retriable {
				t.Errorf("Retriable(%d) = %v, want %v", tc.code, got, tc.retriable)
			}
		})
	}
}

func TestErrorCodeEdges(t *testing.T) {
	if err := ErrorForCode(0); err != nil {
		t.Errorf("ErrorForCode(0) = %v, want nil", err)
	}
	if got := CodeForError(nil); got != 0 {
		t.Errorf("CodeForError(nil) = %d, want 0", got)
	}
	if got := CodeForError(errors.New("disk on fire")); got != -1 {
		t.Errorf("CodeForError(plain error) = %d, want -1", got)
	}
	if Retriable(0) || Retriable(9999) {
		t.Error("Retriable is true for NONE or an unknown code")
	}
	// A code kerr does not know keeps its number through a round trip.
	for _, code := range []int16{9999, -2, 32767} {
		err := ErrorForCode(code)
		if err == nil || CodeForError(err) != code {
			t.Errorf("ErrorForCode(%d) = %v, code back %d", code, err, CodeForError(err))
		}
	}
}

// TestConditionCodes: the Kafka code of each runtime condition, through
// wrapping; the condition wins over a Kafka error it is wrapped with.
func TestConditionCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{ErrNotLeader, kerr.NotLeaderForPartition},
		{ErrLeaderUnknown, kerr.NotLeaderForPartition},
		{ErrShuttingDown, kerr.BrokerNotAvailable},
		{ErrInvalidChange, kerr.InvalidRequest},
		{ErrReadTimeout, kerr.RequestTimedOut},
		{ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
		{ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
		{ErrInconsistentClusterID, kerr.InconsistentClusterID},
		{ErrInvalidVoter, kerr.InvalidRequest},
		{ErrDuplicateVoter, kerr.DuplicateVoter},
		{ErrVoterNotFound, kerr.VoterNotFound},
		{ErrStaticQuorum, kerr.UnsupportedVersion},
		{ErrChangeUnavailable, kerr.RequestTimedOut},
		{ErrChangeInFlight, kerr.RequestTimedOut},
		{ErrVotersUncommitted, kerr.RequestTimedOut},
		{ErrNoCommitInEpoch, kerr.RequestTimedOut},
		{ErrVoterUnreachable, kerr.RequestTimedOut},
		{ErrVoterNotCaughtUp, kerr.RequestTimedOut},
		{ErrChangeTimedOut, kerr.RequestTimedOut},
	} {
		wrapped := fmt.Errorf("context: %w", tc.err)
		if code, ok := CodeForCondition(wrapped); !ok || code != tc.want.Code {
			t.Errorf("CodeForCondition(%v) = %d, %v; want %s", tc.err, code, ok, tc.want.Message)
		}
		if got := CodeForError(fmt.Errorf("%w: %w", wrapped, kerr.UnknownServerError)); got != tc.want.Code {
			t.Errorf("CodeForError(%v with a Kafka error) = %d, want %s", tc.err, got, tc.want.Message)
		}
	}
	if _, ok := CodeForCondition(kerr.DuplicateVoter); ok {
		t.Error("CodeForCondition matches a Kafka error")
	}
	// The order decides for an error that matches two conditions.
	if got := CodeForError(fmt.Errorf("%w: %w", ErrShuttingDown, ErrLeaderUnknown)); got != kerr.NotLeaderForPartition.Code {
		t.Errorf("ErrLeaderUnknown with ErrShuttingDown: %d, want NOT_LEADER_OR_FOLLOWER", got)
	}
	if !errors.Is(ErrChangeInFlight, ErrChangeUnavailable) || !errors.Is(ErrInvalidVoter, ErrInvalidChange) || errors.Is(ErrChangeUnavailable, ErrChangeInFlight) {
		t.Error("a condition does not match its kind, or a kind matches a condition")
	}
}

// TestConditionForCode: an answer's code names the first candidate with
// that code; any other code is the Kafka error.
func TestConditionForCode(t *testing.T) {
	candidates := []error{ErrNotLeader, ErrInvalidVoter, ErrChangeUnavailable, ErrReadTimeout}
	for _, tc := range []struct {
		code int16
		want error
	}{
		{0, nil},
		{kerr.NotLeaderForPartition.Code, ErrNotLeader},
		{kerr.InvalidRequest.Code, ErrInvalidVoter},
		{kerr.RequestTimedOut.Code, ErrChangeUnavailable},
		{kerr.DuplicateVoter.Code, kerr.DuplicateVoter},
	} {
		if got := ConditionForCode(tc.code, candidates...); got != tc.want {
			t.Errorf("ConditionForCode(%d) = %v, want %v", tc.code, got, tc.want)
		}
	}
	if got := ConditionForCode(9999); CodeForError(got) != 9999 {
		t.Errorf("ConditionForCode(9999) = %v, code back %d", got, CodeForError(got))
	}
}
