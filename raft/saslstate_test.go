package raft

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// checkSASLRows fails unless an ApiVersions answer lists SaslHandshake
// 0–1 and SaslAuthenticate 0–2, each once.
func checkSASLRows(t *testing.T, resp *kmsg.ApiVersionsResponse) {
	t.Helper()
	want := map[int16]int16{wire.KeySASLHandshake: 1, wire.KeySASLAuthenticate: 2}
	seen := map[int16]int{}
	for _, k := range resp.ApiKeys {
		if hi, ok := want[k.ApiKey]; ok {
			seen[k.ApiKey]++
			if k.MinVersion != 0 || k.MaxVersion != hi {
				t.Errorf("ApiVersions lists key %d at %d-%d, want 0-%d", k.ApiKey, k.MinVersion, k.MaxVersion, hi)
			}
		}
	}
	for key := range want {
		if seen[key] != 1 {
			t.Errorf("ApiVersions lists key %d %d times, want once", key, seen[key])
		}
	}
}

// TestSASLListenerListsSASLOnce: before authentication a SASL listener's
// ApiVersions answer lists the SASL APIs once, from the version table.
func TestSASLListenerListsSASLOnce(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	saslNode(&cfg, SecuritySASLPlaintext)
	c := startNode(t, cfg)
	resp, err := apiVersionsOn(t, dialRaw(t, c.Addr()).nc)
	if err != nil {
		t.Fatal(err)
	}
	checkSASLRows(t, resp)
}

// TestPlaintextListenerAnswersSASLRequests: a controller lists
// SaslHandshake v0–1 and SaslAuthenticate v0–2 in ApiVersions on every
// listener, and a PLAINTEXT listener answers both with ILLEGAL_SASL_STATE
// (no mechanisms; SaslAuthenticate with Kafka's message) and keeps the
// connection open, as Kafka's ControllerApis.handleSaslHandshakeRequest
// and handleSaslAuthenticateRequest do.
func TestPlaintextListenerAnswersSASLRequests(t *testing.T) {
	c := startNode(t, ForTests(1, t.TempDir()))
	conn := dialRaw(t, c.Addr())

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	checkSASLRows(t, conn.call(1, av).(*kmsg.ApiVersionsResponse))

	for v := int16(0); v <= 1; v++ {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(v)
		hs.Mechanism = "PLAIN"
		resp := conn.call(2+int32(v), hs).(*kmsg.SASLHandshakeResponse)
		if resp.ErrorCode != kerr.IllegalSaslState.Code || len(resp.SupportedMechanisms) != 0 {
			t.Errorf("SaslHandshake v%d = %+v, want ILLEGAL_SASL_STATE and no mechanisms", v, resp)
		}
	}
	for v := int16(0); v <= 2; v++ {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(v)
		auth.SASLAuthBytes = []byte("\x00alice\x00secret")
		resp := conn.call(10+int32(v), auth).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != kerr.IllegalSaslState.Code || resp.ErrorMessage == nil ||
			*resp.ErrorMessage != "SaslAuthenticate request received after successful authentication" {
			t.Errorf("SaslAuthenticate v%d = %+v, want ILLEGAL_SASL_STATE with Kafka's message", v, resp)
		}
	}
	// Still open and served.
	if resp := conn.call(20, describeQuorumRequest()).(*kmsg.DescribeQuorumResponse); resp.ErrorCode != 0 {
		t.Errorf("DescribeQuorum after the SASL requests: error %d", resp.ErrorCode)
	}
}
