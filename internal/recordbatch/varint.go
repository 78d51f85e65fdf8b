package recordbatch

import (
	"encoding/binary"
	"math/bits"
)

// Kafka's varint and varlong are zig-zag encoded, seven bits per byte,
// least significant group first (ByteUtils.java). encoding/binary's
// AppendVarint produces exactly these bytes for both widths, so writing
// uses it. Reading is our own because it is stricter than Kafka's: the
// encoding must be minimal (no trailing 0x00 continuation groups) and must
// fit the type. Kafka never writes anything else, and the strictness makes
// decode followed by encode the identity on every batch we accept.

// varintErr classifies a failed read.
type varintErr uint8

const (
	varintOK varintErr = iota
	varintShort
	varintBad
)

// readVarint reads a zig-zag varint of at most 5 bytes that fits in int32.
func readVarint(b []byte) (int32, int, varintErr) {
	if len(b) > 0 && b[0] < 0x80 { // one byte: the common case
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1, varintOK
	}
	var u uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, varintShort
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0, varintBad // overflows 32 bits or unterminated
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, 0, varintBad // not minimal
			}
			return int32(u>>1) ^ -int32(u&1), i + 1, varintOK
		}
	}
	return 0, 0, varintBad
}

// readVarlong reads a zig-zag varint of at most 10 bytes that fits in
// int64.
func readVarlong(b []byte) (int64, int, varintErr) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint64(b[0])
		return int64(u>>1) ^ -int64(u&1), 1, varintOK
	}
	var u uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0, varintShort
		}
		c := b[i]
		if i == 9 && c > 0x01 {
			return 0, 0, varintBad
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, 0, varintBad
			}
			return int64(u>>1) ^ -int64(u&1), i + 1, varintOK
		}
	}
	return 0, 0, varintBad
}

// appendVarint appends v as a Kafka varint/varlong.
func appendVarint(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

// varintSize is the encoded size of v as a Kafka varint/varlong.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	return (bits.Len64(u|1) + 6) / 7
}
