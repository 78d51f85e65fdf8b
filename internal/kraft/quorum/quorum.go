package quorum

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// NodeID is a replica's node.id (int32 on the wire). Negative values mean
// "no node".
type NodeID int32

// NoNode is the NodeID Kafka sends for an unknown or absent replica.
const NoNode NodeID = -1

// String formats the id in decimal.
func (id NodeID) String() string { return strconv.FormatInt(int64(id), 10) }

// Offset is a position in the replicated log (int64 on the wire).
type Offset int64

// String formats the offset in decimal.
func (o Offset) String() string { return strconv.FormatInt(int64(o), 10) }

// UUID is Kafka's 128-bit Uuid, as used for directory ids and topic ids.
// The zero value (Uuid.ZERO_UUID) means "no directory id".
type UUID [16]byte

// IsZero reports whether u is the zero uuid.
func (u UUID) IsZero() bool { return u == UUID{} }

// String formats u the way Kafka does (Uuid.toString): URL-safe base64
// without padding, 22 characters, for example "AAAAAAAAAAAAAAAAAAAAAQ" for
// the metadata topic id.
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUUID parses the text form [UUID.String] writes: 22 base64url
// characters without padding encoding 16 bytes.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 22 {
		return u, fmt.Errorf("quorum: parse uuid %q: want 22 base64url characters, got %d", s, len(s))
	}
	n, err := base64.RawURLEncoding.Decode(u[:], []byte(s))
	if err != nil {
		return u, fmt.Errorf("quorum: parse uuid %q: %w", s, err)
	}
	if n != len(u) {
		return u, fmt.Errorf("quorum: parse uuid %q: decoded %d bytes, want 16", s, n)
	}
	return u, nil
}

// ReplicaKey identifies a replica: its node id and the directory id of its
// metadata log directory (Kafka's ReplicaKey, KIP-853). A zero DirectoryID
// means the key carries no directory id.
type ReplicaKey struct {
	ID          NodeID
	DirectoryID UUID
}

// NoReplica is the key of no replica (node id -1).
var NoReplica = ReplicaKey{ID: NoNode}

// IsSet reports whether k names a replica (a non-negative node id).
func (k ReplicaKey) IsSet() bool { return k.ID >= 0 }

// String formats k as "id" or "id/directory".
func (k ReplicaKey) String() string {
	if k.DirectoryID.IsZero() {
		return k.ID.String()
	}
	return k.ID.String() + "/" + k.DirectoryID.String()
}

// Matches reports whether the stored key k matches the incoming key in.
// Ids must be equal; if k has a directory id, in must carry the same one.
func (k ReplicaKey) Matches(in ReplicaKey) bool {
	if k.ID != in.ID {
		return false
	}
	return k.DirectoryID.IsZero() || k.DirectoryID == in.DirectoryID
}

// SameReplica reports whether k and o name the same replica, either way
// round: the same node id, and the same directory id unless one of them
// has none (a key from before KIP-853, or a kraft.version 0
// quorum-state file, names none).
func (k ReplicaKey) SameReplica(o ReplicaKey) bool {
	return k.ID == o.ID && (k.DirectoryID.IsZero() || o.DirectoryID.IsZero() || k.DirectoryID == o.DirectoryID)
}

// Majority returns the size of a majority of n voters, ⌊n/2⌋+1.
func Majority(n int) int { return n/2 + 1 }

// VoterSet is an immutable set of voters, at most one per node id, kept
// sorted by node id so that iteration order is deterministic. The zero
// value is the empty set.
type VoterSet struct {
	keys []ReplicaKey
}

// NewVoterSet builds a voter set. It fails on a negative or duplicate node
// id.
func NewVoterSet(keys ...ReplicaKey) (VoterSet, error) {
	ks := slices.Clone(keys)
	slices.SortFunc(ks, func(a, b ReplicaKey) int { return cmp.Compare(a.ID, b.ID) })
	for i, k := range ks {
		if k.ID < 0 {
			return VoterSet{}, fmt.Errorf("quorum: voter id %d is negative", k.ID)
		}
		if i > 0 && ks[i-1].ID == k.ID {
			return VoterSet{}, fmt.Errorf("quorum: voter id %d appears twice", k.ID)
		}
	}
	return VoterSet{keys: slices.Clip(ks)}, nil
}

// Len returns the number of voters.
func (s VoterSet) Len() int { return len(s.keys) }

// Keys returns the voters sorted by node id. The caller owns the slice.
func (s VoterSet) Keys() []ReplicaKey { return slices.Clone(s.keys) }

// At returns the i-th voter in node-id order.
func (s VoterSet) At(i int) ReplicaKey { return s.keys[i] }

// Majority returns the size of a majority of s.
func (s VoterSet) Majority() int { return Majority(len(s.keys)) }

// Lookup returns the voter entry with node id id.
func (s VoterSet) Lookup(id NodeID) (ReplicaKey, bool) {
	i, ok := slices.BinarySearchFunc(s.keys, id, func(k ReplicaKey, id NodeID) int { return cmp.Compare(k.ID, id) })
	if !ok {
		return ReplicaKey{}, false
	}
	return s.keys[i], true
}

// ContainsID reports whether some voter has node id id.
func (s VoterSet) ContainsID(id NodeID) bool {
	_, ok := s.Lookup(id)
	return ok
}

// Contains reports whether the incoming key in matches a voter entry
// (see [ReplicaKey.Matches]).
func (s VoterSet) Contains(in ReplicaKey) bool {
	k, ok := s.Lookup(in.ID)
	return ok && k.Matches(in)
}

// IsOnlyVoter reports whether in is the one and only voter of s.
func (s VoterSet) IsOnlyVoter(in ReplicaKey) bool { return len(s.keys) == 1 && s.Contains(in) }

// Equal reports whether s and o hold the same keys.
func (s VoterSet) Equal(o VoterSet) bool { return slices.Equal(s.keys, o.keys) }

// String formats the set as "(1,2,3)".
func (s VoterSet) String() string {
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
		parts[i] = k.String()
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// MajorityOffset returns the largest offset that at least a majority of
// the given per-voter offsets reach: sort descending and take the entry at
// index ⌊n/2⌋. Unknown offsets are negative and sort last. It returns -1
// for an empty input or when no majority has a known offset.
func MajorityOffset(offsets []Offset) Offset {
	if len(offsets) == 0 {
		return -1
	}
	// A quorum has a handful of voters: sort a copy on the stack.
	var buf [8]Offset
	sorted := append(buf[:0], offsets...)
	slices.SortFunc(sorted, func(a, b Offset) int { return cmp.Compare(b, a) })
	v := sorted[len(sorted)/2]
	if v < 0 {
		return -1
	}
	return v
}

// NextHighWatermark applies the leader's high-watermark rule (KIP-595,
// LeaderState.maybeUpdateHighWatermark). Given the current
// high watermark (-1 when the leader has none yet), the epoch start offset
// (the leader's end offset when it was elected, where its LeaderChange
// record sits) and the voters' durable end offsets, it returns the new high
// watermark and whether it changed. A candidate value is adopted only if it
// is strictly greater than epochStart, so that an entry of the current
// epoch is committed before anything is exposed, and strictly greater than
// current, so that the high watermark never moves backwards.
func NextHighWatermark(current, epochStart Offset, offsets []Offset) (Offset, bool) {
	c := MajorityOffset(offsets)
	if c > epochStart && c > current {
		return c, true
	}
	return current, false
}

// ElectionResult is the standing of an election or pre-vote round.
type ElectionResult uint8

// The standings of a round.
const (
	// Pending means neither a majority of grants nor of rejections yet.
	Pending ElectionResult = iota
	// Won means a majority granted.
	Won
	// Lost means a majority can no longer be reached.
	Lost
)

// String names the result.
func (r ElectionResult) String() string {
	switch r {
	case Won:
		return "won"
	case Lost:
		return "lost"
	default:
		return "pending"
	}
}

// Tally returns the standing of a round among voters voters with granted
// grants (the nominee's own included) and rejected rejections (EpochElection
// in Kafka): won once granted reaches a majority; lost once granted plus
// the voters not yet heard from falls below a majority.
func Tally(voters, granted, rejected int) ElectionResult {
	maj := Majority(voters)
	switch {
	case granted >= maj:
		return Won
	case granted+(voters-granted-rejected) < maj:
		return Lost
	default:
		return Pending
	}
}
