package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/krabka-go/krabka/internal/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxFrameSize is the default of socket.request.max.bytes: the
// largest request frame a Kafka server accepts (104857600 bytes).
const DefaultMaxFrameSize int32 = 104857600

// growStep is how much ReadFrame grows its buffer at a time beyond what the
// caller's buffer already holds: a peer that announces a large frame must
// send the bytes before we allocate for them.
const growStep = 64 << 10

// ReadFrame reads exactly one frame from r: a 4-byte big-endian size
// followed by that many bytes. It returns the frame without its size
// prefix.
//
// The frame is read into buf's storage when buf's capacity suffices;
// otherwise into a larger buffer that grows as the bytes actually arrive
// (in steps of at most doubling, from 64 KiB), so the memory spent on a
// frame is bounded by the larger of 64 KiB and twice the bytes received,
// never by the announced size. Callers pass the
// returned slice back in as buf for the next frame to reuse the storage,
// but only once nothing decoded from the previous frame is in use: decoded
// messages may alias the frame (kmsg's bytes fields, our private RPCs'
// records).
//
// A size prefix that is negative or larger than maxSize is a
// *FrameSizeError (errors.Is ErrFrameSize), returned before anything is
// allocated. End of input before the first byte of the size prefix is
// io.EOF; end of input anywhere later wraps io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, buf []byte, maxSize int32) ([]byte, error) {
	// The size prefix goes into buf when it can, so that reading into a
	// reused buffer allocates nothing.
	var sz []byte
	if cap(buf) >= 4 {
		sz = buf[:4]
	} else {
		sz = make([]byte, 4)
	}
	if _, err := io.ReadFull(r, sz); err != nil {
		if errors.Is(err, io.EOF) {
			return buf[:0], io.EOF
		}
		return buf[:0], fmt.Errorf("wire: read frame size: %w", err)
	}
	size := int32(binary.BigEndian.Uint32(sz))
	if size < 0 || size > maxSize {
		return buf[:0], &FrameSizeError{Size: size, Max: maxSize}
	}
	n := int(size)
	if n <= cap(buf) {
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return buf[:0], frameBodyErr(err, n)
		}
		return buf, nil
	}
	buf = buf[:0]
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), growStep)))
			copy(grown, buf)
			buf = grown
		}
		got, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+got]
		if err != nil {
			return buf[:0], frameBodyErr(err, n)
		}
	}
	return buf, nil
}

func frameBodyErr(err error, n int) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("wire: read frame of %d bytes: %w", n, err)
}

// AppendResponse appends a complete response frame to dst: the size
// prefix, the response header for resp's key and version, and the body.
//
// The header is v1 (correlation id and an empty tagged-field section) for
// flexible versions and v0 (the correlation id alone) otherwise, and always
// v0 for ApiVersions (KIP-511). An ApiVersions UNSUPPORTED_VERSION answer is
// a version-0 response, so it is encoded at version 0.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if responseHeaderVersionFor(resp) >= 1 {
		dst = append(dst, 0) // an empty tagged-field section
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// responseHeaderVersionFor uses the version table for the APIs we serve and
// the message's own flexibility for any other (responses we decode as a
// client of other servers use the same rule).
func responseHeaderVersionFor(m interface {
	Key() int16
	GetVersion() int16
	IsFlexible() bool
}) int16 {
	key, v := m.Key(), m.GetVersion()
	if key == KeyAPIVersions {
		return 0
	}
	if _, ok := LookupAPI(key); ok {
		return ResponseHeaderVersion(key, v)
	}
	if m.IsFlexible() {
		return 1
	}
	return 0
}

// AppendRequest appends a complete request frame to dst: the size prefix,
// a request header (v2 for flexible versions, else v1) and req's body at
// req's version. A nil clientID is sent as null. It is what a peer sender
// writes; the caller picks correlation ids and the version (from the
// peer's ApiVersions answer or the version table).
func AppendRequest(dst []byte, correlationID int32, clientID *string, req kmsg.Request) ([]byte, error) {
	if clientID != nil && len(*clientID) > 0x7fff {
		return dst, errClientIDTooLong
	}
	key, v := req.Key(), req.GetVersion()
	hv := int16(1)
	if _, ok := LookupAPI(key); ok {
		hv = RequestHeaderVersion(key, v)
	} else if req.IsFlexible() {
		hv = 2
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = appendRequestHeader(dst, key, v, correlationID, clientID, hv)
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst, nil
}

// ResponseCorrelationID returns the correlation id of a response frame
// (without its size prefix). It is the first field of every response
// header version, so a client reads it before it knows which request the
// response answers.
func ResponseCorrelationID(frame []byte) (int32, error) {
	if len(frame) < 4 {
		return 0, fmt.Errorf("%w: response frame of %d bytes has no correlation id", ErrMalformedHeader, len(frame))
	}
	return int32(binary.BigEndian.Uint32(frame)), nil
}

// DecodeResponse decodes a response frame (without its size prefix) that
// answers req: it skips the response header of the right version and reads
// the body into the response kind of req at req's version.
//
// An ApiVersions response that does not decode at the request's version is
// decoded again at version 0, because a server that does not support the
// request's version answers with a version-0 UNSUPPORTED_VERSION response
// (KIP-511; Kafka's ApiVersionsResponse.parse does the same).
func DecodeResponse(frame []byte, req kmsg.Request) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	_, off, err := parseResponseHeader(frame, responseHeaderVersionFor(resp))
	if err != nil {
		return nil, err
	}
	body := frame[off:]
	if err := resp.ReadFrom(body); err != nil {
		if resp.Key() == KeyAPIVersions && resp.GetVersion() != 0 {
			v0 := req.ResponseKind()
			v0.SetVersion(0)
			if err0 := v0.ReadFrom(body); err0 == nil {
				return v0, nil
			}
		}
		return nil, fmt.Errorf("%w: %s response v%d: %w", ErrMalformedBody,
			apiName(resp.Key()), resp.GetVersion(), err)
	}
	return resp, nil
}

// apiName names an API key for error messages.
func apiName(key int16) string {
	if a, ok := LookupAPI(key); ok {
		return a.Name
	}
	return kmsg.NameForKey(key)
}
