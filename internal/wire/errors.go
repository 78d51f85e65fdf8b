package wire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sentinel errors for the conditions callers branch on. The typed errors
// below wrap them, so errors.Is works on every error this package returns.
var (
	// ErrFrameSize reports a frame size prefix that is negative or above the
	// configured maximum (socket.request.max.bytes).
	ErrFrameSize = errors.New("wire: invalid frame size")
	// ErrUnknownAPIKey reports a request whose API key a Krabka controller
	// does not serve (W9, W10 in docs/reliability.md).
	ErrUnknownAPIKey = errors.New("wire: unknown api key")
	// ErrUnsupportedVersion reports a request whose version is outside the
	// version table (W11, W12).
	ErrUnsupportedVersion = errors.New("wire: unsupported api version")
	// ErrMalformedHeader reports a request or response header that cannot
	// be parsed: too short, a bad client id, a bad tagged-field section.
	ErrMalformedHeader = errors.New("wire: malformed header")
	// ErrMalformedBody reports a message body that does not decode at its
	// version.
	ErrMalformedBody = errors.New("wire: malformed body")
)

// FrameSizeError is returned when a frame's size prefix is negative or
// larger than the maximum. It is detected before any buffer is allocated
// for the frame.
type FrameSizeError struct {
	// Size is the size prefix as read.
	Size int32
	// Max is the maximum that was in force.
	Max int32
}

// Error describes the size and the limit.
func (e *FrameSizeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("wire: invalid frame size %d (negative)", e.Size)
	}
	return fmt.Sprintf("wire: invalid frame size %d (larger than the maximum %d)", e.Size, e.Max)
}

// Is makes errors.Is(err, ErrFrameSize) true.
func (e *FrameSizeError) Is(target error) bool { return target == ErrFrameSize }

// RequestError is returned by [DecodeRequest] for a frame that cannot be
// served. Kafka closes the connection in every such case without
// answering (SocketServer.parseRequestHeader, RequestContext.parseRequest),
// except for an ApiVersions request at a version it does not support,
// which it answers (KIP-511); Close and Answer tell the caller which.
type RequestError struct {
	// Kind is one of ErrUnknownAPIKey, ErrUnsupportedVersion,
	// ErrMalformedHeader or ErrMalformedBody.
	Kind error
	// Header holds what was read of the request header. APIKey and
	// APIVersion are valid whenever the frame had 4 bytes; CorrelationID
	// whenever it had 8.
	Header RequestHeader
	// Close reports that the caller must close the connection without
	// answering. It is false only when Answer is set.
	Close bool
	// Answer, when non-nil, is the response to send (with
	// Header.CorrelationID) instead of closing: the version-0
	// UNSUPPORTED_VERSION answer to an ApiVersions request at an
	// unsupported version.
	Answer kmsg.Response
	// Err is the underlying cause, or nil.
	Err error
}

// Error names the kind, the request and the cause.
func (e *RequestError) Error() string {
	msg := fmt.Sprintf("%v (api key %d, version %d, correlation id %d)",
		e.Kind, e.Header.APIKey, e.Header.APIVersion, e.Header.CorrelationID)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the kind and the cause, so that errors.Is matches both.
func (e *RequestError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// ErrorForCode returns the error for a Kafka error code received from a
// peer: nil for 0 (NONE), the *kerr.Error for a known code, and for a code
// kerr does not know a *kerr.Error that keeps the code (Message
// "UNKNOWN_ERROR_CODE", not retriable), so that [CodeForError] gives the
// code back.
func ErrorForCode(code int16) error {
	if code == 0 {
		return nil
	}
	if e := kerr.TypedErrorForCode(code); e != nil && e.Code == code {
		return e
	}
	return &kerr.Error{
		Message:     "UNKNOWN_ERROR_CODE",
		Code:        code,
		Description: fmt.Sprintf("error code %d is not known to this node", code),
	}
}

// The runtime's conditions, exported by package raft under the same
// names (its documentation says when each arises). They are declared here
// so that the one table from condition to Kafka error code sits at the
// wire edge without this package importing the runtime; their texts are
// the runtime's own.
var (
	ErrNotLeader     = errors.New("raft: not leader")
	ErrLeaderUnknown = errors.New("raft: leader unknown")
	ErrShuttingDown  = errors.New("raft: shutting down")
	ErrReadTimeout   = errors.New("raft: read timed out")
	ErrInvalidChange = errors.New("raft: invalid metadata change")
	// ErrImageChanged and ErrUncommittedTail refuse a conditional
	// submission; neither appends anything.
	ErrImageChanged    = errors.New("raft: the image changed after the offset the submission was made against")
	ErrUncommittedTail = errors.New("raft: an uncommitted change is ahead of the submission")
	// ErrOutcomeUnknown has no code of its own: a submission whose
	// outcome is unknown is answered with the code of what it wraps.
	ErrOutcomeUnknown = errors.New("raft: outcome unknown")

	ErrFencedLeaderEpoch     = errors.New("raft: fenced leader epoch")
	ErrUnknownLeaderEpoch    = errors.New("raft: unknown leader epoch")
	ErrInconsistentClusterID = errors.New("raft: inconsistent cluster id")
	ErrInvalidVoter          = kindOf(ErrInvalidChange, "raft: invalid voter")
	ErrDuplicateVoter        = errors.New("raft: duplicate voter")
	ErrVoterNotFound         = errors.New("raft: voter not found")
	ErrStaticQuorum          = errors.New("raft: static voter set (kraft.version 0); upgrade it to kraft.version 1 first (krabka features upgrade --feature kraft.version=1)")
	ErrInvalidFeatureUpdate  = errors.New("raft: invalid feature update")

	ErrChangeUnavailable = errors.New("raft: voter change not possible now")
	ErrChangeInFlight    = kindOf(ErrChangeUnavailable, "raft: another voter change is in flight")
	ErrVotersUncommitted = kindOf(ErrChangeUnavailable, "raft: the latest voter set is not committed")
	ErrNoCommitInEpoch   = kindOf(ErrChangeUnavailable, "raft: the leader has not committed in its epoch yet")
	ErrVoterUnreachable  = kindOf(ErrChangeUnavailable, "raft: the new voter did not answer ApiVersions")
	ErrVoterNotCaughtUp  = kindOf(ErrChangeUnavailable, "raft: the new voter has not caught up")
	ErrChangeTimedOut    = kindOf(ErrChangeUnavailable, "raft: the voter change did not commit within the request timeout")
)

// kindedError is a sentinel of its own that also matches a broader one.
type kindedError struct {
	kind error
	text string
}

func (e *kindedError) Error() string { return e.text }
func (e *kindedError) Unwrap() error { return e.kind }

// kindOf returns a sentinel with text that errors.Is matches to kind.
func kindOf(kind error, text string) error { return &kindedError{kind: kind, text: text} }

// conditionCodes is the Kafka code of each runtime condition, in the
// order [CodeForCondition] tries them.
var conditionCodes = []struct {
	err  error
	code int16
}{
	{ErrNotLeader, kerr.NotLeaderForPartition.Code},
	{ErrLeaderUnknown, kerr.NotLeaderForPartition.Code},
	{ErrShuttingDown, kerr.BrokerNotAvailable.Code},
	{ErrInvalidChange, kerr.InvalidRequest.Code},
	{ErrImageChanged, kerr.InvalidUpdateVersion.Code},
	{ErrUncommittedTail, kerr.ConcurrentTransactions.Code},
	{ErrReadTimeout, kerr.RequestTimedOut.Code},
	{ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch.Code},
	{ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch.Code},
	{ErrInconsistentClusterID, kerr.InconsistentClusterID.Code},
	{ErrDuplicateVoter, kerr.DuplicateVoter.Code},
	{ErrVoterNotFound, kerr.VoterNotFound.Code},
	{ErrStaticQuorum, kerr.UnsupportedVersion.Code},
	{ErrInvalidFeatureUpdate, kerr.InvalidUpdateVersion.Code},
	{ErrChangeUnavailable, kerr.RequestTimedOut.Code},
}

// CodeForCondition returns the Kafka error code of the first runtime
// condition err matches (errors.Is), in this order: ErrNotLeader and
// ErrLeaderUnknown NOT_LEADER_OR_FOLLOWER, ErrShuttingDown
// BROKER_NOT_AVAILABLE, ErrInvalidChange (and ErrInvalidVoter)
// INVALID_REQUEST, ErrImageChanged INVALID_UPDATE_VERSION (Kafka's code
// for a compare-and-set that saw a stale version, as AlterPartition's
// partition epoch), ErrUncommittedTail CONCURRENT_TRANSACTIONS (retriable:
// another change is in progress), ErrReadTimeout REQUEST_TIMED_OUT, ErrFencedLeaderEpoch
// FENCED_LEADER_EPOCH, ErrUnknownLeaderEpoch UNKNOWN_LEADER_EPOCH,
// ErrInconsistentClusterID INCONSISTENT_CLUSTER_ID, ErrDuplicateVoter
// DUPLICATE_VOTER, ErrVoterNotFound VOTER_NOT_FOUND, ErrStaticQuorum
// UNSUPPORTED_VERSION, ErrInvalidFeatureUpdate INVALID_UPDATE_VERSION,
// ErrChangeUnavailable (and every condition that
// matches it) REQUEST_TIMED_OUT. It reports false when err matches none.
func CodeForCondition(err error) (int16, bool) {
	for _, c := range conditionCodes {
		if errors.Is(err, c.err) {
			return c.code, true
		}
	}
	return 0, false
}

// CodeForError returns the Kafka error code to put on the wire for err: 0
// for nil, the code of a runtime condition ([CodeForCondition]), else the
// code of a *kerr.Error found with errors.As, and -1
// (UNKNOWN_SERVER_ERROR) for anything else.
func CodeForError(err error) int16 {
	if err == nil {
		return 0
	}
	if code, ok := CodeForCondition(err); ok {
		return code
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// ConditionForCode returns the error for the code of an answer whose
// runtime conditions are candidates: nil for 0 (NONE), the first
// candidate whose code ([CodeForError]) is code, and [ErrorForCode]'s
// error for any other code. Several conditions share a code, so the
// candidates say which one an answer means.
func ConditionForCode(code int16, candidates ...error) error {
	if code == 0 {
		return nil
	}
	for _, c := range candidates {
		if CodeForError(c) == code {
			return c
		}
	}
	return ErrorForCode(code)
}

// Retriable reports whether Kafka classifies the error code as retriable
// (its exception extends RetriableException in
// org.apache.kafka.common.errors): a requester may send the same request
// again, normally after controller.quorum.retry.backoff.ms. Codes unknown
// to this node are not retriable.
//
// kerr's flags agree with Kafka's for every code the KRaft RPCs use except
// BROKER_NOT_AVAILABLE (8), which kerr marks retriable because franz-go's
// client retries it, while Kafka's BrokerNotAvailableException is a plain
// ApiException. KRaft's requesters still back off and retry after it, by
// protocol rule rather than by this classification.
func Retriable(code int16) bool {
	if code == 0 || code == kerr.BrokerNotAvailable.Code {
		return false
	}
	e := kerr.TypedErrorForCode(code)
	return e != nil && e.Code == code && e.Retriable
}
