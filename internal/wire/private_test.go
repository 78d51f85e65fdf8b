package wire

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

func strp(s string) *string { return &s }

// goldenCase is one byte-exact encoding of a private message.
type goldenCase struct {
	name string
	msg  privateMsg
	want []byte
}

// TestPrivateGoldenBytes pins the layouts documented in
// docs/wire.md, byte for byte.
func TestPrivateGoldenBytes(t *testing.T) {
	for _, tc := range append(privateGoldenCases(), readImageGolden()...) {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.msg.AppendTo(nil)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("AppendTo = % x\nwant       % x", got, tc.want)
			}
		})
	}
}

// privateGoldenCases holds the byte-exact SubmitChange and MetadataFetch
// encodings of docs/wire.md.
func privateGoldenCases() []goldenCase {
	dir := [16]byte{0: 0xaa, 15: 0xbb}
	return []goldenCase{
		{
			name: "SubmitChangeRequest",
			msg:  &SubmitChangeRequest{Records: [][]byte{{0x01, 0x0c, 0x00}, {}}},
			want: []byte{
				0x03,                   // Records: compact array, 2 elements
				0x04, 0x01, 0x0c, 0x00, // record 0: compact bytes, 3 bytes
				0x01, // record 1: empty
				0x00, // tagged fields
			},
		},
		{
			name: "SubmitChangeRequest v1",
			msg: &SubmitChangeRequest{Version: 1, Records: [][]byte{{0x01}}, Condition: 2, UnchangedSince: 258,
				TokenID: strp("t1"), Token: []byte{0x07}},
			want: []byte{
				0x02,       // Records: compact array, 1 element
				0x02, 0x01, // record 0: compact bytes, 1 byte
				0x02,                   // Condition
				0, 0, 0, 0, 0, 0, 1, 2, // UnchangedSince
				0x03, 't', '1', // TokenId: compact nullable string
				0x02, 0x07, // Token: compact nullable bytes, 1 byte
				0x00, // tagged fields
			},
		},
		{
			name: "SubmitChangeRequest v1 no token",
			msg:  &SubmitChangeRequest{Version: 1, Records: [][]byte{{0x01}}},
			want: []byte{
				0x02, 0x02, 0x01, // Records
				0x00,                   // Condition
				0, 0, 0, 0, 0, 0, 0, 0, // UnchangedSince
				0x00, // TokenId: null
				0x00, // Token: null
				0x00, // tagged fields
			},
		},
		{
			name: "SubmitChangeResponse",
			msg: &SubmitChangeResponse{ErrorCode: 6, ErrorMessage: strp("no"), LeaderID: 2, LeaderEpoch: 7,
				BaseOffset: -1, Epoch: -1},
			want: []byte{
				0x00, 0x06, // ErrorCode
				0x03, 'n', 'o', // ErrorMessage
				0x00, 0x00, 0x00, 0x02, // LeaderId
				0x00, 0x00, 0x00, 0x07, // LeaderEpoch
				0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // BaseOffset
				0xff, 0xff, 0xff, 0xff, // Epoch
				0x00, // tagged fields
			},
		},
		{
			name: "MetadataFetchRequest",
			msg:  &MetadataFetchRequest{FetchOffset: 258, MaxBytes: 1 << 20, ReplicaID: 3, ReplicaDirectoryID: dir},
			want: append(append([]byte{
				0, 0, 0, 0, 0, 0, 1, 2, // FetchOffset
				0x00, 0x10, 0x00, 0x00, // MaxBytes
				0x00, 0x00, 0x00, 0x03, // ReplicaId
			}, dir[:]...), 0x00),
		},
		{
			name: "MetadataFetchResponse",
			msg: &MetadataFetchResponse{LeaderID: 1, LeaderEpoch: 4, LogStartOffset: 0, HighWatermark: 10,
				SnapshotID: MetadataFetchResponseSnapshotID{EndOffset: -1, Epoch: -1}, Records: []byte{9, 9}},
			want: []byte{
				0x00, 0x00, // ErrorCode
				0x00, 0x00, 0x00, 0x01, // LeaderId
				0x00, 0x00, 0x00, 0x04, // LeaderEpoch
				0, 0, 0, 0, 0, 0, 0, 0, // LogStartOffset
				0, 0, 0, 0, 0, 0, 0, 10, // HighWatermark
				0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // SnapshotId.EndOffset
				0xff, 0xff, 0xff, 0xff, // SnapshotId.Epoch
				0x00,       // SnapshotId tagged fields
				0x03, 9, 9, // Records
				0x00, // tagged fields
			},
		},
	}
}

func TestPrivateDefaults(t *testing.T) {
	if r := NewMetadataFetchResponse(); r.SnapshotID != (MetadataFetchResponseSnapshotID{-1, -1}) || r.LeaderID != -1 || r.HighWatermark != -1 {
		t.Errorf("NewMetadataFetchResponse() = %+v, want -1 defaults", r)
	}
	if r := NewSubmitChangeResponse(); r.LeaderID != -1 || r.LeaderEpoch != -1 || r.BaseOffset != -1 || r.Epoch != -1 {
		t.Errorf("NewSubmitChangeResponse() = %+v, want -1 defaults", r)
	}
	if r := NewMetadataFetchRequest(); r.ReplicaID != -1 {
		t.Errorf("NewMetadataFetchRequest() = %+v, want replica id -1", r)
	}
	// Requests and responses name each other at the same version.
	var sc kmsg.Request = NewSubmitChangeRequest()
	if resp := sc.ResponseKind(); resp.Key() != KeySubmitChange || resp.RequestKind().Key() != KeySubmitChange {
		t.Error("SubmitChange kinds do not pair up")
	}
	var mf kmsg.Request = NewMetadataFetchRequest()
	if resp := mf.ResponseKind(); resp.Key() != KeyMetadataFetch || resp.RequestKind().Key() != KeyMetadataFetch {
		t.Error("MetadataFetch kinds do not pair up")
	}
}

func TestPrivateDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  kmsg.Request
		in   []byte
	}{
		{"SubmitChange null records", NewSubmitChangeRequest(), []byte{0x00, 0x00}},
		{"SubmitChange record count beyond input", NewSubmitChangeRequest(), []byte{0x7f, 0x01, 0x00}},
		{"SubmitChange null record", NewSubmitChangeRequest(), []byte{0x02, 0x00, 0x00}},
		{"SubmitChange record longer than input", NewSubmitChangeRequest(), []byte{0x02, 0x09, 0x01, 0x00}},
		{"SubmitChange huge varint", NewSubmitChangeRequest(), []byte{0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"SubmitChange non-minimal varint", NewSubmitChangeRequest(), []byte{0x81, 0x00, 0x00}},
		{"SubmitChange missing tags", NewSubmitChangeRequest(), []byte{0x01}},
		{"SubmitChange tags out of order", NewSubmitChangeRequest(), []byte{0x01, 0x02, 0x05, 0x00, 0x03, 0x00}},
		{"MetadataFetch truncated", NewMetadataFetchRequest(), make([]byte, 31)},
		{"MetadataFetch tag longer than input", NewMetadataFetchRequest(), append(make([]byte, 32), 1, 0, 5, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.msg.ReadFrom(tc.in); err == nil {
				t.Errorf("ReadFrom(% x) succeeded, want an error", tc.in)
			}
		})
	}
	for _, m := range []interface {
		SetVersion(int16)
		ReadFrom([]byte) error
	}{NewSubmitChangeRequest(), NewSubmitChangeResponse(), NewMetadataFetchRequest(), NewMetadataFetchResponse(),
		NewReadImageRequest(), NewReadImageResponse()} {
		m.SetVersion(1)
		if err := m.ReadFrom(nil); err == nil {
			t.Errorf("%T.ReadFrom at version 1 succeeded", m)
		}
	}
	// The response decoders reject what the request decoders reject.
	bad := []byte{0, 6, 0x05, 'a'}
	if err := NewSubmitChangeResponse().ReadFrom(bad); err == nil {
		t.Error("SubmitChangeResponse with a truncated message decoded")
	}
	if err := NewSubmitChangeResponse().ReadFrom(append([]byte{0, 6, 0x02, 0xff}, make([]byte, 21)...)); err == nil {
		t.Error("SubmitChangeResponse with a non-UTF-8 message decoded")
	}
}

// TestPrivateThroughFrames sends the private requests through the request
// framing and DecodeRequest, like any Kafka request.
func TestPrivateThroughFrames(t *testing.T) {
	for _, req := range []kmsg.Request{
		&SubmitChangeRequest{Records: [][]byte{{1, 2, 3}}},
		&MetadataFetchRequest{FetchOffset: 5, MaxBytes: 100, ReplicaID: -1},
	} {
		frame, err := AppendRequest(nil, 17, strp("raft-client-1"), req)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := DecodeRequest(frame[4:])
		if err != nil {
			t.Fatalf("DecodeRequest(%T): %v", req, err)
		}
		if dec.Header.Version != 2 || dec.Header.ClientID != "raft-client-1" {
			t.Errorf("header = %+v, want v2 with the client id", dec.Header)
		}
		if diff := cmp.Diff(req, dec.Body, cmpopts.IgnoreUnexported(SubmitChangeRequest{})); diff != "" {
			t.Errorf("%T (-sent +decoded):\n%s", req, diff)
		}
	}
}

func genSubmitChangeRequest(t *rapid.T) *SubmitChangeRequest {
	return &SubmitChangeRequest{Records: rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 0, 40), 0, 8).Draw(t, "records")}
}

func genSubmitChangeResponse(t *rapid.T) *SubmitChangeResponse {
	return &SubmitChangeResponse{
		ErrorCode:    rapid.Int16().Draw(t, "code"),
		ErrorMessage: rapid.Ptr(rapid.String(), true).Draw(t, "message"),
		LeaderID:     rapid.Int32().Draw(t, "leader"),
		LeaderEpoch:  rapid.Int32().Draw(t, "leaderEpoch"),
		BaseOffset:   rapid.Int64().Draw(t, "baseOffset"),
		Epoch:        rapid.Int32().Draw(t, "epoch"),
	}
}

func genMetadataFetchRequest(t *rapid.T) *MetadataFetchRequest {
	var dir [16]byte
	copy(dir[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "dir"))
	return &MetadataFetchRequest{
		FetchOffset:        rapid.Int64().Draw(t, "offset"),
		MaxBytes:           rapid.Int32().Draw(t, "maxBytes"),
		ReplicaID:          rapid.Int32().Draw(t, "replica"),
		ReplicaDirectoryID: dir,
	}
}

func genMetadataFetchResponse(t *rapid.T) *MetadataFetchResponse {
	var records []byte
	if rapid.Bool().Draw(t, "hasRecords") {
		records = rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "records")
	}
	return &MetadataFetchResponse{
		ErrorCode:      rapid.Int16().Draw(t, "code"),
		LeaderID:       rapid.Int32().Draw(t, "leader"),
		LeaderEpoch:    rapid.Int32().Draw(t, "leaderEpoch"),
		LogStartOffset: rapid.Int64().Draw(t, "logStart"),
		HighWatermark:  rapid.Int64().Draw(t, "hwm"),
		SnapshotID:     MetadataFetchResponseSnapshotID{rapid.Int64().Draw(t, "snapOffset"), rapid.Int32().Draw(t, "snapEpoch")},
		Records:        records,
	}
}

// privateMsg is what the property below needs of a private message.
type privateMsg interface {
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
}

// TestPrivateRoundTripProperty: for every generated message, decoding its
// encoding gives it back, and encoding again gives the same bytes.
func TestPrivateRoundTripProperty(t *testing.T) {
	gens := map[string]struct {
		gen   func(*rapid.T) privateMsg
		fresh func() privateMsg
	}{
		"SubmitChangeRequest": {func(t *rapid.T) privateMsg { return genSubmitChangeRequest(t) },
			func() privateMsg { return NewSubmitChangeRequest() }},
		"SubmitChangeResponse": {func(t *rapid.T) privateMsg { return genSubmitChangeResponse(t) },
			func() privateMsg { return NewSubmitChangeResponse() }},
		"MetadataFetchRequest": {func(t *rapid.T) privateMsg { return genMetadataFetchRequest(t) },
			func() privateMsg { return NewMetadataFetchRequest() }},
		"MetadataFetchResponse": {func(t *rapid.T) privateMsg { return genMetadataFetchResponse(t) },
			func() privateMsg { return NewMetadataFetchResponse() }},
		"ReadImageRequest": {func(t *rapid.T) privateMsg { return genReadImageRequest(t) },
			func() privateMsg { return NewReadImageRequest() }},
		"ReadImageResponse": {func(t *rapid.T) privateMsg { return genReadImageResponse(t) },
			func() privateMsg { return NewReadImageResponse() }},
	}
	for name, g := range gens {
		t.Run(name, rapid.MakeCheck(func(t *rapid.T) {
			m := g.gen(t)
			if r, ok := m.(*SubmitChangeResponse); ok && r.ErrorMessage != nil && !utf8.ValidString(*r.ErrorMessage) {
				t.Skip("error messages are UTF-8 by definition")
			}
			enc := m.AppendTo(nil)
			got := g.fresh()
			if err := got.ReadFrom(enc); err != nil {
				t.Fatalf("ReadFrom(AppendTo(%+v)): %v", m, err)
			}
			if diff := cmp.Diff(m, got, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(SubmitChangeRequest{})); diff != "" {
				t.Fatalf("round trip (-sent +decoded):\n%s", diff)
			}
			if again := got.AppendTo(nil); !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding differs:\n% x\n% x", enc, again)
			}
			// Every strict prefix fails to decode: no field is optional.
			n := rapid.IntRange(0, len(enc)-1).Draw(t, "cut")
			if err := g.fresh().ReadFrom(enc[:n]); err == nil {
				t.Fatalf("prefix of %d/%d bytes decoded", n, len(enc))
			}
		}))
	}
}
