package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/krabka-go/krabka/internal/latency"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors a [Peer] reports to a request's callback. All of them mean the
// request got no answer; Kafka's raft client maps such outcomes to
// BROKER_NOT_AVAILABLE and retries after controller.quorum.retry.backoff.ms.
var (
	// ErrRequestTimeout: no answer within PeerConfig.RequestTimeout. The
	// connection is closed, as Kafka's NetworkClient does, because a late
	// answer could no longer be matched safely.
	ErrRequestTimeout = errors.New("transport: request timed out")
	// ErrDisconnected: the connection failed or closed before the answer
	// arrived.
	ErrDisconnected = errors.New("transport: disconnected")
	// ErrBackoff: the peer is unreachable and the sender is waiting before
	// it dials again.
	ErrBackoff = errors.New("transport: peer unreachable, backing off")
	// ErrPeerClosed: the Peer was closed before the request completed.
	ErrPeerClosed = errors.New("transport: peer closed")
)

// ConnectionLost reports whether err, a request's outcome, says the
// connection was refused, reset or closed by the peer (or its last dial
// failed so, and the sender is backing off), as opposed to a timeout. A
// crashed process's port refuses and its connections reset at once; a
// partition only ever times out. The raft runtime uses this to notice a
// dead leader before its fetch timer expires.
func ConnectionLost(err error) bool {
	if !errors.Is(err, ErrDisconnected) && !errors.Is(err, ErrBackoff) {
		return false
	}
	if errors.Is(err, ErrRequestTimeout) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// NegotiateVersion, set as a request's version before [Peer.Send], asks the
// Peer to send it at the highest version both ends support: the lower of
// our maximum (the wire version table, or kmsg's maximum for an API not in
// it) and the peer's maximum from ApiVersions. The Peer sets the chosen
// version on the request before encoding it, so the callback can read it
// from the response's GetVersion. Without version negotiation our maximum
// is used.
const NegotiateVersion int16 = -1

// PeerConfig configures a [Peer].
type PeerConfig struct {
	// Addr is the peer's "host:port", dialled as given on every
	// reconnect (never pre-resolved, so a peer that moves to a new IP is
	// found again).
	Addr string
	// ClientID is the request header's client id; Kafka's raft client uses
	// "raft-client-<node.id>".
	ClientID string
	// RequestTimeout is controller.quorum.request.timeout.ms: how long a
	// request may wait for its answer, from the moment it was queued. It
	// also bounds a dial.
	RequestTimeout time.Duration
	// UnstableAPIVersions is unstable.api.versions.enable: whether a
	// negotiated version may be one the version table marks unstable
	// (wire.APIVersion.MaxEnabled). A node sends only what it would
	// serve.
	UnstableAPIVersions bool
	// RetryBackoff is controller.quorum.retry.backoff.ms: the wait before
	// dialling again after a failed dial. Consecutive failures double it up
	// to MaxRetryBackoff.
	RetryBackoff time.Duration
	// MaxRetryBackoff caps the doubling of RetryBackoff.
	MaxRetryBackoff time.Duration
	// QueueSize bounds the requests waiting to be written. Send never
	// blocks: when the queue is full it drops the request and returns
	// false.
	QueueSize int
	// MaxFrameSize bounds a response frame (KIP-498: a client-side limit
	// too).
	MaxFrameSize int32
	// NegotiateVersions makes the Peer send ApiVersions on every new
	// connection before any other request, as Kafka's NetworkClient does,
	// and check each request's version against the peer's answer (see
	// [NegotiateVersion]). Requests wait, in order, until the answer is in.
	NegotiateVersions bool
	// ClientSoftwareName and ClientSoftwareVersion identify this software
	// in ApiVersions v3+ (KIP-511); both must match
	// wire.ValidClientSoftware.
	ClientSoftwareName, ClientSoftwareVersion string
	// Dial opens a connection; nil means a net.Dialer. It is the seam for
	// TLS and for in-memory networks in tests ([MemNetwork.Dial]).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS, when not nil, makes every connection TLS: the Peer runs the
	// client handshake over what Dial returned, within the dial's
	// deadline, before any request, with the configuration TLS returns
	// for the host of Addr (called once per connection, so that it can
	// hand out reloaded certificates).
	TLS func(host string) *tls.Config
	// SASL, when not nil, authenticates every connection to a SASL
	// listener, after the TLS handshake and before any request, within
	// the dial's deadline.
	SASL *SASLClient
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Meter counts the connections dialled, the request frames written
	// and the response frames read; nil counts nothing.
	Meter Meter
}

// DefaultPeerConfig returns Kafka's defaults for the raft client
// (controller.quorum.request.timeout.ms 2000, controller.quorum.retry.backoff.ms
// 20) and ours for the rest. Addr must still be set.
func DefaultPeerConfig() PeerConfig {
	return PeerConfig{
		RequestTimeout:  2 * time.Second,
		RetryBackoff:    20 * time.Millisecond,
		MaxRetryBackoff: time.Second,
		QueueSize:       64,
		MaxFrameSize:    wire.DefaultMaxFrameSize,

		NegotiateVersions:     true,
		ClientSoftwareName:    "krabka",
		ClientSoftwareVersion: "0",
	}
}

// Validate reports every problem with c, or nil. It does not change c.
func (c PeerConfig) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("Addr is empty"))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("RequestTimeout (controller.quorum.request.timeout.ms) %v must be positive", c.RequestTimeout))
	}
	if c.RetryBackoff < 0 || c.MaxRetryBackoff < c.RetryBackoff {
		errs = append(errs, fmt.Errorf("RetryBackoff (controller.quorum.retry.backoff.ms) %v must be in [0, MaxRetryBackoff %v]", c.RetryBackoff, c.MaxRetryBackoff))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("QueueSize %d must be at least 1", c.QueueSize))
	}
	if c.MaxFrameSize <= 0 {
		errs = append(errs, fmt.Errorf("MaxFrameSize %d must be positive", c.MaxFrameSize))
	}
	if c.NegotiateVersions && (!wire.ValidClientSoftware(c.ClientSoftwareName) || !wire.ValidClientSoftware(c.ClientSoftwareVersion)) {
		errs = append(errs, fmt.Errorf("ClientSoftwareName %q and ClientSoftwareVersion %q must match KIP-511's pattern", c.ClientSoftwareName, c.ClientSoftwareVersion))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("transport: invalid peer config: %w", err)
	}
	return nil
}

// Callback receives the outcome of a request sent with [Peer.Send]:
// exactly one of resp and err is non-nil. It runs on the peer's sender
// goroutine and must not block; the raft runtime pushes the outcome into
// its own bounded inbound queue.
type Callback func(resp kmsg.Response, err error)

// PeerStats are counters of a [Peer].
type PeerStats struct {
	// Sent counts requests written to the network.
	Sent uint64
	// Dropped counts requests refused by Send because the queue was full.
	Dropped uint64
	// TimedOut counts requests failed with ErrRequestTimeout.
	TimedOut uint64
	// Dials counts connection attempts; DialFailures the failed ones.
	Dials, DialFailures uint64
	// Reauthenticated counts SASL re-authentications of an open
	// connection (KIP-368).
	Reauthenticated uint64
}

// Peer sends requests to one peer over one connection, pipelining them
// with correlation ids, reconnecting with backoff. Send is safe for
// concurrent use and never blocks on the network.
//
// Goroutines: one sender, which owns the connection state, writes requests,
// matches answers and enforces timeouts; and one reader per connection,
// which only reads frames and hands them to the sender. Close waits for
// all of them.
type Peer struct {
	cfg    PeerConfig
	log    *slog.Logger
	queue  chan *call
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu orders Send's enqueue against the sender's final drain: once
	// closed is set under mu, nothing more enters queue, so every request
	// Send accepted gets its callback.
	mu     sync.RWMutex
	closed bool

	sent, dropped, timedOut, dials, dialFailures, reauthenticated atomic.Uint64
}

// call is one request in the peer's care.
type call struct {
	req      kmsg.Request
	queued   latency.Stamp // in a measuring build, when Send took it
	cb       Callback
	deadline time.Time
}

// DialPeer starts a Peer for cfg.Addr. It does not dial at once: the first
// request does. ctx bounds the Peer's life: cancelling it is like Close
// without the wait.
func DialPeer(ctx context.Context, cfg PeerConfig) (*Peer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	cfg.Meter = meterOr(cfg.Meter)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Peer{
		cfg:    cfg,
		log:    log.With(keyPeer, cfg.Addr),
		queue:  make(chan *call, cfg.QueueSize),
		cancel: cancel,
	}
	p.wg.Go(func() { p.run(ctx) })
	return p, nil
}

// Send queues req (at the version the caller set, or [NegotiateVersion])
// for the peer and returns true; cb, which must not be nil, will be called
// exactly once with the answer or an error. The Peer owns req from then on
// (it may set its version); the caller must not touch it before cb runs.
// When the queue is full, or the Peer is closed, Send drops the request,
// counts it, returns false and never calls cb: the protocol retries
// (fetches and votes are idempotent), and the owner must never block on
// the network.
func (p *Peer) Send(req kmsg.Request, cb Callback) bool {
	if req == nil || cb == nil {
		panic("transport: Peer.Send with a nil request or callback")
	}
	c := &call{req: req, queued: latency.Now(), cb: cb, deadline: time.Now().Add(p.cfg.RequestTimeout)}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.dropped.Add(1)
		return false
	}
	select {
	case p.queue <- c:
		return true
	default:
		p.dropped.Add(1)
		return false
	}
}

// Stats returns the current counters.
func (p *Peer) Stats() PeerStats {
	return PeerStats{
		Sent:         p.sent.Load(),
		Dropped:      p.dropped.Load(),
		TimedOut:     p.timedOut.Load(),
		Dials:        p.dials.Load(),
		DialFailures: p.dialFailures.Load(),

		Reauthenticated: p.reauthenticated.Load(),
	}
}

// Close stops the Peer: requests not yet answered complete with
// ErrPeerClosed, the connection closes, and Close returns after every
// goroutine of the Peer has exited.
func (p *Peer) Close() {
	p.cancel()
	p.wg.Wait()
}

// frameIn is a response frame read on connection gen.
type frameIn struct {
	gen   uint64
	read  latency.Stamp // in a measuring build, when it was read
	frame []byte
}

// connErr reports that the reader of connection gen stopped.
type connErr struct {
	gen uint64
	err error
}

// sender is the state the sender goroutine owns.
type sender struct {
	p        *Peer
	nc       net.Conn
	gen      uint64
	stopConn func() // ends the current connection's reader
	nextCorr int32
	inflight map[int32]*call
	backoff  time.Duration
	retryAt  time.Time
	dialErr  error // why the last dial failed, while backing off
	buf      []byte
	frames   chan frameIn
	errs     chan connErr
	stopped  <-chan struct{} // closed when the Peer stops

	// Version negotiation of the current connection: while negotiating,
	// requests wait in order in waiting; versions holds the peer's ranges
	// once known (nil when not negotiated).
	negotiating bool
	waiting     []*call
	versions    map[int16]versionRange

	// Re-authentication of the current connection (KIP-368): reauthAt is
	// when its SASL session is to be renewed (zero: never). The first
	// request after it starts a re-authentication (reauthing): requests
	// wait in order in waiting, as during version negotiation, until the
	// requests in flight are answered; then SaslHandshake and
	// SaslAuthenticate go out as ordinary requests (reauthConv is their
	// exchange), and their success releases the waiting requests. A
	// failure closes the connection, as Kafka's client does.
	reauthAt   time.Time
	reauthing  bool
	reauthConv *clientConv
	rng        *rand.Rand // the jitter of reauthAt
	// redial holds the requests that waited for a re-authentication that
	// failed, to be sent on a new connection.
	redial []*call
}

// versionRange is a peer's supported range for one API.
type versionRange struct{ min, max int16 }

func (p *Peer) run(ctx context.Context) {
	s := &sender{
		p:        p,
		inflight: make(map[int32]*call),
		frames:   make(chan frameIn),
		errs:     make(chan connErr),
		stopped:  ctx.Done(),
		rng:      newJitterRand(),
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	defer s.shutdown(ErrPeerClosed)
	for {
		s.armTimer(timer)
		select {
		case <-ctx.Done():
			return
		case c := <-p.queue:
			s.send(ctx, c)
		case f := <-s.frames:
			if f.gen == s.gen {
				latency.Since("peer: answer read → taken by the sender", f.read)
				s.receive(f.frame)
			}
		case e := <-s.errs:
			if e.gen == s.gen && s.nc != nil {
				p.log.LogAttrs(ctx, slog.LevelDebug, "connection lost", slog.Any(keyError, e.err))
				s.disconnect(fmt.Errorf("%w: %w", ErrDisconnected, e.err))
			}
		case <-timer.C:
			s.expire(time.Now())
		}
		s.maybeReauthenticate()
		s.resend(ctx)
	}
}

// armTimer sets timer to the earliest in-flight deadline.
func (s *sender) armTimer(timer *time.Timer) {
	timer.Stop()
	var first time.Time
	for _, c := range s.inflight {
		if first.IsZero() || c.deadline.Before(first) {
			first = c.deadline
		}
	}
	for _, c := range s.waiting {
		if first.IsZero() || c.deadline.Before(first) {
			first = c.deadline
		}
	}
	if !first.IsZero() {
		timer.Reset(time.Until(first))
	}
}

// send writes c on the connection, dialling first if needed.
func (s *sender) send(ctx context.Context, c *call) {
	p := s.p
	now := time.Now()
	if !now.Before(c.deadline) {
		p.timedOut.Add(1)
		c.cb(nil, ErrRequestTimeout)
		return
	}
	if s.nc == nil {
		if now.Before(s.retryAt) {
			c.cb(nil, fmt.Errorf("%w: %w", ErrBackoff, s.dialErr))
			return
		}
		if err := s.dial(ctx); err != nil {
			c.cb(nil, fmt.Errorf("%w: %w", ErrDisconnected, err))
			return
		}
	}
	if !s.reauthing && s.nc != nil && !s.reauthAt.IsZero() && !now.Before(s.reauthAt) {
		s.reauthing = true
	}
	if s.negotiating || s.reauthing {
		s.waiting = append(s.waiting, c)
		return
	}
	if s.nc == nil {
		c.cb(nil, fmt.Errorf("%w: connection closed", ErrDisconnected))
		return
	}
	if err := s.pickVersion(c.req); err != nil {
		c.cb(nil, err)
		return
	}
	s.write(c)
}

// write encodes c's request with the next correlation id, writes it and
// records it as in flight.
func (s *sender) write(c *call) {
	p := s.p
	if s.nc == nil {
		// An earlier write in the same turn failed and closed the
		// connection.
		c.cb(nil, fmt.Errorf("%w: connection closed", ErrDisconnected))
		return
	}
	corr := s.nextCorr
	s.nextCorr++
	var err error
	s.buf, err = wire.AppendRequest(s.buf[:0], corr, &p.cfg.ClientID, c.req)
	if err != nil {
		c.cb(nil, fmt.Errorf("transport: encode %s request: %w", kmsg.NameForKey(c.req.Key()), err))
		return
	}
	_ = s.nc.SetWriteDeadline(c.deadline)
	select {
	case <-s.stopped:
		// Setting the deadline may have undone the one that stopping set.
		c.cb(nil, ErrPeerClosed)
		return
	default:
	}
	latency.Since("peer: request queued → writing", c.queued)
	start := latency.Now()
	_, err = s.nc.Write(s.buf)
	latency.Since("peer: request write", start)
	if err != nil {
		c.cb(nil, fmt.Errorf("%w: write: %w", ErrDisconnected, err))
		s.disconnect(fmt.Errorf("%w: write: %w", ErrDisconnected, err))
		return
	}
	p.sent.Add(1)
	p.cfg.Meter.Sent(1, len(s.buf))
	s.inflight[corr] = c
}

// dial opens a connection and starts its reader. A failure sets the
// backoff before the next attempt.
func (s *sender) dial(ctx context.Context) error {
	p := s.p
	p.dials.Add(1)
	dctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	nc, err := p.cfg.Dial(dctx, "tcp", p.cfg.Addr)
	var lifetime time.Duration
	if err == nil {
		nc, lifetime, err = UpgradeClient(dctx, nc, p.cfg.Addr, p.cfg.TLS, p.cfg.SASL, p.cfg.ClientID, p.cfg.MaxFrameSize)
	}
	cancel()
	if err != nil {
		p.dialFailures.Add(1)
		s.backoff = min(max(2*s.backoff, p.cfg.RetryBackoff), p.cfg.MaxRetryBackoff)
		s.retryAt = time.Now().Add(s.backoff)
		s.dialErr = err
		p.log.LogAttrs(ctx, slog.LevelWarn, "peer unreachable", slog.Any(keyError, err), slog.Duration(keyBackoff, s.backoff))
		return err
	}
	s.backoff = 0
	s.gen++
	s.nc = nc
	s.setReauthAt(lifetime)
	p.cfg.Meter.Connected()
	gen := s.gen
	cctx, ccancel := context.WithCancel(ctx)
	stop := context.AfterFunc(cctx, func() { _ = nc.SetDeadline(time.Now()) })
	s.stopConn = func() { ccancel(); stop(); _ = nc.Close() }
	p.wg.Go(func() { s.readLoop(cctx, nc, gen) })
	s.versions = nil
	if p.cfg.NegotiateVersions {
		s.negotiating = true
		s.askVersions(4, time.Now().Add(p.cfg.RequestTimeout))
	}
	return nil
}

// askVersions sends ApiVersions at version v as the connection's first
// request; its answer releases the waiting requests.
func (s *sender) askVersions(v int16, deadline time.Time) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(v)
	req.ClientSoftwareName = s.p.cfg.ClientSoftwareName
	req.ClientSoftwareVersion = s.p.cfg.ClientSoftwareVersion
	s.write(&call{req: req, deadline: deadline, cb: func(resp kmsg.Response, err error) {
		if err == nil {
			s.versionsAnswered(v, resp.(*kmsg.ApiVersionsResponse), deadline)
		}
		// On an error the connection is already being closed, and closing
		// fails the waiting requests.
	}})
}

// versionsAnswered records the peer's version ranges and sends the
// requests that waited for them, in order. An UNSUPPORTED_VERSION answer
// carries the peer's own ApiVersions range: ask again at its maximum
// (KIP-511), as Kafka's client does.
func (s *sender) versionsAnswered(asked int16, resp *kmsg.ApiVersionsResponse, deadline time.Time) {
	if resp.ErrorCode == kerr.UnsupportedVersion.Code {
		for _, k := range resp.ApiKeys {
			if k.ApiKey == wire.KeyAPIVersions && k.MaxVersion >= 0 && k.MaxVersion < asked {
				s.askVersions(k.MaxVersion, deadline)
				return
			}
		}
	}
	if resp.ErrorCode != 0 {
		s.disconnect(fmt.Errorf("%w: ApiVersions answered %w", ErrDisconnected, wire.ErrorForCode(resp.ErrorCode)))
		return
	}
	s.versions = make(map[int16]versionRange, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		s.versions[k.ApiKey] = versionRange{k.MinVersion, k.MaxVersion}
	}
	s.negotiating = false
	s.releaseWaiting()
}

// releaseWaiting sends, in order, the requests that waited for version
// negotiation or a re-authentication.
func (s *sender) releaseWaiting() {
	waiting := s.waiting
	s.waiting = nil
	now := time.Now()
	for _, c := range waiting {
		if !now.Before(c.deadline) {
			s.p.timedOut.Add(1)
			c.cb(nil, ErrRequestTimeout)
			continue
		}
		if err := s.pickVersion(c.req); err != nil {
			c.cb(nil, err)
			continue
		}
		s.write(c)
	}
}

// pickVersion resolves NegotiateVersion and checks the request's version
// against the peer's range when it is known. A version the peer does not
// support fails locally with an error wrapping kerr.UnsupportedVersion, as
// Kafka's NetworkClient does (code 35).
func (s *sender) pickVersion(req kmsg.Request) error {
	key := req.Key()
	ourMin, ourMax, name := int16(0), req.MaxVersion(), kmsg.NameForKey(key)
	if a, ok := wire.LookupAPI(key); ok {
		ourMin, ourMax, name = a.Min, a.MaxEnabled(s.p.cfg.UnstableAPIVersions), a.Name
	}
	v := req.GetVersion()
	if s.versions == nil {
		if v == NegotiateVersion {
			req.SetVersion(ourMax)
		}
		return nil
	}
	theirs, ok := s.versions[key]
	if v == NegotiateVersion {
		v = min(ourMax, theirs.max)
		if !ok || v < max(ourMin, theirs.min) {
			return fmt.Errorf("transport: %s: no version supported by both ends (ours %d-%d, peer's %d-%d, known %v): %w",
				name, ourMin, ourMax, theirs.min, theirs.max, ok, kerr.UnsupportedVersion)
		}
		req.SetVersion(v)
		return nil
	}
	if !ok || v < theirs.min || v > theirs.max {
		return fmt.Errorf("transport: %s v%d not supported by the peer (range %d-%d, known %v): %w",
			name, v, theirs.min, theirs.max, ok, kerr.UnsupportedVersion)
	}
	return nil
}

// readLoop reads response frames of connection gen and hands them to the
// sender goroutine until the connection fails or is stopped.
func (s *sender) readLoop(ctx context.Context, nc net.Conn, gen uint64) {
	for {
		frame, err := wire.ReadFrame(nc, nil, s.p.cfg.MaxFrameSize)
		if err != nil {
			select {
			case s.errs <- connErr{gen: gen, err: err}:
			case <-ctx.Done():
			}
			return
		}
		select {
		case s.frames <- frameIn{gen: gen, frame: frame, read: latency.Now()}:
		case <-ctx.Done():
			return
		}
	}
}

// receive matches a response frame to its request and completes it. An
// answer that matches no request, or does not decode, breaks the stream's
// framing contract: the connection is closed.
func (s *sender) receive(frame []byte) {
	s.p.cfg.Meter.Received(len(frame) + frameOverhead)
	corr, err := wire.ResponseCorrelationID(frame)
	if err != nil {
		s.disconnect(fmt.Errorf("%w: %w", ErrDisconnected, err))
		return
	}
	c, ok := s.inflight[corr]
	if !ok {
		s.disconnect(fmt.Errorf("%w: response with unknown correlation id %d", ErrDisconnected, corr))
		return
	}
	delete(s.inflight, corr)
	resp, err := wire.DecodeResponse(frame, c.req)
	if err != nil {
		c.cb(nil, err)
		s.disconnect(fmt.Errorf("%w: %w", ErrDisconnected, err))
		return
	}
	c.cb(resp, nil)
}

// expire fails every request past its deadline; if any was in flight the
// connection is closed and the other in-flight requests fail with
// ErrDisconnected (Kafka's NetworkClient.handleTimedOutRequests).
func (s *sender) expire(now time.Time) {
	// Requests still waiting for the version answer were never sent: they
	// time out without closing the connection.
	kept := s.waiting[:0]
	for _, c := range s.waiting {
		if now.Before(c.deadline) {
			kept = append(kept, c)
			continue
		}
		s.p.timedOut.Add(1)
		c.cb(nil, ErrRequestTimeout)
	}
	clear(s.waiting[len(kept):])
	s.waiting = kept
	expired := false
	for _, corr := range slices.Sorted(maps.Keys(s.inflight)) {
		if c := s.inflight[corr]; !now.Before(c.deadline) {
			delete(s.inflight, corr)
			s.p.timedOut.Add(1)
			c.cb(nil, ErrRequestTimeout)
			expired = true
		}
	}
	if expired {
		s.disconnect(fmt.Errorf("%w: after %w", ErrDisconnected, ErrRequestTimeout))
	}
}

// disconnect closes the current connection and fails its in-flight
// requests with err.
func (s *sender) disconnect(err error) {
	if s.nc == nil {
		return
	}
	s.stopConn()
	s.nc, s.stopConn = nil, nil
	s.p.cfg.Meter.Disconnected()
	s.negotiating, s.versions = false, nil
	s.reauthAt, s.reauthing, s.reauthConv = time.Time{}, false, nil
	for _, corr := range slices.Sorted(maps.Keys(s.inflight)) {
		c := s.inflight[corr]
		delete(s.inflight, corr)
		c.cb(nil, err)
	}
	waiting := s.waiting
	s.waiting = nil
	for _, c := range waiting {
		c.cb(nil, err)
	}
}

// shutdown closes the Peer to new requests and fails everything it still
// holds.
func (s *sender) shutdown(err error) {
	s.p.mu.Lock()
	s.p.closed = true
	s.p.mu.Unlock()
	s.disconnect(err)
	redial := s.redial
	s.redial = nil
	for _, c := range redial {
		c.cb(nil, err)
	}
	for {
		select {
		case c := <-s.p.queue:
			c.cb(nil, err)
		default:
			return
		}
	}
}
