package transport

import (
	"context"
	"net"
)

// Principal identifies who is at the other end of a connection, as a
// handshake established it. It is what authorization decisions are made
// on (the ACL checks of Kafka's ControllerApis).
type Principal struct {
	// Type is the principal type, "User" for every built-in mechanism.
	Type string
	// Name is the principal name; "ANONYMOUS" for a plaintext connection.
	Name string
}

// String returns the principal in Kafka's "Type:Name" form.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// Anonymous returns the principal of an unauthenticated (plaintext)
// connection, Kafka's KafkaPrincipal.ANONYMOUS.
func Anonymous() Principal { return Principal{Type: "User", Name: "ANONYMOUS"} }

// Handshake is the seam where TLS and SASL plug into the listener. Upgrade
// runs on the connection's own goroutine right after accept, before any
// request is read. It returns the connection to use from then on (for
// example a *tls.Conn wrapping conn), and the peer's principal.
//
// ctx carries the handshake deadline (ServerConfig.HandshakeTimeout) and is
// cancelled when the server closes; an implementation that blocks on conn
// must make that I/O stop when ctx ends, for example with
// context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) }). An error
// closes the connection.
type Handshake interface {
	Upgrade(ctx context.Context, conn net.Conn) (net.Conn, Principal, error)
}

// Plaintext is the default Handshake: it keeps the connection as it is and
// names the peer [Anonymous].
type Plaintext struct{}

// Upgrade returns conn and the anonymous principal.
func (Plaintext) Upgrade(_ context.Context, conn net.Conn) (net.Conn, Principal, error) {
	return conn, Anonymous(), nil
}
