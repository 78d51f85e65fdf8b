package raft

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// apiVersionsFrom connects to addr from the loopback address from (any of
// 127.0.0.0/8 on Linux) and asks ApiVersions; an error means the node
// closed the connection or did not answer.
func apiVersionsFrom(t *testing.T, from string, addr net.Addr) (*kmsg.ApiVersionsResponse, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	nc, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "krabka-test", "1"
	id := "test-client"
	b, err := wire.AppendRequest(nil, 7, &id, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(b); err != nil {
		return nil, err
	}
	frame, err := wire.ReadFrame(nc, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	resp, err := wire.DecodeResponse(frame, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ApiVersionsResponse), nil
}

func startNode(t *testing.T, cfg Config) *Controller {
	t.Helper()
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c
}

// TestStartEnforcesConnectionQuotas: max.connections.per.ip=0 admits only
// the overridden addresses, each up to its override, and an override of 0
// admits none (Kafka's ConnectionQuotas).
func TestStartEnforcesConnectionQuotas(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.MaxConnectionsPerIP = 0
	cfg.MaxConnectionsPerIPOverrides = map[string]int32{"127.0.0.2": 1, "::ffff:127.0.0.3": 0}
	c := startNode(t, cfg)

	if _, err := apiVersionsFrom(t, "127.0.0.2", c.Addr()); err != nil {
		t.Fatalf("127.0.0.2 (override 1), first connection: %v", err)
	}
	if _, err := apiVersionsFrom(t, "127.0.0.2", c.Addr()); err == nil {
		t.Error("127.0.0.2 (override 1) got a second connection")
	}
	if _, err := apiVersionsFrom(t, "127.0.0.1", c.Addr()); err == nil {
		t.Error("127.0.0.1 got a connection; max.connections.per.ip=0 admits only the overrides")
	}
	if _, err := apiVersionsFrom(t, "127.0.0.3", c.Addr()); err == nil {
		t.Error("127.0.0.3 got a connection; its override is 0")
	}
}

// TestStartEnforcesMaxConnections: max.connections counts every
// connection, and 0 admits none.
func TestStartEnforcesMaxConnections(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	cfg.MaxConnections = 0
	c := startNode(t, cfg)
	if _, err := apiVersionsFrom(t, "127.0.0.1", c.Addr()); err == nil {
		t.Error("a connection was served with max.connections=0")
	}
}
