package raft

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// rawConn is a client that writes whatever bytes a test gives it to a
// controller listener and reads back frames: the hostile side of the
// wire. Every read and write is bounded by a deadline that only turns a
// hang into a failure.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

// rawDeadline bounds each raw connection's whole life.
const rawDeadline = 10 * time.Second

func dialRaw(t *testing.T, addr net.Addr) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr.String(), rawDeadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(rawDeadline))
	return &rawConn{t: t, nc: nc}
}

// write sends b as it is.
func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send frames req with correlation id corr and sends it.
func (c *rawConn) send(corr int32, req kmsg.Request) {
	c.t.Helper()
	id := "hostile"
	b, err := wire.AppendRequest(nil, corr, &id, req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.write(b)
}

// recv reads the answer to req, which must carry correlation id corr.
func (c *rawConn) recv(corr int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	frame, err := wire.ReadFrame(c.nc, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		c.t.Fatalf("read the answer to %T: %v", req, err)
	}
	if got, err := wire.ResponseCorrelationID(frame); err != nil || got != corr {
		c.t.Fatalf("answer correlation id %d, %v; want %d", got, err, corr)
	}
	resp, err := wire.DecodeResponse(frame, req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// call sends req and returns its answer.
func (c *rawConn) call(corr int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.send(corr, req)
	return c.recv(corr, req)
}
