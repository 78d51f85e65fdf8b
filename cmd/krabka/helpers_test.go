package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
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

// newFormattedVoter writes the server.properties of node 1, the only voter
// of a static quorum, listening on a free loopback port, and formats its
// directories. It returns the node and the port.
func newFormattedVoter(t *testing.T) (testNode, int) {
	t.Helper()
	port := freePort(t)
	n := newTestNode(t, 1,
		fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", port),
		fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", port))
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	return n, port
}
