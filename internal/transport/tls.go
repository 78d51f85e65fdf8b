package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// TLS is the Handshake of an SSL listener: it runs a TLS server handshake
// with Config and names the peer by its certificate, as Kafka's
// DefaultKafkaPrincipalBuilder does for SSL: the subject's distinguished
// name in RFC 2253 form as Java writes it, or [Anonymous] when the client sent no certificate
// (ssl.client.auth=none or requested).
type TLS struct {
	Config *tls.Config
	// MapName, when not nil, turns the subject's distinguished name into
	// the principal's name (Kafka's ssl.principal.mapping.rules). An
	// error refuses the connection, as Kafka's principal builder does
	// when no rule applies. It is called from the connection's goroutine
	// and must be safe for concurrent use.
	MapName func(dn string) (string, error)
}

// Upgrade runs the TLS handshake on conn within ctx and returns the TLS
// connection. A failed handshake (a client that does not speak TLS, a
// certificate that does not verify, a protocol or cipher suite the
// listener does not allow) is an error, which closes conn.
func (h TLS) Upgrade(ctx context.Context, conn net.Conn) (net.Conn, Principal, error) {
	tc := tls.Server(conn, h.Config)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, Principal{}, fmt.Errorf("transport: TLS handshake: %w", err)
	}
	cs := tc.ConnectionState()
	p := tlsPrincipal(cs)
	if h.MapName != nil && len(cs.PeerCertificates) > 0 {
		name, err := h.MapName(p.Name)
		if err != nil {
			_ = tc.Close()
			return nil, Principal{}, fmt.Errorf("transport: TLS principal: %w", err)
		}
		p.Name = name
	}
	return tc, p, nil
}

// tlsPrincipal names the peer of a TLS connection by its leaf
// certificate's subject.
func tlsPrincipal(cs tls.ConnectionState) Principal {
	if len(cs.PeerCertificates) == 0 {
		return Anonymous()
	}
	return Principal{Type: "User", Name: subjectName(cs.PeerCertificates[0])}
}

// dialTLS runs a TLS client handshake over nc within ctx, with the
// configuration config returns for the host of addr.
func dialTLS(ctx context.Context, nc net.Conn, config func(host string) *tls.Config, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	tc := tls.Client(nc, config(host))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("transport: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
