package client

import "github.com/krabka-go/krabka/internal/wire"

// The private RPCs' messages. They are the codecs the controllers use
// themselves, generated from the schemas of docs/wire.md: each request
// and response implements kmsg.Request or kmsg.Response
// (github.com/twmb/franz-go/pkg/kmsg), so AppendTo encodes a body and
// ReadFrom decodes one at the version set with SetVersion. Every version
// is flexible; SubmitChange has versions 0 and 1 (the condition), the
// others version 0. Byte fields of a decoded message
// alias the input.
type (
	// SubmitChangeRequest (API key 1003) carries metadata records, each
	// in its metadata-record framing (metadata.Encode), to the leader.
	SubmitChangeRequest = wire.SubmitChangeRequest
	// SubmitChangeResponse answers a SubmitChangeRequest once the
	// records are committed, or with an error code and a leader hint.
	SubmitChangeResponse = wire.SubmitChangeResponse

	// MetadataFetchRequest (API key 1004) reads committed record batches
	// from a controller's log, from an offset, without joining the
	// quorum's replica tracking.
	MetadataFetchRequest = wire.MetadataFetchRequest
	// MetadataFetchResponse answers a MetadataFetchRequest: whole
	// batches below the high watermark, or the snapshot to load first.
	MetadataFetchResponse = wire.MetadataFetchResponse
	// MetadataFetchSnapshotID is the snapshot of a
	// [MetadataFetchResponse] whose fetch offset was below the log start.
	MetadataFetchSnapshotID = wire.MetadataFetchResponseSnapshotID

	// ReadImageRequest (API key 1005) asks for part of the metadata
	// image: the configs of some resources and the ids and partition
	// counts of some topics, optionally behind a read barrier.
	ReadImageRequest = wire.ReadImageRequest
	// ReadImageResource names one config resource of a
	// [ReadImageRequest].
	ReadImageResource = wire.ReadImageResource
	// ReadImageResponse answers a ReadImageRequest at the image offset it
	// names.
	ReadImageResponse = wire.ReadImageResponse
	// ReadImageResourceConfigs is every config the image holds for one
	// resource of a [ReadImageResponse], sorted by name.
	ReadImageResourceConfigs = wire.ReadImageResourceConfigs
	// ReadImageConfig is one config of a [ReadImageResourceConfigs].
	ReadImageConfig = wire.ReadImageConfig
	// ReadImageTopic is one topic of a [ReadImageResponse].
	ReadImageTopic = wire.ReadImageTopic

	// DecodeError reports bytes that do not decode as a message.
	DecodeError = wire.DecodeError
	// EncodeError reports a value that cannot be encoded.
	EncodeError = wire.EncodeError
)

// The private API keys.
const (
	KeySubmitChange  = wire.KeySubmitChange
	KeyMetadataFetch = wire.KeyMetadataFetch
	KeyReadImage     = wire.KeyReadImage
)

// NewSubmitChangeRequest returns a SubmitChangeRequest with every field
// at its default.
func NewSubmitChangeRequest() *SubmitChangeRequest { return wire.NewSubmitChangeRequest() }

// NewMetadataFetchRequest returns a MetadataFetchRequest with every field
// at its default (ReplicaId -1: a fetcher that is not a replica).
func NewMetadataFetchRequest() *MetadataFetchRequest { return wire.NewMetadataFetchRequest() }

// NewReadImageRequest returns a ReadImageRequest with every field at its
// default.
func NewReadImageRequest() *ReadImageRequest { return wire.NewReadImageRequest() }
