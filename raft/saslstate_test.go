package raft

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

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
	versions := conn.call(1, av).(*kmsg.ApiVersionsResponse)
	want := map[int16]int16{wire.KeySASLHandshake: 1, wire.KeySASLAuthenticate: 2}
	for _, k := range versions.ApiKeys {
		if max, ok := want[k.ApiKey]; ok {
			if k.MinVersion != 0 || k.MaxVersion != max {
				t.Errorf("ApiVersions lists key %d at %d-%d, want 0-%d", k.ApiKey, k.MinVersion, k.MaxVersion, max)
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) != 0 {
		t.Errorf("ApiVersions lacks %v", want)
	}

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
