package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The private RPCs are Krabka's own (docs/wire.md has their schemas in
// Kafka's JSON style). Their message types implement kmsg.Request and
// kmsg.Response, so framing, decoding and the transport treat them exactly
// like Kafka's. Version 0 is the only version and it is flexible: compact
// strings, arrays and bytes, and a tagged-field section at the end of every
// structure. Decoding skips unknown tagged fields, as Kafka does, and
// ignores bytes after the body. Byte fields of decoded messages alias the
// input.

// errPrivateVersion reports a private message at a version other than 0.
func errPrivateVersion(name string, v int16) error {
	return fmt.Errorf("wire: %s v%d: only version 0 exists", name, v)
}

// finish turns a reader's error into a message decode error.
func finish(name string, r *reader) error {
	if r.err != nil {
		return fmt.Errorf("wire: %s: %w", name, r.err)
	}
	return nil
}

// SubmitChangeRequest (key 1003) carries metadata records to the leader,
// which appends them, waits for their commit and answers with a
// [SubmitChangeResponse].
type SubmitChangeRequest struct {
	// Version is the message version; only 0 exists.
	Version int16
	// Records holds each record in its Kafka metadata-record framing
	// (KRAFT.md §7.4: frame version, api key, version, body), the exact
	// bytes the log stores as a record value. A decoded request's records
	// alias the frame.
	Records [][]byte

	// one holds the record of a decoded request of one record (a client
	// write), whose Records then needs no array of its own: decoding
	// into the same request again overwrites it.
	one [1][]byte
}

// NewSubmitChangeRequest returns a SubmitChangeRequest at version 0.
func NewSubmitChangeRequest() *SubmitChangeRequest { return &SubmitChangeRequest{} }

// Key returns KeySubmitChange.
func (*SubmitChangeRequest) Key() int16 { return KeySubmitChange }

// MaxVersion returns 0, the only version.
func (*SubmitChangeRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (m *SubmitChangeRequest) SetVersion(v int16) { m.Version = v }

// GetVersion returns the version.
func (m *SubmitChangeRequest) GetVersion() int16 { return m.Version }

// IsFlexible returns true: every version is flexible.
func (*SubmitChangeRequest) IsFlexible() bool { return true }

// ResponseKind returns an empty response at the request's version.
func (m *SubmitChangeRequest) ResponseKind() kmsg.Response {
	r := NewSubmitChangeResponse()
	r.Version = m.Version
	return r
}

// AppendTo appends the version-0 encoding of m to dst.
func (m *SubmitChangeRequest) AppendTo(dst []byte) []byte {
	dst = appendUvarint(dst, uint32(len(m.Records))+1)
	for _, rec := range m.Records {
		dst = appendCompactBytes(dst, rec)
	}
	return appendEmptyTags(dst)
}

// ReadFrom decodes src at m.Version into m.
func (m *SubmitChangeRequest) ReadFrom(src []byte) error {
	if m.Version != 0 {
		return errPrivateVersion("SubmitChangeRequest", m.Version)
	}
	r := reader{src: src}
	n := r.compactArrayLen("Records", 1)
	if r.err == nil && n < 0 {
		r.fail("Records", fmt.Errorf("null array"))
	}
	m.Records = nil
	if r.err == nil && n > 0 {
		if n == 1 {
			m.Records = m.one[:]
		} else {
			m.Records = make([][]byte, n)
		}
		for i := range m.Records {
			m.Records[i] = r.compactBytes("Records element")
		}
	}
	r.skipTags("SubmitChangeRequest tagged fields")
	return finish("SubmitChangeRequest", &r)
}

// SubmitChangeResponse (key 1003) answers a [SubmitChangeRequest].
type SubmitChangeResponse struct {
	// Version is the message version; only 0 exists.
	Version int16
	// ErrorCode is 0 when the records were committed, else a Kafka error
	// code (NOT_LEADER_OR_FOLLOWER with a leader hint, REQUEST_TIMED_OUT,
	// INVALID_REQUEST for a record the leader rejects, ...).
	ErrorCode int16
	// ErrorMessage describes the error, or is nil.
	ErrorMessage *string
	// LeaderID is the answering node's view of the leader, the hint a
	// NOT_LEADER_OR_FOLLOWER caller retries with; -1 when unknown.
	LeaderID int32
	// LeaderEpoch is the epoch of that leader; -1 when unknown.
	LeaderEpoch int32
	// BaseOffset is the offset of the first committed record; -1 on
	// error.
	BaseOffset int64
	// Epoch is the epoch of the batch holding the committed records; -1
	// on error.
	Epoch int32
}

// NewSubmitChangeResponse returns a version-0 response with its defaults:
// no error, unknown leader, no offset.
func NewSubmitChangeResponse() *SubmitChangeResponse {
	return &SubmitChangeResponse{LeaderID: -1, LeaderEpoch: -1, BaseOffset: -1, Epoch: -1}
}

// Key returns KeySubmitChange.
func (*SubmitChangeResponse) Key() int16 { return KeySubmitChange }

// MaxVersion returns 0, the only version.
func (*SubmitChangeResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the version.
func (m *SubmitChangeResponse) SetVersion(v int16) { m.Version = v }

// GetVersion returns the version.
func (m *SubmitChangeResponse) GetVersion() int16 { return m.Version }

// IsFlexible returns true: every version is flexible.
func (*SubmitChangeResponse) IsFlexible() bool { return true }

// RequestKind returns an empty request at the response's version.
func (m *SubmitChangeResponse) RequestKind() kmsg.Request {
	return &SubmitChangeRequest{Version: m.Version}
}

// AppendTo appends the version-0 encoding of m to dst.
func (m *SubmitChangeResponse) AppendTo(dst []byte) []byte {
	dst = appendInt16(dst, m.ErrorCode)
	dst = appendCompactNullableString(dst, m.ErrorMessage)
	dst = appendInt32(dst, m.LeaderID)
	dst = appendInt32(dst, m.LeaderEpoch)
	dst = appendInt64(dst, m.BaseOffset)
	dst = appendInt32(dst, m.Epoch)
	return appendEmptyTags(dst)
}

// ReadFrom decodes src at m.Version into m.
func (m *SubmitChangeResponse) ReadFrom(src []byte) error {
	if m.Version != 0 {
		return errPrivateVersion("SubmitChangeResponse", m.Version)
	}
	r := reader{src: src}
	m.ErrorCode = r.int16("ErrorCode")
	m.ErrorMessage = r.compactNullableString("ErrorMessage")
	m.LeaderID = r.int32("LeaderId")
	m.LeaderEpoch = r.int32("LeaderEpoch")
	m.BaseOffset = r.int64("BaseOffset")
	m.Epoch = r.int32("Epoch")
	r.skipTags("SubmitChangeResponse tagged fields")
	return finish("SubmitChangeResponse", &r)
}

// MetadataFetchRequest (key 1004) lets an observer read committed records
// from a voter, without taking part in the quorum's replica tracking.
type MetadataFetchRequest struct {
	// Version is the message version; only 0 exists.
	Version int16
	// FetchOffset is the offset of the first record wanted.
	FetchOffset int64
	// MaxBytes bounds the record bytes returned (at least one whole batch
	// is returned when there is one).
	MaxBytes int32
	// ReplicaID is the fetcher's node id, or -1 for a tool that is not a
	// replica.
	ReplicaID int32
	// ReplicaDirectoryID is the fetcher's metadata log directory id, or
	// all zeros.
	ReplicaDirectoryID [16]byte
}

// NewMetadataFetchRequest returns a version-0 request with its defaults.
func NewMetadataFetchRequest() *MetadataFetchRequest {
	return &MetadataFetchRequest{ReplicaID: -1}
}

// Key returns KeyMetadataFetch.
func (*MetadataFetchRequest) Key() int16 { return KeyMetadataFetch }

// MaxVersion returns 0, the only version.
func (*MetadataFetchRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (m *MetadataFetchRequest) SetVersion(v int16) { m.Version = v }

// GetVersion returns the version.
func (m *MetadataFetchRequest) GetVersion() int16 { return m.Version }

// IsFlexible returns true: every version is flexible.
func (*MetadataFetchRequest) IsFlexible() bool { return true }

// ResponseKind returns an empty response at the request's version.
func (m *MetadataFetchRequest) ResponseKind() kmsg.Response {
	r := NewMetadataFetchResponse()
	r.Version = m.Version
	return r
}

// AppendTo appends the version-0 encoding of m to dst.
func (m *MetadataFetchRequest) AppendTo(dst []byte) []byte {
	dst = appendInt64(dst, m.FetchOffset)
	dst = appendInt32(dst, m.MaxBytes)
	dst = appendInt32(dst, m.ReplicaID)
	dst = append(dst, m.ReplicaDirectoryID[:]...)
	return appendEmptyTags(dst)
}

// ReadFrom decodes src at m.Version into m.
func (m *MetadataFetchRequest) ReadFrom(src []byte) error {
	if m.Version != 0 {
		return errPrivateVersion("MetadataFetchRequest", m.Version)
	}
	r := reader{src: src}
	m.FetchOffset = r.int64("FetchOffset")
	m.MaxBytes = r.int32("MaxBytes")
	m.ReplicaID = r.int32("ReplicaId")
	m.ReplicaDirectoryID = r.uuid("ReplicaDirectoryId")
	r.skipTags("MetadataFetchRequest tagged fields")
	return finish("MetadataFetchRequest", &r)
}

// SnapshotID names a snapshot by the offset and epoch it ends at.
type SnapshotID struct {
	// EndOffset is the snapshot's end offset (exclusive), -1 for none.
	EndOffset int64
	// Epoch is the epoch of the last record the snapshot covers, -1 for
	// none.
	Epoch int32
}

// MetadataFetchResponse (key 1004) answers a [MetadataFetchRequest].
type MetadataFetchResponse struct {
	// Version is the message version; only 0 exists.
	Version int16
	// ErrorCode is 0 or a Kafka error code.
	ErrorCode int16
	// LeaderID is the answering node's view of the leader; -1 when
	// unknown.
	LeaderID int32
	// LeaderEpoch is the epoch of that leader; -1 when unknown.
	LeaderEpoch int32
	// LogStartOffset is the first offset still in the log.
	LogStartOffset int64
	// HighWatermark is the committed end of the log; records at or above
	// it are never returned.
	HighWatermark int64
	// SnapshotID is set (not -1) when the fetch offset is below the log
	// start: the fetcher must load that snapshot first, and Records is
	// then empty.
	SnapshotID SnapshotID
	// Records holds whole record batches (v2), or is nil.
	Records []byte
}

// NewMetadataFetchResponse returns a version-0 response with its defaults.
func NewMetadataFetchResponse() *MetadataFetchResponse {
	return &MetadataFetchResponse{
		LeaderID:       -1,
		LeaderEpoch:    -1,
		LogStartOffset: -1,
		HighWatermark:  -1,
		SnapshotID:     SnapshotID{EndOffset: -1, Epoch: -1},
	}
}

// Key returns KeyMetadataFetch.
func (*MetadataFetchResponse) Key() int16 { return KeyMetadataFetch }

// MaxVersion returns 0, the only version.
func (*MetadataFetchResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the version.
func (m *MetadataFetchResponse) SetVersion(v int16) { m.Version = v }

// GetVersion returns the version.
func (m *MetadataFetchResponse) GetVersion() int16 { return m.Version }

// IsFlexible returns true: every version is flexible.
func (*MetadataFetchResponse) IsFlexible() bool { return true }

// RequestKind returns an empty request at the response's version.
func (m *MetadataFetchResponse) RequestKind() kmsg.Request {
	r := NewMetadataFetchRequest()
	r.Version = m.Version
	return r
}

// AppendTo appends the version-0 encoding of m to dst.
func (m *MetadataFetchResponse) AppendTo(dst []byte) []byte {
	dst = appendInt16(dst, m.ErrorCode)
	dst = appendInt32(dst, m.LeaderID)
	dst = appendInt32(dst, m.LeaderEpoch)
	dst = appendInt64(dst, m.LogStartOffset)
	dst = appendInt64(dst, m.HighWatermark)
	dst = appendInt64(dst, m.SnapshotID.EndOffset)
	dst = appendInt32(dst, m.SnapshotID.Epoch)
	dst = appendEmptyTags(dst)
	dst = appendCompactNullableBytes(dst, m.Records)
	return appendEmptyTags(dst)
}

// ReadFrom decodes src at m.Version into m.
func (m *MetadataFetchResponse) ReadFrom(src []byte) error {
	if m.Version != 0 {
		return errPrivateVersion("MetadataFetchResponse", m.Version)
	}
	r := reader{src: src}
	m.ErrorCode = r.int16("ErrorCode")
	m.LeaderID = r.int32("LeaderId")
	m.LeaderEpoch = r.int32("LeaderEpoch")
	m.LogStartOffset = r.int64("LogStartOffset")
	m.HighWatermark = r.int64("HighWatermark")
	m.SnapshotID.EndOffset = r.int64("SnapshotId.EndOffset")
	m.SnapshotID.Epoch = r.int32("SnapshotId.Epoch")
	r.skipTags("SnapshotId tagged fields")
	m.Records = r.compactNullableBytes("Records")
	r.skipTags("MetadataFetchResponse tagged fields")
	return finish("MetadataFetchResponse", &r)
}

// Compile-time checks that the private messages plug into kmsg's
// interfaces.
var (
	_ kmsg.Request  = (*SubmitChangeRequest)(nil)
	_ kmsg.Response = (*SubmitChangeResponse)(nil)
	_ kmsg.Request  = (*MetadataFetchRequest)(nil)
	_ kmsg.Response = (*MetadataFetchResponse)(nil)
)
