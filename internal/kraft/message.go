package kraft

import (
	"fmt"
	"strings"
	"time"
)

// Header addresses a message and ties a response to its request. The core
// fills it in for every message it emits; the runtime fills it in for
// every message it delivers. A response carries the RequestID of the
// request it answers; the core ignores a response whose id is not the one
// it is waiting for from that peer (a late, duplicated or superseded
// answer).
type Header struct {
	From      NodeID
	To        NodeID
	RequestID uint64
}

func (h Header) header() Header { return h }

// Message is one KRaft RPC request or response as a domain value. The set
// is closed: the implementations are the request and response types of
// this package. Requests are answered by the receiving core; responses are
// matched to the sender's outstanding request by [Header.RequestID].
type Message interface {
	header() Header
	// String formats the message for logs and transcripts.
	String() string
}

// HeaderOf returns the header of m.
func HeaderOf(m Message) Header { return m.header() }

// IsRequest reports whether m is a request (as opposed to a response); a
// nil m is neither.
func IsRequest(m Message) bool {
	switch m.(type) {
	case *VoteRequest, *BeginQuorumEpochRequest, *EndQuorumEpochRequest, *FetchRequest, *FetchSnapshotRequest:
		return true
	case *VoteResponse, *BeginQuorumEpochResponse, *EndQuorumEpochResponse, *FetchResponse, *FetchSnapshotResponse:
		return false
	}
	return false
}

// TypeName returns the RPC name of m ("Vote", "FetchResponse", ...), the
// word the datadriven harness filters on.
func TypeName(m Message) string {
	switch m.(type) {
	case *VoteRequest:
		return "Vote"
	case *VoteResponse:
		return "VoteResponse"
	case *BeginQuorumEpochRequest:
		return "BeginQuorumEpoch"
	case *BeginQuorumEpochResponse:
		return "BeginQuorumEpochResponse"
	case *EndQuorumEpochRequest:
		return "EndQuorumEpoch"
	case *EndQuorumEpochResponse:
		return "EndQuorumEpochResponse"
	case *FetchRequest:
		return "Fetch"
	case *FetchResponse:
		return "FetchResponse"
	case *FetchSnapshotRequest:
		return "FetchSnapshot"
	case *FetchSnapshotResponse:
		return "FetchSnapshotResponse"
	}
	return fmt.Sprintf("%T", m)
}

// RecordsHandle is an opaque token naming bytes that only the runtime
// holds: the records of a Fetch response, a chunk of a FetchSnapshot
// response, or the encoded batch of a proposal. The core copies it from
// input to the matching [Append] or [SnapshotWrite] so the runtime can
// write the bytes it already has; 0 means "no bytes" (for an append, a
// control batch the runtime encodes from its [BatchInfo]).
type RecordsHandle uint64

// VoteRequest asks a voter for a vote (PreVote false) or a pre-vote
// (PreVote true, KIP-996) in ReplicaEpoch (Vote API 52).
type VoteRequest struct {
	Header
	ReplicaEpoch    Epoch      // the nominee's epoch (Candidate: its new epoch; Prospective: its current one)
	Replica         ReplicaKey // the nominee
	Voter           ReplicaKey // the addressed voter (ID NoNode if not set)
	LastOffsetEpoch Epoch      // epoch of the nominee's last log entry
	LastOffset      Offset     // the nominee's log end offset
	PreVote         bool
}

// VoteResponse answers a [VoteRequest]. Leader is the receiver's view.
type VoteResponse struct {
	Header
	Error       ErrorCode
	Leader      LeaderAndEpoch
	VoteGranted bool
}

// BeginQuorumEpochRequest is sent by a new leader to every voter (API 53).
type BeginQuorumEpochRequest struct {
	Header
	Voter       ReplicaKey // the addressed voter
	LeaderID    NodeID
	LeaderEpoch Epoch
}

// BeginQuorumEpochResponse answers a [BeginQuorumEpochRequest].
type BeginQuorumEpochResponse struct {
	Header
	Error  ErrorCode
	Leader LeaderAndEpoch
}

// EndQuorumEpochRequest is sent by a resigning leader to every other voter
// (API 54). PreferredCandidates lists the voters in the order in which they
// should try to take over (descending fetch offset).
type EndQuorumEpochRequest struct {
	Header
	LeaderID            NodeID
	LeaderEpoch         Epoch
	PreferredCandidates []ReplicaKey
}

// EndQuorumEpochResponse answers an [EndQuorumEpochRequest].
type EndQuorumEpochResponse struct {
	Header
	Error  ErrorCode
	Leader LeaderAndEpoch
}

// FetchRequest is a replica's pull from the leader (Fetch API 1, the
// KRaft subset that KafkaRaftClient.buildFetchRequest fills in).
type FetchRequest struct {
	Header
	Replica            ReplicaKey // the fetcher (ID NoNode for an anonymous reader)
	CurrentLeaderEpoch Epoch
	FetchOffset        Offset // the fetcher's log end offset, durable
	LastFetchedEpoch   Epoch  // epoch of the fetcher's last entry
	MaxWait            time.Duration
	MaxBytes           int32
	HighWatermark      Offset // the fetcher's high watermark, -1 if unknown
}

// RecordsRead is the leader's decision of which records a Fetch response
// carries: the runtime reads whole batches from the log starting at From,
// not past Until (the leader's log end offset when it decided), up to
// MaxBytes (always at least one batch, as Kafka does). From == Until means
// no records.
type RecordsRead struct {
	From     Offset
	Until    Offset
	MaxBytes int32
}

// Empty reports whether the read selects no records.
func (r RecordsRead) Empty() bool { return r.From >= r.Until }

// FetchResponse answers a [FetchRequest].
//
// Outbound (built by a leader's core) it carries the decision and the
// runtime reads the bytes named by Read from its log store. Inbound
// (delivered to a follower's core) the runtime sets Batches to the
// summaries of the whole batches it received, in offset order, and Records
// to a handle for their bytes; Read is ignored. A trailing partial batch
// must be left out of Batches.
type FetchResponse struct {
	Header
	Error          ErrorCode
	Leader         LeaderAndEpoch
	HighWatermark  Offset
	LogStartOffset Offset
	DivergingEpoch OffsetAndEpoch // NoOffsetAndEpoch if none
	SnapshotID     OffsetAndEpoch // NoOffsetAndEpoch if none
	Read           RecordsRead
	Batches        []BatchInfo
	Records        RecordsHandle
}

// FetchSnapshotRequest asks the leader for a chunk of a snapshot (KIP-630,
// API 59).
type FetchSnapshotRequest struct {
	Header
	Replica            ReplicaKey
	CurrentLeaderEpoch Epoch
	SnapshotID         OffsetAndEpoch
	Position           int64 // bytes the fetcher already holds
	MaxBytes           int32
}

// FetchSnapshotResponse answers a [FetchSnapshotRequest]. Outbound, Length
// is the number of bytes from Position the runtime must read from the
// snapshot file; inbound, Length is the number of bytes received and Chunk
// names them.
type FetchSnapshotResponse struct {
	Header
	Error      ErrorCode
	Leader     LeaderAndEpoch
	SnapshotID OffsetAndEpoch
	Size       int64
	Position   int64
	Length     int64
	Chunk      RecordsHandle
}

// BatchInfo summarises one record batch: its offsets, its partition leader
// epoch and, for control batches, their decoded content. The core never
// sees record bytes.
type BatchInfo struct {
	BaseOffset Offset
	LastOffset Offset
	Epoch      Epoch
	// Control marks a control batch. Its decoded records follow: at most
	// one LeaderChange, and for kraft.version 1 optionally a KRaftVersion
	// and a Voters record.
	Control      bool
	LeaderChange LeaderChange
	KRaftVersion int16        // -1 if the batch has no KRaftVersion record
	Voters       []ReplicaKey // nil if the batch has no Voters record
}

// LeaderChange is the content of a LeaderChange control record
// (LeaderChangeMessage.json, ControlRecordType.LEADER_CHANGE), written by
// a new leader at its epoch start offset.
// LeaderID is NoNode when the batch has no such record.
type LeaderChange struct {
	LeaderID NodeID
	Voters   []ReplicaKey
	Granting []ReplicaKey
}

// Records returns the number of offsets the batch covers.
func (b BatchInfo) Records() int64 { return int64(b.LastOffset-b.BaseOffset) + 1 }

// String formats the batch as "[base..last]@epoch" plus its control content.
func (b BatchInfo) String() string {
	s := fmt.Sprintf("[%d..%d]@%d", b.BaseOffset, b.LastOffset, b.Epoch)
	if b.Control {
		var parts []string
		if b.LeaderChange.LeaderID != NoNode {
			parts = append(parts, fmt.Sprintf("LeaderChange(leader=%d voters=%s granting=%s)",
				b.LeaderChange.LeaderID, keyList(b.LeaderChange.Voters), keyList(b.LeaderChange.Granting)))
		}
		if b.KRaftVersion >= 0 {
			parts = append(parts, fmt.Sprintf("KRaftVersion(%d)", b.KRaftVersion))
		}
		if b.Voters != nil {
			parts = append(parts, "Voters"+keyList(b.Voters))
		}
		s += " control " + strings.Join(parts, " ")
	}
	return s
}

func keyList(ks []ReplicaKey) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.String()
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func arrow(h Header) string { return fmt.Sprintf("%d->%d", h.From, h.To) }

// String formats the VoteRequest for logs and transcripts.
func (m *VoteRequest) String() string {
	kind := "Vote"
	if m.PreVote {
		kind = "PreVote"
	}
	return fmt.Sprintf("%s %s{epoch=%d candidate=%s voter=%d last=%d@%d}", arrow(m.Header), kind,
		m.ReplicaEpoch, m.Replica, m.Voter.ID, m.LastOffset, m.LastOffsetEpoch)
}

// String formats the VoteResponse for logs and transcripts.
func (m *VoteResponse) String() string {
	return fmt.Sprintf("%s VoteResponse{%s granted=%t %s}", arrow(m.Header), m.Error, m.VoteGranted, m.Leader)
}

// String formats the BeginQuorumEpochRequest for logs and transcripts.
func (m *BeginQuorumEpochRequest) String() string {
	return fmt.Sprintf("%s BeginQuorumEpoch{leader=%d epoch=%d}", arrow(m.Header), m.LeaderID, m.LeaderEpoch)
}

// String formats the BeginQuorumEpochResponse for logs and transcripts.
func (m *BeginQuorumEpochResponse) String() string {
	return fmt.Sprintf("%s BeginQuorumEpochResponse{%s %s}", arrow(m.Header), m.Error, m.Leader)
}

// String formats the EndQuorumEpochRequest for logs and transcripts.
func (m *EndQuorumEpochRequest) String() string {
	return fmt.Sprintf("%s EndQuorumEpoch{leader=%d epoch=%d preferred=%s}", arrow(m.Header), m.LeaderID, m.LeaderEpoch, keyList(m.PreferredCandidates))
}

// String formats the EndQuorumEpochResponse for logs and transcripts.
func (m *EndQuorumEpochResponse) String() string {
	return fmt.Sprintf("%s EndQuorumEpochResponse{%s %s}", arrow(m.Header), m.Error, m.Leader)
}

// String formats the FetchRequest for logs and transcripts.
func (m *FetchRequest) String() string {
	return fmt.Sprintf("%s Fetch{epoch=%d offset=%d last_epoch=%d hw=%d}", arrow(m.Header), m.CurrentLeaderEpoch, m.FetchOffset, m.LastFetchedEpoch, m.HighWatermark)
}

// String formats the FetchResponse for logs and transcripts.
func (m *FetchResponse) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s FetchResponse{%s %s hw=%d", arrow(m.Header), m.Error, m.Leader, m.HighWatermark)
	if m.DivergingEpoch.Epoch >= 0 {
		fmt.Fprintf(&b, " diverging=%s", m.DivergingEpoch)
	}
	if m.SnapshotID.Epoch >= 0 || m.SnapshotID.Offset >= 0 {
		fmt.Fprintf(&b, " snapshot=%s", m.SnapshotID)
	}
	if !m.Read.Empty() {
		fmt.Fprintf(&b, " read=[%d,%d)", m.Read.From, m.Read.Until)
	}
	if len(m.Batches) > 0 {
		parts := make([]string, len(m.Batches))
		for i, bi := range m.Batches {
			parts[i] = bi.String()
		}
		fmt.Fprintf(&b, " batches=%s", strings.Join(parts, ","))
	}
	b.WriteString("}")
	return b.String()
}

// String formats the FetchSnapshotRequest for logs and transcripts.
func (m *FetchSnapshotRequest) String() string {
	return fmt.Sprintf("%s FetchSnapshot{epoch=%d snapshot=%s position=%d}", arrow(m.Header), m.CurrentLeaderEpoch, m.SnapshotID, m.Position)
}

// String formats the FetchSnapshotResponse for logs and transcripts.
func (m *FetchSnapshotResponse) String() string {
	return fmt.Sprintf("%s FetchSnapshotResponse{%s %s snapshot=%s size=%d position=%d length=%d}", arrow(m.Header), m.Error, m.Leader, m.SnapshotID, m.Size, m.Position, m.Length)
}
