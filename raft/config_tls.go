package raft

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// The TLS properties Krabka enforces (Kafka's SslConfigs and
// BrokerSecurityConfigs), each also as a per-listener override
// listener.name.<listener>.<key>, which wins over the node-wide key.
const (
	keySSLKeystoreType             = "ssl.keystore.type"
	keySSLKeystoreLocation         = "ssl.keystore.location"
	keySSLKeystoreCertificateChain = "ssl.keystore.certificate.chain"
	keySSLKeystoreKey              = "ssl.keystore.key"
	keySSLTruststoreType           = "ssl.truststore.type"
	keySSLTruststoreLocation       = "ssl.truststore.location"
	keySSLTruststoreCertificates   = "ssl.truststore.certificates"
	keySSLClientAuth               = "ssl.client.auth"
	keySSLEnabledProtocols         = "ssl.enabled.protocols"
	keySSLProtocol                 = "ssl.protocol"
	keySSLCipherSuites             = "ssl.cipher.suites"
	keySSLEndpointIdentification   = "ssl.endpoint.identification.algorithm"
	keySSLKeyPassword              = "ssl.key.password"
)

// sslDefaults are Kafka's defaults of the TLS properties Krabka reads;
// a key without an entry defaults to empty.
var sslDefaults = map[string]string{
	keySSLKeystoreType:           "JKS",
	keySSLTruststoreType:         "JKS",
	keySSLClientAuth:             "none",
	keySSLEnabledProtocols:       "TLSv1.2,TLSv1.3",
	keySSLProtocol:               "TLSv1.3",
	keySSLEndpointIdentification: "https",
}

// sslKeys are the TLS properties Krabka reads, in the order they are
// checked.
var sslKeys = []string{
	keySSLKeystoreType, keySSLKeystoreLocation, keySSLKeystoreCertificateChain, keySSLKeystoreKey,
	keySSLTruststoreType, keySSLTruststoreLocation, keySSLTruststoreCertificates,
	keySSLKeyPassword, keySSLClientAuth, keySSLEnabledProtocols, keySSLProtocol, keySSLCipherSuites, keySSLEndpointIdentification,
}

// sslSecretKeys hold a private key or its password: their values never
// appear in an error, a log line or [Config.Properties].
var sslSecretKeys = []string{keySSLKeystoreKey, keySSLKeyPassword}

// hiddenValue stands for a secret in [Config.Properties], as Kafka logs
// its password-type values.
const hiddenValue = "[hidden]"

// sslBaseKey returns the TLS property key names: key itself, or the key
// after listener.name.<listener>. (with the listener in lower case, as
// Kafka's ListenerName.configPrefix spells it), and whether Krabka reads
// it.
func sslBaseKey(key string) (base, listener string, ok bool) {
	if rest, found := strings.CutPrefix(key, perListenerPrefix); found {
		listener, base, found = strings.Cut(rest, ".")
		if !found || listener == "" || listener != strings.ToLower(listener) {
			return "", "", false
		}
	} else {
		base = key
	}
	return base, listener, slices.Contains(sslKeys, base)
}

// upperListenerSSLKey returns why a per-listener TLS key that spells its
// listener in upper case is refused, or "": Kafka reads per-listener
// keys with the listener name in lower case only, so the key would be
// ignored.
func upperListenerSSLKey(key string) string {
	rest, ok := strings.CutPrefix(key, perListenerPrefix)
	if !ok {
		return ""
	}
	listener, base, _ := strings.Cut(rest, ".")
	if listener == strings.ToLower(listener) || !slices.Contains(sslKeys, base) {
		return ""
	}
	return fmt.Sprintf("per-listener settings name the listener in lower case, as Kafka reads them: write %s", listenerSSLKey(listener, base))
}

// listenerSSLKey returns the per-listener override of base for the
// listener called name.
func listenerSSLKey(name, base string) string {
	return perListenerPrefix + strings.ToLower(name) + "." + base
}

// sslSetting is one TLS property as it applies to a listener: its value
// and the key it came from (the override, the node-wide key, or the
// node-wide key's default).
type sslSetting struct {
	key, value string
	set        bool
}

// listenerSSL returns the TLS settings of the listener called name:
// listener.name.<name>.ssl.* wins over ssl.*, which wins over Kafka's
// default.
func (c Config) listenerSSL(name string) map[string]sslSetting {
	out := make(map[string]sslSetting, len(sslKeys))
	for _, base := range sslKeys {
		if v, ok := c.SSL[listenerSSLKey(name, base)]; ok {
			out[base] = sslSetting{key: listenerSSLKey(name, base), value: v, set: true}
		} else if v, ok := c.SSL[base]; ok {
			out[base] = sslSetting{key: base, value: v, set: true}
		} else {
			out[base] = sslSetting{key: base, value: sslDefaults[base]}
		}
	}
	return out
}

// shown returns the value of key as an error or Properties may show it.
func shown(key, v string) string {
	if base, _, _ := sslBaseKey(key); slices.Contains(sslSecretKeys, base) && v != "" {
		return hiddenValue
	}
	return v
}

// tlsVersions maps the protocol names Kafka takes in ssl.protocol and
// ssl.enabled.protocols to Go's versions; olderProtocols are the names
// Krabka refuses as too old.
var (
	tlsVersions    = map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}
	olderProtocols = []string{"SSLv2", "SSLv2Hello", "SSLv3", "TLSv1", "TLSv1.1", "SSL", "TLS"}
)

// cipherSuite returns Go's id of the cipher suite Kafka names by its
// IANA name, whether it is a TLS 1.3 suite, and why it is refused when
// Go does not offer it.
func cipherSuite(name string) (id uint16, tls13 bool, refusal string) {
	for _, s := range tls.CipherSuites() {
		if s.Name == name {
			return s.ID, slices.Contains(s.SupportedVersions, tls.VersionTLS13), ""
		}
	}
	for _, s := range tls.InsecureCipherSuites() {
		if s.Name == name {
			return 0, false, "is insecure, and Krabka does not offer it"
		}
	}
	return 0, false, "is not a cipher suite Go's TLS implements"
}

// tls13Suites are Go's TLS 1.3 cipher suites, which it always enables
// together when TLS 1.3 is on.
func tls13Suites() []string {
	var names []string
	for _, s := range tls.CipherSuites() {
		if slices.Contains(s.SupportedVersions, tls.VersionTLS13) {
			names = append(names, s.Name)
		}
	}
	return names
}

// validateSSL checks every TLS property of c, then the settings of each
// SSL listener as a whole.
func (c Config) validateSSL(v *validator) {
	var ssl []string
	for _, name := range c.ControllerListenerNames {
		if p, ok := c.ListenerSecurityProtocol(name); ok && (p == SecuritySSL || p == SecuritySASLSSL) {
			ssl = append(ssl, strings.ToUpper(name))
		}
	}
	for _, key := range sortedKeys(c.SSL) {
		base, listener, ok := sslBaseKey(key)
		switch {
		case !ok:
			v.add(key, "", "not a TLS property Krabka reads; the ones it reads are %s, each also as listener.name.<listener>.<property>", strings.Join(sslKeys, ", "))
			continue
		case listener != "" && !slices.Contains(ssl, strings.ToUpper(listener)):
			v.addRelated(key, []string{keyListenerSecurityProtocolMap, keyControllerListenerNames}, "", "listener %s is not a controller listener mapped to SSL, so this setting would be ignored", strings.ToUpper(listener))
			continue
		case listener == "" && len(ssl) == 0:
			v.addRelated(key, []string{keyListenerSecurityProtocolMap, keyControllerListenerNames}, "", "no controller listener is mapped to SSL, so this setting would be ignored")
			continue
		}
		validateSSLValue(v, key, base, shown(key, c.SSL[key]))
	}
	for _, name := range ssl {
		validateSSLListener(v, name, c.listenerSSL(name))
	}
}

// validateSSLValue checks one TLS property's value on its own.
func validateSSLValue(v *validator, key, base, value string) {
	switch base {
	case keySSLKeystoreType, keySSLTruststoreType:
		if value != "PEM" {
			v.add(key, value, "only PEM is implemented; Kafka's JKS and PKCS12 stores are not: convert the store to PEM and set %s=PEM", base)
		}
	case keySSLClientAuth:
		if !slices.Contains([]string{"required", "requested", "none"}, strings.ToLower(value)) {
			v.add(key, value, "must be required, requested or none")
		}
	case keySSLProtocol:
		if _, ok := tlsVersions[value]; !ok {
			v.add(key, value, "%s; use TLSv1.3 or TLSv1.2", protocolRefusal(value))
		}
	case keySSLEnabledProtocols:
		for _, p := range splitCSV(value) {
			if _, ok := tlsVersions[p]; !ok {
				v.add(key, value, "%s; list TLSv1.2, TLSv1.3 or both", protocolRefusal(p))
			}
		}
	case keySSLCipherSuites:
		for _, s := range splitCSV(value) {
			if _, _, why := cipherSuite(s); why != "" {
				v.add(key, value, "%s %s", s, why)
			}
		}
	case keySSLEndpointIdentification:
		if value != "" && !strings.EqualFold(value, "https") {
			v.add(key, value, "must be https (check the peer's host name, the default) or empty (check only its certificate chain)")
		}
	}
}

// protocolRefusal says why a protocol name is refused.
func protocolRefusal(p string) string {
	if slices.Contains(olderProtocols, p) {
		return fmt.Sprintf("protocol %s is older than TLS 1.2 or not a version, and Krabka refuses it", p)
	}
	return fmt.Sprintf("%s is not a TLS protocol version", p)
}

// validateSSLListener applies Kafka's rules for one SSL listener's key
// store and trust store (DefaultSslEngineFactory) and the combination of
// its protocols and cipher suites.
func validateSSLListener(v *validator, name string, s map[string]sslSetting) {
	loc, chain, key := s[keySSLKeystoreLocation], s[keySSLKeystoreCertificateChain], s[keySSLKeystoreKey]
	switch {
	case key.set && !chain.set:
		v.add(chain.key, "", "listener %s: %s is set, so the certificate chain must be set too", name, key.key)
	case chain.set && !key.set:
		v.add(key.key, "", "listener %s: %s is set, so the private key must be set too", name, chain.key)
	case key.set && loc.set:
		v.add(loc.key, loc.value, "listener %s: give the key store either as a file (%s) or inline (%s, %s), not both", name, loc.key, chain.key, key.key)
	case !key.set && !loc.set:
		v.add(loc.key, "", "required: listener %s is mapped to SSL and needs a key store: set %s=PEM and %s (the PEM key followed by its certificate chain), or %s and %s",
			name, keySSLKeystoreType, keySSLKeystoreLocation, keySSLKeystoreCertificateChain, keySSLKeystoreKey)
	}
	if kt := s[keySSLKeystoreType]; !kt.set && (loc.set || key.set) {
		v.add(kt.key, "", "required: listener %s has a PEM key store, so set %s=PEM (Kafka's default is JKS)", name, keySSLKeystoreType)
	}
	tloc, tcerts := s[keySSLTruststoreLocation], s[keySSLTruststoreCertificates]
	if tloc.set && tcerts.set {
		v.add(tloc.key, tloc.value, "listener %s: give the trust store either as a file (%s) or inline (%s), not both", name, tloc.key, tcerts.key)
	}
	if tt := s[keySSLTruststoreType]; !tt.set && (tloc.set || tcerts.set) {
		v.add(tt.key, "", "required: listener %s has a PEM trust store, so set %s=PEM (Kafka's default is JKS)", name, keySSLTruststoreType)
	}
	validateCipherSuites(v, name, s)
}

// validateCipherSuites refuses a cipher suite list that Go could not
// enforce as written: Go enables every TLS 1.3 suite together, and a list
// without a TLS 1.2 suite would leave TLS 1.2 on its defaults.
func validateCipherSuites(v *validator, name string, s map[string]sslSetting) {
	cs := s[keySSLCipherSuites]
	suites := splitCSV(cs.value)
	if len(suites) == 0 {
		return
	}
	minV, maxV, err := versionRange(s)
	if err != nil {
		return // reported with the protocol property
	}
	var has12, has13 bool
	for _, n := range suites {
		_, is13, why := cipherSuite(n)
		if why != "" {
			return // reported with the property
		}
		has12, has13 = has12 || !is13, has13 || is13
	}
	if minV <= tls.VersionTLS12 && !has12 {
		v.add(cs.key, cs.value, "listener %s allows TLS 1.2 but lists no TLS 1.2 cipher suite; list one, or set %s=TLSv1.3", name, keySSLEnabledProtocols)
	}
	if maxV >= tls.VersionTLS13 && has13 {
		var missing []string
		for _, n := range tls13Suites() {
			if !slices.Contains(suites, n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			v.add(cs.key, cs.value, "listener %s: Go enables every TLS 1.3 cipher suite when TLS 1.3 is on and cannot leave out %s; list all of them or none", name, strings.Join(missing, ", "))
		}
	}
}

// versionRange returns the TLS versions a listener allows:
// ssl.enabled.protocols, or when that is empty what Kafka's
// SSLContext for ssl.protocol enables (TLSv1.3: 1.2 and 1.3; TLSv1.2:
// 1.2 only).
func versionRange(s map[string]sslSetting) (minV, maxV uint16, err error) {
	names := splitCSV(s[keySSLEnabledProtocols].value)
	if len(names) == 0 {
		p := s[keySSLProtocol].value
		if tlsVersions[p] == 0 {
			return 0, 0, fmt.Errorf("%s: %s", s[keySSLProtocol].key, protocolRefusal(p))
		}
		names = []string{"TLSv1.2", p}
	}
	for _, n := range names {
		ver, ok := tlsVersions[n]
		if !ok {
			return 0, 0, fmt.Errorf("%s: %s", s[keySSLEnabledProtocols].key, protocolRefusal(n))
		}
		if minV == 0 || ver < minV {
			minV = ver
		}
		maxV = max(maxV, ver)
	}
	return minV, maxV, nil
}
