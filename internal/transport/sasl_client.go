package transport

import (
	"cmp"
	"context"
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

// authenticate runs the exchange over nc: SaslHandshake v1, then
// SaslAuthenticate v2 requests with the mechanism's messages (one for
// PLAIN, two for SCRAM, whose server signature is checked). Its error
// never holds the password.
func (s *SASLClient) authenticate(nc net.Conn, clientID string, maxFrame int32) error {
	var conv *scram.ClientConversation
	switch s.Mechanism {
	case MechanismPlain:
	case MechanismScramSHA256, MechanismScramSHA512:
		gen := scram.SHA256
		if s.Mechanism == MechanismScramSHA512 {
			gen = scram.SHA512
		}
		cl, err := gen.NewClient(s.Username, s.Password, "")
		if err != nil {
			return fmt.Errorf("%w: SCRAM user name or password cannot be prepared (SASLprep)", ErrSASLAuthentication)
		}
		conv = cl.NewConversation()
	default:
		return fmt.Errorf("%w: mechanism %q is not implemented", ErrSASLAuthentication, s.Mechanism)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = s.Mechanism
	resp, err := roundTrip(nc, 1, clientID, hs, maxFrame)
	if err != nil {
		return err
	}
	if hr := resp.(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		return fmt.Errorf("%w: SaslHandshake %s: %w (the server enables %v)", ErrSASLAuthentication, s.Mechanism, kerr.ErrorForCode(hr.ErrorCode), hr.SupportedMechanisms)
	}
	if conv == nil {
		_, err := s.send(nc, 2, clientID, slices.Concat([]byte{0}, []byte(s.Username), []byte{0}, []byte(s.Password)), maxFrame)
		return err
	}
	challenge := ""
	for corr := int32(2); ; corr++ {
		msg, err := conv.Step(challenge)
		if err != nil {
			return fmt.Errorf("%w: SCRAM as %s: the server's message is not valid: %w", ErrSASLAuthentication, s.Username, err)
		}
		if conv.Done() {
			if !conv.Valid() {
				return fmt.Errorf("%w: SCRAM as %s: the server's signature is not valid", ErrSASLAuthentication, s.Username)
			}
			return nil
		}
		answer, err := s.send(nc, corr, clientID, []byte(msg), maxFrame)
		if err != nil {
			return err
		}
		challenge = string(answer)
	}
}

// send writes one SaslAuthenticate v2 request with token and returns the
// server's token.
func (s *SASLClient) send(nc net.Conn, corr int32, clientID string, token []byte, maxFrame int32) ([]byte, error) {
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(maxSASLAuthenticateVersion)
	auth.SASLAuthBytes = token
	resp, err := roundTrip(nc, corr, clientID, auth, maxFrame)
	if err != nil {
		return nil, err
	}
	ar := resp.(*kmsg.SASLAuthenticateResponse)
	if ar.ErrorCode != 0 {
		msg := ""
		if ar.ErrorMessage != nil {
			msg = ": " + *ar.ErrorMessage
		}
		return nil, fmt.Errorf("%w: SaslAuthenticate as %s: %w%s", ErrSASLAuthentication, s.Username, kerr.ErrorForCode(ar.ErrorCode), msg)
	}
	return ar.SASLAuthBytes, nil
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

// dialSASL authenticates nc with cfg.SASL within ctx; on an error nc is
// closed.
func dialSASL(ctx context.Context, nc net.Conn, cfg PeerConfig) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	err := cfg.SASL.authenticate(nc, cfg.ClientID, cfg.MaxFrameSize)
	if !stop() || err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("transport: SASL with %s: %w", cfg.Addr, cmp.Or(err, ctx.Err()))
	}
	return nc, nil
}
