package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/krabka-go/krabka/internal/kbin"
)

// RequestHeader is a parsed request header (RequestHeader.json v1 or v2).
type RequestHeader struct {
	// APIKey is the request's API key.
	APIKey int16
	// APIVersion is the request's API version.
	APIVersion int16
	// CorrelationID is echoed in the response header.
	CorrelationID int32
	// ClientID is the client id. Kafka treats a null client id as empty
	// (RequestHeader.parse), and so do we.
	ClientID string
	// Version is the header version: 1, or 2 when the API version is
	// flexible (Kafka's ApiMessageType.requestHeaderVersion).
	Version int16
}

// RequestHeaderVersion returns the request header version for a request of
// the given API and version: 2 when the version is flexible, else 1. For a
// key outside the version table it returns 1; such a request is refused
// before its header is parsed beyond the correlation id.
func RequestHeaderVersion(key, version int16) int16 {
	if flexible(key, version) {
		return 2
	}
	return 1
}

// ResponseHeaderVersion returns the response header version for a response
// of the given API and version: 1 when the version is flexible, else 0, and
// always 0 for ApiVersions (KIP-511: a client that does not yet know which
// versions the server speaks must be able to read the correlation id of any
// ApiVersions response).
func ResponseHeaderVersion(key, version int16) int16 {
	if key != KeyAPIVersions && flexible(key, version) {
		return 1
	}
	return 0
}

// flexible decides flexibility from the version table. An ApiVersions
// request above our range is parsed with the flexible header too, as
// Kafka's generated ApiMessageType.requestHeaderVersion does for every
// version at or above the first flexible one.
func flexible(key, version int16) bool {
	a, ok := LookupAPI(key)
	return ok && a.Flexible(version)
}

// parseRequestHeader parses the header at the start of a request frame
// (after the size prefix) and returns it with the offset of the body. Its
// errors wrap ErrMalformedHeader.
//
// Two departures from Kafka's leniency, both from the bad-input catalogue
// (W13 and W14 in docs/reliability.md): a client id length below -1 is an
// error (Kafka's generated reader treats every negative length as null), and
// a client id that is not valid UTF-8 is an error (Java decodes it with
// replacement characters). Neither can come from a correct client.
//
// A client id equal to last is returned as last, not as a new string.
// api is the row of the frame's API key, which decides the header
// version.
func parseRequestHeader(frame []byte, last string, api APIVersion) (RequestHeader, int, error) {
	var h RequestHeader
	r := kbin.NewReader(frame)
	h.APIKey = r.Int16()
	h.APIVersion = r.Int16()
	h.CorrelationID = r.Int32()
	if r.Err() != nil {
		return h, 0, fmt.Errorf("%w: frame of %d bytes is shorter than a request header", ErrMalformedHeader, len(frame))
	}
	h.Version = 1
	if api.Flexible(h.APIVersion) {
		h.Version = 2
	}
	n := r.Int16()
	switch {
	case r.Err() != nil:
	case n == -1:
	case n < -1:
		r.Invalid("client id length", fmt.Sprintf("negative length %d", n))
	case r.Remaining() >= int(n) && string(frame[r.Offset():r.Offset()+int(n)]) == last:
		// last was read as valid UTF-8 before.
		h.ClientID = last
		r.Span(int(n))
	default:
		at := r.Offset()
		if b := r.Span(int(n)); r.Err() == nil && !utf8.Valid(b) {
			r.Fail(&kbin.Error{Offset: at, What: "client id", Cause: kbin.ErrInvalid, Detail: "invalid UTF-8"})
		} else {
			h.ClientID = string(b)
		}
	}
	if h.Version >= 2 {
		r.SkipTags()
	}
	if r.Err() != nil {
		return h, 0, fmt.Errorf("%w: %w", ErrMalformedHeader, r.Err())
	}
	return h, r.Offset(), nil
}

// appendRequestHeader appends a request header of the given version. A
// nil client id is written as null.
func appendRequestHeader(dst []byte, key, version int16, correlationID int32, clientID *string, headerVersion int16) []byte {
	dst = kbin.AppendInt16(dst, key)
	dst = kbin.AppendInt16(dst, version)
	dst = kbin.AppendInt32(dst, correlationID)
	dst = kbin.AppendNullableString(dst, clientID)
	if headerVersion >= 2 {
		dst = append(dst, 0) // an empty tagged-field section
	}
	return dst
}

// parseResponseHeader reads a response header of the given version and
// returns the correlation id and the offset of the body.
func parseResponseHeader(frame []byte, headerVersion int16) (int32, int, error) {
	r := kbin.NewReader(frame)
	id := r.Int32()
	if headerVersion >= 1 {
		r.SkipTags()
	}
	if r.Err() != nil {
		return id, 0, fmt.Errorf("%w: %w", ErrMalformedHeader, r.Err())
	}
	return id, r.Offset(), nil
}

// errClientIDTooLong is returned when a client id cannot be encoded with
// the int16 length the request header uses.
var errClientIDTooLong = errors.New("wire: client id longer than 32767 bytes")
