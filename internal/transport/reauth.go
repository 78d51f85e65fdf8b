package transport

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minReauthInterval is the least time between the starts of two
// re-authentications of one connection; a SaslHandshake sooner is not one
// (Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS), which bounds
// the SCRAM work a client can make a listener do.
const minReauthInterval = time.Second

// afterAuthentication looks at a frame read on an authenticated SASL
// connection before it is decoded, as Kafka's SocketServer does
// (KIP-368): a SaslHandshake on a session with a lifetime starts a
// re-authentication; any other request after the session expired closes
// the connection; a SaslHandshake or SaslAuthenticate that is not a
// re-authentication is answered with ILLEGAL_SASL_STATE. It reports
// whether it served the frame, and a reason other than closeEOF (or an
// error) when the connection must close. seq is the reader's next
// sequence number, advanced for each answer queued on done.
func (c *conn) afterAuthentication(ctx context.Context, in io.Reader, frame []byte, seq *uint64, done chan<- completion) (closeReason, bool, error) {
	now := time.Now()
	key := int16(-1)
	if len(frame) >= 2 {
		key = int16(binary.BigEndian.Uint16(frame))
	}
	if key == keySASLHandshake && c.reauthAllowed(now) {
		return c.reauthenticate(ctx, in, frame, seq, done)
	}
	if c.session.expired(now) {
		return closeExpired, false, nil
	}
	if key != keySASLHandshake && key != keySASLAuthenticate {
		return closeEOF, false, nil
	}
	req, err := parseSASLRequest(frame)
	if err != nil {
		return closeInvalid, false, err
	}
	done <- completion{seq: *seq, corr: req.corr, api: req.key, resp: authenticatedSASLResponse(req)}
	*seq++
	return closeEOF, true, nil
}

// reauthAllowed reports whether a SaslHandshake arriving now starts a
// re-authentication: the session has a lifetime, and the last
// re-authentication began at least minReauthInterval ago. An expired
// session may re-authenticate, as in Kafka.
func (c *conn) reauthAllowed(now time.Time) bool {
	s := &c.session
	return !s.expires.IsZero() && (s.reauthStarted.IsZero() || now.Sub(s.reauthStarted) >= minReauthInterval)
}

// reauthenticate serves a re-authentication whose SaslHandshake is frame.
// It first waits until the writer has written every earlier answer, so
// that the exchange's answers follow them, then runs the exchange on the
// connection within the handshake timeout. On success the session (and
// its new lifetime) replaces the old one; a failure closes the
// connection.
func (c *conn) reauthenticate(ctx context.Context, in io.Reader, frame []byte, seq *uint64, done chan<- completion) (closeReason, bool, error) {
	written := make(chan struct{})
	done <- completion{seq: *seq, barrier: written}
	*seq++
	select {
	case <-written:
	case <-ctx.Done():
		return closeEOF, false, ctx.Err()
	}
	hctx, cancel := c.handshakeContext(ctx)
	defer cancel()
	// Setting the deadline may have undone the one a cancellation set.
	if err := ctx.Err(); err != nil {
		return closeEOF, false, err
	}
	sess, err := c.sasl.reauthenticate(hctx, in, c.nc, frame, c.session)
	if err != nil {
		if ctx.Err() != nil {
			return closeEOF, false, ctx.Err() // the listener is closing
		}
		return closeReauthFailed, false, err
	}
	c.session = sess
	c.srv.reauthenticated.Add(1)
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return closeEOF, false, err
	}
	return closeEOF, true, ctx.Err()
}

// authenticatedSASLResponse is the answer to a SaslHandshake or
// SaslAuthenticate request on an authenticated connection that is not a
// re-authentication: ILLEGAL_SASL_STATE, as Kafka's request handlers
// answer them.
func authenticatedSASLResponse(req saslRequest) kmsg.Response {
	if req.key == keySASLHandshake {
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.SetVersion(req.version)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(req.version)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp
}

// Kafka's SaslClientAuthenticator re-authenticates at a random point
// between 85% and 95% of the session lifetime the server gave: early
// enough for the exchange to finish in time, spread out so that the
// connections of one client do not all renew at once.
const (
	reauthWindowStart  = 0.85
	reauthWindowJitter = 0.10
)

// newJitterRand returns the source of one Peer's re-authentication
// jitter, seeded from the operating system: it decides nothing but when,
// within the window, a session is renewed.
func newJitterRand() *rand.Rand {
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
}

// setReauthAt schedules the renewal of a session of lifetime that began
// now; 0 means the session never expires.
func (s *sender) setReauthAt(lifetime time.Duration) {
	s.reauthAt = time.Time{}
	if lifetime > 0 {
		f := reauthWindowStart + reauthWindowJitter*s.rng.Float64()
		s.reauthAt = time.Now().Add(time.Duration(float64(lifetime) * f))
	}
}

// maybeReauthenticate starts the exchange of a pending re-authentication
// once no request is in flight on the connection, so that nothing else
// is read or written during it (Kafka's server serves a re-authentication
// only between requests).
func (s *sender) maybeReauthenticate() {
	if !s.reauthing || s.reauthConv != nil || s.nc == nil || len(s.inflight) > 0 {
		return
	}
	sc := s.p.cfg.SASL
	conv, err := sc.start()
	if err != nil {
		s.reauthFailed(err)
		return
	}
	s.reauthConv = conv
	gen := s.gen
	deadline := time.Now().Add(s.p.cfg.RequestTimeout)
	s.write(&call{req: sc.handshakeRequest(), deadline: deadline, cb: func(resp kmsg.Response, err error) {
		if err == nil {
			err = sc.checkHandshake(resp.(*kmsg.SASLHandshakeResponse))
		}
		s.reauthStep(gen, nil, 0, deadline, err)
	}})
}

// reauthStep continues the re-authentication of connection gen with the
// server's last token and the session lifetime its answer gave, or ends
// it: with success once the exchange is done (the waiting requests go
// out), by closing the connection on an error.
func (s *sender) reauthStep(gen uint64, server []byte, lifetime time.Duration, deadline time.Time, err error) {
	if gen != s.gen || s.reauthConv == nil {
		return // that connection is gone, and its requests with it
	}
	var token []byte
	done := false
	if err == nil {
		token, done, err = s.reauthConv.step(server)
	}
	if err != nil {
		s.reauthFailed(err)
		return
	}
	if done {
		s.reauthing, s.reauthConv = false, nil
		s.setReauthAt(lifetime)
		s.p.reauthenticated.Add(1)
		s.releaseWaiting()
		return
	}
	sc := s.p.cfg.SASL
	s.write(&call{req: authenticateRequest(token), deadline: deadline, cb: func(resp kmsg.Response, err error) {
		var ar *kmsg.SASLAuthenticateResponse
		if err == nil {
			ar = resp.(*kmsg.SASLAuthenticateResponse)
			err = sc.checkAuthenticate(ar)
		}
		if err != nil {
			s.reauthStep(gen, nil, 0, deadline, err)
			return
		}
		s.reauthStep(gen, ar.SASLAuthBytes, time.Duration(ar.SessionLifetimeMillis)*time.Millisecond, deadline, nil)
	}})
}

// reauthFailed closes a connection whose re-authentication failed, as
// Kafka's client does, and keeps the requests that waited for it: they
// go out on a new connection, authenticated afresh (resend), as Kafka's
// client sends its queued requests once a new connection is ready.
func (s *sender) reauthFailed(err error) {
	s.p.log.LogAttrs(context.Background(), slog.LevelWarn, "re-authentication failed; reconnecting", slog.Any(keyError, err))
	held := s.waiting
	s.waiting = nil
	s.disconnect(fmt.Errorf("%w: re-authentication: %w", ErrDisconnected, err))
	s.redial = append(s.redial, held...)
}

// resend sends the requests a failed re-authentication kept, dialling a
// new connection for them.
func (s *sender) resend(ctx context.Context) {
	if len(s.redial) == 0 {
		return
	}
	calls := s.redial
	s.redial = nil
	for _, c := range calls {
		s.send(ctx, c)
	}
}
