package wire

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// schema is the part of a Kafka message schema (kafka-schemas/message) the
// conformance test reads.
type schema struct {
	APIKey           *int16   `json:"apiKey"`
	Type             string   `json:"type"`
	Name             string   `json:"name"`
	Listeners        []string `json:"listeners"`
	ValidVersions    string   `json:"validVersions"`
	FlexibleVersions string   `json:"flexibleVersions"`
	// LatestVersionUnstable is absent (false) in most schemas.
	LatestVersionUnstable bool `json:"latestVersionUnstable"`
}

// stripComments removes // comments (outside strings) from Kafka's JSON.
func stripComments(b []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			out = append(out, c)
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		default:
			out = append(out, c)
		}
	}
	return out
}

func TestStripComments(t *testing.T) {
	in := "{\n  // a comment \"with quotes\"\n  \"about\": \"see http://x // y\", // trailing\n  \"k\": 1\n}\n"
	var v map[string]any
	if err := json.Unmarshal(stripComments([]byte(in)), &v); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if v["about"] != "see http://x // y" || v["k"] != float64(1) {
		t.Errorf("stripComments lost data: %v", v)
	}
}

// parseRange parses "a-b" or "a" (validVersions) into bounds.
func parseRange(t *testing.T, s string) (int16, int16) {
	t.Helper()
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	a, err1 := strconv.ParseInt(lo, 10, 16)
	b, err2 := strconv.ParseInt(hi, 10, 16)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad version range %q", s)
	}
	return int16(a), int16(b)
}

// parseFlexible parses "n+" or "none" into the first flexible version
// (0x7fff for none).
func parseFlexible(t *testing.T, s string) int16 {
	t.Helper()
	if s == "none" {
		return 0x7fff
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(s, "+"), 10, 16)
	if err != nil || !strings.HasSuffix(s, "+") {
		t.Fatalf("bad flexibleVersions %q", s)
	}
	return int16(n)
}

func readSchema(t *testing.T, dir, name string) schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatalf("read schema: %v", err)
	}
	var s schema
	if err := json.Unmarshal(stripComments(b), &s); err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return s
}

// beyondSchemaCopy holds the rows of APIs whose schemas the shared copy of
// Kafka 4.3.1's schemas leaves out (it holds the KRaft RPCs):
// UpdateFeaturesRequest.json and UpdateFeaturesResponse.json declare
// validVersions 0-2 and flexibleVersions 0+, and the request lists the
// controller listener (ControllerApis.handleUpdateFeatures);
// SaslHandshakeRequest.json declares validVersions 0-1 and
// flexibleVersions none, SaslAuthenticateRequest.json 0-2 and 2+, and
// both list the controller listener (ControllerApis.handleSaslHandshakeRequest,
// handleSaslAuthenticateRequest); ControllerRegistrationRequest.json
// declares validVersions 0 and flexibleVersions 0+, and lists the
// controller listener only (ControllerApis.handleControllerRegistration).
var beyondSchemaCopy = map[int16]APIVersion{
	KeyUpdateFeatures:         {Key: KeyUpdateFeatures, Name: "UpdateFeatures", Min: 0, Max: 2, FlexibleFrom: 0},
	KeySASLHandshake:          {Key: KeySASLHandshake, Name: "SaslHandshake", Min: 0, Max: 1, FlexibleFrom: 0x7fff},
	KeySASLAuthenticate:       {Key: KeySASLAuthenticate, Name: "SaslAuthenticate", Min: 0, Max: 2, FlexibleFrom: 2},
	KeyControllerRegistration: {Key: KeyControllerRegistration, Name: "ControllerRegistration", Min: 0, Max: 0, FlexibleFrom: 0},
}

// TestVersionTableMatchesKafkaSchemas checks every Kafka API of the version
// table against Kafka 4.3.1's JSON schemas: same key, request and response
// schemas present, our range inside validVersions, the same first flexible
// version, and served on the controller listener.
func TestVersionTableMatchesKafkaSchemas(t *testing.T) {
	dir := filepath.Join(sharedtest.Dir(t, "kafka-schemas"), "message")
	for _, api := range SupportedAPIs() {
		if api.Key >= 1000 {
			continue
		}
		if want, ok := beyondSchemaCopy[api.Key]; ok {
			t.Run(api.Name, func(t *testing.T) {
				if api != want {
					t.Errorf("row %+v, want %+v", api, want)
				}
			})
			continue
		}
		t.Run(api.Name, func(t *testing.T) {
			for _, kind := range []string{"Request", "Response"} {
				s := readSchema(t, dir, api.Name+kind)
				if s.APIKey == nil || *s.APIKey != api.Key {
					t.Errorf("%s%s.json apiKey = %v, want %d", api.Name, kind, s.APIKey, api.Key)
				}
				lo, hi := parseRange(t, s.ValidVersions)
				if api.Min < lo || api.Max > hi || api.Min > api.Max {
					t.Errorf("%s: our range %d-%d is not inside Kafka's %s", kind, api.Min, api.Max, s.ValidVersions)
				}
				if f := parseFlexible(t, s.FlexibleVersions); f != api.FlexibleFrom {
					t.Errorf("%s: flexible from %d, Kafka's flexibleVersions is %s", kind, api.FlexibleFrom, s.FlexibleVersions)
				}
				if kind == "Request" && s.LatestVersionUnstable != api.LatestUnstable {
					t.Errorf("LatestUnstable %v, Kafka's latestVersionUnstable is %v", api.LatestUnstable, s.LatestVersionUnstable)
				}
				if kind == "Request" && !slices.Contains(s.Listeners, "controller") {
					t.Errorf("Kafka does not serve %s on the controller listener (%v)", api.Name, s.Listeners)
				}
				// We serve Kafka's full range, except the documented Fetch floor.
				wantLo := lo
				if api.Key == KeyFetch {
					wantLo = 13
				}
				if api.Min != wantLo || api.Max != hi {
					t.Errorf("%s: range %d-%d, want %d-%d", kind, api.Min, api.Max, wantLo, hi)
				}
			}
		})
	}
}

// TestVersionTableMatchesKmsg checks that kmsg can decode every version we
// serve and agrees on flexibility, since DecodeRequest relies on it.
func TestVersionTableMatchesKmsg(t *testing.T) {
	for _, api := range SupportedAPIs() {
		req := newRequest(api.Key)
		if req.MaxVersion() < api.Max {
			t.Errorf("%s: kmsg max version %d < our max %d", api.Name, req.MaxVersion(), api.Max)
		}
		if api.Key < 1000 && !strings.EqualFold(kmsg.NameForKey(api.Key), api.Name) { // kmsg spells SASL in capitals
			t.Errorf("key %d: name %q, kmsg calls it %q", api.Key, api.Name, kmsg.NameForKey(api.Key))
		}
		for v := api.Min; v <= api.Max; v++ {
			req.SetVersion(v)
			if req.IsFlexible() != api.Flexible(v) {
				t.Errorf("%s v%d: kmsg flexible %v, table %v", api.Name, v, req.IsFlexible(), api.Flexible(v))
			}
		}
	}
}

func TestVersionTableShape(t *testing.T) {
	apis := SupportedAPIs()
	if !slices.IsSortedFunc(apis, func(a, b APIVersion) int { return int(a.Key) - int(b.Key) }) {
		t.Error("version table is not sorted by key")
	}
	want := map[string]string{
		"Fetch": "13-18", "ApiVersions": "0-4", "Vote": "0-2", "BeginQuorumEpoch": "0-1",
		"EndQuorumEpoch": "0-1", "DescribeQuorum": "0-2", "FetchSnapshot": "0-1",
		"DescribeCluster": "0-2", "AddRaftVoter": "0-1", "RemoveRaftVoter": "0-0",
		"UpdateRaftVoter": "0-0", "SubmitChange": "0-1", "MetadataFetch": "0-0", "UpdateFeatures": "0-2",
		"ReadImage": "0-0", "SaslHandshake": "0-1", "SaslAuthenticate": "0-2", "ControllerRegistration": "0-0",
	}
	got := map[string]string{}
	for _, a := range apis {
		got[a.Name] = fmt.Sprintf("%d-%d", a.Min, a.Max)
	}
	for name, r := range want {
		if got[name] != r {
			t.Errorf("%s: range %q, want %q", name, got[name], r)
		}
	}
	if len(got) != len(want) {
		t.Errorf("table has %d APIs, want %d", len(got), len(want))
	}
	apis[0].Max = 99 // the caller owns its copy
	if a, _ := LookupAPI(apis[0].Key); a.Max == 99 {
		t.Error("changing SupportedAPIs' result changed the table")
	}
	if _, ok := LookupAPI(0); ok {
		t.Error("LookupAPI(Produce) found a row")
	}
	for _, tc := range []struct{ key, version, req, resp int16 }{
		{KeyAPIVersions, 2, 1, 0}, {KeyAPIVersions, 3, 2, 0}, {KeyAPIVersions, 4, 2, 0},
		{KeyAPIVersions, 99, 2, 0}, {KeyAPIVersions, -1, 1, 0},
		{KeyBeginQuorumEpoch, 0, 1, 0}, {KeyBeginQuorumEpoch, 1, 2, 1},
		{KeyVote, 0, 2, 1}, {KeyFetch, 13, 2, 1}, {KeySubmitChange, 0, 2, 1}, {KeyReadImage, 0, 2, 1}, {0, 9, 1, 0},
	} {
		if got := RequestHeaderVersion(tc.key, tc.version); got != tc.req {
			t.Errorf("RequestHeaderVersion(%d, %d) = %d, want %d", tc.key, tc.version, got, tc.req)
		}
		if got := ResponseHeaderVersion(tc.key, tc.version); got != tc.resp {
			t.Errorf("ResponseHeaderVersion(%d, %d) = %d, want %d", tc.key, tc.version, got, tc.resp)
		}
	}
}
