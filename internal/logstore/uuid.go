package logstore

import (
	"encoding/base64"
	"fmt"
)

// UUID is Kafka's 128-bit Uuid. Its text form is the 22-character
// base64url encoding without padding (Kafka's Uuid.toString), for example
// "AAAAAAAAAAAAAAAAAAAAAQ" for the metadata topic id.
type UUID [16]byte

// ZeroUUID is Kafka's Uuid.ZERO_UUID; a zero directory id means "none".
var ZeroUUID UUID

// MetadataTopicID is the fixed topic id of __cluster_metadata
// (Uuid.METADATA_TOPIC_ID = Uuid(0, 1)).
var MetadataTopicID = UUID{15: 1}

// String returns the base64url form without padding.
func (u UUID) String() string {
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// IsZero reports whether u is the zero Uuid.
func (u UUID) IsZero() bool { return u == ZeroUUID }

// ParseUUID parses Kafka's base64url text form of a Uuid.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 22 {
		return u, fmt.Errorf("logstore: parse uuid %q: want 22 base64url characters, got %d", s, len(s))
	}
	n, err := base64.RawURLEncoding.Decode(u[:], []byte(s))
	if err != nil {
		return u, fmt.Errorf("logstore: parse uuid %q: %w", s, err)
	}
	if n != len(u) {
		return u, fmt.Errorf("logstore: parse uuid %q: decoded %d bytes, want 16", s, n)
	}
	return u, nil
}
