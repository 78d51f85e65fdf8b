package control

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/krabka-go/krabka/internal/kbin"
)

//go:generate go run github.com/krabka-go/krabka/internal/codegen/cmd/krabkagen -pkg control -defs definitions -out .

// Type is the type of a control record, the int16 after the key version.
type Type int16

// Control record types (Kafka's ControlRecordType).
const (
	// Abort marks the abort of a transaction (not used in the metadata
	// log).
	Abort Type = 0
	// Commit marks the commit of a transaction (not used in the metadata
	// log).
	Commit Type = 1
	// LeaderChange carries a [LeaderChangeMessage].
	LeaderChange Type = 2
	// SnapshotHeader carries a [SnapshotHeaderRecord].
	SnapshotHeader Type = 3
	// SnapshotFooter carries a [SnapshotFooterRecord].
	SnapshotFooter Type = 4
	// KRaftVersion carries a [KRaftVersionRecord].
	KRaftVersion Type = 5
	// KRaftVoters carries a [VotersRecord].
	KRaftVoters Type = 6
)

// String returns Kafka's name of the type.
func (t Type) String() string {
	switch t {
	case Abort:
		return "ABORT"
	case Commit:
		return "COMMIT"
	case LeaderChange:
		return "LEADER_CHANGE"
	case SnapshotHeader:
		return "SNAPSHOT_HEADER"
	case SnapshotFooter:
		return "SNAPSHOT_FOOTER"
	case KRaftVersion:
		return "KRAFT_VERSION"
	case KRaftVoters:
		return "KRAFT_VOTERS"
	}
	return "UNKNOWN(" + strconv.Itoa(int(t)) + ")"
}

// KeyVersion is the version of the control record key that Kafka writes.
const KeyVersion = 0

// KeySize is the size of a control record key: int16 version, int16 type.
const KeySize = 4

// ValueVersion is the version at which every control record value is
// written and read (Kafka's ControlRecordUtils *_CURRENT_VERSION). The
// value carries no version prefix; each message's own first field,
// Version, is a plain int16.
const ValueVersion = 0

// Message is the body of a control record of the metadata log: one of
// *LeaderChangeMessage, *SnapshotHeaderRecord, *SnapshotFooterRecord,
// *KRaftVersionRecord and *VotersRecord.
type Message interface {
	// ControlType returns the control record type that carries the
	// message.
	ControlType() Type
	// AppendTo appends the message encoded at version to dst.
	AppendTo(dst []byte, version int16) ([]byte, error)
	// DecodeFrom sets the message from its encoding at version.
	DecodeFrom(b []byte, version int16) error
}

// ControlType returns LeaderChange.
func (*LeaderChangeMessage) ControlType() Type { return LeaderChange }

// ControlType returns SnapshotHeader.
func (*SnapshotHeaderRecord) ControlType() Type { return SnapshotHeader }

// ControlType returns SnapshotFooter.
func (*SnapshotFooterRecord) ControlType() Type { return SnapshotFooter }

// ControlType returns KRaftVersion.
func (*KRaftVersionRecord) ControlType() Type { return KRaftVersion }

// ControlType returns KRaftVoters.
func (*VotersRecord) ControlType() Type { return KRaftVoters }

// ErrInvalidKey is the cause of errors for control record keys that are
// shorter than 4 bytes or carry a negative version.
var ErrInvalidKey = errors.New("control: invalid control record key")

// ErrUnknownType is matched (with errors.Is) by an *UnknownTypeError.
var ErrUnknownType = errors.New("control: unknown control record type")

// ErrTransactionMarker is matched (with errors.Is) by a
// *TransactionMarkerError.
var ErrTransactionMarker = errors.New("control: transaction marker in the metadata log")

// UnknownTypeError reports a control record whose type is not known.
// Kafka's readers skip such records, and callers should do the same.
type UnknownTypeError struct {
	// Type is the type read from the key.
	Type Type
}

// Error implements error.
func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("control: unknown control record type %d", int16(e.Type))
}

// Is matches ErrUnknownType.
func (e *UnknownTypeError) Is(target error) bool { return target == ErrUnknownType }

// TransactionMarkerError reports an ABORT or COMMIT control record, which
// belong to transactional data topics and are never valid in the metadata
// log.
type TransactionMarkerError struct {
	// Type is Abort or Commit.
	Type Type
}

// Error implements error.
func (e *TransactionMarkerError) Error() string {
	return fmt.Sprintf("control: transaction marker %s (type %d) is not valid in the metadata log", e.Type, int16(e.Type))
}

// Is matches ErrTransactionMarker.
func (e *TransactionMarkerError) Is(target error) bool { return target == ErrTransactionMarker }

// New returns an empty message of type t with its defaults set, or nil
// when t carries no metadata-log message (Abort, Commit, unknown types).
func New(t Type) Message {
	switch t {
	case LeaderChange:
		return NewLeaderChangeMessage()
	case SnapshotHeader:
		return NewSnapshotHeaderRecord()
	case SnapshotFooter:
		return NewSnapshotFooterRecord()
	case KRaftVersion:
		return NewKRaftVersionRecord()
	case KRaftVoters:
		return NewVotersRecord()
	}
	return nil
}

// AppendKey appends the 4-byte control record key for type t.
func AppendKey(dst []byte, t Type) []byte {
	dst = kbin.AppendInt16(dst, KeyVersion)
	return kbin.AppendInt16(dst, int16(t))
}

// ParseKey returns the type in a control record key. Like Kafka, it
// accepts key versions newer than 0 (reading them as version 0) and
// ignores bytes after the type; a key shorter than 4 bytes or with a
// negative version is an error wrapping ErrInvalidKey.
func ParseKey(key []byte) (Type, error) {
	if len(key) < KeySize {
		return 0, fmt.Errorf("control: key of %d bytes, need %d: %w", len(key), KeySize, ErrInvalidKey)
	}
	r := kbin.NewReader(key)
	version := r.Int16()
	if version < 0 {
		return 0, fmt.Errorf("control: key version %d: %w", version, ErrInvalidKey)
	}
	var k ControlRecordTypeSchema
	if err := k.DecodeFrom(key[2:KeySize], 0); err != nil {
		return 0, fmt.Errorf("control: key: %w", err)
	}
	return Type(k.Type), nil
}

// Encode returns the key and value of a control record carrying msg. The
// value is msg encoded at ValueVersion without a version prefix.
func Encode(msg Message) (key, value []byte, err error) {
	value, err = msg.AppendTo(nil, ValueVersion)
	if err != nil {
		return nil, nil, err
	}
	return AppendKey(nil, msg.ControlType()), value, nil
}

// Decode returns the message of a control record from its key and value.
// An ABORT or COMMIT key yields a *TransactionMarkerError, a type it does
// not know an *UnknownTypeError (which callers should skip, as Kafka
// does), a short key an error wrapping ErrInvalidKey. The value must hold
// exactly one message: trailing bytes are an error.
func Decode(key, value []byte) (Message, error) {
	t, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	if t == Abort || t == Commit {
		return nil, &TransactionMarkerError{Type: t}
	}
	msg := New(t)
	if msg == nil {
		return nil, &UnknownTypeError{Type: t}
	}
	if err := msg.DecodeFrom(value, ValueVersion); err != nil {
		return nil, err
	}
	return msg, nil
}
