package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

func readImageRequestSample() *ReadImageRequest {
	return &ReadImageRequest{
		Linearizable:    true,
		ConfigResources: []ReadImageResource{{ResourceType: 4, ResourceName: ""}, {ResourceType: 2, ResourceName: "ab"}},
		TopicNames:      []string{"t"},
	}
}

func readImageResponseSample() *ReadImageResponse {
	return &ReadImageResponse{
		ErrorCode: 0, LeaderID: 1, LeaderEpoch: 3, Offset: 9,
		ConfigResources: []ReadImageResourceConfigs{{ResourceType: 2, ResourceName: "t",
			Configs: []ReadImageConfig{{Name: "a", Value: strp("1")}, {Name: "b"}}}},
		Topics: []ReadImageTopic{{Name: "t", TopicID: [16]byte{0: 7, 15: 8}, PartitionCount: 3},
			{Name: "u", PartitionCount: -1}},
	}
}

// readImageGolden holds the byte-exact ReadImage encodings of docs/wire.md
// that TestPrivateGoldenBytes pins.
func readImageGolden() []goldenCase {
	id := [16]byte{0: 7, 15: 8}
	return []goldenCase{
		{
			name: "ReadImageRequest",
			msg:  readImageRequestSample(),
			want: []byte{
				0x01,             // Linearizable
				0x03,             // ConfigResources: 2 elements
				0x04, 0x01, 0x00, // type 4, name "", tags
				0x02, 0x03, 'a', 'b', 0x00, // type 2, name "ab", tags
				0x02, 0x02, 't', // TopicNames: ["t"]
				0x00, // tagged fields
			},
		},
		{
			name: "ReadImageRequest empty",
			msg:  &ReadImageRequest{},
			want: []byte{0x00, 0x01, 0x01, 0x00},
		},
		{
			name: "ReadImageResponse",
			msg:  readImageResponseSample(),
			want: append(append([]byte{
				0, 0, 0, 0, // ThrottleTimeMs
				0, 0, // ErrorCode
				0x00,       // ErrorMessage: null
				0, 0, 0, 1, // LeaderId
				0, 0, 0, 3, // LeaderEpoch
				0, 0, 0, 0, 0, 0, 0, 9, // Offset
				0x02,            // ConfigResources: 1 element
				0x02, 0x02, 't', // type 2, name "t"
				0x03,                       // Configs: 2 elements
				0x02, 'a', 0x02, '1', 0x00, // a=1, tags
				0x02, 'b', 0x00, 0x00, // b=null, tags
				0x00,      // resource tags
				0x03,      // Topics: 2 elements
				0x02, 't', // name "t"
			}, id[:]...),
				0, 0, 0, 3, 0x00, // PartitionCount, tags
				0x02, 'u', // name "u"
				0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // zero id
				0xff, 0xff, 0xff, 0xff, 0x00, // PartitionCount -1, tags
				0x00, // tagged fields
			),
		},
	}
}

func TestReadImageDefaultsAndPairing(t *testing.T) {
	if r := NewReadImageResponse(); r.LeaderID != -1 || r.LeaderEpoch != -1 || r.Offset != -1 || r.ErrorCode != 0 {
		t.Errorf("NewReadImageResponse() = %+v, want -1 defaults and no error", r)
	}
	var req kmsg.Request = NewReadImageRequest()
	if resp := req.ResponseKind(); resp.Key() != KeyReadImage || resp.RequestKind().Key() != KeyReadImage {
		t.Error("ReadImage kinds do not pair up")
	}
	if !req.IsFlexible() || req.MaxVersion() != 0 {
		t.Error("ReadImageRequest must be flexible with only version 0")
	}
	if a, ok := LookupAPI(KeyReadImage); !ok || a.Name != "ReadImage" || a.Max != 0 || !a.Flexible(0) {
		t.Errorf("LookupAPI(1005) = %+v, %v", a, ok)
	}
	found := false
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "krabka", "1"
	for _, k := range AnswerAPIVersions(av, FeatureState{}).ApiKeys {
		found = found || (k.ApiKey == KeyReadImage && k.MinVersion == 0 && k.MaxVersion == 0)
	}
	if !found {
		t.Error("ApiVersions does not advertise ReadImage 0-0")
	}
}

func TestReadImageDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  privateMsg
		in   []byte
	}{
		{"request empty", NewReadImageRequest(), nil},
		{"request null resources", NewReadImageRequest(), []byte{0x00, 0x00, 0x01, 0x00}},
		{"request null topics", NewReadImageRequest(), []byte{0x00, 0x01, 0x00, 0x00}},
		{"request null resource name", NewReadImageRequest(), []byte{0x00, 0x02, 0x02, 0x00, 0x00, 0x01, 0x00}},
		{"request null topic name", NewReadImageRequest(), []byte{0x00, 0x01, 0x02, 0x00, 0x00}},
		{"request resource count beyond input", NewReadImageRequest(), []byte{0x00, 0x7f, 0x00}},
		{"request bad UTF-8 name", NewReadImageRequest(), []byte{0x00, 0x01, 0x02, 0x03, 0xc3, 0x28, 0x00}},
		{"request missing tags", NewReadImageRequest(), []byte{0x00, 0x01, 0x01}},
		{"response truncated", NewReadImageResponse(), make([]byte, 22)},
		{"response null configs", NewReadImageResponse(), append(make([]byte, 23), 0x02, 0x02, 0x02, 't', 0x00, 0x00, 0x01, 0x00)},
		{"response topic count beyond input", NewReadImageResponse(), append(make([]byte, 23), 0x01, 0x05, 0x00)},
		{"response null topic name", NewReadImageResponse(), append(append(make([]byte, 23), 0x01, 0x02, 0x00), make([]byte, 21)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.msg.ReadFrom(tc.in); err == nil {
				t.Errorf("ReadFrom(% x) succeeded, want an error", tc.in)
			}
		})
	}
	// Any non-zero byte is true, as in Kafka.
	r := NewReadImageRequest()
	if err := r.ReadFrom([]byte{0x05, 0x01, 0x01, 0x00}); err != nil || !r.Linearizable {
		t.Errorf("ReadFrom(linearizable byte 5) = %v, Linearizable %v; want true", err, r.Linearizable)
	}
}

// TestReadImageThroughFrames sends a ReadImage request through the request
// framing and DecodeRequest, and its answer through the response framing.
func TestReadImageThroughFrames(t *testing.T) {
	req := readImageRequestSample()
	frame, err := AppendRequest(nil, 5, strp("faults"), req)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeRequest(frame[4:])
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	if dec.Header.Version != 2 || dec.Header.APIKey != KeyReadImage {
		t.Errorf("header = %+v, want v2 key 1005", dec.Header)
	}
	if diff := cmp.Diff(any(req), dec.Body); diff != "" {
		t.Errorf("request (-sent +decoded):\n%s", diff)
	}
	resp := readImageResponseSample()
	rf := AppendResponse(nil, 5, resp)
	got, err := DecodeResponse(rf[4:], req)
	if err != nil {
		t.Fatalf("DecodeResponse: %v", err)
	}
	if diff := cmp.Diff(any(resp), got); diff != "" {
		t.Errorf("response (-sent +decoded):\n%s", diff)
	}
}

func genReadImageRequest(t *rapid.T) *ReadImageRequest {
	return &ReadImageRequest{
		Linearizable: rapid.Bool().Draw(t, "linearizable"),
		ConfigResources: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) ReadImageResource {
			return ReadImageResource{ResourceType: rapid.Int8().Draw(t, "type"), ResourceName: rapid.String().Draw(t, "name")}
		}), 0, 5).Draw(t, "resources"),
		TopicNames: rapid.SliceOfN(rapid.String(), 0, 5).Draw(t, "topics"),
	}
}

func genReadImageResponse(t *rapid.T) *ReadImageResponse {
	return &ReadImageResponse{
		ThrottleTimeMs: rapid.Int32().Draw(t, "throttle"),
		ErrorCode:      rapid.Int16().Draw(t, "code"),
		ErrorMessage:   rapid.Ptr(rapid.String(), true).Draw(t, "message"),
		LeaderID:       rapid.Int32().Draw(t, "leader"),
		LeaderEpoch:    rapid.Int32().Draw(t, "leaderEpoch"),
		Offset:         rapid.Int64().Draw(t, "offset"),
		ConfigResources: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) ReadImageResourceConfigs {
			return ReadImageResourceConfigs{
				ResourceType: rapid.Int8().Draw(t, "type"),
				ResourceName: rapid.String().Draw(t, "name"),
				Configs: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) ReadImageConfig {
					return ReadImageConfig{Name: rapid.String().Draw(t, "name"), Value: rapid.Ptr(rapid.String(), true).Draw(t, "value")}
				}), 0, 4).Draw(t, "configs"),
			}
		}), 0, 4).Draw(t, "resources"),
		Topics: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) ReadImageTopic {
			var id [16]byte
			copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
			return ReadImageTopic{Name: rapid.String().Draw(t, "name"), TopicID: id, PartitionCount: rapid.Int32().Draw(t, "partitions")}
		}), 0, 4).Draw(t, "topics"),
	}
}
