package wire

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNoUnstableVersionsInKafka431Table says what
// unstable.api.versions.enable does with our version table: nothing.
// Kafka 4.3.1 marks none of the APIs a controller listener serves
// latestVersionUnstable (TestVersionTableMatchesKafkaSchemas compares
// the flag with every schema), so with the flag on or off a Kafka 4.3.1
// controller advertises and serves the same versions, and so do we.
func TestNoUnstableVersionsInKafka431Table(t *testing.T) {
	for _, a := range SupportedAPIs() {
		if a.LatestUnstable {
			t.Errorf("%s v%d is marked unstable", a.Name, a.Max)
		}
		if a.MaxEnabled(false) != a.Max || a.MaxEnabled(true) != a.Max {
			t.Errorf("%s: MaxEnabled = %d / %d, want %d both ways", a.Name, a.MaxEnabled(false), a.MaxEnabled(true), a.Max)
		}
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
	off := AnswerAPIVersions(req, FeatureState{})
	on := AnswerAPIVersions(req, FeatureState{UnstableAPIVersions: true})
	if len(off.ApiKeys) != len(on.ApiKeys) {
		t.Fatalf("%d rows without unstable versions, %d with", len(off.ApiKeys), len(on.ApiKeys))
	}
	for i := range off.ApiKeys {
		o, n := off.ApiKeys[i], on.ApiKeys[i]
		if o.ApiKey != n.ApiKey || o.MinVersion != n.MinVersion || o.MaxVersion != n.MaxVersion {
			t.Errorf("row %d: %+v without unstable versions, %+v with", i, off.ApiKeys[i], on.ApiKeys[i])
		}
	}
}

// TestUnstableVersionIsGated checks the gate itself on a row whose
// newest version is unstable, as Kafka's ApiKeys.latestVersion and
// isVersionEnabled treat it.
func TestUnstableVersionIsGated(t *testing.T) {
	a := APIVersion{Key: 99, Name: "X", Min: 0, Max: 3, LatestUnstable: true}
	for _, tc := range []struct {
		v        int16
		unstable bool
		want     bool
	}{{2, false, true}, {3, false, false}, {3, true, true}, {4, true, false}, {-1, true, false}} {
		if got := a.Enabled(tc.v, tc.unstable); got != tc.want {
			t.Errorf("Enabled(%d, %v) = %v, want %v", tc.v, tc.unstable, got, tc.want)
		}
	}
	if a.MaxEnabled(false) != 2 || a.MaxEnabled(true) != 3 {
		t.Errorf("MaxEnabled = %d / %d, want 2 / 3", a.MaxEnabled(false), a.MaxEnabled(true))
	}
}

// TestDecoderCarriesTheFlag checks that the Decoder decides with its
// own UnstableAPIVersions: a version outside the enabled range closes
// the connection either way, and an ApiVersions request above it is
// answered at v0 with the range the flag allows.
func TestDecoderCarriesTheFlag(t *testing.T) {
	frame := func(key, version int16) []byte {
		b := make([]byte, 11) // header v2: empty tagged fields last
		binary.BigEndian.PutUint16(b, uint16(key))
		binary.BigEndian.PutUint16(b[2:], uint16(version))
		binary.BigEndian.PutUint32(b[4:], 7)
		binary.BigEndian.PutUint16(b[8:], 0xffff) // null client id
		return b
	}
	vote, _ := LookupAPI(KeyVote)
	for _, unstable := range []bool{false, true} {
		d := Decoder{UnstableAPIVersions: unstable}
		var req Request
		err := d.Decode(frame(KeyVote, vote.Max+1), &req)
		var re *RequestError
		if !errors.As(err, &re) || !re.Close || re.Kind != ErrUnsupportedVersion {
			t.Errorf("unstable=%v: Vote v%d = %v, want a closing unsupported version", unstable, vote.Max+1, err)
		}
		err = d.Decode(frame(KeyAPIVersions, 99), &req)
		if !errors.As(err, &re) || re.Close || re.Answer == nil {
			t.Fatalf("unstable=%v: ApiVersions v99 = %v, want an answer", unstable, err)
		}
		av := re.Answer.(*kmsg.ApiVersionsResponse)
		if len(av.ApiKeys) != 1 || av.ApiKeys[0].MaxVersion != 4 {
			t.Errorf("unstable=%v: answer rows %+v", unstable, av.ApiKeys)
		}
	}
}
