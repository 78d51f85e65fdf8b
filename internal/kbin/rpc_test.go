package kbin

import (
	"errors"
	"strings"
	"testing"
)

// TestUTF8Strings: the private-RPC string readers accept valid UTF-8 of any
// length and refuse null where it is not allowed and invalid UTF-8.
func TestUTF8Strings(t *testing.T) {
	long := strings.Repeat("é", MaxStringLen)
	r := NewReader(AppendCompactString(nil, long))
	if got := r.CompactStringUTF8(); got != long || r.Err() != nil {
		t.Fatalf("CompactStringUTF8 of %d bytes = %d bytes, %v", len(long), len(got), r.Err())
	}
	r = NewReader([]byte{0x00})
	if got := r.CompactNullableStringUTF8(); got != nil || r.Err() != nil {
		t.Errorf("CompactNullableStringUTF8(null) = %v, %v; want nil, nil", got, r.Err())
	}
	r = NewReader([]byte{0x03, 'o', 'k'})
	if got := r.CompactNullableStringUTF8(); got == nil || *got != "ok" {
		t.Errorf("CompactNullableStringUTF8 = %v, %v; want ok", got, r.Err())
	}
	for name, read := range map[string]func(*Reader){
		"null":             func(r *Reader) { r.CompactStringUTF8() },
		"invalid":          func(r *Reader) { r.CompactStringUTF8() },
		"nullable invalid": func(r *Reader) { r.CompactNullableStringUTF8() },
	} {
		in := []byte{0x03, 0xc3, 0x28}
		if name == "null" {
			in = []byte{0x00}
		}
		r := NewReader(in)
		read(&r)
		var e *Error
		if !errors.Is(r.Err(), ErrInvalid) || !errors.As(r.Err(), &e) || e.Offset != 1 {
			t.Errorf("%s: err = %v, want ErrInvalid at byte 1", name, r.Err())
		}
	}
}

// TestBytesAlias: the aliasing readers return slices of the input, an empty
// value as a non-nil empty slice, and null only where it is allowed.
func TestBytesAlias(t *testing.T) {
	in := []byte{0x03, 7, 8, 0x01, 0x00}
	r := NewReader(in)
	b := r.CompactBytesAlias()
	if len(b) != 2 || &b[0] != &in[1] || cap(b) != 2 {
		t.Fatalf("CompactBytesAlias = %v (cap %d), want a 2-byte view of the input", b, cap(b))
	}
	if e := r.CompactBytesAlias(); e == nil || len(e) != 0 {
		t.Errorf("empty CompactBytesAlias = %#v, want a non-nil empty slice", e)
	}
	if n := r.CompactNullableBytesAlias(); n != nil || r.Err() != nil {
		t.Errorf("null CompactNullableBytesAlias = %v, %v", n, r.Err())
	}
	r = NewReader([]byte{0x00})
	if r.CompactBytesAlias(); !errors.Is(r.Err(), ErrInvalid) {
		t.Errorf("null CompactBytesAlias: err = %v, want ErrInvalid", r.Err())
	}
	r = NewReader([]byte{0x05, 1})
	if r.CompactNullableBytesAlias(); !errors.Is(r.Err(), ErrTruncated) {
		t.Errorf("long CompactNullableBytesAlias: err = %v, want ErrTruncated", r.Err())
	}
}

func TestSkipTags(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		is   error
	}{
		{"none", []byte{0x00}, nil},
		{"two ascending", []byte{0x02, 0x01, 0x01, 9, 0x05, 0x00}, nil},
		{"out of order", []byte{0x02, 0x05, 0x00, 0x03, 0x00}, ErrInvalid},
		{"repeated", []byte{0x02, 0x05, 0x00, 0x05, 0x00}, ErrInvalid},
		{"size beyond input", []byte{0x01, 0x00, 0x05, 1}, ErrTruncated},
		{"count beyond input", []byte{0x05, 0x00, 0x00}, ErrTruncated},
	} {
		r := NewReader(tc.in)
		r.SkipTags()
		if tc.is == nil && (r.Err() != nil || r.Remaining() != 0) {
			t.Errorf("%s: err %v, %d bytes left; want the section consumed", tc.name, r.Err(), r.Remaining())
		}
		if tc.is != nil && !errors.Is(r.Err(), tc.is) {
			t.Errorf("%s: err = %v, want %v", tc.name, r.Err(), tc.is)
		}
	}
}
