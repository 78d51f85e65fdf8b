package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/raft"
)

// clientID is the request header's client id of krabka's tools.
const clientID = "krabka-tools"

// controllerConn is a synchronous Kafka-protocol connection to one
// controller: one request at a time, each bounded by the context's
// deadline. It remembers the versions the controller announced in its
// ApiVersions answer.
type controllerConn struct {
	addr     string
	conn     net.Conn
	corr     int32
	buf      []byte
	versions map[int16]kmsg.ApiVersionsResponseApiKey
}

// dialController connects to addr with the client security sec (TLS,
// then SASL, as a controller's own peer connections do) and exchanges
// ApiVersions.
func dialController(ctx context.Context, addr string, sec raft.ClientSecurity) (*controllerConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to controller %s: %w", addr, err)
	}
	var sasl *transport.SASLClient
	if sec.SASLMechanism != "" {
		sasl = &transport.SASLClient{Mechanism: sec.SASLMechanism, Username: sec.SASLUsername, Password: sec.SASLPassword}
	}
	if conn, _, err = transport.UpgradeClient(ctx, conn, addr, sec.TLS, sasl, clientID, wire.DefaultMaxFrameSize); err != nil {
		return nil, fmt.Errorf("connect to controller %s as %s: %w", addr, sec.Protocol, err)
	}
	c := &controllerConn{addr: addr, conn: conn}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	// KIP-511 allows letters, digits, '.' and '-' only: "(devel)", the
	// version of a build outside a module release, is sent as "devel".
	req.ClientSoftwareName = "krabka"
	req.ClientSoftwareVersion = "devel"
	if v := buildVersion(); wire.ValidClientSoftware(v) {
		req.ClientSoftwareVersion = v
	}
	resp, err := c.request(ctx, req)
	if err != nil {
		c.Close()
		return nil, err
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if err := wire.ErrorForCode(av.ErrorCode); err != nil {
		c.Close()
		return nil, fmt.Errorf("controller %s: ApiVersions: %w", addr, err)
	}
	c.versions = make(map[int16]kmsg.ApiVersionsResponseApiKey, len(av.ApiKeys))
	for _, k := range av.ApiKeys {
		c.versions[k.ApiKey] = k
	}
	return c, nil
}

// Close closes the connection.
func (c *controllerConn) Close() { _ = c.conn.Close() }

// version returns the highest version of req's API that both this client
// (up to upTo) and the controller support, or an error naming the API
// when there is none.
func (c *controllerConn) version(req kmsg.Request, name string, from, upTo int16) (int16, error) {
	k, ok := c.versions[req.Key()]
	v := min(upTo, k.MaxVersion)
	if !ok || v < from || v < k.MinVersion {
		return 0, fmt.Errorf("controller %s does not support %s v%d to v%d", c.addr, name, from, upTo)
	}
	return v, nil
}

// request sends req and waits for its answer.
func (c *controllerConn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	c.corr++
	id := clientID
	frame, err := wire.AppendRequest(c.buf[:0], c.corr, &id, req)
	if err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(frame); err != nil {
		return nil, fmt.Errorf("controller %s: send: %w", c.addr, err)
	}
	// The frame is read into fresh storage: the decoded response may
	// alias it.
	in, err := wire.ReadFrame(c.conn, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		return nil, fmt.Errorf("controller %s: read the answer: %w", c.addr, err)
	}
	c.buf = frame
	if got, err := wire.ResponseCorrelationID(in); err != nil {
		return nil, fmt.Errorf("controller %s: %w", c.addr, err)
	} else if got != c.corr {
		return nil, fmt.Errorf("controller %s: answer to request %d, want %d", c.addr, got, c.corr)
	}
	resp, err := wire.DecodeResponse(in, req)
	if err != nil {
		return nil, fmt.Errorf("controller %s: decode the answer: %w", c.addr, err)
	}
	return resp, nil
}

// errRetry marks an answer that may change when asked again: no leader
// yet, or a leader that moved.
var errRetry = errors.New("retry")
