package raft

import (
	"fmt"

	"github.com/krabka-go/krabka/internal/wire"
)

// ErrNotLeader is matched (with [errors.Is]) by every [*NotLeaderError].
var ErrNotLeader = wire.ErrNotLeader

// ErrLeaderUnknown is returned when a change cannot be submitted because
// this node knows no leader (an election is under way, or the leader is
// going away); retry after a short backoff.
var ErrLeaderUnknown = wire.ErrLeaderUnknown

// ErrShuttingDown is returned by calls made while, or after, the controller
// shuts down, and to submissions still waiting when it does.
var ErrShuttingDown = wire.ErrShuttingDown

// ErrOutcomeUnknown is matched (together with [ErrLeaderUnknown]) by the
// error of a SubmitChange that a follower forwarded to the leader when
// the forwarding failed after the records may have left the node: the
// answer timed out or the connection was lost. The leader may or may not
// have committed them. The runtime never sends them again on its own (an
// internal resend without an idempotence key applies a change twice,
// bug-zoo entry Z21 in docs/reliability.md); a caller that retries must make the retry safe
// to apply twice, or check the image first.
var ErrOutcomeUnknown = wire.ErrOutcomeUnknown

// ErrReadTimeout is returned by [Controller.ReadImage] when its deadline
// passed before the read was confirmed and applied. It also matches
// context.DeadlineExceeded when the caller's context ran out.
var ErrReadTimeout = wire.ErrReadTimeout

// ErrInvalidChange is matched by the error of a submission whose records
// the metadata image rejects (a topic that already exists, a partition of
// an unknown topic, ...). The error also wraps the [*metadata.ReplayError]
// when the rejection happened on this node. It also matches a voter
// change that is not valid ([ErrInvalidVoter], and a target of
// [Controller.ChangeMembership] more than one voter away).
var ErrInvalidChange = wire.ErrInvalidChange

// The refusals of a conditional submission ([IfUnchangedSince],
// [IfNoUncommittedTail]). A refused submission appends nothing.
var (
	// ErrImageChanged: a record after the offset the submission names
	// changed the image (see [metadata.Image.ChangedAt]). Read the image
	// again and decide anew; sending the same records again is refused
	// again.
	ErrImageChanged = wire.ErrImageChanged
	// ErrUncommittedTail: the leader holds an uncommitted change ahead of
	// the submission (or has not applied up to the offset it names), so
	// it cannot tell whether the condition holds. It is retriable: the
	// tail commits or is lost within a commit round.
	ErrUncommittedTail = wire.ErrUncommittedTail
)

// The conditions of a voter change ([Controller.AddVoter],
// [Controller.RemoveVoter], [Controller.ChangeMembership] and the KIP-853
// voter RPCs a leader serves, which answer each with the Kafka error code
// Kafka's AddVoterHandler, RemoveVoterHandler and UpdateVoterHandler
// use).
var (
	// ErrFencedLeaderEpoch: the request names a leader epoch older than
	// this node's.
	ErrFencedLeaderEpoch = wire.ErrFencedLeaderEpoch
	// ErrUnknownLeaderEpoch: the request names a leader epoch newer than
	// this node's.
	ErrUnknownLeaderEpoch = wire.ErrUnknownLeaderEpoch
	// ErrInconsistentClusterID: the request names another cluster.
	ErrInconsistentClusterID = wire.ErrInconsistentClusterID
	// ErrInvalidVoter (which matches [ErrInvalidChange] too): the voter
	// has a negative id or no directory id, has no endpoint on the
	// leader's first controller listener, or gives a kraft.version range
	// that is invalid or leaves out the quorum's kraft.version.
	ErrInvalidVoter = wire.ErrInvalidVoter
	// ErrDuplicateVoter: the node id to add is already a voter.
	ErrDuplicateVoter = wire.ErrDuplicateVoter
	// ErrVoterNotFound: the replica to remove or update is not a voter
	// (node id and directory id), or it is the last voter.
	ErrVoterNotFound = wire.ErrVoterNotFound
	// ErrStaticQuorum: the quorum's voter set is static (kraft.version 0),
	// and voters cannot be added or removed until kraft.version is
	// upgraded to 1 (UpdateFeatures; docs/operations.md).
	ErrStaticQuorum = wire.ErrStaticQuorum
	// ErrInvalidFeatureUpdate is matched by every [*FeatureUpdateError]:
	// an UpdateFeatures request this controller refuses
	// (INVALID_UPDATE_VERSION).
	ErrInvalidFeatureUpdate = wire.ErrInvalidFeatureUpdate

	// ErrChangeUnavailable is matched by every condition below: the
	// change cannot be made now but may succeed when retried after a
	// backoff. A follower that forwarded the change gets this error
	// itself, since the leader's answer (REQUEST_TIMED_OUT) does not say
	// which condition it was.
	ErrChangeUnavailable = wire.ErrChangeUnavailable
	// ErrChangeInFlight: the leader is carrying out another add or
	// remove.
	ErrChangeInFlight = wire.ErrChangeInFlight
	// ErrVotersUncommitted: the latest voter set is not committed yet, or
	// is the bootstrap set that is not in the log.
	ErrVotersUncommitted = wire.ErrVotersUncommitted
	// ErrNoCommitInEpoch: the leader has no high watermark in its epoch
	// yet.
	ErrNoCommitInEpoch = wire.ErrNoCommitInEpoch
	// ErrVoterUnreachable: the voter to add did not answer the leader's
	// ApiVersions request.
	ErrVoterUnreachable = wire.ErrVoterUnreachable
	// ErrVoterNotCaughtUp: the voter to add has not fetched recently as
	// an observer, or never caught up with the leader.
	ErrVoterNotCaughtUp = wire.ErrVoterNotCaughtUp
	// ErrChangeTimedOut: the change did not complete within
	// controller.quorum.request.timeout.ms. An add or remove whose voter
	// set was appended may still commit.
	ErrChangeTimedOut = wire.ErrChangeTimedOut
)

// FeatureUpdateError is the refusal of a feature update, with the reason
// in Kafka's words (FeatureControlManager, KafkaRaftClient), for example
// "Invalid upgrade of kraft.version to 1 because not all of the voters
// support it: …". It matches [ErrInvalidFeatureUpdate].
type FeatureUpdateError = wire.FeatureUpdateError

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

// CommittedReplayError is the fatal fault that stops a node whose image
// refuses a committed record: every replica holds the record, so the
// image would no longer follow the log, and serving it would be serving
// a state the quorum never agreed on (Kafka's controller treats it as a
// fatal fault, KAFKA-14275). A leader validates every submission before
// it appends it, so a committed record the image refuses is a bug or a
// log written by another program. [Controller.Err] returns it, and the
// submissions still waiting fail with it.
type CommittedReplayError struct {
	// Offset and Epoch are the record's offset and its batch's leader
	// epoch.
	Offset int64
	Epoch  int32
	// Err is the image's rejection (a [*metadata.ReplayError], or the
	// decode error of a record that does not decode).
	Err error
}

func (e *CommittedReplayError) Error() string {
	return fmt.Sprintf("raft: the committed record at offset %d (epoch %d) cannot be replayed into the metadata image, so the node stops: %v", e.Offset, e.Epoch, e.Err)
}

func (e *CommittedReplayError) Unwrap() error { return e.Err }

// LogStateError is the fatal fault that stops a node whose log store and
// consensus core disagree about the log: the store placed an append at
// other offsets than the core did, or the core asked to truncate records
// the node has already applied (committed records). Neither happens while
// the core and the store are correct; going on would replicate or serve a
// log the quorum never agreed on, so the node stops before it acts on the
// request (Kafka's KafkaMetadataLog refuses such a truncation with an
// exception its raft thread's fault handler turns into a stop).
// [Controller.Err] returns it.
type LogStateError struct {
	// Op is the operation refused: "append" or "truncate".
	Op string
	// Reason says how the store and the core disagree, with the offsets.
	Reason string
}

func (e *LogStateError) Error() string {
	return fmt.Sprintf("raft: impossible log state on %s, so the node stops: %s", e.Op, e.Reason)
}

// UnsupportedMetadataVersionError is a fatal fault: snapshot Snapshot
// finalizes a metadata.version outside the range this release supports
// (metadata.MinMetadataVersion to metadata.MaxMetadataVersion), as a
// quorum upgraded by a newer release does. Start fails with it for a
// snapshot on disk, and the engine stops with it ([Controller.Err]) for
// one fetched from the leader; the snapshot is kept, not taken for
// damage. A committed FeatureLevelRecord of such a level stops the node
// with a [*CommittedReplayError] instead. Both match
// metadata.ErrUnsupportedMetadataVersion.
type UnsupportedMetadataVersionError struct {
	// Snapshot names the snapshot (its offset and epoch).
	Snapshot string
	// Err is the image's rejection.
	Err error
}

func (e *UnsupportedMetadataVersionError) Error() string {
	return fmt.Sprintf("raft: snapshot %s finalizes a metadata.version this release does not support, so the node stops: %v; run a release that supports it", e.Snapshot, e.Err)
}

func (e *UnsupportedMetadataVersionError) Unwrap() error { return e.Err }
