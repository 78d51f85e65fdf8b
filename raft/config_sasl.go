package raft

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/metadata"
)

// The SASL properties Krabka enforces (Kafka's SaslConfigs,
// BrokerSecurityConfigs and KRaftConfigs). sasl.enabled.mechanisms is
// also read as listener.name.<listener>.sasl.enabled.mechanisms, and a
// mechanism's login module as
// listener.name.<listener>.<mechanism>.sasl.jaas.config (the mechanism in
// lower case: plain, scram-sha-256, scram-sha-512), both winning over
// the node-wide key. connections.max.reauth.ms is read as
// listener.name.<listener>.<mechanism>.connections.max.reauth.ms, else
// listener.name.<listener>.connections.max.reauth.ms, else node-wide, as
// Kafka's SaslChannelBuilder reads it.
const (
	keySASLEnabledMechanisms     = "sasl.enabled.mechanisms"
	keySASLJAASConfig            = "sasl.jaas.config"
	keySASLControllerMechanism   = "sasl.mechanism.controller.protocol"
	keySASLServerMaxReceiveSize  = "sasl.server.max.receive.size"
	keyFailedAuthenticationDelay = "connection.failed.authentication.delay.ms"
	keyConnectionsMaxReauth      = "connections.max.reauth.ms"
)

// saslMechanisms are the mechanisms Krabka implements, in the order its
// messages list them.
var saslMechanisms = []string{transport.MechanismPlain, transport.MechanismScramSHA256, transport.MechanismScramSHA512}

// jaasKey returns the per-listener JAAS key of mechanism, after
// listener.name.<listener>.
func jaasKey(mechanism string) string { return strings.ToLower(mechanism) + "." + keySASLJAASConfig }

// parseLoginModule reads the login module of mechanism.
func parseLoginModule(mechanism, jaas string) (plainJAAS, error) {
	if isScram(mechanism) {
		return parseScramJAAS(jaas)
	}
	return parsePlainJAAS(jaas)
}

// isScram reports whether mechanism is one of the SCRAM mechanisms.
func isScram(mechanism string) bool {
	return mechanism == transport.MechanismScramSHA256 || mechanism == transport.MechanismScramSHA512
}

// saslDefaults are Kafka's defaults of the SASL properties.
var saslDefaults = map[string]string{
	keySASLEnabledMechanisms:     "GSSAPI",
	keySASLControllerMechanism:   "GSSAPI",
	keySASLServerMaxReceiveSize:  "524288",
	keyFailedAuthenticationDelay: "100",
	keyConnectionsMaxReauth:      "0",
}

// saslKeys are the node-wide SASL properties Krabka reads.
var saslKeys = []string{keySASLEnabledMechanisms, keySASLJAASConfig, keySASLControllerMechanism, keySASLServerMaxReceiveSize, keyFailedAuthenticationDelay, keyConnectionsMaxReauth}

// saslBaseKey returns the node-wide key a SASL property key stands for
// (sasl.jaas.config for a listener's <mechanism>.sasl.jaas.config), the
// listener it names (as written), and whether Krabka reads it.
func saslBaseKey(key string) (base, listener string, ok bool) {
	base, listener, _, ok = saslKeyParts(key)
	return base, listener, ok
}

// saslKeyParts is saslBaseKey with the mechanism a per-listener JAAS or
// re-authentication key names.
func saslKeyParts(key string) (base, listener, mechanism string, ok bool) {
	rest, found := strings.CutPrefix(key, perListenerPrefix)
	if !found {
		return key, "", "", slices.Contains(saslKeys, key)
	}
	listener, base, found = strings.Cut(rest, ".")
	switch {
	case !found || listener == "":
		return "", "", "", false
	case base == keySASLEnabledMechanisms || base == keyConnectionsMaxReauth:
		return base, listener, "", true
	}
	for _, m := range saslMechanisms {
		switch base {
		case jaasKey(m):
			return keySASLJAASConfig, listener, m, true
		case reauthKey(m):
			return keyConnectionsMaxReauth, listener, m, true
		}
	}
	return "", "", "", false
}

// reauthKey returns the per-listener re-authentication key of mechanism,
// after listener.name.<listener>.
func reauthKey(mechanism string) string {
	return strings.ToLower(mechanism) + "." + keyConnectionsMaxReauth
}

// reauthSetting returns connections.max.reauth.ms of mechanism on the
// listener called name: the mechanism's per-listener key, else the
// listener's, else the node-wide key, else Kafka's default 0.
func (c Config) reauthSetting(name, mechanism string) (key, value string) {
	lp := perListenerPrefix + strings.ToLower(name) + "."
	if v, ok := c.SASL[lp+reauthKey(mechanism)]; ok {
		return lp + reauthKey(mechanism), v
	}
	key, value, _ = c.settingOf(keyConnectionsMaxReauth, lp+keyConnectionsMaxReauth)
	return key, value
}

// saslSetting returns the value of base for the listener called name:
// the per-listener key, else the node-wide key, else Kafka's default,
// with the key it came from. The JAAS key is PLAIN's; jaasSetting reads
// another mechanism's.
func (c Config) saslSetting(name, base string) (key, value string, set bool) {
	if base == keySASLJAASConfig {
		return c.jaasSetting(name, transport.MechanismPlain)
	}
	return c.settingOf(base, perListenerPrefix+strings.ToLower(name)+"."+base)
}

// jaasSetting returns the login module of mechanism on the listener
// called name, as saslSetting does.
func (c Config) jaasSetting(name, mechanism string) (key, value string, set bool) {
	return c.settingOf(keySASLJAASConfig, perListenerPrefix+strings.ToLower(name)+"."+jaasKey(mechanism))
}

// settingOf returns the per-listener key lk, else the node-wide base.
func (c Config) settingOf(base, lk string) (key, value string, set bool) {
	if v, ok := c.SASL[lk]; ok {
		return lk, v, true
	}
	if v, ok := c.SASL[base]; ok {
		return base, v, true
	}
	return base, saslDefaults[base], false
}

// maxReauthMs caps connections.max.reauth.ms where a time.Duration would
// overflow; a session lifetime of about 292 years never ends.
const maxReauthMs = int64(math.MaxInt64 / int64(time.Millisecond))

// isSASL reports whether p is SASL_PLAINTEXT or SASL_SSL.
func isSASL(p SecurityProtocol) bool { return p == SecuritySASLPlaintext || p == SecuritySASLSSL }

// saslListeners returns the controller listeners mapped to a SASL
// protocol, upper case, in controller.listener.names order.
func (c Config) saslListeners() []string {
	var out []string
	for _, n := range c.ControllerListenerNames {
		if p, ok := c.ListenerSecurityProtocol(n); ok && isSASL(p) {
			out = append(out, strings.ToUpper(n))
		}
	}
	return out
}

// validateSASL checks the SASL properties: each must configure a SASL
// controller listener, every such listener must enable only mechanisms
// Krabka implements (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with the login
// modules they need, and when the first controller listener is SASL this
// node's own connections must use one of its mechanisms with that
// mechanism's login module's username and password.
func (c Config) validateSASL(v *validator) {
	listeners := c.saslListeners()
	related := []string{keyListenerSecurityProtocolMap, keyControllerListenerNames}
	for _, key := range sortedKeys(c.SASL) {
		base, listener, ok := saslBaseKey(key)
		value := c.SASL[key]
		shownValue := value
		if base == keySASLJAASConfig {
			shownValue = hiddenValue
		}
		switch {
		case !ok:
			v.add(key, "", "not a SASL property Krabka reads; the ones it reads are %s, and listener.name.<listener>.%s and .<mechanism>.%s (mechanism plain, scram-sha-256 or scram-sha-512)", strings.Join(saslKeys, ", "), keySASLEnabledMechanisms, keySASLJAASConfig)
			continue
		case listener != "" && listener != strings.ToLower(listener):
			v.add(key, "", "per-listener settings name the listener in lower case, as Kafka reads them")
			continue
		case listener != "" && !slices.Contains(listeners, strings.ToUpper(listener)):
			v.addRelated(key, related, "", "listener %s is not a controller listener with a SASL security protocol, so this setting would be ignored", strings.ToUpper(listener))
			continue
		case listener == "" && len(listeners) == 0 && !(base == keyFailedAuthenticationDelay && value == saslDefaults[base]) && !(base == keyConnectionsMaxReauth && isNotPositive(value)):
			v.addRelated(key, related, "", "no controller listener uses a SASL security protocol, so this setting would be ignored")
			continue
		}
		if _, _, mech, _ := saslKeyParts(key); mech != "" {
			mkey, mechs, _ := c.saslSetting(listener, keySASLEnabledMechanisms)
			if !slices.Contains(splitCSV(mechs), mech) {
				v.addRelated(key, []string{mkey}, "", "mechanism %s is not enabled on listener %s, so this setting would be ignored", mech, strings.ToUpper(listener))
			}
		}
		switch base {
		case keySASLServerMaxReceiveSize:
			if n, err := strconv.ParseInt(value, 10, 32); err != nil || n < 1 {
				v.add(key, shownValue, "must be a positive number of bytes")
			}
		case keyFailedAuthenticationDelay:
			if n, err := strconv.ParseInt(value, 10, 32); err != nil || n < 0 {
				v.add(key, shownValue, "must be a number of milliseconds, 0 or more")
			}
		case keyConnectionsMaxReauth:
			if _, err := strconv.ParseInt(value, 10, 64); err != nil {
				v.add(key, shownValue, "must be a number of milliseconds (0 or less: sessions never expire)")
			}
		}
	}
	for i, name := range listeners {
		c.validateSASLListener(v, name, i == 0 && strings.EqualFold(name, c.ControllerListenerNames[0]))
	}
}

// validateSASLListener checks one SASL listener's mechanisms and login
// modules; first says it is the listener this node reaches the other
// controllers on. PLAIN needs its login module with users; a SCRAM
// mechanism's users are the metadata image's SCRAM credentials, and its
// login module is needed only on the first listener when it is the
// controllers' own mechanism (its username and password).
func (c Config) validateSASLListener(v *validator, name string, first bool) {
	mkey, mechs, _ := c.saslSetting(name, keySASLEnabledMechanisms)
	list := splitCSV(mechs)
	if len(list) == 0 {
		v.add(mkey, mechs, "listener %s is mapped to SASL and enables no mechanism: set it to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", name)
	}
	for _, m := range list {
		if !slices.Contains(saslMechanisms, m) {
			v.add(mkey, mechs, "mechanism %s (listener %s) is not implemented; Krabka implements %s (docs/security.md)", m, name, strings.Join(saslMechanisms, ", "))
		}
	}
	ckey, mech, _ := c.saslSetting(name, keySASLControllerMechanism)
	if first {
		switch {
		case !slices.Contains(saslMechanisms, mech):
			v.add(ckey, mech, "this node reaches the other controllers on SASL listener %s with this mechanism, and Krabka implements %s (GSSAPI and OAUTHBEARER are not implemented)", name, strings.Join(saslMechanisms, ", "))
		case !slices.Contains(list, mech):
			v.addRelated(ckey, []string{mkey}, mech, "mechanism %s is not enabled on listener %s", mech, name)
		}
	}
	for _, m := range list {
		if !slices.Contains(saslMechanisms, m) {
			continue
		}
		own := first && m == mech
		jkey, jaas, set := c.jaasSetting(name, m)
		if !set {
			if m == transport.MechanismPlain || own {
				v.add(perListenerPrefix+strings.ToLower(name)+"."+jaasKey(m), "", "required: listener %s enables %s and needs its login module", name, m)
			}
			continue
		}
		j, err := parseLoginModule(m, jaas)
		if err != nil {
			v.add(jkey, hiddenValue, "%v", err)
			continue
		}
		if m == transport.MechanismPlain && len(j.users) == 0 {
			v.add(jkey, hiddenValue, "the login module of listener %s accepts no user: add user_<name>=\"<password>\" options", name)
		}
		if own && (!j.hasUsername || j.password == "") {
			v.add(jkey, hiddenValue, "this node reaches the other controllers on listener %s with %s: its login module needs the username and password options it authenticates with", name, m)
		}
	}
}

// listenerSASL returns the SASL handshake of the SASL listener called
// name and this node's credentials on it, from a configuration that
// passed Validate.
func (c Config) listenerSASL(name string) (transport.SASL, *transport.SASLClient, error) {
	_, mechs, _ := c.saslSetting(name, keySASLEnabledMechanisms)
	_, mech, _ := c.saslSetting(name, keySASLControllerMechanism)
	h := transport.SASL{Mechanisms: splitCSV(mechs)}
	client := &transport.SASLClient{Mechanism: mech}
	for _, m := range h.Mechanisms {
		jkey, jaas, set := c.jaasSetting(name, m)
		if !set {
			continue
		}
		j, err := parseLoginModule(m, jaas)
		if err != nil {
			return transport.SASL{}, nil, &ConfigError{Key: jkey, Value: hiddenValue, Reason: err.Error()}
		}
		if m == transport.MechanismPlain {
			h.PlainUsers = j.users
		}
		if m == mech {
			client.Username, client.Password = j.username, j.password
		}
	}
	_, size, _ := c.saslSetting(name, keySASLServerMaxReceiveSize)
	_, delay, _ := c.saslSetting(name, keyFailedAuthenticationDelay)
	maxSize, err1 := strconv.ParseInt(size, 10, 32)
	delayMs, err2 := strconv.ParseInt(delay, 10, 32)
	if err1 != nil || err2 != nil {
		return transport.SASL{}, nil, fmt.Errorf("raft: SASL settings of listener %s: %s %q, %s %q", name, keySASLServerMaxReceiveSize, size, keyFailedAuthenticationDelay, delay)
	}
	h.MaxReceiveSize = int32(maxSize)
	h.FailedDelay = time.Duration(delayMs) * time.Millisecond
	for _, m := range h.Mechanisms {
		key, value := c.reauthSetting(name, m)
		ms, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return transport.SASL{}, nil, &ConfigError{Key: key, Value: value, Reason: "must be a number of milliseconds"}
		}
		if ms > 0 {
			if h.MaxReauth == nil {
				h.MaxReauth = map[string]time.Duration{}
			}
			h.MaxReauth[m] = time.Duration(min(ms, maxReauthMs)) * time.Millisecond
		}
	}
	return h, client, nil
}

// scramLookup returns the SCRAM credential lookup of a SASL listener:
// each exchange reads the current image, so a credential committed
// after the listener started is accepted and a removed one is not.
//
// start, when not nil, holds the credentials the node starts with
// ([startCredentials]), used while the image has no metadata.version or
// the node has not applied its log as far as it reached at start:
// controllers that authenticate to each other with SCRAM must elect a
// leader before anything they hold is known to be committed, and until a
// leader is elected a node's image holds only its snapshot, or nothing.
// On an empty log they are the bootstrap records' credentials (what
// krabka storage format --add-scram wrote, KIP-900), the uncommitted
// bootstrap state Kafka's KRaft listeners are given before anything is
// committed (KAFKA-20164). Once the image covers the log the node started
// with, only the image is read.
func scramLookup(image func() *metadata.Image, applied func() int64, start *startCredentials) transport.ScramLookup {
	return func(mechanism, user string) (transport.ScramCredential, bool) {
		id := metadata.ScramSHA256
		if mechanism == transport.MechanismScramSHA512 {
			id = metadata.ScramSHA512
		}
		img := image()
		if start != nil && (img.Features().MetadataVersion() == 0 || applied() < start.until) {
			cred, ok := start.creds[scramKey{id, user}]
			return cred, ok
		}
		cred, ok := img.Scram().Get(id, user)
		if !ok {
			return transport.ScramCredential{}, false
		}
		return transport.ScramCredential{Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: int(cred.Iterations)}, true
	}
}

// startCredentials are the SCRAM credentials of a node's own state at
// start: on an empty log the bootstrap records'; else those of the image
// it loaded (its newest snapshot) changed by every credential record of
// its log after it, committed or not, in log order. A record that is not
// committed may yet be truncated; until the node has applied its log the
// credentials it accepts are those of its own log, as a lagging follower
// accepts those of its image. until is the log end offset at start.
type startCredentials struct {
	creds map[scramKey]transport.ScramCredential
	until int64
}

// scramKey names a SCRAM credential: the mechanism code of
// UserScramCredentialRecord and the user.
type scramKey struct {
	mechanism int8
	user      string
}

// bootstrapScram returns the SCRAM credentials the bootstrap records
// hold, in the order they apply (a later record for the same user and
// mechanism replaces an earlier one, a removal removes it).
func bootstrapScram(recs []metadata.Record) map[scramKey]transport.ScramCredential {
	out := map[scramKey]transport.ScramCredential{}
	for _, r := range recs {
		applyScramRecord(out, r)
	}
	return out
}

// applyScramRecord applies r to creds when it is a credential record.
func applyScramRecord(creds map[scramKey]transport.ScramCredential, r metadata.Record) {
	switch r := r.(type) {
	case *metadata.UserScramCredentialRecord:
		creds[scramKey{r.Mechanism, r.Name}] = transport.ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: int(r.Iterations)}
	case *metadata.RemoveUserScramCredentialRecord:
		delete(creds, scramKey{r.Mechanism, r.Name})
	}
}

// startScram returns the node's [startCredentials]: the bootstrap
// records' on an empty log, else the loaded image's changed by the
// credential records of the log from the applied offset (the loaded
// snapshot's end, or the log start) to its end.
func (e *engine) startScram() (*startCredentials, error) {
	end := e.log.LogEndOffset()
	if end == 0 {
		return &startCredentials{creds: bootstrapScram(e.bootstrap)}, nil
	}
	creds := map[scramKey]transport.ScramCredential{}
	for c := range e.pub.image.Load().Scram().All() {
		creds[scramKey{c.Mechanism, c.Name}] = transport.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int(c.Iterations)}
	}
	var dec recordbatch.Decoder
	for off := max(int64(e.applier.applied), e.log.LogStartOffset()); off < end; {
		rr, err := e.log.Read(off, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("raft: read the log's SCRAM credentials at %d: %w", off, err)
		}
		next := off
		it := recordbatch.NewIterator(&dec, rr.Batches)
		for it.Next() {
			b := it.Batch()
			next = b.NextOffset()
			if b.IsControl() {
				continue
			}
			for i := range b.Records {
				if b.RecordOffset(&b.Records[i]) < off {
					continue
				}
				// A record that does not decode stops the node when it is
				// applied; here it only holds no credential.
				if r, err := metadata.Decode(b.Records[i].Value); err == nil {
					applyScramRecord(creds, r)
				}
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("raft: read the log's SCRAM credentials at %d: %w", off, err)
		}
		if next <= off {
			break
		}
		off = next
	}
	return &startCredentials{creds: creds, until: end}, nil
}
