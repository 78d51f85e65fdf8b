package transport

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// TestPeerClosesOnOversizedResponse (W37): a server that answers with a
// size prefix above the Peer's MaxFrameSize (here 0x7fffffff, what a
// misbehaving or foreign server might send) makes the Peer fail the
// request and close the connection without reading or allocating the
// announced body (KIP-498 on the client side).
func TestPeerClosesOnOversizedResponse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(testDeadline))
		if _, err := wire.ReadFrame(nc, nil, wire.DefaultMaxFrameSize); err != nil {
			served <- err
			return
		}
		if _, err := nc.Write(binary.BigEndian.AppendUint32(nil, 0x7fffffff)); err != nil {
			served <- err
			return
		}
		var b [1]byte
		_, err = nc.Read(b[:])
		if !errors.Is(err, io.EOF) && !isReset(err) {
			served <- err
			return
		}
		served <- nil
	}()

	cfg := DefaultPeerConfig()
	cfg.Addr = ln.Addr().String()
	cfg.RequestTimeout = testDeadline
	cfg.NegotiateVersions = false
	p, err := DialPeer(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan error, 1)
	if !p.Send(describeQuorum(), func(_ kmsg.Response, err error) { done <- err }) {
		t.Fatal("Send refused the request")
	}
	if err := <-done; !errors.Is(err, wire.ErrFrameSize) {
		t.Errorf("request error %v, want one wrapping wire.ErrFrameSize", err)
	}
	if err := <-served; err != nil {
		t.Errorf("the server side: %v (want the Peer to close the connection)", err)
	}
}
