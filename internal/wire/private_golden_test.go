package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/krabka-go/krabka/internal/kbin"
	"github.com/krabka-go/krabka/metadata"
)

// TestPrivateGoldenDecode decodes the byte-exact encodings that
// TestPrivateGoldenBytes pins back into the messages they encode, and
// checks that a decoded message re-encodes to the same bytes, with bytes
// appended after the message and an unknown tagged field in every tag
// section, which decoding ignores.
func TestPrivateGoldenDecode(t *testing.T) {
	fresh := map[string]func() privateMsg{
		"SubmitChangeRequest":             func() privateMsg { return NewSubmitChangeRequest() },
		"SubmitChangeResponse":            func() privateMsg { return NewSubmitChangeResponse() },
		"MetadataFetchRequest":            func() privateMsg { return NewMetadataFetchRequest() },
		"MetadataFetchResponse":           func() privateMsg { return NewMetadataFetchResponse() },
		"ReadImageRequest":                func() privateMsg { return NewReadImageRequest() },
		"ReadImageRequest empty":          func() privateMsg { return NewReadImageRequest() },
		"ReadImageResponse":               func() privateMsg { return NewReadImageResponse() },
		"SubmitChangeRequest one":         func() privateMsg { return NewSubmitChangeRequest() },
		"SubmitChangeRequest v1":          submitChangeV1,
		"SubmitChangeRequest v1 no token": submitChangeV1,
	}
	cases := append(privateGoldenCases(), readImageGolden()...)
	cases = append(cases, goldenCase{
		name: "SubmitChangeRequest one",
		msg:  &SubmitChangeRequest{Records: [][]byte{{7}}},
		want: []byte{0x02, 0x02, 7, 0x00},
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.msg.AppendTo(nil); !bytes.Equal(got, tc.want) {
				t.Fatalf("AppendTo = % x\nwant       % x", got, tc.want)
			}
			got := fresh[tc.name]()
			if err := got.ReadFrom(tc.want); err != nil {
				t.Fatalf("ReadFrom(% x): %v", tc.want, err)
			}
			if diff := cmp.Diff(tc.msg, got, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(SubmitChangeRequest{})); diff != "" {
				t.Fatalf("decoded (-want +got):\n%s", diff)
			}
			if again := got.AppendTo(nil); !bytes.Equal(again, tc.want) {
				t.Fatalf("re-encoding = % x\nwant          % x", again, tc.want)
			}
			trailing := append(append([]byte(nil), tc.want...), 0xde, 0xad)
			if err := fresh[tc.name]().ReadFrom(trailing); err != nil {
				t.Errorf("ReadFrom with trailing bytes: %v", err)
			}
			// The last byte is the message's empty tag section: give it one
			// unknown tag (tag 9, two bytes of payload).
			tagged := append(append([]byte(nil), tc.want[:len(tc.want)-1]...), 0x01, 0x09, 0x02, 0xbe, 0xef)
			withTag := fresh[tc.name]()
			if err := withTag.ReadFrom(tagged); err != nil {
				t.Fatalf("ReadFrom with an unknown tag: %v", err)
			}
			if again := withTag.AppendTo(nil); !bytes.Equal(again, tc.want) {
				t.Errorf("re-encoding after an unknown tag = % x\nwant                            % x", again, tc.want)
			}
		})
	}
}

// TestPrivateDecodeAliasesFrame: the byte fields of decoded private
// messages are views of the frame, not copies.
func TestPrivateDecodeAliasesFrame(t *testing.T) {
	sc := NewSubmitChangeRequest()
	frame := []byte{0x02, 0x03, 7, 8, 0x00}
	if err := sc.ReadFrom(frame); err != nil {
		t.Fatal(err)
	}
	if &sc.Records[0][0] != &frame[2] {
		t.Error("SubmitChangeRequest record is a copy of the frame")
	}
	mf := NewMetadataFetchResponse()
	enc := (&MetadataFetchResponse{Records: []byte{1, 2, 3}}).AppendTo(nil)
	if err := mf.ReadFrom(enc); err != nil {
		t.Fatal(err)
	}
	if &mf.Records[0] != &enc[len(enc)-4] {
		t.Error("MetadataFetchResponse records are a copy of the frame")
	}
}

// submitChangeV1 is an empty SubmitChangeRequest at version 1.
func submitChangeV1() privateMsg {
	m := NewSubmitChangeRequest()
	m.SetVersion(1)
	return m
}

// TestPrivateEncodeAtUnknownVersionPanics: a private message set to a
// version it does not have is a caller's bug that AppendTo reports by
// panicking with an *UnsupportedVersionError, and ReadFrom by returning
// one.
func TestPrivateEncodeAtUnknownVersionPanics(t *testing.T) {
	for _, fresh := range privateKinds {
		m := fresh().(interface {
			privateMsg
			SetVersion(int16)
			MaxVersion() int16
		})
		v := m.MaxVersion() + 1
		m.SetVersion(v)
		func() {
			defer func() {
				if _, ok := recover().(*UnsupportedVersionError); !ok {
					t.Errorf("%T.AppendTo at version %d did not panic with an *UnsupportedVersionError", m, v)
				}
			}()
			m.AppendTo(nil)
		}()
		var uv *UnsupportedVersionError
		if err := m.ReadFrom([]byte{0}); !errors.As(err, &uv) || uv.Version != v {
			t.Errorf("%T.ReadFrom at version %d = %v, want an *UnsupportedVersionError", m, v, err)
		}
	}
}

// TestPrivateDecodeErrorIsShared: a malformed private message is a
// *DecodeError naming the message and field, the type the metadata and
// control codecs return.
func TestPrivateDecodeErrorIsShared(t *testing.T) {
	err := NewSubmitChangeResponse().ReadFrom([]byte{0, 6, 0x02, 0xff})
	var de *metadata.DecodeError
	if !errors.As(err, &de) || de.Message != "SubmitChangeResponse" || de.Field != "ErrorMessage" || !errors.Is(err, kbin.ErrInvalid) {
		t.Fatalf("ReadFrom(non-UTF-8 message) = %v, want a DecodeError for SubmitChangeResponse.ErrorMessage", err)
	}
}
