package transport

import (
	"context"
	"sync/atomic"
	"testing"
)

// countingMeter is a Meter that adds everything up.
type countingMeter struct {
	connected, disconnected atomic.Int64
	sentFrames, sentBytes   atomic.Int64
	recvFrames, recvBytes   atomic.Int64
}

func (m *countingMeter) Connected()    { m.connected.Add(1) }
func (m *countingMeter) Disconnected() { m.disconnected.Add(1) }
func (m *countingMeter) Sent(frames, bytes int) {
	m.sentFrames.Add(int64(frames))
	m.sentBytes.Add(int64(bytes))
}
func (m *countingMeter) Received(bytes int) {
	m.recvFrames.Add(1)
	m.recvBytes.Add(int64(bytes))
}

// TestMeterCountsBothSides: a Peer's Meter counts its connection, the
// requests it writes and the answers it reads (the ApiVersions exchange
// that opens the connection among them); the Server's Meter counts
// the same frames from its side, byte for byte, and the connection's end.
func TestMeterCountsBothSides(t *testing.T) {
	var srvMeter, peerMeter countingMeter
	cfg := testServerConfig(withAPIVersions(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) { reply.Send(nameEcho(req)) })))
	cfg.Meter = &srvMeter
	s := startTCP(t, cfg)
	pc := DefaultPeerConfig()
	pc.Addr = s.Addr().String()
	pc.RequestTimeout = testDeadline
	pc.Meter = &peerMeter
	p, err := DialPeer(t.Context(), pc)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan outcome, 1)
	for _, name := range []string{"one", "two", "three"} {
		if !p.Send(describeQuorumFor(name), collect(got)) {
			t.Fatal("Send refused")
		}
		if n := answeredName(t, <-got); n != name {
			t.Fatalf("answer %q, want %q", n, name)
		}
	}
	p.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c, d := peerMeter.connected.Load(), peerMeter.disconnected.Load(); c != 1 || d != 1 {
		t.Errorf("peer: %d connections opened, %d closed; want 1 and 1", c, d)
	}
	if c, d := srvMeter.connected.Load(), srvMeter.disconnected.Load(); c != 1 || d != 1 {
		t.Errorf("server: %d connections opened, %d closed; want 1 and 1", c, d)
	}
	if !pc.NegotiateVersions {
		t.Fatal("the default Peer does not negotiate versions")
	}
	const frames = 4 // ApiVersions and the three requests
	if n := peerMeter.sentFrames.Load(); n != frames {
		t.Errorf("peer wrote %d requests, want %d", n, frames)
	}
	if n := peerMeter.recvFrames.Load(); n != frames {
		t.Errorf("peer read %d answers, want %d", n, frames)
	}
	if a, b := peerMeter.sentBytes.Load(), srvMeter.recvBytes.Load(); a == 0 || a != b {
		t.Errorf("peer wrote %d request bytes, server read %d; want the same, not 0", a, b)
	}
	if a, b := srvMeter.sentBytes.Load(), peerMeter.recvBytes.Load(); a == 0 || a != b {
		t.Errorf("server wrote %d answer bytes, peer read %d; want the same, not 0", a, b)
	}
	if a, b := srvMeter.sentFrames.Load(), srvMeter.recvFrames.Load(); a != frames || b != frames {
		t.Errorf("server wrote %d answers and read %d requests, want %d each", a, b, frames)
	}
}
