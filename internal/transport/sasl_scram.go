package transport

import (
	"crypto/rand"
	"encoding/base64"
	"strings"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/xdg-go/scram"
)

// The SCRAM mechanisms (RFC 5802, RFC 7677), Kafka's ScramSaslServer.
const (
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// SCRAM iteration bounds, Kafka's ScramMechanism minIterations and
// maxIterations.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramCredential is what a server stores of a user's SCRAM password
// (RFC 5802 §3): the salt, the iteration count and the two keys.
type ScramCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int
}

// ScramLookup returns the credential of user for mechanism
// (MechanismScramSHA256 or MechanismScramSHA512), or false when it has
// none. It is called once per exchange.
type ScramLookup func(mechanism, user string) (ScramCredential, bool)

// The failure messages of Kafka's ScramSaslServer, which never say
// whether the user exists.
const (
	scramInvalidCredentials = "Authentication failed: Invalid user credentials"
	scramInvalidAuthzID     = "Authentication failed: Client requested an authorization id that is different from username"
	scramInvalidNonce       = "Authentication failed: Invalid client nonce in the final client message."
	scramMalformed          = "Authentication failed: malformed SCRAM message"
)

// scramConv is one SCRAM exchange: client-first, server-first,
// client-final, server-final. The library checks the proof in constant
// time and the whole nonce; the nonce check here (the client's final
// nonce is the client nonce followed by this exchange's fresh server
// nonce, as Kafka's ScramSaslServer checks since CVE-2024-56128) does
// not rely on it.
type scramConv struct {
	conv *scram.ServerConversation
	// nonce is the nonce of server-first (client nonce + server nonce);
	// serverNonce is the part this exchange drew.
	nonce, serverNonce string
	user               string
	round              int
	lookupFailed       bool
}

// newScramConv starts an exchange for mechanism whose credentials come
// from lookup.
func newScramConv(mechanism string, lookup ScramLookup) *scramConv {
	c := &scramConv{}
	gen := scram.SHA256
	if mechanism == MechanismScramSHA512 {
		gen = scram.SHA512
	}
	srv, err := gen.NewServer(func(user string) (scram.StoredCredentials, error) {
		cred, ok := lookup(mechanism, user)
		if !ok || cred.Iterations < ScramMinIterations || cred.Iterations > ScramMaxIterations {
			c.lookupFailed = true
			return scram.StoredCredentials{}, errUnknownScramUser
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
			StoredKey:  cred.StoredKey,
			ServerKey:  cred.ServerKey,
		}, nil
	})
	if err != nil {
		return nil
	}
	c.serverNonce = freshNonce()
	c.conv = srv.WithNonceGenerator(func() string { return c.serverNonce }).NewConversation()
	return c
}

type scramError string

func (e scramError) Error() string { return string(e) }

const errUnknownScramUser = scramError("unknown SCRAM user")

// freshNonce returns 24 random bytes in base64: a server nonce drawn
// for one exchange only.
func freshNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

func (c *scramConv) step(token []byte) ([]byte, bool, string, string) {
	c.round++
	msg := string(token)
	switch c.round {
	case 1:
		user, authzid, tokenauth, ok := parseScramClientFirst(msg)
		switch {
		case !ok:
			return nil, false, "", scramMalformed
		case tokenauth:
			// Delegation tokens are not implemented: a client that asks to
			// authenticate with one is refused, never checked as a password.
			return nil, false, "", scramInvalidCredentials
		case authzid != "" && authzid != user:
			return nil, false, "", scramInvalidAuthzID
		}
		first, err := c.conv.Step(msg)
		if err != nil {
			if c.lookupFailed {
				return nil, false, "", scramInvalidCredentials
			}
			return nil, false, "", scramMalformed
		}
		c.user = user
		c.nonce = scramAttr(first, "r")
		return []byte(first), false, "", ""
	case 2:
		if !bugzoo.Active(bugzoo.Z27) && !c.nonceValid(scramAttr(msg, "r")) {
			return nil, false, "", scramInvalidNonce
		}
		final, err := c.conv.Step(msg)
		if err != nil || !c.conv.Valid() {
			return nil, false, "", scramInvalidCredentials
		}
		return []byte(final), true, c.user, ""
	}
	return nil, false, "", scramMalformed
}

// nonceValid reports whether the client-final nonce is the one the
// server sent, which starts with the server nonce's own prefix
// (client nonce) and ends with this exchange's fresh server nonce.
func (c *scramConv) nonceValid(got string) bool {
	return c.nonce != "" && got == c.nonce && strings.HasSuffix(got, c.serverNonce)
}

// parseScramClientFirst reads client-first-message (RFC 5802 §7):
// gs2-header "n,," or "n,a=<authzid>,", then n=<user>,r=<nonce> and
// extensions. It reports the tokenauth extension (Kafka's
// ScramExtensions, KIP-48 delegation tokens).
func parseScramClientFirst(msg string) (user, authzid string, tokenauth, ok bool) {
	fields := strings.Split(msg, ",")
	if len(fields) < 4 || (fields[0] != "n" && fields[0] != "y") {
		return "", "", false, false
	}
	if fields[1] != "" {
		a, found := strings.CutPrefix(fields[1], "a=")
		if !found {
			return "", "", false, false
		}
		authzid = decodeScramName(a)
	}
	u, found := strings.CutPrefix(fields[2], "n=")
	if !found || u == "" {
		return "", "", false, false
	}
	if _, found := strings.CutPrefix(fields[3], "r="); !found {
		return "", "", false, false
	}
	for _, ext := range fields[4:] {
		k, v, _ := strings.Cut(ext, "=")
		if k == "tokenauth" && strings.EqualFold(v, "true") {
			tokenauth = true
		}
	}
	return decodeScramName(u), authzid, tokenauth, true
}

// decodeScramName undoes RFC 5802's saslname escapes (=2C, =3D).
func decodeScramName(s string) string {
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s)
}

// scramAttr returns the value of attribute key in a SCRAM message.
func scramAttr(msg, key string) string {
	for f := range strings.SplitSeq(msg, ",") {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}
