package metadata

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hexBytes parses hex digits, ignoring spaces and "|" separators, and
// quoted ASCII runs ("abc").
func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for s != "" {
		s = strings.TrimLeft(s, " |\n\t")
		if s == "" {
			break
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			out = append(out, s[1:end+1]...)
			s = s[end+2:]
			continue
		}
		b, err := hex.DecodeString(s[:2])
		if err != nil {
			t.Fatalf("bad hex %q: %v", s[:2], err)
		}
		out = append(out, b...)
		s = s[2:]
	}
	return out
}

func uuidSeq(start byte) [16]byte {
	var u [16]byte
	for i := range u {
		u[i] = start + byte(i)
	}
	return u
}

const seq01 = "01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10"

// TestGolden checks encodings derived by hand from Kafka's schemas
// (framed as Kafka's AbstractApiMessageSerde frames a metadata record).
func TestGolden(t *testing.T) {
	rack := "rack-a"
	tests := []struct {
		name string
		rec  Record
		hex  string
	}{
		{
			name: "NoOpRecord v0",
			rec:  &NoOpRecord{},
			hex:  "01 14 00 | 00",
		},
		{
			name: "FeatureLevelRecord v0 metadata.version=30",
			rec:  &FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 30},
			hex:  `01 0c 00 | 11 "metadata.version" | 00 1e | 00`,
		},
		{
			name: "TopicRecord v0",
			rec:  &TopicRecord{Name: "foo", TopicId: uuidSeq(1)},
			hex:  `01 02 00 | 04 "foo" | ` + seq01 + ` | 00`,
		},
		{
			name: "PartitionRecord v0",
			rec: &PartitionRecord{PartitionId: 3, TopicId: uuidSeq(1), Replicas: []int32{1, 2},
				Isr: []int32{1}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7},
			hex: `01 03 00 | 00000003 | ` + seq01 + ` | 03 00000001 00000002 | 02 00000001 | 01 | 01 |
				00000001 | 00000005 | 00000007 | 00`,
		},
		{
			name: "PartitionRecord v0 with tagged LeaderRecoveryState",
			rec: &PartitionRecord{PartitionId: 0, TopicId: uuidSeq(1), Leader: -1, LeaderEpoch: 0,
				PartitionEpoch: 0, LeaderRecoveryState: 1},
			hex: `01 03 00 | 00000000 | ` + seq01 + ` | 01 | 01 | 01 | 01 |
				ffffffff | 00000000 | 00000000 | 01 00 01 01`,
		},
		{
			name: "PartitionChangeRecord v0 leader and isr",
			rec:  &PartitionChangeRecord{PartitionId: 2, TopicId: uuidSeq(1), Isr: []int32{1, 2}, Leader: 2, LeaderRecoveryState: -1},
			hex:  `01 05 00 | 00000002 | ` + seq01 + ` | 02 | 00 09 03 00000001 00000002 | 01 04 00000002`,
		},
		{
			name: "RegisterBrokerRecord v3",
			rec: &RegisterBrokerRecord{Version: 3, BrokerId: 1, IncarnationId: uuidSeq(1), BrokerEpoch: 8,
				EndPoints: []RegisterBrokerRecordBrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: 0}},
				Features:  []RegisterBrokerRecordBrokerFeature{{Name: "metadata.version", MinSupportedVersion: 1, MaxSupportedVersion: 21}},
				Rack:      &rack, Fenced: true, LogDirs: [][16]byte{uuidSeq(0x11)}},
			hex: `01 00 03 | 00000001 | 00 | ` + seq01 + ` | 0000000000000008 |
				02 | 0a "PLAINTEXT" 0a "localhost" 2384 0000 00 |
				02 | 11 "metadata.version" 0001 0015 00 |
				07 "rack-a" | 01 | 00 |
				01 00 11 02 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := hexBytes(t, tc.hex)
			got, err := Encode(tc.rec)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode =\n%x\nwant\n%x", got, want)
			}
			dec, err := Decode(want)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.rec, dec); diff != "" {
				t.Fatalf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
