package wire

//go:generate go run github.com/krabka-go/krabka/internal/codegen/cmd/krabkagen -pkg wire -defs definitions -out .

import "github.com/twmb/franz-go/pkg/kmsg"

// The private RPCs are Krabka's own: SubmitChange (1003), MetadataFetch
// (1004) and ReadImage (1005). docs/wire.md holds their schemas in Kafka's
// JSON style; definitions/*.def restates them in krabkagen's format, and
// the codecs (*_gen.go) are generated from those files. Their message types
// implement kmsg.Request and kmsg.Response, so framing, decoding and the
// transport treat them exactly like Kafka's. Every version is flexible
// (SubmitChange has versions 0 and 1, the others version 0): compact strings, arrays and bytes, and a tagged-field
// section at the end of every structure. Decoding skips tagged fields,
// ignores bytes after the body, takes any non-zero byte as a true bool and
// refuses strings that are not UTF-8. Byte fields of decoded messages
// alias the input.

// ReadImageResource names one config resource of a [ReadImageRequest].
type ReadImageResource = ReadImageRequestConfigResource

// ReadImageResourceConfigs is every config the image holds for one
// resource of a [ReadImageResponse], sorted by name.
type ReadImageResourceConfigs = ReadImageResponseConfigResourceResult

// ReadImageConfig is one config of a [ReadImageResourceConfigs].
type ReadImageConfig = ReadImageResponseConfig

// ReadImageTopic is one topic of a [ReadImageResponse].
type ReadImageTopic = ReadImageResponseTopic

// Compile-time checks that the private messages plug into kmsg's
// interfaces.
var (
	_ kmsg.Request  = (*SubmitChangeRequest)(nil)
	_ kmsg.Response = (*SubmitChangeResponse)(nil)
	_ kmsg.Request  = (*MetadataFetchRequest)(nil)
	_ kmsg.Response = (*MetadataFetchResponse)(nil)
	_ kmsg.Request  = (*ReadImageRequest)(nil)
	_ kmsg.Response = (*ReadImageResponse)(nil)
)
