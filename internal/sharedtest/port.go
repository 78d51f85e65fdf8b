package sharedtest

import (
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
)

// ListenFixed listens on a loopback port for a node that keeps its port
// across restarts. Ports from 127.0.0.1:0 come from the kernel's ephemeral
// range (32768–60999 by default), which outgoing connections also draw
// from: while a node is down, any connection made on the machine (another
// node's peer, another test package) can take its port, and the restart
// fails with EADDRINUSE. Ports below that range are only ever taken by
// listeners that name them, so a stopped node gets its port back.
func ListenFixed(t testing.TB) net.Listener {
	t.Helper()
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err == nil {
			return ln
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatal(err)
		}
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return nil
}
