package control

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krabka-go/krabka/internal/kbin"
)

func unhex(t *testing.T, s string) []byte {
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
			t.Fatalf("bad hex %q", s[:2])
		}
		out = append(out, b...)
		s = s[2:]
	}
	return out
}

// TestGolden checks values derived by hand from the schemas; the
// LeaderChange value is for leader 1, voters {1,2,3} and granting voters
// {1,2}; the KRaftVersion value is for level 1.
func TestGolden(t *testing.T) {
	var dir [16]byte
	for i := range dir {
		dir[i] = byte(0xa0 + i)
	}
	tests := []struct {
		name  string
		msg   Message
		key   string
		value string
	}{
		{
			name: "LeaderChange leader 1 voters 1,2,3 granting 1,2",
			msg: &LeaderChangeMessage{LeaderId: 1,
				Voters:         []LeaderChangeMessageVoter{{VoterId: 1}, {VoterId: 2}, {VoterId: 3}},
				GrantingVoters: []LeaderChangeMessageVoter{{VoterId: 1}, {VoterId: 2}}},
			key:   "0000 0002",
			value: "0000 00000001 04 00000001 00 00000002 00 00000003 00 03 00000001 00 00000002 00 00",
		},
		{
			name:  "KRaftVersion 1",
			msg:   &KRaftVersionRecord{KRaftVersion: 1},
			key:   "0000 0005",
			value: "00 00 00 01 00",
		},
		{
			name:  "SnapshotHeader",
			msg:   &SnapshotHeaderRecord{LastContainedLogTimestamp: 0x0102030405},
			key:   "0000 0003",
			value: "0000 0000000102030405 00",
		},
		{
			name:  "SnapshotFooter",
			msg:   &SnapshotFooterRecord{},
			key:   "0000 0004",
			value: "0000 00",
		},
		{
			name: "Voters one voter",
			msg: &VotersRecord{Voters: []VotersRecordVoter{{VoterId: 1, VoterDirectoryId: dir,
				Endpoints:           []VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}},
				KRaftVersionFeature: VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1}}}},
			key: "0000 0006",
			value: `0000 | 02 | 00000001 | a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af |
				02 0b "CONTROLLER" 0a "localhost" 2385 00 | 0000 0001 00 | 00 | 00`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantKey, wantValue := unhex(t, tc.key), unhex(t, tc.value)
			key, value, err := Encode(tc.msg)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(key, wantKey) || !bytes.Equal(value, wantValue) {
				t.Fatalf("Encode = %x / %x, want %x / %x", key, value, wantKey, wantValue)
			}
			got, err := Decode(wantKey, wantValue)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.msg, got); diff != "" {
				t.Fatalf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	kv := unhex(t, "00 00 00 01 00")
	tests := []struct {
		name      string
		key, val  []byte
		is        error
		wantInMsg string
	}{
		{"short key", []byte{0, 0, 5}, kv, ErrInvalidKey, "key of 3 bytes"},
		{"empty key", nil, kv, ErrInvalidKey, "key of 0 bytes"},
		{"negative key version", []byte{0xff, 0xff, 0, 5}, kv, ErrInvalidKey, "key version -1"},
		{"abort marker", []byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0}, ErrTransactionMarker, "transaction marker ABORT"},
		{"commit marker", []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 0}, ErrTransactionMarker, "transaction marker COMMIT"},
		{"unknown type", []byte{0, 0, 0, 7}, nil, ErrUnknownType, "unknown control record type 7"},
		{"negative type", []byte{0, 0, 0x80, 0}, nil, ErrUnknownType, "type -32768"},
		{"truncated value", []byte{0, 0, 0, 5}, kv[:3], kbin.ErrTruncated, "KRaftVersion"},
		{"trailing bytes", []byte{0, 0, 0, 5}, append(append([]byte{}, kv...), 0), kbin.ErrInvalid, "trailing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.key, tc.val)
			if !errors.Is(err, tc.is) {
				t.Fatalf("Decode error = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Fatalf("Decode error %q does not mention %q", err, tc.wantInMsg)
			}
		})
	}
	var ut *UnknownTypeError
	if _, err := Decode([]byte{0, 0, 0, 9}, nil); !errors.As(err, &ut) || ut.Type != 9 {
		t.Fatalf("Decode(type 9) = %v, want *UnknownTypeError{9}", err)
	}
}

// TestNewerKeyVersion follows Kafka: a key version above 0 is read as 0,
// and bytes after the type are ignored.
func TestNewerKeyVersion(t *testing.T) {
	msg, err := Decode([]byte{0, 1, 0, 5, 0xff}, []byte{0, 0, 0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if kv, ok := msg.(*KRaftVersionRecord); !ok || kv.KRaftVersion != 1 {
		t.Fatalf("Decode = %#v, want KRaftVersionRecord{KRaftVersion: 1}", msg)
	}
}

// TestEncodeVersionRule checks Kafka's rule that a field the version lacks
// must hold its default: VoterDirectoryId exists from LeaderChange v1 only,
// and control values are written at version 0.
func TestEncodeVersionRule(t *testing.T) {
	msg := &LeaderChangeMessage{LeaderId: 1, Voters: []LeaderChangeMessageVoter{{VoterId: 1, VoterDirectoryId: [16]byte{1}}}}
	_, _, err := Encode(msg)
	var ee *EncodeError
	if !errors.As(err, &ee) || ee.Field != "Voters[0].VoterDirectoryId" || ee.Version != 0 {
		t.Fatalf("Encode = %v, want *EncodeError for Voters[0].VoterDirectoryId at v0", err)
	}
	b, err := msg.AppendTo(nil, 1)
	if err != nil {
		t.Fatalf("AppendTo v1: %v", err)
	}
	var back LeaderChangeMessage
	if err := back.DecodeFrom(b, 1); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msg, &back); diff != "" {
		t.Fatalf("v1 round trip (-want +got):\n%s", diff)
	}
}

func TestTypeString(t *testing.T) {
	for ty, want := range map[Type]string{Abort: "ABORT", Commit: "COMMIT", LeaderChange: "LEADER_CHANGE",
		SnapshotHeader: "SNAPSHOT_HEADER", SnapshotFooter: "SNAPSHOT_FOOTER", KRaftVersion: "KRAFT_VERSION",
		KRaftVoters: "KRAFT_VOTERS", 42: "UNKNOWN(42)"} {
		if got := ty.String(); got != want {
			t.Errorf("Type(%d).String() = %q, want %q", int16(ty), got, want)
		}
	}
}
