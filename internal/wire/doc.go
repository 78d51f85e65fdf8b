// Package wire is Krabka's edge to Kafka's binary protocol: request and
// response framing, headers, the version table a controller serves, the
// ApiVersions answer, the codecs of Krabka's private RPCs and the mapping of
// Kafka error codes. It is pure: no goroutines, no network, no clocks, so
// every function can be table-tested and fuzzed. The listener and the peer
// senders in internal/transport move the bytes; this package only says what
// they mean.
//
// Kafka's own messages are the generated types of
// github.com/twmb/franz-go/pkg/kmsg; the private RPCs (SubmitChange, key
// 1003, MetadataFetch, key 1004, and ReadImage, key 1005) are hand-written
// types in this package that implement the same kmsg.Request and
// kmsg.Response interfaces, so the rest of the system handles every message
// the same way.
//
// # Framing
//
// Every request and every response on a Kafka connection is a frame: a
// 4-byte big-endian signed size, then that many bytes. [ReadFrame] reads
// one. A size that is negative or larger than socket.request.max.bytes
// ([DefaultMaxFrameSize], 100 MiB) is refused with a *[FrameSizeError]
// before any memory is set aside for it, and the frame buffer then grows only
// as fast as bytes actually arrive, so a peer that announces 100 MiB and
// sends nothing costs almost nothing.
//
// A request frame holds a request header and a body:
//
//	RequestHeader v1: api key int16, api version int16, correlation id int32,
//	                  client id nullable string (int16 length, -1 = null)
//	RequestHeader v2: v1 + tagged fields
//
// The header version is not sent; it follows from the API version. A
// flexible API version (KIP-482: compact strings and arrays, tagged fields)
// uses header v2, any other version header v1. The client id keeps its
// int16 length even in v2, so that a server can read the header of an
// ApiVersions request at any version. [DecodeRequest] reads the api key and
// version, checks them against the version table ([LookupAPI]), parses the
// header and decodes the body into a typed request.
//
// A response frame holds a response header and a body:
//
//	ResponseHeader v0: correlation id int32
//	ResponseHeader v1: v0 + tagged fields
//
// again v1 for flexible versions and v0 otherwise; [AppendResponse] writes
// one.
//
// # The ApiVersions quirk
//
// ApiVersions is the first request a client sends, before it knows which
// versions the server speaks, so two rules make it always answerable
// (KIP-511):
//
//  1. An ApiVersions response always uses response header v0, even at
//     flexible versions 3 and 4: the client can read the correlation id
//     whatever version the server answered at. Forgetting this puts one
//     extra byte (an empty tagged-field section) in front of the body, and
//     every client then misreads the response.
//  2. An ApiVersions request at a version the server does not support is
//     not refused. Every other unsupported request makes Kafka close the
//     connection; this one is answered at version 0 with
//     UNSUPPORTED_VERSION and the server's ApiVersions range, and the
//     client retries at a version inside it. [DecodeRequest] reports this
//     case as a *[RequestError] with Close false and the answer ready in
//     Answer ([UnsupportedAPIVersionsResponse]).
//
// [AnswerAPIVersions] builds the normal answer: the version table, the
// supported and finalized features (with KAFKA-17492's rule that versions
// below 4 leave out features whose minimum level is 0), or INVALID_REQUEST
// for a v3+ request whose client software name or version is malformed.
//
// # Errors
//
// Every decode failure is a typed error wrapping one of the sentinels
// (ErrFrameSize, ErrUnknownAPIKey, ErrUnsupportedVersion,
// ErrMalformedHeader, ErrMalformedBody), and a *[RequestError] says whether
// the connection must be closed. Kafka error codes exist only at this edge:
// [ErrorForCode], [CodeForError] and [Retriable] translate them through
// github.com/twmb/franz-go/pkg/kerr.
//
// # The version table
//
// versions.go holds the one table of the APIs a Krabka controller serves
// and their version ranges: Kafka 4.3.1's, except Fetch, which starts at 13
// because KRaft identifies the metadata partition by topic id. It feeds both
// the ApiVersions answer and the decode checks, and a conformance test
// compares it with Kafka's JSON schemas.
package wire
