// Package wiretest is a minimal Kafka client for tests that talk to a
// running controller from outside its process: one request on a fresh
// connection, framed and decoded by package wire. Real clients pipeline
// over long-lived connections (internal/transport); a test that kills and
// partitions nodes wants the opposite, no state that outlives one call.
package wiretest

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// Call sends req to addr on a new connection and returns the answer,
// giving up at ctx's deadline (dial, write and read alike).
func Call(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return Exchange(ctx, conn, req)
}

// Exchange sends req on conn, a connection ready for requests (after any
// TLS or SASL handshake), and returns the answer, giving up at ctx's
// deadline. It does not close conn.
func Exchange(ctx context.Context, conn net.Conn, req kmsg.Request) (kmsg.Response, error) {
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return nil, err
		}
	}
	frame, err := wire.AppendRequest(nil, 1, nil, req)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	in, err := wire.ReadFrame(conn, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	return wire.DecodeResponse(in, req)
}
