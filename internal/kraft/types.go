package kraft

import (
	"fmt"
	"strconv"
	"time"

	"github.com/krabka-go/krabka/internal/kraft/quorum"
)

// NodeID is a replica's node.id; see [quorum.NodeID].
type NodeID = quorum.NodeID

// Offset is a position in the replicated log; see [quorum.Offset].
type Offset = quorum.Offset

// UUID is a Kafka Uuid (directory ids, topic ids); see [quorum.UUID].
type UUID = quorum.UUID

// ParseUUID parses a Kafka Uuid's text form; see [quorum.ParseUUID].
func ParseUUID(s string) (UUID, error) { return quorum.ParseUUID(s) }

// ReplicaKey identifies a replica by node id and directory id; see
// [quorum.ReplicaKey] for the matching rule.
type ReplicaKey = quorum.ReplicaKey

// VoterSet is an immutable, sorted set of voters; see [quorum.VoterSet].
type VoterSet = quorum.VoterSet

// NoNode is the node id of no replica (-1).
const NoNode = quorum.NoNode

// Epoch is a leader epoch (int32 on the wire).
type Epoch int32

// String formats the epoch in decimal.
func (e Epoch) String() string { return strconv.FormatInt(int64(e), 10) }

// Instant is a point on the caller's monotonic clock, in milliseconds. The
// core never reads a clock: every call that may depend on time takes the
// current Instant. Only differences between instants matter.
type Instant int64

// Add returns i plus d, rounded down to whole milliseconds.
func (i Instant) Add(d time.Duration) Instant { return i + Instant(d/time.Millisecond) }

// String formats the instant as milliseconds.
func (i Instant) String() string { return strconv.FormatInt(int64(i), 10) + "ms" }

// Never is the Instant of a deadline that never expires.
const Never Instant = 1<<63 - 1

// OffsetAndEpoch is a log position together with the epoch of the entry
// before it, compared epoch first (Kafka's OffsetAndEpoch). It names a
// snapshot ((end offset, epoch)), a diverging epoch, and a replica's log
// tail.
type OffsetAndEpoch struct {
	Offset Offset
	Epoch  Epoch
}

// NoOffsetAndEpoch is the "absent" value (-1, -1) Kafka uses on the wire.
var NoOffsetAndEpoch = OffsetAndEpoch{Offset: -1, Epoch: -1}

// Valid reports whether both components are non-negative.
func (o OffsetAndEpoch) Valid() bool { return o.Offset >= 0 && o.Epoch >= 0 }

// Compare orders o and p epoch first, then offset; it returns -1, 0 or +1.
func (o OffsetAndEpoch) Compare(p OffsetAndEpoch) int {
	switch {
	case o.Epoch < p.Epoch:
		return -1
	case o.Epoch > p.Epoch:
		return 1
	case o.Offset < p.Offset:
		return -1
	case o.Offset > p.Offset:
		return 1
	}
	return 0
}

// String formats o as "offset@epoch".
func (o OffsetAndEpoch) String() string { return fmt.Sprintf("%d@%d", o.Offset, o.Epoch) }

// LeaderAndEpoch is a replica's belief about the leader: the leader id
// (NoNode when unknown) and the epoch.
type LeaderAndEpoch struct {
	LeaderID NodeID
	Epoch    Epoch
}

// String formats the pair as "leader=1 epoch=3".
func (l LeaderAndEpoch) String() string {
	return fmt.Sprintf("leader=%d epoch=%d", l.LeaderID, l.Epoch)
}

// Role is the state of a replica in the KRaft state machine (QuorumState
// and its EpochState classes; Prospective is KIP-996's).
type Role uint8

// The roles. Observers are only ever Unattached or Follower.
const (
	// Unattached: the leader of the epoch is unknown; a voter may have voted.
	Unattached Role = iota
	// Prospective: a voter running a pre-vote round at its current epoch
	// (KIP-996); not persisted.
	Prospective
	// Candidate: a voter running an election in a new epoch, having voted
	// for itself.
	Candidate
	// Leader: the elected leader of the epoch.
	Leader
	// Follower: knows the leader of its epoch and fetches from it.
	Follower
	// Resigned: a former leader that gave up leadership of its epoch and
	// waits for another replica to win the next one; not persisted.
	Resigned
)

// String returns the role's name.
func (r Role) String() string {
	switch r {
	case Unattached:
		return "Unattached"
	case Prospective:
		return "Prospective"
	case Candidate:
		return "Candidate"
	case Leader:
		return "Leader"
	case Follower:
		return "Follower"
	case Resigned:
		return "Resigned"
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// ErrorCode is a Kafka error code as used by the KRaft RPCs
// (org.apache.kafka.common.protocol.Errors).
// The core puts them in the responses it builds and reads them from the
// responses it receives; the wire layer maps them one to one.
type ErrorCode int16

// The error codes KRaft produces or interprets, with Kafka's numbers.
const (
	// CodeUnknownServerError: an unexpected failure while serving a request.
	CodeUnknownServerError ErrorCode = -1
	// CodeNone: success.
	CodeNone ErrorCode = 0
	// CodeOffsetOutOfRange: not produced by KRaft (out-of-range fetches get a snapshot id or a diverging epoch).
	CodeOffsetOutOfRange ErrorCode = 1
	// CodeNotLeaderOrFollower: a leader-only request reached a replica that is not the leader of that epoch.
	CodeNotLeaderOrFollower ErrorCode = 6
	// CodeRequestTimedOut: a voter-change precondition is not met, or a request expired.
	CodeRequestTimedOut ErrorCode = 7
	// CodeBrokerNotAvailable: the leader is shutting down; also the runtime's code for a lost connection or an expired request.
	CodeBrokerNotAvailable ErrorCode = 8
	// CodeUnsupportedVersion: the peer cannot carry the request (e.g. PreVote to a Vote v1 peer).
	CodeUnsupportedVersion ErrorCode = 35
	// CodeInvalidRequest: a malformed request; receiving it means we sent one.
	CodeInvalidRequest ErrorCode = 42
	// CodeFencedLeaderEpoch: the request's epoch is older than the receiver's.
	CodeFencedLeaderEpoch ErrorCode = 74
	// CodeUnknownLeaderEpoch: a leader-only request from an epoch newer than the receiver's.
	CodeUnknownLeaderEpoch ErrorCode = 75
	// CodeInconsistentVoterSet: no longer produced (Kafka ≤ 3.7); accepted and logged.
	CodeInconsistentVoterSet ErrorCode = 94
	// CodeSnapshotNotFound: FetchSnapshot for an unknown snapshot or for 0-0.
	CodeSnapshotNotFound ErrorCode = 98
	// CodePositionOutOfRange: FetchSnapshot position outside the snapshot.
	CodePositionOutOfRange ErrorCode = 99
	// CodeInconsistentClusterID: the request's cluster id differs (checked at the wire edge).
	CodeInconsistentClusterID ErrorCode = 104
	// CodeInvalidVoterKey: a Vote or BeginQuorumEpoch addressed to another replica.
	CodeInvalidVoterKey ErrorCode = 125
)

// String returns Kafka's name of the code.
func (c ErrorCode) String() string {
	switch c {
	case CodeUnknownServerError:
		return "UNKNOWN_SERVER_ERROR"
	case CodeNone:
		return "NONE"
	case CodeOffsetOutOfRange:
		return "OFFSET_OUT_OF_RANGE"
	case CodeNotLeaderOrFollower:
		return "NOT_LEADER_OR_FOLLOWER"
	case CodeRequestTimedOut:
		return "REQUEST_TIMED_OUT"
	case CodeBrokerNotAvailable:
		return "BROKER_NOT_AVAILABLE"
	case CodeUnsupportedVersion:
		return "UNSUPPORTED_VERSION"
	case CodeInvalidRequest:
		return "INVALID_REQUEST"
	case CodeFencedLeaderEpoch:
		return "FENCED_LEADER_EPOCH"
	case CodeUnknownLeaderEpoch:
		return "UNKNOWN_LEADER_EPOCH"
	case CodeInconsistentVoterSet:
		return "INCONSISTENT_VOTER_SET"
	case CodeSnapshotNotFound:
		return "SNAPSHOT_NOT_FOUND"
	case CodePositionOutOfRange:
		return "POSITION_OUT_OF_RANGE"
	case CodeInconsistentClusterID:
		return "INCONSISTENT_CLUSTER_ID"
	case CodeInvalidVoterKey:
		return "INVALID_VOTER_KEY"
	}
	return "ERROR(" + strconv.Itoa(int(c)) + ")"
}

// ElectionState is the durable election state (Kafka's ElectionState,
// which FileQuorumStateStore keeps in the quorum-state file): the epoch,
// the leader of that epoch if known, and the vote cast in it if any. It is
// written as one atomic record.
type ElectionState struct {
	Epoch    Epoch
	LeaderID NodeID     // NoNode if unknown
	VotedKey ReplicaKey // ID NoNode if no vote
}

// String formats the state for logs and transcripts.
func (s ElectionState) String() string {
	v := "none"
	if s.VotedKey.IsSet() {
		v = s.VotedKey.String()
	}
	return fmt.Sprintf("epoch=%d leader=%d voted=%s", s.Epoch, s.LeaderID, v)
}

// LogView is the core's read-only view of the local log and snapshots,
// implemented by the log store (and by krafttest's in-memory log). The
// core calls it only from inside its own methods; it never keeps results
// across calls except the log tail it tracks itself.
//
// The view must reflect every truncation, append and snapshot install the
// runtime has carried out; the core only calls it while no [Ready] is
// outstanding (between [Node.Advance] and the next [Node.Ready]) or at
// construction, so the view and the core's idea of the log agree. The
// runtime may also take snapshots and delete the log prefix below one on
// its own (KIP-630 retention) at any such time: the core reads the start
// offset and the snapshots live, never from a cache.
type LogView interface {
	// StartOffset is the log start offset (0, or the end offset of the
	// snapshot the log starts at).
	StartOffset() Offset
	// EndOffset is the log end offset (LEO): one past the last appended
	// entry.
	EndOffset() Offset
	// LastFetchedEpoch is the epoch of the last batch in the log, or the
	// latest snapshot's epoch if the log is empty, else 0.
	LastFetchedEpoch() Epoch
	// EndOffsetForEpoch answers Kafka's leader-epoch-cache question: for
	// the log's latest epoch, (LEO, epoch); otherwise the largest epoch
	// ≤ e with the start offset of the next larger epoch; if e is below
	// every known epoch, (start offset of the first epoch, e); when that
	// offset is the earliest snapshot's end offset and the epoch is e, the
	// earliest snapshot's id; if e is above every known epoch, or the log
	// knows no epoch, (LEO, LastFetchedEpoch) (KafkaMetadataLog's
	// endOffsetForEpoch over LeaderEpochFileCache.endOffsetFor).
	EndOffsetForEpoch(e Epoch) OffsetAndEpoch
	// LatestSnapshot returns the id of the newest snapshot, if any.
	LatestSnapshot() (OffsetAndEpoch, bool)
	// EarliestSnapshot returns the id of the oldest snapshot, if any. Once
	// the log has been compacted its end offset is the log start offset:
	// snapshots below the log start are deleted (Kafka's retention), and
	// the leader's fetch validation relies on it
	// (RaftLog.validateOffsetAndEpoch).
	EarliestSnapshot() (OffsetAndEpoch, bool)
	// SnapshotSize returns the size in bytes of the snapshot with id id.
	SnapshotSize(id OffsetAndEpoch) (int64, bool)
	// VoterHistory lists the Voters control records (KIP-853) of the
	// latest snapshot and of the log, in offset order; empty for
	// kraft.version 0. The core reads it at construction and after a
	// snapshot install; it tracks later appends and truncations itself.
	VoterHistory() []VoterSetAt
	// LatestLeaderChange returns the summary of the last batch of the log
	// (past its start; snapshots hold none) that carries a LeaderChange
	// record, and false when the log holds none. The core reads it at
	// construction only, after VoterHistory, to restore what it learnt
	// from that record while it ran (restoreExclusion); it tracks later
	// appends and truncations itself.
	LatestLeaderChange() (BatchInfo, bool)
}
