package transport

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// SASLClient is how a Peer authenticates to a SASL listener: Kafka's
// SaslClientAuthenticator with sasl.mechanism.controller.protocol and the
// user name and password of the listener's login module: MechanismPlain,
// MechanismScramSHA256 or MechanismScramSHA512.
type SASLClient struct {
	Mechanism          string
	Username, Password string
}

// clientConv is the client side of one mechanism's exchange: step takes
// the server's last token (nil before the first) and returns the next
// token to send, or done once the server's last token ended the
// exchange.
type clientConv struct {
	s     *SASLClient
	scram *scram.ClientConversation
	sent  bool // PLAIN's one message is sent
}

// start begins an exchange. Its error never holds the password.
func (s *SASLClient) start() (*clientConv, error) {
	c := &clientConv{s: s}
	switch s.Mechanism {
	case MechanismPlain:
	case MechanismScramSHA256, MechanismScramSHA512:
		gen := scram.SHA256
		if s.Mechanism == MechanismScramSHA512 {
			gen = scram.SHA512
		}
		cl, err := gen.NewClient(s.Username, s.Password, "")
		if err != nil {
			return nil, fmt.Errorf("%w: SCRAM user name or password cannot be prepared (SASLprep)", ErrSASLAuthentication)
		}
		c.scram = cl.NewConversation()
	default:
		return nil, fmt.Errorf("%w: mechanism %q is not implemented", ErrSASLAuthentication, s.Mechanism)
	}
	return c, nil
}

func (c *clientConv) step(server []byte) (token []byte, done bool, err error) {
	if c.scram == nil {
		if c.sent {
			return nil, true, nil
		}
		c.sent = true
		return slices.Concat([]byte{0}, []byte(c.s.Username), []byte{0}, []byte(c.s.Password)), false, nil
	}
	msg, err := c.scram.Step(string(server))
	if err != nil {
		return nil, false, fmt.Errorf("%w: SCRAM as %s: the server's message is not valid: %w", ErrSASLAuthentication, c.s.Username, err)
	}
	if c.scram.Done() {
		if !c.scram.Valid() {
			return nil, false, fmt.Errorf("%w: SCRAM as %s: the server's signature is not valid", ErrSASLAuthentication, c.s.Username)
		}
		return nil, true, nil
	}
	return []byte(msg), false, nil
}

// handshakeRequest is the SaslHandshake v1 request naming s's mechanism.
func (s *SASLClient) handshakeRequest() *kmsg.SASLHandshakeRequest {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = s.Mechanism
	return hs
}

// checkHandshake returns the error of a SaslHandshake answer, or nil.
func (s *SASLClient) checkHandshake(resp *kmsg.SASLHandshakeResponse) error {
	if resp.ErrorCode != 0 {
		return fmt.Errorf("%w: SaslHandshake %s: %w (the server enables %v)", ErrSASLAuthentication, s.Mechanism, kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
	}
	return nil
}

// authenticateRequest is a SaslAuthenticate v2 request carrying token.
func authenticateRequest(token []byte) *kmsg.SASLAuthenticateRequest {
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(maxSASLAuthenticateVersion)
	auth.SASLAuthBytes = token
	return auth
}

// checkAuthenticate returns the error of a SaslAuthenticate answer, or
// nil.
func (s *SASLClient) checkAuthenticate(ar *kmsg.SASLAuthenticateResponse) error {
	if ar.ErrorCode == 0 {
		return nil
	}
	msg := ""
	if ar.ErrorMessage != nil {
		msg = ": " + *ar.ErrorMessage
	}
	return fmt.Errorf("%w: SaslAuthenticate as %s: %w%s", ErrSASLAuthentication, s.Username, kerr.ErrorForCode(ar.ErrorCode), msg)
}

// authenticate runs the exchange over nc: SaslHandshake v1, then
// SaslAuthenticate v2 requests with the mechanism's messages (one for
// PLAIN, two for SCRAM, whose server signature is checked). It returns
// the session lifetime the server's last answer gave (KIP-368; 0 for
// none). Its error never holds the password.
func (s *SASLClient) authenticate(nc net.Conn, clientID string, maxFrame int32) (time.Duration, error) {
	conv, err := s.start()
	if err != nil {
		return 0, err
	}
	resp, err := roundTrip(nc, 1, clientID, s.handshakeRequest(), maxFrame)
	if err != nil {
		return 0, err
	}
	if err := s.checkHandshake(resp.(*kmsg.SASLHandshakeResponse)); err != nil {
		return 0, err
	}
	var server []byte
	var lifetime time.Duration
	for corr := int32(2); ; corr++ {
		token, done, err := conv.step(server)
		if err != nil || done {
			return lifetime, err
		}
		resp, err := roundTrip(nc, corr, clientID, authenticateRequest(token), maxFrame)
		if err != nil {
			return 0, err
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := s.checkAuthenticate(ar); err != nil {
			return 0, err
		}
		server = ar.SASLAuthBytes
		lifetime = time.Duration(ar.SessionLifetimeMillis) * time.Millisecond
	}
}

// roundTrip writes req and reads its answer.
func roundTrip(nc net.Conn, corr int32, clientID string, req kmsg.Request, maxFrame int32) (kmsg.Response, error) {
	frame, err := wire.AppendRequest(nil, corr, &clientID, req)
	if err != nil {
		return nil, err
	}
	if _, err := nc.Write(frame); err != nil {
		return nil, fmt.Errorf("%w: write %s: %w", ErrSASLAuthentication, kmsg.NameForKey(req.Key()), err)
	}
	frame, err = wire.ReadFrame(nc, nil, maxFrame)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s answer: %w", ErrSASLAuthentication, kmsg.NameForKey(req.Key()), err)
	}
	if got, err := wire.ResponseCorrelationID(frame); err != nil || got != corr {
		return nil, fmt.Errorf("%w: %s answer has correlation id %d, want %d", ErrSASLAuthentication, kmsg.NameForKey(req.Key()), got, corr)
	}
	return wire.DecodeResponse(frame, req)
}

// UpgradeClient secures nc, a connection just made to addr, as a [Peer]
// does before its first request: a TLS client handshake with the
// configuration tlsFor returns for addr's host (when tlsFor is not nil),
// then SASL authentication with sasl (when not nil) under clientID, with
// frames of at most maxFrame bytes, all within ctx. It returns the
// connection to use from then on and the session lifetime the server
// gave (KIP-368; 0 for none). On an error nc is closed; the error never
// holds the password.
func UpgradeClient(ctx context.Context, nc net.Conn, addr string, tlsFor func(host string) *tls.Config, sasl *SASLClient, clientID string, maxFrame int32) (net.Conn, time.Duration, error) {
	var err error
	if tlsFor != nil {
		if nc, err = dialTLS(ctx, nc, tlsFor, addr); err != nil {
			return nil, 0, err
		}
	}
	if sasl == nil {
		return nc, 0, nil
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	lifetime, err := sasl.authenticate(nc, clientID, maxFrame)
	if !stop() || err != nil {
		_ = nc.Close()
		return nil, 0, fmt.Errorf("transport: SASL with %s: %w", addr, cmp.Or(err, ctx.Err()))
	}
	return nc, lifetime, nil
}
