package raft

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/krabka-go/krabka/internal/transport"
)

// listenerSet is a node's controller listeners, one transport server per
// entry of controller.listener.names, in that order, all serving the same
// handler and sharing one set of connection quotas. The first is the one
// the voters reach this node on, as Kafka's first controller listener is.
type listenerSet struct {
	names []string
	srvs  []*transport.Server
}

// serveListeners binds every endpoint of eps (not empty) and serves it
// with cfg, with the TLS handshake tlsConfigs[i] where that is not nil, and with
// the SASL handshake sasl[i] (after TLS, if any) where that is not nil,
// recording each accepted connection in the creation rate quotas
// rates[i]. first, when not nil, is eps[0] already bound (a test seam); it
// is owned by serveListeners from the call on. On an error every listener
// bound so far is closed.
func serveListeners(ctx context.Context, eps []Endpoint, tlsConfigs []*transport.TLS, sasl []*transport.SASL, rates [][]*transport.CreationRate, first net.Listener, cfg transport.ServerConfig) (_ *listenerSet, err error) {
	set := &listenerSet{}
	defer func() {
		if err != nil {
			if first != nil {
				_ = first.Close() // a second close, once a server has it, is harmless
			}
			_ = set.Close()
		}
	}()
	for i, ep := range eps {
		ln := first
		if i > 0 || ln == nil {
			if ln, err = net.Listen("tcp", ep.Address()); err != nil {
				return nil, fmt.Errorf("raft: listen on %s (listener %s): %w", ep.Address(), ep.Name, err)
			}
		}
		lcfg := cfg
		lcfg.Name = ep.Name
		lcfg.CreationRates = rates[i]
		if tlsConfigs[i] != nil {
			lcfg.Handshake = *tlsConfigs[i]
		}
		if sasl[i] != nil {
			h := *sasl[i]
			if tlsConfigs[i] != nil {
				h.TLS = tlsConfigs[i].Config
			}
			lcfg.Handshake = h
		}
		srv, err := transport.Serve(ctx, ln, lcfg)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("raft: serve %s (listener %s): %w", ln.Addr(), ep.Name, err)
		}
		set.names = append(set.names, ep.Name)
		set.srvs = append(set.srvs, srv)
	}
	return set, nil
}

// Addr returns the first controller listener's address.
func (l *listenerSet) Addr() net.Addr { return l.srvs[0].Addr() }

// addr returns the address of the listener called name.
func (l *listenerSet) addr(name string) (net.Addr, bool) {
	for i, n := range l.names {
		if n == name {
			return l.srvs[i].Addr(), true
		}
	}
	return nil, false
}

// advertiseBoundPorts gives each endpoint of advertised that names port 0
// the port its listener was bound to: that is the port the voter set and
// DescribeCluster must name.
func (l *listenerSet) advertiseBoundPorts(advertised []Endpoint) {
	for i, ep := range advertised {
		if ep.Port != 0 {
			continue
		}
		if a, ok := l.addr(ep.Name); ok {
			if ta, ok := a.(*net.TCPAddr); ok {
				advertised[i].Port = uint16(ta.Port)
			}
		}
	}
}

// Close closes every listener and its connections, and returns after all
// their goroutines have exited.
func (l *listenerSet) Close() error {
	var errs []error
	for _, s := range l.srvs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// ListenerAddr returns the address the controller listener called name
// (as controller.listener.names spells it, upper case) is bound to, and
// whether the node has such a listener. [Controller.Addr] is the first
// one's.
func (c *Controller) ListenerAddr(name string) (net.Addr, bool) { return c.srv.addr(name) }

// ListenerStats are the connection counters of one controller listener
// since it was bound.
type ListenerStats struct {
	// Name is the listener's name, as controller.listener.names spells it.
	Name string
	// Accepted counts the connections accepted and admitted; Active is
	// the number open now.
	Accepted uint64
	Active   int64
	// Rejected counts the connections closed at accept by the per-address
	// connection quotas (max.connections.per.ip and its overrides);
	// SlotWaits the accepts that waited for a slot at max.connections.
	Rejected, SlotWaits uint64
	// Throttled counts the accepts delayed by max.connection.creation.rate;
	// IPThrottled the connections held and then closed by an address's
	// connection_creation_rate quota (KIP-612).
	Throttled, IPThrottled uint64
	// ClosedInvalid counts the connections closed for an invalid frame or
	// request, ClosedIdle those closed by connections.max.idle.ms, and
	// ClosedExpired those closed for a request after their SASL session
	// expired (KIP-368).
	ClosedInvalid, ClosedIdle, ClosedExpired uint64
	// Reauthenticated and ReauthFailed count the SASL re-authentications
	// that succeeded and that failed (each of which closed its
	// connection).
	Reauthenticated, ReauthFailed uint64
}

// ListenerStats returns the counters of every controller listener, in
// the order of controller.listener.names. It reads counters only and is
// cheap enough for every metrics scrape.
func (c *Controller) ListenerStats() []ListenerStats {
	out := make([]ListenerStats, len(c.srv.srvs))
	for i, s := range c.srv.srvs {
		st := s.Stats()
		out[i] = ListenerStats{
			Name: c.srv.names[i], Accepted: st.Accepted, Active: st.Active, Rejected: st.Rejected,
			SlotWaits: st.SlotWaits, Throttled: st.Throttled, IPThrottled: st.IPThrottled,
			ClosedInvalid: st.ClosedInvalid, ClosedIdle: st.ClosedIdle, ClosedExpired: st.ClosedExpired,
			Reauthenticated: st.Reauthenticated, ReauthFailed: st.ReauthFailed,
		}
	}
	return out
}
