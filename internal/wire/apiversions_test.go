package wire

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

var ignoreTags = cmpopts.IgnoreUnexported(kmsg.Tags{})

func testFeatureState() FeatureState {
	return FeatureState{
		MetadataVersion: SupportedFeature{Min: 7, Max: 30},
		Other:           []SupportedFeature{{Name: "group.version", Min: 0, Max: 1}},
		Finalized: []FinalizedFeature{
			{Name: FeatureMetadataVersion, Level: 30},
			{Name: FeatureKRaftVersion, Level: 1},
			{Name: "group.version", Level: 0},
		},
		FinalizedEpoch: 1234,
	}
}

func apiVersionsRequest(v int16, name, version string) *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.SetVersion(v)
	r.ClientSoftwareName, r.ClientSoftwareVersion = name, version
	return r
}

func TestAnswerAPIVersions(t *testing.T) {
	var wantKeys []kmsg.ApiVersionsResponseApiKey
	for _, a := range SupportedAPIs() {
		wantKeys = append(wantKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: a.Key, MinVersion: a.Min, MaxVersion: a.Max})
	}
	allFeatures := []kmsg.ApiVersionsResponseSupportedFeature{
		{Name: "group.version", MinVersion: 0, MaxVersion: 1},
		{Name: "kraft.version", MinVersion: 0, MaxVersion: 1},
		{Name: "metadata.version", MinVersion: 7, MaxVersion: 30},
	}
	finalized := []kmsg.ApiVersionsResponseFinalizedFeature{
		{Name: "kraft.version", MinVersionLevel: 1, MaxVersionLevel: 1},
		{Name: "metadata.version", MinVersionLevel: 30, MaxVersionLevel: 30},
	}
	for _, tc := range []struct {
		name         string
		req          *kmsg.ApiVersionsRequest
		wantCode     int16
		wantKeys     []kmsg.ApiVersionsResponseApiKey
		wantFeatures []kmsg.ApiVersionsResponseSupportedFeature
		wantFinal    []kmsg.ApiVersionsResponseFinalizedFeature
	}{
		{"v0", apiVersionsRequest(0, "", ""), 0, wantKeys, nil, nil},
		{"v2 ignores software fields", apiVersionsRequest(2, "", "!"), 0, wantKeys, nil, nil},
		{"v3 omits min-0 features (KAFKA-17492)", apiVersionsRequest(3, "franz-go", "1.22.3"), 0, wantKeys,
			allFeatures[2:], finalized},
		{"v4 lists min-0 features", apiVersionsRequest(4, "apache-kafka-java", "4.3.1"), 0, wantKeys,
			allFeatures, finalized},
		{"v3 empty software name", apiVersionsRequest(3, "", "1.0"), 42, nil, nil, nil},
		{"v4 bad software version", apiVersionsRequest(4, "kcat", "1.0-"), 42, nil, nil, nil},
		{"v4 non-ASCII software name", apiVersionsRequest(4, "kåfka", "1"), 42, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := AnswerAPIVersions(tc.req, testFeatureState())
			if resp.Version != tc.req.Version {
				t.Errorf("response version %d, want %d", resp.Version, tc.req.Version)
			}
			// Compare what a client reads: round-trip through the encoding at
			// the request's version, which drops fields the version lacks.
			got := kmsg.NewPtrApiVersionsResponse()
			got.SetVersion(resp.Version)
			if err := got.ReadFrom(resp.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if got.ErrorCode != tc.wantCode {
				t.Errorf("error code %d, want %d", got.ErrorCode, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantKeys, got.ApiKeys, ignoreTags); diff != "" {
				t.Errorf("api keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFeatures, got.SupportedFeatures, ignoreTags, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("supported features (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFinal, got.FinalizedFeatures, ignoreTags, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("finalized features (-want +got):\n%s", diff)
			}
			wantEpoch := int64(-1)
			if tc.wantCode == 0 && tc.req.Version >= 3 {
				wantEpoch = 1234
			}
			if got.FinalizedFeaturesEpoch != wantEpoch {
				t.Errorf("finalized epoch %d, want %d", got.FinalizedFeaturesEpoch, wantEpoch)
			}
		})
	}
}

// TestApiVersionsExchange runs the whole exchange as a client sees it:
// kmsg's formatter writes a v4 request, wire decodes and answers it, and the
// response frame carries header v0 although v4 is flexible.
func TestApiVersionsExchange(t *testing.T) {
	req := apiVersionsRequest(4, "krabka", "0.1.0")
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("probe")).AppendRequest(nil, req, 99)
	dec, err := DecodeRequest(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	resp := AnswerAPIVersions(dec.Body.(*kmsg.ApiVersionsRequest), testFeatureState())
	out := AppendResponse(nil, dec.Header.CorrelationID, resp)
	if want := append([]byte{0, 0, 0, 99}, resp.AppendTo(nil)...); !bytes.Equal(out[4:], want) {
		t.Fatalf("ApiVersions v4 response frame does not use header v0:\n got %x\nwant %x", out[4:], want)
	}
	got, err := DecodeResponse(out[4:], dec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if av := got.(*kmsg.ApiVersionsResponse); av.ErrorCode != 0 || len(av.ApiKeys) != len(SupportedAPIs()) {
		t.Errorf("client read %+v", av)
	}
}

func TestValidClientSoftware(t *testing.T) {
	for s, want := range map[string]bool{
		"":                  false,
		"a":                 true,
		"apache-kafka-java": true,
		"4.3.1":             true,
		"1.0-SNAPSHOT":      true,
		"-a":                false,
		"a-":                false,
		".a":                false,
		"a.":                false,
		"a_b":               false,
		"a b":               false,
		"a..b--c":           true,
		"ä":                 false,
	} {
		if got := ValidClientSoftware(s); got != want {
			t.Errorf("ValidClientSoftware(%q) = %v, want %v", s, got, want)
		}
	}
}

// The hand-written check agrees with Kafka's regular expression.
func TestValidClientSoftwareMatchesKafkaRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`[a-zA-Z0-9.\-_ ]{0,6}`),
			rapid.String(),
		).Draw(t, "s")
		if got, want := ValidClientSoftware(s), re.MatchString(s); got != want {
			t.Fatalf("ValidClientSoftware(%q) = %v, regexp says %v", s, got, want)
		}
	})
}
