package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRequestRoundTripEveryAPIAndVersion encodes a filled request of every
// Kafka API in the version table at every version with kmsg's own request
// formatter (an independent writer of the header), decodes the frame with
// DecodeRequest, and checks the header and that the decoded body encodes
// back to the same bytes.
func TestRequestRoundTripEveryAPIAndVersion(t *testing.T) {
	for _, api := range SupportedAPIs() {
		if api.Key >= 1000 {
			continue // private RPCs: private_test.go
		}
		for v := api.Min; v <= api.Max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", api.Name, v), func(t *testing.T) {
				for seed := range uint64(5) {
					rng := rand.New(rand.NewPCG(seed, uint64(api.Key)<<16|uint64(v)))
					req := kmsg.RequestForKey(api.Key)
					fill(req, rng)
					req.SetVersion(v)
					if api.Key == KeyAPIVersions && v >= 3 {
						ar := req.(*kmsg.ApiVersionsRequest)
						ar.ClusterID, ar.NodeID = nil, -1 // v5 fields
					}
					clientID := fmt.Sprintf("client-%d", seed)
					frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, int32(seed)+7)

					got, err := ReadFrame(bytes.NewReader(frame), nil, DefaultMaxFrameSize)
					if err != nil {
						t.Fatalf("ReadFrame: %v", err)
					}
					dec, err := DecodeRequest(got)
					if err != nil {
						t.Fatalf("DecodeRequest: %v", err)
					}
					wantHeader := RequestHeader{
						APIKey: api.Key, APIVersion: v, CorrelationID: int32(seed) + 7,
						ClientID: clientID, Version: RequestHeaderVersion(api.Key, v),
					}
					if diff := cmp.Diff(wantHeader, dec.Header); diff != "" {
						t.Errorf("header (-want +got):\n%s", diff)
					}
					if dec.Body.Key() != api.Key || dec.Body.GetVersion() != v {
						t.Errorf("body is key %d v%d, want key %d v%d", dec.Body.Key(), dec.Body.GetVersion(), api.Key, v)
					}
					if want, got := req.AppendTo(nil), dec.Body.AppendTo(nil); !bytes.Equal(want, got) {
						t.Errorf("body re-encodes differently\nwant %x\ngot  %x", want, got)
					}
					// Our own request writer produces the same frame as kmsg's.
					ours, err := AppendRequest(nil, int32(seed)+7, &clientID, req)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(ours, frame) {
						t.Errorf("AppendRequest differs from kmsg's formatter\nwant %x\ngot  %x", frame, ours)
					}
				}
			})
		}
	}
}

// TestResponseRoundTripEveryAPIAndVersion writes a filled response of every
// Kafka API in the table at every version with AppendResponse and reads it
// back with DecodeResponse, checking the correlation id and that the body
// re-encodes identically. It also pins the header version: after the
// correlation id, a flexible response other than ApiVersions has one
// empty tagged-field byte.
func TestResponseRoundTripEveryAPIAndVersion(t *testing.T) {
	for _, api := range SupportedAPIs() {
		for v := api.Min; v <= api.Max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", api.Name, v), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(api.Key), uint64(v)))
				req := newRequest(api.Key)
				req.SetVersion(v)
				resp := req.ResponseKind()
				if api.Key < 1000 {
					fill(resp, rng)
				} else {
					fillPrivateResponse(resp, rng)
				}
				resp.SetVersion(v)
				frame := AppendResponse(nil, 4242, resp)

				got, err := ReadFrame(bytes.NewReader(frame), nil, DefaultMaxFrameSize)
				if err != nil {
					t.Fatal(err)
				}
				id, err := ResponseCorrelationID(got)
				if err != nil || id != 4242 {
					t.Fatalf("ResponseCorrelationID = %d, %v; want 4242", id, err)
				}
				body := resp.AppendTo(nil)
				headerLen := 4
				if api.Key != KeyAPIVersions && api.Flexible(v) {
					headerLen = 5
				}
				if !bytes.Equal(got[headerLen:], body) {
					t.Fatalf("frame body at offset %d differs from the message encoding", headerLen)
				}
				dec, err := DecodeResponse(got, req)
				if err != nil {
					t.Fatalf("DecodeResponse: %v", err)
				}
				if !bytes.Equal(dec.AppendTo(nil), body) {
					t.Errorf("decoded response re-encodes differently")
				}
			})
		}
	}
}

func fillPrivateResponse(resp kmsg.Response, rng *rand.Rand) {
	switch r := resp.(type) {
	case *SubmitChangeResponse:
		r.ErrorCode = 6
		msg := "not leader"
		r.ErrorMessage = &msg
		r.LeaderID, r.LeaderEpoch = int32(rng.IntN(5)), int32(rng.IntN(50))
	case *MetadataFetchResponse:
		r.HighWatermark = int64(rng.IntN(100))
		r.Records = []byte{1, 2, 3}
	case *ReadImageResponse:
		r.LeaderID, r.LeaderEpoch, r.Offset = int32(rng.IntN(5)), int32(rng.IntN(50)), int64(rng.IntN(100))
		r.ConfigResources = []ReadImageResourceConfigs{{ResourceType: 2, ResourceName: "t",
			Configs: []ReadImageConfig{{Name: "retention.ms", Value: strp("1")}, {Name: "x"}}}}
		r.Topics = []ReadImageTopic{{Name: "t", TopicID: [16]byte{1}, PartitionCount: 3}}
	}
}

func TestDecodeResponseFallsBackToV0ForApiVersions(t *testing.T) {
	// A server that does not know ApiVersions v4 answers at v0.
	frame := AppendResponse(nil, 9, UnsupportedAPIVersionsResponse(false))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	resp, err := DecodeResponse(frame[4:], req)
	if err != nil {
		t.Fatalf("DecodeResponse: %v", err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.Version != 0 || av.ErrorCode != 35 || len(av.ApiKeys) != 1 || av.ApiKeys[0].MaxVersion != 4 {
		t.Errorf("decoded %+v, want v0 UNSUPPORTED_VERSION with the ApiVersions row 0-4", av)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	req := kmsg.NewPtrVoteRequest()
	req.SetVersion(2)
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"empty", nil},
		{"no tagged fields", []byte{0, 0, 0, 1}},
		{"truncated body", []byte{0, 0, 0, 1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeResponse(tc.frame, req); err == nil {
				t.Errorf("DecodeResponse(%x) succeeded, want an error", tc.frame)
			}
		})
	}
	if _, err := ResponseCorrelationID([]byte{1, 2}); err == nil {
		t.Error("ResponseCorrelationID of 2 bytes succeeded")
	}
}
