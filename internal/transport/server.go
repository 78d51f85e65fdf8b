package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Log attribute keys, one spelling each across the module.
const (
	keyListener   = "listener"
	keyConnID     = "conn_id"
	keyRemoteAddr = "remote_addr"
	keyPeer       = "peer"
	keyReason     = "reason"
	keyError      = "error"
	keyBackoff    = "backoff"
)

// ErrServerClosed is returned by [Server.Close] when the server was already
// closed.
var ErrServerClosed = errors.New("transport: server closed")

// Handler serves decoded requests. The runtime implements it.
type Handler interface {
	// Serve is called on the connection's reader goroutine, once per
	// request, in the order the requests arrived on that connection. It
	// must not block for long: it hands the request to its owner (the raft
	// engine's bounded queue) and returns. While it blocks, this connection
	// is not read (back-pressure on this client only); other connections
	// are unaffected. The answer goes through reply,
	// at once or later from any goroutine (a parked long-poll Fetch); the
	// listener writes answers in request order whatever order they complete
	// in. Serve, or whoever it hands reply to, must eventually call
	// reply.Send or reply.Close; only the first call counts. A request
	// never answered holds one of the connection's MaxInFlight slots, and
	// stops every later answer on the connection, until it closes.
	//
	// ctx is cancelled when the connection closes; a pending answer is then
	// no longer wanted and reply's methods return false.
	//
	// A Fetch request (Body a *kmsg.FetchRequest) is valid only until
	// Serve returns: the connection decodes its next Fetch into the same
	// request and reads the next frame into the same buffer
	// (wire.Request.Transient). Serve takes what it needs from it before
	// returning; reply stays valid until answered.
	Serve(ctx context.Context, req *Request, reply *Reply)
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, req *Request, reply *Reply)

// Serve calls f(ctx, req, reply).
func (f HandlerFunc) Serve(ctx context.Context, req *Request, reply *Reply) { f(ctx, req, reply) }

// Request is a decoded request and the connection it came from.
type Request struct {
	// Header is the request header.
	Header wire.RequestHeader
	// Body is the typed request (see wire.Request.Body).
	Body kmsg.Request
	// Conn describes the connection.
	Conn ConnInfo
}

// ConnInfo describes an accepted connection.
type ConnInfo struct {
	// ID numbers the server's connections from 1, in accept order.
	ID uint64
	// LocalAddr and RemoteAddr are the connection's addresses.
	LocalAddr, RemoteAddr net.Addr
	// Principal is who the handshake says the peer is.
	Principal Principal
	// Listener is the name of the listener that accepted the connection
	// (ServerConfig.Name).
	Listener string
}

// ServerConfig configures a listener. Fields mirror Kafka's socket server
// properties where one exists.
type ServerConfig struct {
	// Handler serves requests. Required.
	Handler Handler
	// Name names the listener, as Kafka names listeners (CONTROLLER); the
	// handler reads it from each request's ConnInfo.
	Name string
	// Handshake upgrades each accepted connection; nil means [Plaintext].
	Handshake Handshake
	// MaxFrameSize is socket.request.max.bytes: the largest request frame
	// accepted; a larger size prefix closes the connection before anything
	// is read or allocated.
	MaxFrameSize int32
	// Quotas admits or refuses each accepted connection (max.connections,
	// max.connections.per.ip and its overrides); the listeners of one
	// node share one value, so that the counts cover all of them. Nil
	// means no limits.
	Quotas *ConnectionQuotas
	// CreationRates are the connection creation rate quotas this
	// listener records each accepted connection in (KIP-612): the node's
	// max.connection.creation.rate, shared by every listener, and the
	// listener's own listener.name.<listener>.max.connection.creation.rate.
	// Over one of them, that connection and the accepts after it wait
	// ([CreationRate]). Empty means no limit.
	CreationRates []*CreationRate
	// IPCreationRates are the per-address creation rates of the node,
	// shared by its listeners; nil means none.
	IPCreationRates *IPCreationRates
	// IdleTimeout is connections.max.idle.ms: a connection on which no
	// request arrives within it is closed. It also bounds how long one
	// frame may take to arrive, which defeats a sender that trickles
	// bytes. 0 means never.
	IdleTimeout time.Duration
	// HandshakeTimeout bounds Handshake.Upgrade; 0 means no bound.
	HandshakeTimeout time.Duration
	// WriteTimeout bounds writing one response; a peer that does not read
	// its responses is disconnected after it. 0 means no bound.
	WriteTimeout time.Duration
	// MaxInFlight is how many requests of one connection may be read and
	// not yet answered. When it is reached the listener stops reading that
	// connection until an answer is written (back-pressure, W30).
	MaxInFlight int
	// Logger receives connection-level events; nil discards them.
	Logger *slog.Logger
	// Meter counts the accepted connections, the request frames read and
	// the response frames written; nil counts nothing.
	Meter Meter
	// UnstableAPIVersions is unstable.api.versions.enable: whether a
	// request at an API version the version table marks unstable is
	// served (wire.Decoder.UnstableAPIVersions); without it the
	// connection is closed, as Kafka closes it. Requests read before
	// authentication (ApiVersions, SaslHandshake, SaslAuthenticate) are
	// checked against the stable versions: none of the three has an
	// unstable version.
	UnstableAPIVersions bool
	// ClaimedAPIs are the rows of the APIs the handler serves besides
	// the version table's (wire.Decoder.Claimed): their requests are
	// decoded and handed to it, once the connection has authenticated.
	ClaimedAPIs []wire.APIVersion
}

// DefaultServerConfig returns Kafka's defaults (socket.request.max.bytes
// 104857600, no connection limits, connections.max.idle.ms 600000) and
// ours for the settings Kafka does not have. Handler must still be set.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		MaxFrameSize:     wire.DefaultMaxFrameSize,
		IdleTimeout:      10 * time.Minute,
		HandshakeTimeout: 10 * time.Second,
		WriteTimeout:     30 * time.Second,
		MaxInFlight:      64,
	}
}

// Validate reports every problem with c, or nil. It does not change c.
func (c ServerConfig) Validate() error {
	var errs []error
	if c.Handler == nil {
		errs = append(errs, errors.New("Handler is nil"))
	}
	if c.MaxFrameSize <= 0 {
		errs = append(errs, fmt.Errorf("MaxFrameSize (socket.request.max.bytes) %d must be positive", c.MaxFrameSize))
	}
	if c.IdleTimeout < 0 || c.HandshakeTimeout < 0 || c.WriteTimeout < 0 {
		errs = append(errs, errors.New("IdleTimeout, HandshakeTimeout and WriteTimeout must not be negative"))
	}
	if c.MaxInFlight < 1 {
		errs = append(errs, fmt.Errorf("MaxInFlight %d must be at least 1", c.MaxInFlight))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("transport: invalid server config: %w", err)
	}
	return nil
}

// ServerStats are counters of a server's connections.
type ServerStats struct {
	// Accepted counts connections accepted and admitted.
	Accepted uint64
	// Rejected counts connections closed at accept by Quotas.
	Rejected uint64
	// Throttled counts the accepts delayed by CreationRates.
	Throttled uint64
	// IPThrottled counts the connections held and then closed by
	// IPCreationRates.
	IPThrottled uint64
	// SlotWaits counts the accepts that waited for a slot at
	// max.connections (Quotas).
	SlotWaits uint64
	// Active is the number of connections open now.
	Active int64
	// ClosedInvalid counts connections closed because of an invalid frame
	// or request (the bad-input catalogue's "Close" cases); Invalid splits
	// it by reason.
	ClosedInvalid uint64
	// Invalid counts the invalid frames by reason.
	Invalid InvalidCounts
	// ClosedIdle counts connections closed by IdleTimeout.
	ClosedIdle uint64
	// ClosedExpired counts connections closed for a request after their
	// SASL session expired (KIP-368).
	ClosedExpired uint64
	// Reauthenticated counts successful SASL re-authentications;
	// ReauthFailed the failed ones, each of which closed its connection.
	Reauthenticated, ReauthFailed uint64
}

// InvalidCounts counts connections closed for an invalid frame, by the
// reason (the wire sentinel the error wraps).
type InvalidCounts struct {
	// FrameSize: a negative or oversized size prefix (wire.ErrFrameSize).
	FrameSize uint64
	// UnknownAPIKey: an API key not served (wire.ErrUnknownAPIKey).
	UnknownAPIKey uint64
	// UnsupportedVersion: a version outside the table
	// (wire.ErrUnsupportedVersion).
	UnsupportedVersion uint64
	// MalformedHeader: a header that does not parse
	// (wire.ErrMalformedHeader).
	MalformedHeader uint64
	// MalformedBody: a body that does not decode (wire.ErrMalformedBody).
	MalformedBody uint64
}

// invalidCounters are the atomic counters behind InvalidCounts.
type invalidCounters struct {
	frameSize, unknownAPIKey, unsupportedVersion, malformedHeader, malformedBody atomic.Uint64
}

// count adds one to the counter of err's reason.
func (c *invalidCounters) count(err error) {
	switch {
	case errors.Is(err, wire.ErrFrameSize):
		c.frameSize.Add(1)
	case errors.Is(err, wire.ErrUnknownAPIKey):
		c.unknownAPIKey.Add(1)
	case errors.Is(err, wire.ErrUnsupportedVersion):
		c.unsupportedVersion.Add(1)
	case errors.Is(err, wire.ErrMalformedHeader):
		c.malformedHeader.Add(1)
	case errors.Is(err, wire.ErrMalformedBody):
		c.malformedBody.Add(1)
	}
}

func (c *invalidCounters) load() InvalidCounts {
	return InvalidCounts{
		FrameSize:          c.frameSize.Load(),
		UnknownAPIKey:      c.unknownAPIKey.Load(),
		UnsupportedVersion: c.unsupportedVersion.Load(),
		MalformedHeader:    c.malformedHeader.Load(),
		MalformedBody:      c.malformedBody.Load(),
	}
}

// warnInterval is the least time between two WARN lines about invalid
// frames; the ones in between are logged at DEBUG, so that a flood of bad
// input cannot flood the log.
const warnInterval = time.Second

// Server is a listener serving Kafka-framed requests. Its goroutines are
// the accept loop and, per connection, one reader (which also runs the
// handshake) and one writer. All are waited for by [Server.Close].
type Server struct {
	cfg    ServerConfig
	ln     net.Listener
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
	limit  *ConnectionQuotas
	nextID atomic.Uint64
	closed atomic.Bool

	accepted, rejected, closedInvalid, closedIdle atomic.Uint64
	closedExpired, reauthenticated, reauthFailed  atomic.Uint64
	throttled, ipThrottled, slotWaits             atomic.Uint64

	// held are the connections IPCreationRates throttled, each closed
	// by its timer, or when the accept loop ends.
	heldMu   sync.Mutex
	held     map[net.Conn]*time.Timer
	active   atomic.Int64
	invalid  invalidCounters
	lastWarn atomic.Int64 // unix nanoseconds
}

// Serve starts serving ln with cfg and returns at once. The server runs
// until [Server.Close] is called or ctx is cancelled; either way it closes
// ln and every connection. Serve takes ownership of ln.
func Serve(ctx context.Context, ln net.Listener, cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Handshake == nil {
		cfg.Handshake = Plaintext{}
	}
	cfg.Meter = meterOr(cfg.Meter)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{
		cfg:    cfg,
		ln:     ln,
		log:    log.With(keyListener, ln.Addr().String()),
		cancel: cancel,
		limit:  cfg.Quotas,
	}
	if s.limit == nil {
		s.limit = &ConnectionQuotas{maxTotal: math.MaxInt, maxPerIP: math.MaxInt}
	}
	// The listener is closed by whichever comes first, the end of ctx or
	// the accept loop's own exit, and the loop's goroutine does not end
	// before that close has returned: Accept can fail as soon as a close
	// begins, before the socket is released, and Close promises the port
	// is free when it returns (a restarted node binds it again at once).
	closed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(closed)
		_ = ln.Close()
	})
	s.wg.Go(func() {
		s.acceptLoop(ctx)
		if stop() {
			_ = ln.Close()
		} else {
			<-closed
		}
	})
	return s, nil
}

// Addr returns the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Stats returns the current counters.
func (s *Server) Stats() ServerStats {
	return ServerStats{
		Accepted:      s.accepted.Load(),
		Rejected:      s.rejected.Load(),
		Throttled:     s.throttled.Load(),
		IPThrottled:   s.ipThrottled.Load(),
		SlotWaits:     s.slotWaits.Load(),
		Active:        s.active.Load(),
		ClosedInvalid: s.closedInvalid.Load(),
		Invalid:       s.invalid.load(),
		ClosedIdle:    s.closedIdle.Load(),

		ClosedExpired:   s.closedExpired.Load(),
		Reauthenticated: s.reauthenticated.Load(),
		ReauthFailed:    s.reauthFailed.Load(),
	}
}

// Close stops accepting, closes the listener (releasing the port) and every
// connection, and returns after every goroutine of the server has exited.
// Answers still pending are dropped. A second Close returns
// ErrServerClosed.
func (s *Server) Close() error {
	if s.closed.Swap(true) {
		return ErrServerClosed
	}
	s.cancel()
	s.wg.Wait()
	return nil
}

// invalidLevel returns WARN at most once per warnInterval, else DEBUG.
func (s *Server) invalidLevel(now time.Time) slog.Level {
	last := s.lastWarn.Load()
	if now.UnixNano()-last >= int64(warnInterval) && s.lastWarn.CompareAndSwap(last, now.UnixNano()) {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// hold keeps nc, unserved, for d, then closes it.
func (s *Server) hold(nc net.Conn, d time.Duration) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.held == nil {
		s.held = map[net.Conn]*time.Timer{}
	}
	s.held[nc] = time.AfterFunc(d, func() {
		s.heldMu.Lock()
		defer s.heldMu.Unlock()
		if _, ok := s.held[nc]; ok {
			delete(s.held, nc)
			_ = nc.Close()
		}
	})
}

// releaseHeld closes every held connection at once.
func (s *Server) releaseHeld() {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	for nc, t := range s.held {
		t.Stop()
		delete(s.held, nc)
		_ = nc.Close()
	}
}

func (s *Server) acceptLoop(ctx context.Context) {
	defer s.releaseHeld()
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failures (EMFILE, ...): back off as net/http does,
			// so that a full descriptor table does not spin the loop.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.LogAttrs(ctx, slog.LevelWarn, "accept failed", slog.Any(keyError, err), slog.Duration(keyBackoff, backoff))
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		// The connection counts toward the creation rate whatever the
		// other quotas decide, as in Kafka; a rate over its limit holds
		// this accept, and so every later one, for the delay.
		if d := creationDelay(s.cfg.CreationRates, time.Now()); d > 0 {
			s.throttled.Add(1)
			s.log.LogAttrs(ctx, slog.LevelDebug, "connection accept throttled",
				slog.String(keyRemoteAddr, nc.RemoteAddr().String()), slog.String(keyReason, "max.connection.creation.rate"), slog.Duration(keyBackoff, d))
			if !wait(ctx, d) {
				_ = nc.Close()
				return
			}
		}
		ip := addressKey(nc.RemoteAddr())
		if q := s.cfg.IPCreationRates; q != nil {
			if d := q.record(ip, time.Now()); d > 0 {
				// Not counted toward the listener's and node's rates,
				// as Kafka takes it back from them.
				for _, r := range s.cfg.CreationRates {
					r.unrecord()
				}
				s.ipThrottled.Add(1)
				s.log.LogAttrs(ctx, slog.LevelDebug, "connection throttled: closing it after the delay",
					slog.String(keyRemoteAddr, nc.RemoteAddr().String()), slog.String(keyReason, "connection_creation_rate"), slog.Duration(keyBackoff, d))
				s.hold(nc, d)
				continue
			}
		}
		reason, err := s.limit.reserve(ip, ctx.Done(), func() {
			s.slotWaits.Add(1)
			s.log.LogAttrs(ctx, slog.LevelDebug, "accept waits for a connection slot",
				slog.String(keyRemoteAddr, nc.RemoteAddr().String()), slog.String(keyReason, "max.connections"))
		})
		if err != nil {
			_ = nc.Close()
			return
		}
		if reason != "" {
			s.rejected.Add(1)
			s.log.LogAttrs(ctx, slog.LevelDebug, "connection rejected",
				slog.String(keyRemoteAddr, nc.RemoteAddr().String()), slog.String(keyReason, reason))
			_ = nc.Close()
			continue
		}
		s.accepted.Add(1)
		s.active.Add(1)
		s.cfg.Meter.Connected()
		c := &conn{
			srv: s,
			nc:  nc,
			ip:  ip,
			info: ConnInfo{
				ID:         s.nextID.Add(1),
				LocalAddr:  nc.LocalAddr(),
				RemoteAddr: nc.RemoteAddr(),
				Listener:   s.cfg.Name,
			},
		}
		s.wg.Go(func() { c.serve(ctx) })
	}
}

// hostOf returns the IP part of an address, or the whole address when it
// has no port.
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
