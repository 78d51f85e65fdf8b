package raft

import (
	"context"
	"crypto/tls"
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
// with cfg, over TLS with tlsConfigs[i] where that is not nil, and with
// the SASL handshake sasl[i] (after TLS, if any) where that is not nil,
// recording each accepted connection in the creation rate quotas
// rates[i]. first, when not nil, is eps[0] already bound (a test seam); it
// is owned by serveListeners from the call on. On an error every listener
// bound so far is closed.
func serveListeners(ctx context.Context, eps []Endpoint, tlsConfigs []*tls.Config, sasl []*transport.SASL, rates [][]*transport.CreationRate, first net.Listener, cfg transport.ServerConfig) (_ *listenerSet, err error) {
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
		lcfg.CreationRates = rates[i]
		if tlsConfigs[i] != nil {
			lcfg.Handshake = transport.TLS{Config: tlsConfigs[i]}
		}
		if sasl[i] != nil {
			h := *sasl[i]
			h.TLS = tlsConfigs[i]
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
