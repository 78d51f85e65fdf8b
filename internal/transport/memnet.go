package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// MemNetwork is an in-memory network of net.Pipe connections, for tests
// that run the listener and peers under testing/synctest: every connection
// is a pair of synchronous pipes, so reads, writes, deadlines and timeouts
// run on synctest's fake clock and a blocked goroutine is durably blocked.
//
// Listeners are registered by address ("host:port"); each dialled
// connection gets a distinct remote address on the dialler's host, so
// per-IP connection limits behave as over TCP. The zero value is not
// usable; call [NewMemNetwork].
type MemNetwork struct {
	mu        sync.Mutex
	listeners map[string]*MemListener
	nextPort  int
}

// ErrConnRefused is returned by [MemNetwork.Dial] when no listener is
// registered at the address.
var ErrConnRefused = errors.New("transport: memnet: connection refused")

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{listeners: make(map[string]*MemListener), nextPort: 40000}
}

// Listen registers a listener at addr ("host:port").
func (n *MemNetwork) Listen(addr string) (*MemListener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("transport: memnet: listen %q: %w", addr, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[addr]; ok {
		return nil, fmt.Errorf("transport: memnet: listen %q: address in use", addr)
	}
	l := &MemListener{net: n, addr: memAddr(addr), conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// Dial connects to the listener at addr from host "127.0.0.1". It has the
// signature of net.Dialer.DialContext, so it plugs into PeerConfig.Dial.
func (n *MemNetwork) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return n.DialFrom(ctx, "127.0.0.1", addr)
}

// DialFrom connects to the listener at addr from the given host, so tests
// can open connections from several "IP addresses".
func (n *MemNetwork) DialFrom(ctx context.Context, host, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	if l == nil {
		n.mu.Unlock()
		return nil, fmt.Errorf("transport: memnet: dial %s: %w", addr, ErrConnRefused)
	}
	n.nextPort++
	local := memAddr(net.JoinHostPort(host, fmt.Sprint(n.nextPort)))
	n.mu.Unlock()
	client, server := net.Pipe()
	select {
	case l.conns <- &memConn{Conn: server, local: l.addr, remote: local}:
		return &memConn{Conn: client, local: local, remote: l.addr}, nil
	case <-l.done:
		return nil, fmt.Errorf("transport: memnet: dial %s: %w", addr, ErrConnRefused)
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: memnet: dial %s: %w", addr, ctx.Err())
	}
}

// MemListener is a net.Listener on a [MemNetwork].
type MemListener struct {
	net   *MemNetwork
	addr  memAddr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

// Accept waits for the next dialled connection.
func (l *MemListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close unregisters the listener; later dials are refused.
func (l *MemListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.net.mu.Lock()
		delete(l.net.listeners, string(l.addr))
		l.net.mu.Unlock()
	})
	return nil
}

// Addr returns the listener's address.
func (l *MemListener) Addr() net.Addr { return l.addr }

// memAddr is a "host:port" address on a MemNetwork.
type memAddr string

// Network returns "memnet".
func (a memAddr) Network() string { return "memnet" }

// String returns the "host:port" form.
func (a memAddr) String() string { return string(a) }

// memConn gives a pipe end its network addresses.
type memConn struct {
	net.Conn
	local, remote net.Addr
}

// LocalAddr returns the address of this end.
func (c *memConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the address of the other end.
func (c *memConn) RemoteAddr() net.Addr { return c.remote }
