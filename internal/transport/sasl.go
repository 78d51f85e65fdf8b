package transport

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/krabka-go/krabka/internal/kbin"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MechanismPlain is the SASL/PLAIN mechanism (RFC 4616), Kafka's
// PlainSaslServer.
const MechanismPlain = "PLAIN"

// API keys of the SASL exchange (KIP-152); their versions are the
// version table's (wire.LookupAPI), which every controller listener
// advertises, as Kafka's controller does.
const (
	keySASLHandshake    = wire.KeySASLHandshake
	keySASLAuthenticate = wire.KeySASLAuthenticate
)

// maxSASLAuthenticateVersion is the newest SaslAuthenticate version, the
// one a Peer sends.
var maxSASLAuthenticateVersion = saslRow(keySASLAuthenticate).Max

// saslRow returns the version table's row of a SASL API.
func saslRow(key int16) wire.APIVersion {
	a, ok := wire.LookupAPI(key)
	if !ok {
		panic("transport: invariant: the version table lacks a SASL API")
	}
	return a
}

// DefaultSASLMaxReceiveSize is sasl.server.max.receive.size's default:
// the largest frame read before a connection has authenticated.
const DefaultSASLMaxReceiveSize int32 = 512 * 1024

// ErrSASLAuthentication is wrapped by every error of a failed SASL
// exchange.
var ErrSASLAuthentication = errors.New("transport: SASL authentication failed")

// SASL is the Handshake of a SASL_PLAINTEXT or SASL_SSL listener, as
// Kafka's SaslServerAuthenticator runs it (KIP-152): after the TLS
// handshake when TLS is set, the client may send one ApiVersions request,
// then SaslHandshake naming a mechanism of Mechanisms, then the
// mechanism's tokens in SaslAuthenticate requests (or bare frames after a
// SaslHandshake v0). Nothing else is served until the exchange succeeds;
// the peer is then User:<authenticated name>.
//
// Frames larger than MaxReceiveSize close the connection. A request out
// of order is ILLEGAL_SASL_STATE, a mechanism not enabled
// UNSUPPORTED_SASL_MECHANISM (the answer lists the enabled ones), wrong
// credentials SASL_AUTHENTICATION_FAILED; each closes the connection,
// and an authentication failure's answer is sent FailedDelay after it
// (connection.failed.authentication.delay.ms, KIP-306), which slows down
// password guessing.
//
// # Re-authentication (KIP-368)
//
// A session of a mechanism with a MaxReauth lifetime expires that long
// after its authentication ended. The client re-authenticates on the same
// connection by sending SaslHandshake (the same mechanism) and then
// SaslAuthenticate again, once its earlier requests are answered; the
// listener writes every earlier answer first. A re-authentication must
// name the same mechanism and end with the same principal, or it fails
// and the connection is closed; one that succeeds starts a new lifetime.
// A request other than SaslHandshake that arrives after the session
// expired closes the connection without an answer, dropping answers not
// yet written (Kafka's SocketServer). A SaslHandshake on a session
// without a lifetime, or less than a second after the last
// re-authentication began, is not a re-authentication: it is answered
// with ILLEGAL_SASL_STATE, as is a SaslAuthenticate outside an exchange.
type SASL struct {
	// TLS, when not nil, is the TLS configuration of a SASL_SSL listener.
	TLS *tls.Config
	// Mechanisms are sasl.enabled.mechanisms, in order: MechanismPlain,
	// MechanismScramSHA256 and MechanismScramSHA512 are implemented.
	Mechanisms []string
	// PlainUsers maps each PLAIN user name to its password (the user_<name>
	// options of Kafka's PlainLoginModule).
	PlainUsers map[string]string
	// ScramCredentials looks up a user's SCRAM credential for a mechanism
	// when a client authenticates, so that a credential added or removed
	// since the listener started is seen. Nil refuses SCRAM.
	ScramCredentials ScramLookup
	// MaxReceiveSize is sasl.server.max.receive.size.
	MaxReceiveSize int32
	// FailedDelay is connection.failed.authentication.delay.ms.
	FailedDelay time.Duration
	// MaxReauth is connections.max.reauth.ms of each mechanism (KIP-368):
	// the lifetime of a session that mechanism authenticated. It is sent
	// to the client in SaslAuthenticate v1+ (session_lifetime_ms), and
	// once it has passed, the connection is closed at the next request
	// that is not a re-authentication ([SASL] describes it). A mechanism
	// absent, or at 0 or less, gives sessions that never expire and
	// refuses re-authentication, as Kafka does. No credential Krabka
	// accepts has an expiry of its own (delegation tokens are not
	// implemented), so the lifetime is this setting alone.
	MaxReauth map[string]time.Duration
	// APIVersions answers an ApiVersions request before authentication;
	// the SASL rows are added to its API list. Nil answers with the
	// version table and no features.
	APIVersions func(*kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse
}

// saslState is where a connection is in the exchange.
type saslState int

const (
	saslVersionsOrHandshake saslState = iota // nothing but ApiVersions read yet
	saslHandshake                            // ApiVersions answered
	saslAuthenticate                         // SaslHandshake v1 answered
	saslRawToken                             // SaslHandshake v0 answered: bare tokens follow
	saslBadMechanism                         // a re-authentication named another mechanism
)

// saslSession is an authenticated SASL session: who, by which mechanism,
// and until when (zero: never).
type saslSession struct {
	principal Principal
	mechanism string
	expires   time.Time
	// reauthStarted is when the last re-authentication began; zero before
	// the first.
	reauthStarted time.Time
}

// expired reports whether the session has a lifetime that ended before
// now.
func (s *saslSession) expired(now time.Time) bool {
	return !s.expires.IsZero() && now.After(s.expires)
}

// lifetime returns the session lifetime of mechanism, 0 for none.
func (h SASL) lifetime(mechanism string) time.Duration {
	return max(h.MaxReauth[mechanism], 0)
}

// Upgrade runs the TLS handshake when TLS is set, then the SASL exchange,
// within ctx.
func (h SASL) Upgrade(ctx context.Context, conn net.Conn) (net.Conn, Principal, error) {
	conn, sess, err := h.upgradeSession(ctx, conn)
	return conn, sess.principal, err
}

// upgradeSession is Upgrade returning the whole session, which a
// listener needs to enforce its lifetime.
func (h SASL) upgradeSession(ctx context.Context, conn net.Conn) (net.Conn, saslSession, error) {
	if h.TLS != nil {
		tc, _, err := TLS{Config: h.TLS}.Upgrade(ctx, conn)
		if err != nil {
			return nil, saslSession{}, err
		}
		conn = tc
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	sess, err := h.exchange(ctx, conn, conn, nil, nil)
	if err != nil {
		return nil, saslSession{}, err
	}
	return conn, sess, nil
}

// reauthenticate serves a re-authentication of prev whose SaslHandshake
// request is frame, reading the rest from r (the connection's buffered
// reader) and writing to w, and returns the new session.
func (h SASL) reauthenticate(ctx context.Context, r io.Reader, w io.Writer, frame []byte, prev saslSession) (saslSession, error) {
	started := time.Now()
	sess, err := h.exchange(ctx, r, w, &prev, frame)
	sess.reauthStarted = started
	return sess, err
}

// saslRequest is a request frame read during the exchange: its header
// and the offset of its body.
type saslRequest struct {
	key, version int16
	corr         int32
	body         []byte
}

// exchange serves the SASL requests read from r, answering on w, until
// one authenticates the client, and returns the session. prev is the
// session being re-authenticated, whose SaslHandshake frame is first;
// both are nil for a first authentication.
func (h SASL) exchange(ctx context.Context, r io.Reader, w io.Writer, prev *saslSession, first []byte) (saslSession, error) {
	state := saslVersionsOrHandshake
	if prev != nil {
		state = saslHandshake
	}
	var buf []byte
	var conv saslConv
	var mechanism string
	for {
		frame := first
		first = nil
		if frame == nil {
			var err error
			if frame, err = wire.ReadFrame(r, buf, h.MaxReceiveSize); err != nil {
				return saslSession{}, fmt.Errorf("%w: read: %w", ErrSASLAuthentication, err)
			}
			buf = frame
		}
		switch state {
		case saslBadMechanism:
			// Kafka's REAUTH_BAD_MECHANISM: the token after the handshake
			// fails, unanswered.
			h.delay(ctx)
			return saslSession{}, fmt.Errorf("%w: SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", ErrSASLAuthentication, mechanism, prev.mechanism)
		case saslRawToken:
			challenge, done, name, msg := conv.step(frame)
			if msg == "" && done {
				msg = prev.principalChange(name)
			}
			if msg != "" {
				h.delay(ctx)
				return saslSession{}, fmt.Errorf("%w: %s", ErrSASLAuthentication, msg)
			}
			if err := writeRaw(w, challenge); err != nil {
				return saslSession{}, err
			}
			if done {
				return h.session(name, mechanism), nil
			}
			continue
		}
		req, err := parseSASLRequest(frame)
		if err != nil {
			return saslSession{}, err
		}
		switch {
		case req.key == wire.KeyAPIVersions && state == saslVersionsOrHandshake:
			resp, next := h.answerAPIVersions(frame)
			if err := writeResponse(w, req.corr, resp); err != nil {
				return saslSession{}, err
			}
			if next {
				state = saslHandshake
			}
		case req.key == keySASLHandshake && state != saslAuthenticate:
			c, m, v1, err := h.handshake(ctx, w, req)
			if err != nil {
				return saslSession{}, err
			}
			conv, mechanism = c, m
			state = saslRawToken
			if v1 {
				state = saslAuthenticate
			}
			if prev != nil && m != prev.mechanism {
				state = saslBadMechanism
			}
		case req.key == keySASLAuthenticate && state == saslAuthenticate:
			name, done, err := h.authenticate(ctx, w, req, conv, mechanism, prev)
			if err != nil {
				return saslSession{}, err
			}
			if done {
				return h.session(name, mechanism), nil
			}
		case state == saslAuthenticate:
			// During the exchange a request of another type is answered
			// with its own error response carrying ILLEGAL_SASL_STATE, and
			// ends the connection after the failed authentication delay,
			// as Kafka's SaslServerAuthenticator.handleSaslToken does; one
			// that does not decode gets no answer.
			h.delay(ctx)
			if resp := illegalStateAnswer(frame); resp != nil {
				_ = writeResponse(w, req.corr, resp)
			}
			return saslSession{}, fmt.Errorf("%w: ILLEGAL_SASL_STATE: API key %d during SASL authentication", ErrSASLAuthentication, req.key)
		default:
			return saslSession{}, fmt.Errorf("%w: ILLEGAL_SASL_STATE: API key %d v%d during the SASL handshake", ErrSASLAuthentication, req.key, req.version)
		}
	}
}

// session returns the session of a user the exchange of mechanism has
// just authenticated: its lifetime starts now, as Kafka's
// SaslServerAuthenticator counts it from the end of the exchange.
func (h SASL) session(name, mechanism string) saslSession {
	s := saslSession{principal: Principal{Type: "User", Name: name}, mechanism: mechanism}
	if d := h.lifetime(mechanism); d > 0 {
		s.expires = time.Now().Add(d)
	}
	return s
}

// principalChange returns the failure message of a re-authentication of
// s that authenticated name, a principal other than s's, or "" when the
// principal is unchanged or s is nil (a first authentication). Kafka
// refuses a change of principal on a connection.
func (s *saslSession) principalChange(name string) string {
	p := Principal{Type: "User", Name: name}
	if s == nil || p == s.principal {
		return ""
	}
	return fmt.Sprintf("Cannot change principals during re-authentication from %s.%s: %s.%s", s.principal.Type, s.principal.Name, p.Type, p.Name)
}

// parseSASLRequest reads the header of a frame read before
// authentication. Only ApiVersions, SaslHandshake and SaslAuthenticate
// are parsed beyond the API key.
func parseSASLRequest(frame []byte) (saslRequest, error) {
	r := kbin.NewReader(frame)
	req := saslRequest{key: r.Int16(), version: r.Int16(), corr: r.Int32()}
	if r.Err() != nil {
		return req, fmt.Errorf("%w: frame of %d bytes is shorter than a request header", ErrSASLAuthentication, len(frame))
	}
	flexible := false
	switch req.key {
	case wire.KeyAPIVersions:
		return req, nil // wire.DecodeRequest reads the whole frame
	case keySASLHandshake, keySASLAuthenticate:
		a := saslRow(req.key)
		if !a.Supports(req.version) {
			return req, fmt.Errorf("%w: %s v%d is outside %d-%d", ErrSASLAuthentication, a.Name, req.version, a.Min, a.Max)
		}
		flexible = a.Flexible(req.version)
	default:
		return req, nil
	}
	r.NullableString() // client id
	if flexible {
		r.SkipTags()
	}
	if r.Err() != nil {
		return req, fmt.Errorf("%w: request header: %w", ErrSASLAuthentication, r.Err())
	}
	req.body = frame[r.Offset():]
	return req, nil
}

// answerAPIVersions answers an ApiVersions frame and reports whether the
// exchange moves on (a request at a version we do not serve is answered
// with our range and may be sent again). The answer lists the version
// table, SaslHandshake and SaslAuthenticate among it.
func (h SASL) answerAPIVersions(frame []byte) (kmsg.Response, bool) {
	decoded, err := wire.DecodeRequest(frame)
	if err != nil {
		var re *wire.RequestError
		if errors.As(err, &re) && re.Answer != nil {
			return re.Answer, false
		}
		return nil, false
	}
	body := decoded.Body.(*kmsg.ApiVersionsRequest)
	var resp *kmsg.ApiVersionsResponse
	if h.APIVersions != nil {
		resp = h.APIVersions(body)
	} else {
		resp = wire.AnswerAPIVersions(body, wire.FeatureState{FinalizedEpoch: -1})
	}
	return resp, true
}

// saslConv is the server side of one mechanism's exchange. step reads
// the client's next token and returns the challenge to send back,
// whether the exchange is over, and then the authenticated name; or the
// message of a failure, which never holds a secret.
type saslConv interface {
	step(token []byte) (challenge []byte, done bool, name, failure string)
}

// plainConv is PLAIN's one-step exchange.
type plainConv struct{ h *SASL }

func (c plainConv) step(token []byte) ([]byte, bool, string, string) {
	name, msg := c.h.authenticatePlain(token)
	return nil, msg == "", name, msg
}

// handshake answers a SaslHandshake request and returns the exchange of
// the mechanism it names, that mechanism, and whether it was v1 (tokens
// in SaslAuthenticate requests follow).
func (h SASL) handshake(ctx context.Context, conn io.Writer, req saslRequest) (saslConv, string, bool, error) {
	body := kmsg.NewPtrSASLHandshakeRequest()
	body.SetVersion(req.version)
	if err := body.ReadFrom(req.body); err != nil {
		return nil, "", false, fmt.Errorf("%w: SaslHandshake: %w", ErrSASLAuthentication, err)
	}
	resp := body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = slices.Clone(h.Mechanisms)
	var conv saslConv
	if slices.Contains(h.Mechanisms, body.Mechanism) {
		conv = h.newConv(body.Mechanism)
	}
	if conv == nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		h.delay(ctx)
		_ = writeResponse(conn, req.corr, resp)
		return nil, "", false, fmt.Errorf("%w: UNSUPPORTED_SASL_MECHANISM: %q is not enabled", ErrSASLAuthentication, body.Mechanism)
	}
	return conv, body.Mechanism, req.version >= 1, writeResponse(conn, req.corr, resp)
}

// newConv returns the exchange of an implemented mechanism, or nil.
func (h *SASL) newConv(mechanism string) saslConv {
	switch mechanism {
	case MechanismPlain:
		return plainConv{h}
	case MechanismScramSHA256, MechanismScramSHA512:
		if h.ScramCredentials == nil {
			return nil
		}
		return newScramConv(mechanism, h.ScramCredentials)
	}
	return nil
}

// authenticate passes the token of a SaslAuthenticate request to conv
// and answers it; it reports whether the exchange is over. The answer
// that ends it carries the session lifetime of mechanism (v1+), and, in
// a re-authentication of prev, fails if the principal changed.
func (h SASL) authenticate(ctx context.Context, conn io.Writer, req saslRequest, conv saslConv, mechanism string, prev *saslSession) (string, bool, error) {
	body := kmsg.NewPtrSASLAuthenticateRequest()
	body.SetVersion(req.version)
	if err := body.ReadFrom(req.body); err != nil {
		return "", false, fmt.Errorf("%w: SaslAuthenticate: %w", ErrSASLAuthentication, err)
	}
	resp := body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	challenge, done, name, msg := conv.step(body.SASLAuthBytes)
	if msg == "" && done {
		msg = prev.principalChange(name)
	}
	if msg != "" {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		h.delay(ctx)
		_ = writeResponse(conn, req.corr, resp)
		return "", false, fmt.Errorf("%w: %s", ErrSASLAuthentication, msg)
	}
	resp.SASLAuthBytes = challenge
	if done {
		resp.SessionLifetimeMillis = h.lifetime(mechanism).Milliseconds()
	}
	return name, done, writeResponse(conn, req.corr, resp)
}

// authenticatePlain checks a PLAIN message, authzid NUL authcid NUL
// passwd, as Kafka's PlainSaslServer does: the authorization id must be
// empty or the user name, and the password must equal the user's,
// compared in constant time. It returns the user name, or the message
// of the failure (which never holds the password).
func (h SASL) authenticatePlain(token []byte) (name, failure string) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))
	}
	authzid, user, password := string(parts[0]), string(parts[1]), parts[2]
	switch {
	case user == "":
		return "", "Authentication failed: username not specified"
	case len(password) == 0:
		return "", "Authentication failed: password not specified"
	case authzid != "" && authzid != user:
		return "", "Authentication failed: Client requested an authorization id that is different from username"
	}
	want, ok := h.PlainUsers[user]
	// The comparison runs for an unknown user too, so that its timing does
	// not tell which users exist.
	match := subtle.ConstantTimeCompare([]byte(want), password) == 1
	if !ok || !match {
		return "", "Authentication failed: Invalid username or password"
	}
	return user, ""
}

// delay waits FailedDelay, or until ctx ends.
func (h SASL) delay(ctx context.Context) {
	if h.FailedDelay <= 0 {
		return
	}
	t := time.NewTimer(h.FailedDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// illegalStateAnswer returns the ILLEGAL_SASL_STATE answer to a request
// frame that is out of place in the SASL exchange: the request's own error
// response ([wire.ErrorAnswer]) at its version, or nil when the frame does
// not decode. An ApiVersions request at a version we do not serve is
// answered at v0, as its other answers are.
func illegalStateAnswer(frame []byte) kmsg.Response {
	code := kerr.IllegalSaslState.Code
	decoded, err := wire.DecodeRequest(frame)
	if err != nil {
		if re, ok := errors.AsType[*wire.RequestError](err); ok && re.Answer != nil {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = code
			return resp
		}
		return nil
	}
	key := decoded.Header.APIKey
	return wire.ErrorAnswer(decoded.Body, code, fmt.Sprintf("Unexpected Kafka request of type %s during SASL authentication.", kafkaAPIName(key)))
}

// kafkaAPIName is the name Kafka's ApiKeys enum gives an API in its
// messages (SASL_HANDSHAKE, DESCRIBE_QUORUM), or the key for a private RPC.
func kafkaAPIName(key int16) string {
	a, ok := wire.LookupAPI(key)
	if !ok || key >= 1000 {
		return fmt.Sprint(key)
	}
	var b []byte
	for i, r := range a.Name {
		if i > 0 && r >= 'A' && r <= 'Z' && !(a.Name[i-1] >= 'A' && a.Name[i-1] <= 'Z') {
			b = append(b, '_')
		}
		b = append(b, byte(r))
	}
	return strings.ToUpper(string(b))
}

// writeResponse writes one response frame.
func writeResponse(conn io.Writer, corr int32, resp kmsg.Response) error {
	if resp == nil {
		return fmt.Errorf("%w: malformed ApiVersions request", ErrSASLAuthentication)
	}
	if _, err := conn.Write(wire.AppendResponse(nil, corr, resp)); err != nil {
		return fmt.Errorf("%w: write: %w", ErrSASLAuthentication, err)
	}
	return nil
}

// writeRaw writes a bare SASL token frame (after SaslHandshake v0).
func writeRaw(w io.Writer, token []byte) error {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(token)))
	if _, err := w.Write(append(b, token...)); err != nil {
		return fmt.Errorf("%w: write: %w", ErrSASLAuthentication, err)
	}
	return nil
}
