package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// system is one of the compared clusters: Krabka, etcd or ZooKeeper, n
// nodes on 127.0.0.1, each a separate process.
type system interface {
	// name is the row label: "krabka", "krabka-metrics", "etcd",
	// "zookeeper".
	name() string
	// setup writes the configuration and formats the data directories.
	setup() error
	// nodes returns the cluster's processes, indexed by node.
	nodes() []*proc
	// afterStart prepares the data the writers overwrite (ZooKeeper's
	// znodes) once the cluster serves.
	afterStart(ctx context.Context) error
	// leader returns the index of the node that leads, or an error while
	// none is known.
	leader(ctx context.Context) (int, error)
	// knowsLeader reports whether node i runs as a member that follows
	// (or is) a leader, so that it can vote in the next election.
	knowsLeader(ctx context.Context, i int) bool
	// dial returns a writer whose conns connections all go to node i (the
	// leader, for the closed loops: every system then spends no hop on
	// forwarding).
	dial(ctx context.Context, i, conns int) (writer, error)
	// dialAny returns a writer that reaches whichever of the nodes idx is
	// the leader, following redirects, for the failover and restart
	// probes.
	dialAny(ctx context.Context, idx []int) (writer, error)
	// dataBytes is the size of the nodes' data directories.
	dataBytes() int64
}

// closeSystem ends what a system runs beside its nodes (the metrics
// scrapes of krabka-metrics); it may be called more than once.
func closeSystem(s system) {
	if c, ok := s.(interface{ close() }); ok {
		c.close()
	}
}

// writer writes one 256-byte value to key (client) k; it is safe for
// concurrent use.
type writer interface {
	write(ctx context.Context, k int) error
	close()
}

// valueSize is the size of every written value.
const valueSize = 256

// benchValue is the value every write carries.
var benchValue = []byte(strings.Repeat("v", valueSize))

// pids returns the running processes' ids.
func pids(s system) []int {
	var out []int
	for _, p := range s.nodes() {
		if pid := p.pid(); pid != 0 {
			out = append(out, pid)
		}
	}
	return out
}

// startAll starts every node of s.
func startAll(s system) error {
	for _, p := range s.nodes() {
		if err := p.start(); err != nil {
			return err
		}
	}
	return nil
}

// stopAll stops every node of s with sig, all at once.
func stopAll(s system, sig syscall.Signal) {
	done := make(chan struct{})
	ns := s.nodes()
	for _, p := range ns {
		go func() {
			p.stop(sig, 30*time.Second)
			done <- struct{}{}
		}()
	}
	for range ns {
		<-done
	}
}

// waitLeader polls until s has a leader and that leader accepts a write.
func waitLeader(ctx context.Context, s system) (int, error) {
	var last error
	for ctx.Err() == nil {
		l, err := s.leader(ctx)
		if err == nil {
			var w writer
			w, err = s.dial(ctx, l, 1)
			if err == nil {
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err = w.write(wctx, 0)
				cancel()
				w.close()
				if err == nil {
					return l, nil
				}
			}
		}
		last = err
		sleepCtx(ctx, 50*time.Millisecond)
	}
	return -1, fmt.Errorf("%s: no leader accepting writes: %w", s.name(), errors.Join(ctx.Err(), last))
}

// waitAllFollow polls until every node of s knows a leader.
func waitAllFollow(ctx context.Context, s system) error {
	for i := range s.nodes() {
		for !s.knowsLeader(ctx, i) {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: node %d never joined the leader: %w", s.name(), i+1, ctx.Err())
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1; they are
// released before the servers bind them.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// pool is a writer's connections, handed out round robin.
type pool[C any] struct {
	conns []C
	next  atomic.Uint32
	shut  func(C)
}

// dialPool opens n connections with dial; on a failure it closes those
// already open.
func dialPool[C any](n int, dial func() (C, error), shut func(C)) (*pool[C], error) {
	p := &pool[C]{shut: shut}
	for range n {
		c, err := dial()
		if err != nil {
			p.close()
			return nil, err
		}
		p.conns = append(p.conns, c)
	}
	return p, nil
}

func (p *pool[C]) pick() C { return p.conns[int(p.next.Add(1))%len(p.conns)] }

func (p *pool[C]) close() {
	for _, c := range p.conns {
		p.shut(c)
	}
}
