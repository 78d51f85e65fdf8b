package raft

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/krabka-go/krabka/internal/transport"
)

// The SASL properties Krabka enforces (Kafka's SaslConfigs,
// BrokerSecurityConfigs and KRaftConfigs). sasl.enabled.mechanisms is
// also read as listener.name.<listener>.sasl.enabled.mechanisms, and the
// PLAIN login module as listener.name.<listener>.plain.sasl.jaas.config,
// both winning over the node-wide key.
const (
	keySASLEnabledMechanisms     = "sasl.enabled.mechanisms"
	keySASLJAASConfig            = "sasl.jaas.config"
	keySASLControllerMechanism   = "sasl.mechanism.controller.protocol"
	keySASLServerMaxReceiveSize  = "sasl.server.max.receive.size"
	keyFailedAuthenticationDelay = "connection.failed.authentication.delay.ms"
	// plainJAASKey is the per-listener JAAS key of PLAIN, after
	// listener.name.<listener>.
	plainJAASKey = "plain." + keySASLJAASConfig
)

// saslDefaults are Kafka's defaults of the SASL properties.
var saslDefaults = map[string]string{
	keySASLEnabledMechanisms:     "GSSAPI",
	keySASLControllerMechanism:   "GSSAPI",
	keySASLServerMaxReceiveSize:  "524288",
	keyFailedAuthenticationDelay: "100",
}

// saslKeys are the node-wide SASL properties Krabka reads.
var saslKeys = []string{keySASLEnabledMechanisms, keySASLJAASConfig, keySASLControllerMechanism, keySASLServerMaxReceiveSize, keyFailedAuthenticationDelay}

// saslBaseKey returns the node-wide key a SASL property key stands for
// (sasl.jaas.config for a listener's plain.sasl.jaas.config), the
// listener it names (as written), and whether Krabka reads it.
func saslBaseKey(key string) (base, listener string, ok bool) {
	rest, found := strings.CutPrefix(key, perListenerPrefix)
	if !found {
		return key, "", slices.Contains(saslKeys, key)
	}
	listener, base, found = strings.Cut(rest, ".")
	switch {
	case !found || listener == "":
		return "", "", false
	case base == keySASLEnabledMechanisms:
		return base, listener, true
	case base == plainJAASKey:
		return keySASLJAASConfig, listener, true
	}
	return "", "", false
}

// saslSetting returns the value of base for the listener called name:
// the per-listener key, else the node-wide key, else Kafka's default,
// with the key it came from.
func (c Config) saslSetting(name, base string) (key, value string, set bool) {
	lk := perListenerPrefix + strings.ToLower(name) + "." + base
	if base == keySASLJAASConfig {
		lk = perListenerPrefix + strings.ToLower(name) + "." + plainJAASKey
	}
	if v, ok := c.SASL[lk]; ok {
		return lk, v, true
	}
	if v, ok := c.SASL[base]; ok {
		return base, v, true
	}
	return base, saslDefaults[base], false
}

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
// controller listener, every such listener must enable PLAIN only and
// have a PLAIN login module with at least one user, and when the first
// controller listener is SASL this node's own connections must use PLAIN
// with the login module's username and password.
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
			v.add(key, "", "not a SASL property Krabka reads; the ones it reads are %s, and listener.name.<listener>.%s and .%s", strings.Join(saslKeys, ", "), keySASLEnabledMechanisms, plainJAASKey)
			continue
		case listener != "" && listener != strings.ToLower(listener):
			v.add(key, "", "per-listener settings name the listener in lower case, as Kafka reads them")
			continue
		case listener != "" && !slices.Contains(listeners, strings.ToUpper(listener)):
			v.addRelated(key, related, "", "listener %s is not a controller listener with a SASL security protocol, so this setting would be ignored", strings.ToUpper(listener))
			continue
		case listener == "" && len(listeners) == 0 && !(base == keyFailedAuthenticationDelay && value == saslDefaults[base]):
			v.addRelated(key, related, "", "no controller listener uses a SASL security protocol, so this setting would be ignored")
			continue
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
		}
	}
	for i, name := range listeners {
		c.validateSASLListener(v, name, i == 0 && strings.EqualFold(name, c.ControllerListenerNames[0]))
	}
}

// validateSASLListener checks one SASL listener's mechanisms and login
// module; first says it is the listener this node reaches the other
// controllers on.
func (c Config) validateSASLListener(v *validator, name string, first bool) {
	mkey, mechs, _ := c.saslSetting(name, keySASLEnabledMechanisms)
	list := splitCSV(mechs)
	if len(list) == 0 {
		v.add(mkey, mechs, "listener %s is mapped to SASL and enables no mechanism: set it to PLAIN", name)
	}
	for _, m := range list {
		if m != transport.MechanismPlain {
			v.add(mkey, mechs, "mechanism %s (listener %s) is not implemented; Krabka implements PLAIN only (docs/security.md)", m, name)
		}
	}
	ckey, mech, _ := c.saslSetting(name, keySASLControllerMechanism)
	if first {
		switch {
		case mech != transport.MechanismPlain:
			v.add(ckey, mech, "this node reaches the other controllers on SASL listener %s with this mechanism, and Krabka implements PLAIN only (GSSAPI and SCRAM are not implemented): set it to PLAIN", name)
		case !slices.Contains(list, mech):
			v.addRelated(ckey, []string{mkey}, mech, "mechanism %s is not enabled on listener %s", mech, name)
		}
	}
	jkey, jaas, set := c.saslSetting(name, keySASLJAASConfig)
	if !set {
		v.add(perListenerPrefix+strings.ToLower(name)+"."+plainJAASKey, "", "required: listener %s is mapped to SASL and needs a PLAIN login module", name)
		return
	}
	j, err := parsePlainJAAS(jaas)
	if err != nil {
		v.add(jkey, hiddenValue, "%v", err)
		return
	}
	if len(j.users) == 0 {
		v.add(jkey, hiddenValue, "the login module of listener %s accepts no user: add user_<name>=\"<password>\" options", name)
	}
	if first && (!j.hasUsername || j.password == "") {
		v.add(jkey, hiddenValue, "this node reaches the other controllers on listener %s: its login module needs the username and password options it authenticates with", name)
	}
}

// listenerSASL returns the SASL handshake of the SASL listener called
// name and this node's credentials on it, from a configuration that
// passed Validate.
func (c Config) listenerSASL(name string) (transport.SASL, *transport.SASLClient, error) {
	_, mechs, _ := c.saslSetting(name, keySASLEnabledMechanisms)
	jkey, jaas, _ := c.saslSetting(name, keySASLJAASConfig)
	j, err := parsePlainJAAS(jaas)
	if err != nil {
		return transport.SASL{}, nil, &ConfigError{Key: jkey, Value: hiddenValue, Reason: err.Error()}
	}
	_, size, _ := c.saslSetting(name, keySASLServerMaxReceiveSize)
	_, delay, _ := c.saslSetting(name, keyFailedAuthenticationDelay)
	maxSize, err1 := strconv.ParseInt(size, 10, 32)
	delayMs, err2 := strconv.ParseInt(delay, 10, 32)
	if err1 != nil || err2 != nil {
		return transport.SASL{}, nil, fmt.Errorf("raft: SASL settings of listener %s: %s %q, %s %q", name, keySASLServerMaxReceiveSize, size, keyFailedAuthenticationDelay, delay)
	}
	_, mech, _ := c.saslSetting(name, keySASLControllerMechanism)
	h := transport.SASL{
		Mechanisms:     splitCSV(mechs),
		PlainUsers:     j.users,
		MaxReceiveSize: int32(maxSize),
		FailedDelay:    time.Duration(delayMs) * time.Millisecond,
	}
	return h, &transport.SASLClient{Mechanism: mech, Username: j.username, Password: j.password}, nil
}
