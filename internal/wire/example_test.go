package wire_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A server's reading side: read a frame, decode it against the version
// table, and either answer or close.
func ExampleDecodeRequest() {
	// A client sends ApiVersions v4 and then ApiVersions v9, which no
	// server supports yet.
	var stream bytes.Buffer
	v4 := kmsg.NewPtrApiVersionsRequest()
	v4.SetVersion(4)
	v4.ClientSoftwareName, v4.ClientSoftwareVersion = "example", "1.0"
	frame, _ := wire.AppendRequest(nil, 1, nil, v4)
	stream.Write(frame)
	v9 := kmsg.NewPtrApiVersionsRequest()
	v9.SetVersion(9)
	frame, _ = wire.AppendRequest(nil, 2, nil, v9)
	stream.Write(frame)

	st := wire.FeatureState{MetadataVersion: wire.SupportedFeature{Min: 7, Max: 30}, FinalizedEpoch: -1}
	var buf []byte
	for {
		var err error
		buf, err = wire.ReadFrame(&stream, buf, wire.DefaultMaxFrameSize)
		if err != nil {
			break // io.EOF here; a *FrameSizeError would close the connection
		}
		var resp kmsg.Response
		var corr int32
		req, err := wire.DecodeRequest(buf)
		if re, ok := errors.AsType[*wire.RequestError](err); ok {
			if re.Close {
				break // Kafka closes without answering
			}
			resp, corr = re.Answer, re.Header.CorrelationID
		} else {
			resp, corr = wire.AnswerAPIVersions(req.Body.(*kmsg.ApiVersionsRequest), st), req.Header.CorrelationID
		}
		out := wire.AppendResponse(nil, corr, resp)
		av := resp.(*kmsg.ApiVersionsResponse)
		fmt.Printf("correlation id %d: v%d, error %d, %d APIs, %d-byte frame\n",
			corr, av.Version, av.ErrorCode, len(av.ApiKeys), len(out))
	}
	// Output:
	// correlation id 1: v4, error 0, 18 APIs, 186-byte frame
	// correlation id 2: v0, error 35, 1 APIs, 20-byte frame
}
