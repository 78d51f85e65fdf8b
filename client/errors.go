package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
)

// The conditions a [Client] reports. The first eight are the values package
// raft exports under the same names, so errors.Is matches either.
var (
	// ErrNotLeader is matched by every [*NotLeaderError].
	ErrNotLeader = wire.ErrNotLeader
	// ErrLeaderUnknown: the controller that answered knows no leader (an
	// election is under way), or could not reach it.
	ErrLeaderUnknown = wire.ErrLeaderUnknown
	// ErrShuttingDown: the controller that answered is shutting down.
	ErrShuttingDown = wire.ErrShuttingDown
	// ErrReadTimeout: a linearizable read was not confirmed in time.
	ErrReadTimeout = wire.ErrReadTimeout
	// ErrInvalidChange: the leader's image rejects the submitted records
	// (INVALID_REQUEST), or they cannot be encoded.
	ErrInvalidChange = wire.ErrInvalidChange
	// ErrOutcomeUnknown: a submission's records may have reached a
	// controller, but no answer came back (the connection was lost, the
	// request timed out, the answer was malformed or ctx ended). They may
	// or may not commit; [Client.SubmitChange] never sends them again on
	// its own.
	ErrOutcomeUnknown = wire.ErrOutcomeUnknown
	// ErrImageChanged: a conditional submission's image changed after the
	// offset it names ([IfUnchangedSince]); nothing was appended.
	ErrImageChanged = wire.ErrImageChanged
	// ErrUncommittedTail: the leader holds an uncommitted change ahead of
	// a conditional submission; nothing was appended, and a retry may
	// succeed.
	ErrUncommittedTail = wire.ErrUncommittedTail

	// ErrUnreachable: no controller of the bootstrap list could be
	// reached.
	ErrUnreachable = errors.New("client: no controller reachable")
	// ErrMalformedResponse: a controller's answer did not decode. The
	// connection is closed.
	ErrMalformedResponse = errors.New("client: malformed response")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client: closed")
	// ErrAuthentication: the TLS handshake or the SASL exchange with a
	// controller failed (a certificate refused or not trusted, wrong
	// credentials). Dial and reads do not retry it: the same credentials
	// fail again.
	ErrAuthentication = errors.New("client: authentication failed")
)

// NotLeaderError is the answer of a controller that is not (or no longer)
// the leader and names the one it knows. A submission that gets it may
// still commit under that leader (leadership was lost while it waited),
// so a retry must be safe to apply twice or be checked against the image
// first. The Client sends its next request to LeaderID.
type NotLeaderError struct {
	// LeaderID is the leader the answering controller knows.
	LeaderID int32
	// Epoch is that leader's epoch.
	Epoch int32
	// Message is the controller's error message, if any.
	Message string
}

// Error describes the error.
func (e *NotLeaderError) Error() string {
	s := fmt.Sprintf("client: not leader (leader %d in epoch %d)", e.LeaderID, e.Epoch)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is [ErrNotLeader].
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// answerError turns the error code of a private RPC's answer into the
// condition a caller branches on: nil for 0, a *NotLeaderError or
// ErrLeaderUnknown for NOT_LEADER_OR_FOLLOWER, ErrShuttingDown for
// BROKER_NOT_AVAILABLE, ErrInvalidChange for INVALID_REQUEST,
// ErrReadTimeout for REQUEST_TIMED_OUT, ErrImageChanged for
// INVALID_UPDATE_VERSION, ErrUncommittedTail for CONCURRENT_TRANSACTIONS,
// and Kafka's error (a *kerr.Error)
// for any other code.
func answerError(code int16, msg *string, leaderID, epoch int32) error {
	text := ""
	if msg != nil {
		text = *msg
	}
	err := wire.ConditionForCode(code, ErrNotLeader, ErrShuttingDown, ErrInvalidChange, ErrReadTimeout, ErrImageChanged, ErrUncommittedTail)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotLeader) && leaderID >= 0:
		return &NotLeaderError{LeaderID: leaderID, Epoch: epoch, Message: text}
	case errors.Is(err, ErrNotLeader):
		err = ErrLeaderUnknown
	}
	// The controller's message starts with the condition's own text.
	if text = strings.TrimPrefix(text, err.Error()+": "); text == "" || text == err.Error() {
		return err
	}
	return fmt.Errorf("%w: %s", err, text)
}

// authFailure reports whether err is a failed TLS handshake or SASL
// exchange.
func authFailure(err error) bool {
	var alert tls.AlertError
	var verify *tls.CertificateVerificationError
	var ro *tls.RecordHeaderError
	// crypto/tls reports an alert the server sent as a *net.OpError
	// whose Op is "remote error" (certificate required, bad certificate,
	// unknown authority, ...).
	var op *net.OpError
	remoteAlert := errors.As(err, &op) && op.Op == "remote error"
	return errors.Is(err, transport.ErrSASLAuthentication) || errors.As(err, &alert) || errors.As(err, &verify) || errors.As(err, &ro) || remoteAlert
}
