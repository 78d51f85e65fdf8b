package main

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
)

func itoa(n int) string { return strconv.Itoa(n) }

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fixCRC recomputes the CRC-32C of the batch at pos in data.
func fixCRC(data []byte, pos int) {
	size := 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
	b := data[pos : pos+size]
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}
