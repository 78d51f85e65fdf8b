package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is a decoded request frame.
type Request struct {
	// Header is the parsed request header.
	Header RequestHeader
	// Body is the typed request at Header.APIVersion: a kmsg request for
	// Kafka's APIs (for example *kmsg.VoteRequest), *SubmitChangeRequest,
	// *MetadataFetchRequest or *ReadImageRequest for the private RPCs. Its byte fields may alias
	// the frame (see [ReadFrame]).
	Body kmsg.Request
	// Transient marks a Body that the [Decoder] decodes the next request
	// of its kind into (a Fetch, which a follower sends without pause),
	// with strings that alias the frame: Body, and the frame, must not be
	// used or changed after the next Decode. The frame may then be read
	// into again, since nothing decoded keeps it.
	Transient bool
}

// DecodeRequest decodes one request frame (as returned by [ReadFrame],
// without the size prefix) against the version table. It is pure and safe
// for concurrent use.
//
// The checks follow Kafka's order (RequestHeader.parse, then
// SocketServer.parseRequestHeader, then RequestContext.parseRequest):
//
//  1. The API key must be in the version table; otherwise the error's Kind
//     is ErrUnknownAPIKey. Keys Kafka knows but a controller does not
//     serve here (Produce, Metadata, ...) are refused the same way.
//  2. The header must parse (ErrMalformedHeader).
//  3. The version must be in the table's range (ErrUnsupportedVersion),
//     except that an ApiVersions request at any version outside the range
//     is answered, not refused: the returned *RequestError has Close false
//     and Answer set to the version-0 UNSUPPORTED_VERSION response carrying
//     our ApiVersions range (KIP-511). Its body is not read.
//  4. The body must decode at the version (ErrMalformedBody). Bytes after
//     a complete body are ignored, as Kafka ignores them.
//
// Every error is a *RequestError; all but the ApiVersions case have Close
// set: the caller closes the connection without answering, as Kafka does.
func DecodeRequest(frame []byte) (*Request, error) {
	var d Decoder
	req := new(Request)
	if err := d.decode(frame, req, false); err != nil {
		return nil, err
	}
	return req, nil
}

// Decoder decodes the request frames of one connection, as DecodeRequest
// does, into a Request the caller provides. It remembers the client id of
// the last request: a client sends the same one in every request, which
// then costs no new string. The zero Decoder is ready to use; a Decoder
// is for one goroutine at a time.
//
// A Fetch request is decoded into one *kmsg.FetchRequest the Decoder
// keeps, without copying its strings out of the frame (Request.Transient):
// a follower fetches continuously, and its requests are translated for
// the consensus core as soon as they are read.
type Decoder struct {
	// UnstableAPIVersions is unstable.api.versions.enable: whether a
	// request at an unstable version ([APIVersion.LatestUnstable]) is
	// served. Without it such a request is refused as one at an
	// unsupported version.
	UnstableAPIVersions bool
	// Claimed are the rows of the APIs an embedder serves besides the
	// version table's ([ClaimedAPI]): their requests are decoded like
	// the table's, at the claimed versions. None may share a key with
	// the table.
	Claimed []APIVersion

	clientID string
	fetch    *kmsg.FetchRequest
}

// Decode decodes frame into req, as DecodeRequest does. On error req is
// left unchanged.
func (d *Decoder) Decode(frame []byte, req *Request) error {
	return d.decode(frame, req, true)
}

// decode is Decode; reuse says whether a Fetch goes into the Decoder's
// own request (DecodeRequest's results share nothing).
func (d *Decoder) decode(frame []byte, req *Request, reuse bool) error {
	if len(frame) < 4 {
		return &RequestError{
			Kind:  ErrMalformedHeader,
			Close: true,
			Err:   fmt.Errorf("frame of %d bytes has no api key and version", len(frame)),
		}
	}
	var h RequestHeader
	h.APIKey = int16(binary.BigEndian.Uint16(frame))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	if len(frame) >= 8 {
		h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	}
	api, ok := d.lookup(h.APIKey)
	if !ok {
		return &RequestError{Kind: ErrUnknownAPIKey, Header: h, Close: true}
	}
	h, off, err := parseRequestHeader(frame, d.clientID, api)
	if err != nil {
		return &RequestError{Kind: ErrMalformedHeader, Header: h, Close: true, Err: err}
	}
	// Kafka's SocketServer closes the connection of a request at a
	// version that is not enabled (ApiVersionManager.isApiEnabled), an
	// unstable one without unstable.api.versions.enable included; an
	// ApiVersions request it answers instead (KIP-511).
	if maxV := api.MaxEnabled(d.UnstableAPIVersions); !api.Enabled(h.APIVersion, d.UnstableAPIVersions) {
		if h.APIKey == KeyAPIVersions {
			return &RequestError{
				Kind:   ErrUnsupportedVersion,
				Header: h,
				Answer: UnsupportedAPIVersionsResponse(d.UnstableAPIVersions),
				Err:    fmt.Errorf("ApiVersions v%d is outside %d-%d; answered at v0", h.APIVersion, api.Min, maxV),
			}
		}
		return &RequestError{
			Kind:   ErrUnsupportedVersion,
			Header: h,
			Close:  true,
			Err:    fmt.Errorf("%s v%d is outside %d-%d", api.Name, h.APIVersion, api.Min, maxV),
		}
	}
	var body kmsg.Request
	transient := reuse && h.APIKey == KeyFetch
	if transient {
		if d.fetch == nil {
			d.fetch = new(kmsg.FetchRequest)
		}
		// Nothing of the previous request is left but the storage of
		// its topic list, which decoding fills again; it sets the
		// defaults itself.
		*d.fetch = kmsg.FetchRequest{Version: h.APIVersion, Topics: d.fetch.Topics[:0]}
		err = d.fetch.UnsafeReadFrom(frame[off:])
		body = d.fetch
	} else {
		body = newRequest(h.APIKey)
		body.SetVersion(h.APIVersion)
		err = body.ReadFrom(frame[off:])
	}
	if err != nil {
		return &RequestError{
			Kind:   ErrMalformedBody,
			Header: h,
			Close:  true,
			Err:    fmt.Errorf("%s v%d: %w", api.Name, h.APIVersion, err),
		}
	}
	d.clientID = h.ClientID
	*req = Request{Header: h, Body: body, Transient: transient}
	return nil
}

// lookup returns the row of key: the version table's, else a claimed
// one.
func (d *Decoder) lookup(key int16) (APIVersion, bool) {
	if a, ok := LookupAPI(key); ok {
		return a, true
	}
	for _, a := range d.Claimed {
		if a.Key == key {
			return a, true
		}
	}
	return APIVersion{}, false
}

// newRequest returns an empty request for a key of the version table or
// a claimed one.
func newRequest(key int16) kmsg.Request {
	switch key {
	case KeySubmitChange:
		return NewSubmitChangeRequest()
	case KeyMetadataFetch:
		return NewMetadataFetchRequest()
	case KeyReadImage:
		return NewReadImageRequest()
	}
	r := kmsg.RequestForKey(key)
	if r == nil {
		panic(fmt.Sprintf("wire: invariant: version table key %d is unknown to kmsg", key))
	}
	return r
}
