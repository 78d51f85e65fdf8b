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
	keySSLKeystorePassword         = "ssl.keystore.password"
	keySSLTruststorePassword       = "ssl.truststore.password"
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
	keySSLPrincipalMappingRules:  "DEFAULT",
}

// sslKeys are the TLS properties Krabka reads, in the order they are
// checked.
var sslKeys = []string{
	keySSLKeystoreType, keySSLKeystoreLocation, keySSLKeystorePassword, keySSLKeystoreCertificateChain, keySSLKeystoreKey,
	keySSLTruststoreType, keySSLTruststoreLocation, keySSLTruststorePassword, keySSLTruststoreCertificates,
	keySSLKeyPassword, keySSLClientAuth, keySSLEnabledProtocols, keySSLProtocol, keySSLCipherSuites, keySSLEndpointIdentification,
	keySSLPrincipalMappingRules,
}

// sslSecretKeys hold a private key or its password: their values never
// appear in an error, a log line or [Config.Properties].
var sslSecretKeys = []string{keySSLKeystoreKey, keySSLKeyPassword, keySSLKeystorePassword, keySSLTruststorePassword}

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
	var sslOnly []string // the SSL listeners, whose principals come from their certificates
	for _, name := range c.ControllerListenerNames {
		if p, ok := c.ListenerSecurityProtocol(name); ok && (p == SecuritySSL || p == SecuritySASLSSL) {
			ssl = append(ssl, strings.ToUpper(name))
			if p == SecuritySSL {
				sslOnly = append(sslOnly, strings.ToUpper(name))
			}
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
		case base == keySSLPrincipalMappingRules && !slices.Contains(sslOnly, strings.ToUpper(listener)) && (listener != "" || len(sslOnly) == 0):
			v.addRelated(key, []string{keyListenerSecurityProtocolMap, keyControllerListenerNames}, "", "only a listener mapped to SSL names its clients by their certificates (on SASL_SSL the principal is the SASL user), and no such listener would read this setting")
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
		switch {
		case strings.EqualFold(value, storePEM) && value != storePEM:
			v.add(key, value, "write PEM in upper case, as Kafka compares the name")
		case storeType(value) == "":
			v.add(key, value, "Krabka reads %s stores; convert the store to one of them (keytool -importkeystore -deststoretype PKCS12)", strings.Join(storeTypes, ", "))
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
	case keySSLPrincipalMappingRules:
		if _, err := parsePrincipalMappingRules(value); err != nil {
			v.add(key, value, "%v", err)
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
// store and trust store (DefaultSslEngineFactory.createKeystore and
// createTruststore) and the combination of its protocols and cipher
// suites.
func validateSSLListener(v *validator, name string, s map[string]sslSetting) {
	who := "listener " + name
	validateKeystore(v, who, s, true)
	validateTruststore(v, who, s)
	validateCipherSuites(v, who, s)
}

// validateKeystore applies Kafka's rules for the key store of who (a
// listener, or a tool's client): a
// file (ssl.keystore.location) of ssl.keystore.type, or PEM inline;
// a JKS or PKCS12 file opens with ssl.keystore.password, which a PEM
// store never has (its key's password is ssl.key.password). A listener
// requires a key store; a client has one only to present a certificate.
func validateKeystore(v *validator, who string, s map[string]sslSetting, required bool) {
	typ, loc, pass := s[keySSLKeystoreType], s[keySSLKeystoreLocation], s[keySSLKeystorePassword]
	chain, key := s[keySSLKeystoreCertificateChain], s[keySSLKeystoreKey]
	t := storeType(typ.value)
	if t == "" {
		return // reported with the property
	}
	switch {
	case key.set && !chain.set:
		v.add(chain.key, "", "%s: %s is set, so the certificate chain must be set too", who, key.key)
	case chain.set && !key.set:
		v.add(key.key, "", "%s: %s is set, so the private key must be set too", who, chain.key)
	case key.set && loc.set:
		v.add(loc.key, loc.value, "%s: give the key store either as a file (%s) or inline (%s, %s), not both", who, loc.key, chain.key, key.key)
	case key.set && t != storePEM:
		v.add(typ.key, typ.value, "%s: an inline key store (%s) is PEM, but the key store type is %s (Kafka's default is JKS): set %s=PEM", who, key.key, t, keySSLKeystoreType)
	case !key.set && !loc.set && required:
		v.add(loc.key, "", "required: %s is mapped to SSL and needs a key store: set %s (of %s, Kafka's default JKS, PKCS12 or PEM) and %s, or %s=PEM with %s and %s",
			who, keySSLKeystoreLocation, keySSLKeystoreType, keySSLKeystorePassword, keySSLKeystoreType, keySSLKeystoreCertificateChain, keySSLKeystoreKey)
	}
	switch {
	case pass.set && t == storePEM:
		v.add(pass.key, "", "%s: a PEM key store has no store password, only the key's (%s): remove the property", who, keySSLKeyPassword)
	case pass.set && !loc.set:
		v.add(pass.key, "", "%s: the key store password is set, but no key store file (%s) is", who, loc.key)
	case loc.set && t != storePEM && !pass.set:
		v.add(pass.key, "", "required: %s has a %s key store file (%s=%s%s), which opens with its password%s",
			who, t, typ.key, t, defaultNote(typ), pemHint(typ, keySSLKeystoreType))
	}
}

// validateTruststore applies Kafka's rules for the trust store of who:
// a file (ssl.truststore.location) of ssl.truststore.type, or PEM inline.
// A PEM trust store has no password. A JKS or PKCS12 trust store file
// without ssl.truststore.password is read as Kafka's FileBasedStore
// reads it: a JKS store's integrity is then not checked.
func validateTruststore(v *validator, who string, s map[string]sslSetting) {
	typ, loc, pass, certs := s[keySSLTruststoreType], s[keySSLTruststoreLocation], s[keySSLTruststorePassword], s[keySSLTruststoreCertificates]
	t := storeType(typ.value)
	if t == "" {
		return // reported with the property
	}
	switch {
	case loc.set && certs.set:
		v.add(loc.key, loc.value, "%s: give the trust store either as a file (%s) or inline (%s), not both", who, loc.key, certs.key)
	case certs.set && t != storePEM:
		v.add(typ.key, typ.value, "%s: an inline trust store (%s) is PEM, but the trust store type is %s (Kafka's default is JKS): set %s=PEM", who, certs.key, t, keySSLTruststoreType)
	}
	switch {
	case pass.set && t == storePEM:
		v.add(pass.key, "", "%s: a PEM trust store has no password: remove the property", who)
	case pass.set && !loc.set:
		v.add(pass.key, "", "%s: the trust store password is set, but no trust store file (%s) is", who, loc.key)
	}
}

// defaultNote says that a store type is Kafka's default, when it was not
// set.
func defaultNote(typ sslSetting) string {
	if typ.set {
		return ""
	}
	return ", Kafka's default"
}

// pemHint points a store whose type was left at Kafka's default to the
// PEM type, which a file written for an older Krabka is.
func pemHint(typ sslSetting, key string) string {
	if typ.set {
		return ""
	}
	return fmt.Sprintf("; for a PEM file set %s=PEM", key)
}

// validateCipherSuites refuses a cipher suite list that Go could not
// enforce as written: Go enables every TLS 1.3 suite together, and a list
// without a TLS 1.2 suite would leave TLS 1.2 on its defaults.
func validateCipherSuites(v *validator, who string, s map[string]sslSetting) {
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
		v.add(cs.key, cs.value, "%s allows TLS 1.2 but lists no TLS 1.2 cipher suite; list one, or set %s=TLSv1.3", who, keySSLEnabledProtocols)
	}
	if maxV >= tls.VersionTLS13 && has13 {
		var missing []string
		for _, n := range tls13Suites() {
			if !slices.Contains(suites, n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			v.add(cs.key, cs.value, "%s: Go enables every TLS 1.3 cipher suite when TLS 1.3 is on and cannot leave out %s; list all of them or none", who, strings.Join(missing, ", "))
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
