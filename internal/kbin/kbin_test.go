package kbin

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestUvarintRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Uint32().Draw(t, "v")
		b := AppendUvarint(nil, v)
		if len(b) != UvarintLen(v) {
			t.Fatalf("UvarintLen(%d) = %d, encoded %d bytes", v, UvarintLen(v), len(b))
		}
		r := NewReader(b)
		if got := r.Uvarint(); got != v || r.Err() != nil || r.Remaining() != 0 {
			t.Fatalf("Uvarint = %d, %v, want %d", got, r.Err(), v)
		}
		s := rapid.Int32().Draw(t, "s")
		r = NewReader(AppendVarint(nil, s))
		if got := r.Varint(); got != s || r.Err() != nil {
			t.Fatalf("Varint = %d, want %d", got, s)
		}
		l := rapid.Int64().Draw(t, "l")
		r = NewReader(AppendVarlong(nil, l))
		if got := r.Varlong(); got != l || r.Err() != nil {
			t.Fatalf("Varlong = %d, want %d", got, l)
		}
	})
}

func TestVarintKnownBytes(t *testing.T) {
	for _, tc := range []struct {
		v    uint32
		want []byte
	}{{0, []byte{0}}, {1, []byte{1}}, {127, []byte{0x7f}}, {128, []byte{0x80, 0x01}}, {300, []byte{0xac, 0x02}},
		{math.MaxUint32, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}}} {
		if got := AppendUvarint(nil, tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("AppendUvarint(%d) = %x, want %x", tc.v, got, tc.want)
		}
	}
	if got := AppendVarint(nil, -1); !bytes.Equal(got, []byte{1}) {
		t.Errorf("AppendVarint(-1) = %x, want 01", got)
	}
	if got := AppendVarlong(nil, math.MinInt64); len(got) != 10 {
		t.Errorf("AppendVarlong(min) = %x", got)
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		read func(r *Reader)
		is   error
	}{
		{"short int32", []byte{1, 2, 3}, func(r *Reader) { r.Int32() }, ErrTruncated},
		{"short uuid", make([]byte, 15), func(r *Reader) { r.UUID() }, ErrTruncated},
		{"non-minimal uvarint", []byte{0x81, 0x00}, func(r *Reader) { r.Uvarint() }, ErrInvalid},
		{"uvarint over 32 bits", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, func(r *Reader) { r.Uvarint() }, ErrInvalid},
		{"uvarint unterminated", []byte{0x80, 0x80}, func(r *Reader) { r.Uvarint() }, ErrTruncated},
		{"uvarlong over 64 bits", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, func(r *Reader) { r.Uvarlong() }, ErrInvalid},
		{"bool 2", []byte{2}, func(r *Reader) { r.Bool() }, ErrInvalid},
		{"string longer than input", []byte{0, 5, 'a'}, func(r *Reader) { _ = r.String() }, ErrTruncated},
		{"null string", []byte{0xff, 0xff}, func(r *Reader) { _ = r.String() }, ErrInvalid},
		{"nullable string -2", []byte{0xff, 0xfe}, func(r *Reader) { r.NullableString() }, ErrInvalid},
		{"compact null string", []byte{0}, func(r *Reader) { r.CompactString() }, ErrInvalid},
		{"compact string too long", AppendUvarint(nil, MaxStringLen+2), func(r *Reader) { r.CompactString() }, ErrInvalid},
		{"bytes negative", []byte{0xff, 0xff, 0xff, 0xfe}, func(r *Reader) { r.NullableBytes() }, ErrInvalid},
		{"bytes longer than input", []byte{0, 0, 0, 9}, func(r *Reader) { r.Bytes() }, ErrTruncated},
		{"array count beyond input", []byte{0x7f, 0xff, 0xff, 0xff}, func(r *Reader) { r.ArrayLen(1) }, ErrTruncated},
		{"array count times element size", []byte{0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7}, func(r *Reader) { r.ArrayLen(4) }, ErrTruncated},
		{"compact array count", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, func(r *Reader) { r.CompactArrayLen(1) }, ErrTruncated},
		{"array length -2", []byte{0xff, 0xff, 0xff, 0xfe}, func(r *Reader) { r.ArrayLen(1) }, ErrInvalid},
		{"tag count", []byte{3, 0, 0}, func(r *Reader) { r.TagCount() }, ErrTruncated},
		{"tags descending", []byte{2, 0, 1, 1, 0}, func(r *Reader) { _, s := r.NextTag(-1); s.CopyRest(); r.NextTag(2) }, ErrInvalid},
		{"tag size beyond input", []byte{0, 5, 1}, func(r *Reader) { r.NextTag(-1) }, ErrTruncated},
		{"trailing", []byte{1, 2}, func(r *Reader) { r.Int8(); r.ExpectEnd("x") }, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.in)
			tc.read(&r)
			if !errors.Is(r.Err(), tc.is) {
				t.Fatalf("Err() = %v, want %v", r.Err(), tc.is)
			}
			var e *Error
			if !errors.As(r.Err(), &e) {
				t.Fatalf("Err() = %T, want *Error", r.Err())
			}
			// Sticky: later reads return zero values and keep the error.
			first := r.Err()
			if v := r.Int64(); v != 0 || r.Err() != first {
				t.Fatalf("read after error = %d, %v", v, r.Err())
			}
		})
	}
}

func TestErrorOffset(t *testing.T) {
	r := NewReader([]byte{0, 0, 0, 1, 0, 0, 0, 2, 0})
	r.Int32()
	sub := r.Sub(4)
	sub.Int16()
	sub.Int32()
	var e *Error
	if !errors.As(sub.Err(), &e) || e.Offset != 6 {
		t.Fatalf("sub-reader error %v, want offset 6", sub.Err())
	}
	if r.Offset() != 8 || r.Remaining() != 1 {
		t.Fatalf("Offset %d Remaining %d", r.Offset(), r.Remaining())
	}
}

func TestPrimitivesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringN(0, 40, -1).Draw(t, "s")
		bs := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "b")
		f := rapid.Float64().Draw(t, "f")
		var u [16]byte
		copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "u"))
		i8, i16, u16 := rapid.Int8().Draw(t, "i8"), rapid.Int16().Draw(t, "i16"), rapid.Uint16().Draw(t, "u16")
		i32, i64 := rapid.Int32().Draw(t, "i32"), rapid.Int64().Draw(t, "i64")
		var b []byte
		b = AppendInt8(b, i8)
		b = AppendInt16(b, i16)
		b = AppendUint16(b, u16)
		b = AppendInt32(b, i32)
		b = AppendUint32(b, uint32(i32))
		b = AppendInt64(b, i64)
		b = AppendFloat64(b, f)
		b = AppendBool(b, true)
		b = AppendUUID(b, u)
		b = AppendString(b, s)
		b = AppendNullableString(b, nil)
		b = AppendCompactString(b, s)
		b = AppendCompactNullableString(b, &s)
		b = AppendBytes(b, bs)
		b = AppendNullableBytes(b, nil)
		b = AppendCompactBytes(b, bs)
		b = AppendCompactNullableBytes(b, nil)
		b = AppendArrayLen(b, -1)
		b = AppendCompactArrayLen(b, 0)
		r := NewReader(b)
		ok := r.Int8() == i8 && r.Int16() == i16 && r.Uint16() == u16 && r.Int32() == i32 && r.Uint32() == uint32(i32) &&
			r.Int64() == i64 && math.Float64bits(r.Float64()) == math.Float64bits(f) && r.Bool() && r.UUID() == u &&
			r.String() == s && r.NullableString() == nil && r.CompactString() == s && *r.CompactNullableString() == s &&
			bytes.Equal(r.Bytes(), bs) && r.NullableBytes() == nil && bytes.Equal(r.CompactBytes(), bs) &&
			r.CompactNullableBytes() == nil && r.ArrayLen(1) == -1 && r.CompactArrayLen(1) == 0
		if !ok || r.Err() != nil || r.Remaining() != 0 {
			t.Fatalf("round trip failed: %v, %d left", r.Err(), r.Remaining())
		}
	})
}

func TestInsertUvarint(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 20000} {
		payload := bytes.Repeat([]byte{7}, n)
		dst := append([]byte{9, 9}, payload...)
		dst = InsertUvarint(dst, 2, uint32(n))
		want := append(append([]byte{9, 9}, AppendUvarint(nil, uint32(n))...), payload...)
		if !bytes.Equal(dst, want) {
			t.Fatalf("InsertUvarint size %d wrong", n)
		}
	}
}
