package genrt_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/krabka-go/krabka/internal/codegen/genrt"
	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kbin"
	"github.com/krabka-go/krabka/metadata"
)

// TestDecodeErrorIsOneTypeAcrossPackages decodes truncated messages of
// two generated packages and checks that one errors.As target of each
// package's DecodeError matches both errors.
func TestDecodeErrorIsOneTypeAcrossPackages(t *testing.T) {
	var leader control.LeaderChangeMessage
	controlErr := leader.DecodeFrom([]byte{0, 0}, 0)
	var topic metadata.TopicRecord
	metadataErr := topic.DecodeFrom([]byte{0x05, 'a'}, 0)
	for name, err := range map[string]error{"control": controlErr, "metadata": metadataErr} {
		if err == nil {
			t.Fatalf("%s: truncated message decoded", name)
		}
		var asMetadata *metadata.DecodeError
		if !errors.As(err, &asMetadata) {
			t.Errorf("%s: errors.As(%v, *metadata.DecodeError) = false", name, err)
		}
		var asControl *control.DecodeError
		if !errors.As(err, &asControl) {
			t.Errorf("%s: errors.As(%v, *control.DecodeError) = false", name, err)
		}
		if !errors.Is(err, kbin.ErrTruncated) {
			t.Errorf("%s: %v does not wrap kbin.ErrTruncated", name, err)
		}
	}
	if a, b := reflect.TypeFor[metadata.DecodeError](), reflect.TypeFor[control.DecodeError](); a != b || a != reflect.TypeFor[genrt.DecodeError]() {
		t.Errorf("metadata.DecodeError is %v, control.DecodeError is %v; want both genrt.DecodeError", a, b)
	}
}

func TestDecodeErrorPaths(t *testing.T) {
	err := genrt.FieldError("Host", kbin.ErrInvalid)
	err = genrt.PrefixDecodeError(err, "EndPoints[2]")
	err = genrt.FinishDecodeError(err, "RegisterBrokerRecord", 3)
	if got, want := err.Error(), "decode RegisterBrokerRecord v3: field EndPoints[2].Host: "+kbin.ErrInvalid.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if err := genrt.PrefixDecodeError(genrt.FieldError("", kbin.ErrInvalid), "Topics[0]"); err.(*genrt.DecodeError).Field != "Topics[0]" {
		t.Errorf("prefix of an empty path = %q, want Topics[0]", err.(*genrt.DecodeError).Field)
	}
}

func TestCheckUnknownTags(t *testing.T) {
	known := func(tag uint32, _ int16) bool { return tag == 0 }
	for _, tc := range []struct {
		tags []genrt.RawTaggedField
		ok   bool
	}{
		{nil, true},
		{[]genrt.RawTaggedField{{Tag: 1}, {Tag: 3}}, true},
		{[]genrt.RawTaggedField{{Tag: 3}, {Tag: 3}}, false},
		{[]genrt.RawTaggedField{{Tag: 0}}, false},
	} {
		err := genrt.CheckUnknownTags(tc.tags, 0, known)
		if (err == nil) != tc.ok {
			t.Errorf("CheckUnknownTags(%v) = %v, want ok %v", tc.tags, err, tc.ok)
		}
		var ee *genrt.EncodeError
		if err != nil && !errors.As(err, &ee) {
			t.Errorf("CheckUnknownTags(%v) = %T, want *EncodeError", tc.tags, err)
		}
	}
	if got := genrt.AppendRawTag(nil, genrt.RawTaggedField{Tag: 5, Data: []byte{9}}); string(got) != "\x05\x01\x09" {
		t.Errorf("AppendRawTag = % x, want 05 01 09", got)
	}
}

// Resize reuses an array with room and allocates otherwise, and never
// returns nil, so that an empty array decoded stays distinct from null.
func TestResize(t *testing.T) {
	s := make([]int32, 2, 4)
	if got := genrt.Resize(s, 3); &got[0] != &s[0] || len(got) != 3 {
		t.Errorf("Resize to 3 of cap 4: len %d, reused %v", len(got), &got[0] == &s[0])
	}
	if got := genrt.Resize(s, 5); &got[0] == &s[0] || len(got) != 5 {
		t.Errorf("Resize to 5 of cap 4: len %d, reused %v", len(got), &got[0] == &s[0])
	}
	if got := genrt.Resize[int32](nil, 0); got == nil {
		t.Error("Resize(nil, 0) = nil, want an empty array")
	}
}
