package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// QuotaConfig holds the connection limits of one node, with Kafka's
// meaning of each value (SocketServerConfigs, ConnectionQuotas): a limit
// is the most connections open at once, and 0 admits none.
type QuotaConfig struct {
	// MaxConnections is max.connections: connections open at once over
	// every listener of the node. Kafka's default, 2147483647, is no
	// limit in practice.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip: connections open at
	// once from one IP address, over every listener, for an address
	// without an override. 0 admits only the addresses of
	// MaxConnectionsPerIPOverrides.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// the limit of each address listed, in place of MaxConnectionsPerIP;
	// an override of 0 admits no connection from that address. An IPv4
	// address and its IPv4-mapped IPv6 form are the same address, and a
	// zone is ignored.
	MaxConnectionsPerIPOverrides map[netip.Addr]int
}

// ConnectionQuotas counts a node's open connections and admits, holds or
// refuses each new one by a [QuotaConfig], as Kafka's ConnectionQuotas
// does: the counts cover every listener that shares the value (set
// [ServerConfig.Quotas] to the same ConnectionQuotas on each). At
// max.connections a listener's acceptor waits, holding the connection it
// accepted unserved, until a connection closes (Kafka's
// waitForConnectionSlot); the connections after it wait in the kernel's
// backlog. A connection over its address's limit is refused: closed right
// after accept, without a byte written. Its methods are safe for
// concurrent use.
type ConnectionQuotas struct {
	maxTotal, maxPerIP int
	overrides          map[string]int // by addressKey

	mu    sync.Mutex
	total int
	perIP map[string]int // by addressKey; only connected addresses
	// freed is closed, and cleared, when a slot is released while an
	// acceptor waits for one; nil while none waits.
	freed chan struct{}
}

// NewConnectionQuotas returns quotas that enforce cfg, or an error when a
// limit is negative or an override address is not valid.
func NewConnectionQuotas(cfg QuotaConfig) (*ConnectionQuotas, error) {
	var errs []error
	if cfg.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("MaxConnections (max.connections) %d must not be negative", cfg.MaxConnections))
	}
	if cfg.MaxConnectionsPerIP < 0 {
		errs = append(errs, fmt.Errorf("MaxConnectionsPerIP (max.connections.per.ip) %d must not be negative", cfg.MaxConnectionsPerIP))
	}
	q := &ConnectionQuotas{maxTotal: cfg.MaxConnections, maxPerIP: cfg.MaxConnectionsPerIP, overrides: map[string]int{}}
	for a, n := range cfg.MaxConnectionsPerIPOverrides {
		switch {
		case !a.IsValid():
			errs = append(errs, errors.New("MaxConnectionsPerIPOverrides (max.connections.per.ip.overrides) has an invalid address"))
		case n < 0:
			errs = append(errs, fmt.Errorf("MaxConnectionsPerIPOverrides (max.connections.per.ip.overrides) limit %d for %s must not be negative", n, a))
		default:
			q.overrides[CanonicalIP(a)] = n
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("transport: invalid connection quotas: %w", err)
	}
	return q, nil
}

// CanonicalIP is the key of an IP address: IPv4-mapped IPv6 as IPv4, no
// zone, as Java's InetAddress compares addresses. Connection quotas count
// and look up addresses by it.
func CanonicalIP(a netip.Addr) string { return a.Unmap().WithZone("").String() }

// addressKey returns the key a remote address is counted under: its IP
// address (see CanonicalIP) when it has one, else the whole host part.
func addressKey(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return CanonicalIP(ip)
		}
	}
	host := hostOf(a)
	if ip, err := netip.ParseAddr(host); err == nil {
		return CanonicalIP(ip)
	}
	return host
}

// errNoSlot reports that an acceptor stopped waiting for a slot because
// its listener closed.
var errNoSlot = errors.New("transport: the listener closed while waiting for a connection slot under max.connections")

// reserve takes a slot for the address key ip and returns "", or returns
// the property whose limit refuses it. At max.connections it first waits
// for a slot, and calls waiting once when it starts to; it returns
// errNoSlot when done is closed first. The node-wide and the per-address
// count are taken together or not at all.
func (q *ConnectionQuotas) reserve(ip string, done <-chan struct{}, waiting func()) (string, error) {
	for {
		q.mu.Lock()
		if q.total < q.maxTotal {
			break // q.mu held
		}
		if q.freed == nil {
			q.freed = make(chan struct{})
		}
		freed := q.freed
		q.mu.Unlock()
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-done:
			return "", errNoSlot
		case <-freed:
		}
	}
	defer q.mu.Unlock()
	return q.take(ip), nil
}

// take takes a slot below max.connections for ip, or returns the
// per-address property refusing it; q.mu is held.
func (q *ConnectionQuotas) take(ip string) string {
	limit, overridden := q.overrides[ip]
	if !overridden {
		limit = q.maxPerIP
	}
	if q.perIP[ip] >= limit {
		if overridden {
			return "max.connections.per.ip.overrides"
		}
		return "max.connections.per.ip"
	}
	if q.perIP == nil {
		q.perIP = make(map[string]int)
	}
	q.total++
	q.perIP[ip]++
	return ""
}

// release returns a slot taken by reserve; an address's entry goes when
// its count reaches zero, so the map holds only connected addresses.
func (q *ConnectionQuotas) release(ip string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total--
	if q.freed != nil {
		close(q.freed)
		q.freed = nil
	}
	if q.perIP[ip] <= 1 {
		delete(q.perIP, ip)
	} else {
		q.perIP[ip]--
	}
}

// Open returns how many connections the quotas count now, over every
// listener that shares them.
func (q *ConnectionQuotas) Open() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}
