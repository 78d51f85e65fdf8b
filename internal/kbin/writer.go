package kbin

import (
	"encoding/binary"
	"math"
)

// AppendInt8 appends v.
func AppendInt8(dst []byte, v int8) []byte { return append(dst, byte(v)) }

// AppendBool appends v as 1 or 0.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendInt16 appends v big-endian.
func AppendInt16(dst []byte, v int16) []byte { return binary.BigEndian.AppendUint16(dst, uint16(v)) }

// AppendUint16 appends v big-endian.
func AppendUint16(dst []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(dst, v) }

// AppendInt32 appends v big-endian.
func AppendInt32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

// AppendUint32 appends v big-endian.
func AppendUint32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

// AppendInt64 appends v big-endian.
func AppendInt64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

// AppendFloat64 appends v as a big-endian IEEE 754 double.
func AppendFloat64(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

// AppendUUID appends the 16 bytes of u.
func AppendUUID(dst []byte, u [16]byte) []byte { return append(dst, u[:]...) }

// AppendUvarint appends v as Kafka's unsigned varint.
func AppendUvarint(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// AppendUvarlong appends v as an unsigned 64-bit varint.
func AppendUvarlong(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// AppendVarint appends v zig-zag encoded.
func AppendVarint(dst []byte, v int32) []byte {
	return AppendUvarint(dst, uint32(v<<1)^uint32(v>>31))
}

// AppendVarlong appends v zig-zag encoded.
func AppendVarlong(dst []byte, v int64) []byte {
	return AppendUvarlong(dst, uint64(v<<1)^uint64(v>>63))
}

// UvarintLen returns the number of bytes AppendUvarint uses for v.
func UvarintLen(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// InsertUvarint inserts v as an unsigned varint at dst[at], moving dst[at:]
// to make room. Encoders use it to prefix a tagged field with its size
// after the field has been appended.
func InsertUvarint(dst []byte, at int, v uint32) []byte {
	n := UvarintLen(v)
	old := len(dst)
	for range n {
		dst = append(dst, 0)
	}
	copy(dst[at+n:], dst[at:old])
	var tmp [5]byte
	copy(dst[at:at+n], AppendUvarint(tmp[:0], v))
	return dst
}

// AppendString appends s with an int16 length. The caller checks that
// len(s) <= MaxStringLen.
func AppendString(dst []byte, s string) []byte {
	dst = AppendInt16(dst, int16(len(s)))
	return append(dst, s...)
}

// AppendNullableString appends s with an int16 length, or -1 when s is nil.
func AppendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return AppendInt16(dst, -1)
	}
	return AppendString(dst, *s)
}

// AppendCompactString appends s with a uvarint length+1.
func AppendCompactString(dst []byte, s string) []byte {
	dst = AppendUvarint(dst, uint32(len(s))+1)
	return append(dst, s...)
}

// AppendCompactNullableString appends s with a uvarint length+1, or 0 when
// s is nil.
func AppendCompactNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, 0)
	}
	return AppendCompactString(dst, *s)
}

// AppendBytes appends b with an int32 length.
func AppendBytes(dst, b []byte) []byte {
	dst = AppendInt32(dst, int32(len(b)))
	return append(dst, b...)
}

// AppendNullableBytes appends b with an int32 length, or -1 when b is nil.
func AppendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return AppendInt32(dst, -1)
	}
	return AppendBytes(dst, b)
}

// AppendCompactBytes appends b with a uvarint length+1.
func AppendCompactBytes(dst, b []byte) []byte {
	dst = AppendUvarint(dst, uint32(len(b))+1)
	return append(dst, b...)
}

// AppendCompactNullableBytes appends b with a uvarint length+1, or 0 when b
// is nil.
func AppendCompactNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	return AppendCompactBytes(dst, b)
}

// AppendArrayLen appends an int32 array length; n = -1 encodes null.
func AppendArrayLen(dst []byte, n int) []byte { return AppendInt32(dst, int32(n)) }

// AppendCompactArrayLen appends a uvarint array length+1; n = -1 encodes
// null (0).
func AppendCompactArrayLen(dst []byte, n int) []byte { return AppendUvarint(dst, uint32(n+1)) }
