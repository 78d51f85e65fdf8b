package raft

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// The client properties of Kafka's tools (AdminClientConfig,
// CommonClientConfigs) that are not also a server's.
const (
	keySecurityProtocol = "security.protocol"
	keySASLMechanism    = "sasl.mechanism"
)

// clientOnlyKeys are the client properties a server.properties file
// carries for the tools only: a controller does not read them. The
// node-wide sasl.jaas.config and ssl.* keys it shares with the tools.
var clientOnlyKeys = []string{keySecurityProtocol, keySASLMechanism}

// clientSSLKeys are the TLS properties of a client: the server's, but
// for ssl.client.auth and ssl.principal.mapping.rules, which only a
// listener reads.
var clientSSLKeys = slices.DeleteFunc(slices.Clone(sslKeys), func(k string) bool {
	return k == keySSLClientAuth || k == keySSLPrincipalMappingRules
})

// ClientSecurity is how a client reaches a controller: the security
// settings Kafka's tools read from --command-config (security.protocol,
// the ssl.* key and trust stores and protocols,
// ssl.endpoint.identification.algorithm, sasl.mechanism and the
// credentials of sasl.jaas.config).
type ClientSecurity struct {
	// Protocol is security.protocol; PLAINTEXT by default.
	Protocol SecurityProtocol
	// TLS returns the TLS configuration of a connection to host (its
	// name for the host name check); nil unless Protocol is SSL or
	// SASL_SSL. It reads a key or trust store file again when the file
	// changes, and is safe for concurrent use.
	TLS func(host string) *tls.Config
	// SASLMechanism is sasl.mechanism, and SASLUsername and SASLPassword
	// the username and password of sasl.jaas.config's PlainLoginModule
	// or ScramLoginModule; empty unless Protocol is SASL_PLAINTEXT or
	// SASL_SSL.
	SASLMechanism, SASLUsername, SASLPassword string
}

// LoadClientConfig reads the client properties file at path, a tool's
// --command-config, as Kafka's tools read it (see
// [ParseClientProperties]).
func LoadClientConfig(path string) (ClientSecurity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ClientSecurity{}, fmt.Errorf("raft: load client config: %w", err)
	}
	return ParseClientProperties(data)
}

// ParseClientProperties reads a client properties file's contents (Java
// properties, read as [ParseProperties] reads them). Every key must be a
// client setting Krabka honours: a key it would ignore (another client
// setting of Kafka's, a TLS setting with security.protocol PLAINTEXT, a
// SASL setting without a SASL protocol) is a [*ConfigError] naming it,
// and so is a value it cannot honour (a SASL mechanism other than PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512, a login module that is not the
// mechanism's). Errors never show a password or a login module. The
// key and trust stores are read, so a store that does not open is an
// error too.
func ParseClientProperties(data []byte) (ClientSecurity, error) {
	keys, values, err := readProperties(data)
	if err != nil {
		return ClientSecurity{}, err
	}
	return clientSecurity(keys, values, false)
}

// LoadConfigWithClient reads a controller's server.properties at path as
// [LoadConfig] does, and the client settings it carries for the tools,
// as Kafka's kafka-metadata-quorum add-controller reads its
// --command-config: security.protocol and sasl.mechanism, which the
// controller does not read, and the node-wide sasl.jaas.config and ssl.*
// keys, which it shares with the controller (its own login and stores).
func LoadConfigWithClient(path string) (Config, Warnings, ClientSecurity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, nil, ClientSecurity{}, fmt.Errorf("raft: load config: %w", err)
	}
	keys, values, err := readProperties(data)
	if err != nil {
		return Config{}, nil, ClientSecurity{}, err
	}
	server := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(clientOnlyKeys, k) })
	cfg, w, err := fromProperties(server, values)
	if err != nil {
		return cfg, w, ClientSecurity{}, err
	}
	sec, err := clientSecurity(keys, values, true)
	return cfg, w, sec, err
}

// whoClient names a tool's client in errors.
const whoClient = "the client"

// clientSecurity builds the client settings of the properties keys. In
// a server file (serverFile) only the client keys are read, the others
// being the controller's; otherwise every other key is refused.
func clientSecurity(keys []string, values map[string]string, serverFile bool) (ClientSecurity, error) {
	v := &validator{}
	sec := ClientSecurity{Protocol: SecurityPlaintext}
	if p, ok := values[keySecurityProtocol]; ok {
		if sec.Protocol, ok = protocolByName(p); !ok {
			v.add(keySecurityProtocol, p, "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
		}
	}
	useTLS := sec.Protocol == SecuritySSL || sec.Protocol == SecuritySASLSSL
	s := make(map[string]sslSetting, len(clientSSLKeys))
	for _, base := range clientSSLKeys {
		s[base] = sslSetting{key: base, value: sslDefaults[base]}
		if val, ok := values[base]; ok {
			s[base] = sslSetting{key: base, value: val, set: true}
		}
	}
	for _, k := range keys {
		clientSSL := slices.Contains(clientSSLKeys, k)
		switch {
		case k == keySecurityProtocol:
		case (k == keySASLMechanism || (k == keySASLJAASConfig && !serverFile)) && !isSASL(sec.Protocol):
			v.addRelated(k, []string{keySecurityProtocol}, "", "security.protocol is %s, so this SASL setting would be ignored: set security.protocol=SASL_PLAINTEXT or SASL_SSL, or remove it", sec.Protocol)
		case serverFile:
			// The other keys are the controller's; its ssl.* keys are the
			// client's too when security.protocol uses TLS.
		case clientSSL && !useTLS:
			v.addRelated(k, []string{keySecurityProtocol}, "", "security.protocol is %s, so this TLS setting would be ignored: set security.protocol=SSL or SASL_SSL, or remove it", sec.Protocol)
		case !clientSSL && !slices.Contains(clientOnlyKeys, k) && k != keySASLJAASConfig:
			v.add(k, "", "not a client setting Krabka's tools honour; they read %s, %s, %s and %s: remove it",
				keySecurityProtocol, keySASLMechanism, keySASLJAASConfig, strings.Join(clientSSLKeys, ", "))
		}
	}
	if useTLS {
		for _, base := range clientSSLKeys {
			if s[base].set {
				validateSSLValue(v, base, base, shown(base, s[base].value))
			}
		}
		validateKeystore(v, whoClient, s, false)
		validateTruststore(v, whoClient, s)
		validateCipherSuites(v, whoClient, s)
	}
	if isSASL(sec.Protocol) {
		sec.SASLMechanism, sec.SASLUsername, sec.SASLPassword = clientLogin(v, values, serverFile)
	}
	if len(v.errs) > 0 {
		return ClientSecurity{}, errors.Join(v.errs...)
	}
	if useTLS {
		base, err := tlsBase(s)
		if err != nil {
			return ClientSecurity{}, err
		}
		st, err := newTLSStores(whoClient, s, slog.New(slog.DiscardHandler))
		if err != nil {
			return ClientSecurity{}, err
		}
		sec.TLS = newClientTLS(base, st, s)
	}
	return sec, nil
}

// clientLogin returns the SASL mechanism and the credentials of its
// login module, as Kafka's client reads sasl.mechanism and
// sasl.jaas.config.
func clientLogin(v *validator, values map[string]string, serverFile bool) (mechanism, username, password string) {
	mechanism, ok := values[keySASLMechanism]
	if !ok {
		v.add(keySASLMechanism, "", "required: Kafka's default GSSAPI is not implemented; set it to one of %s", strings.Join(saslMechanisms, ", "))
		return "", "", ""
	}
	if !slices.Contains(saslMechanisms, mechanism) {
		v.add(keySASLMechanism, mechanism, "mechanism %s is not implemented; set it to one of %s", mechanism, strings.Join(saslMechanisms, ", "))
		return "", "", ""
	}
	jaas, ok := values[keySASLJAASConfig]
	if !ok {
		v.add(keySASLJAASConfig, "", "required: the %s login module with the username and password to authenticate with", mechanism)
		return "", "", ""
	}
	j, err := parseLoginModule(mechanism, jaas)
	switch {
	case err != nil:
		v.add(keySASLJAASConfig, "", "%v", err)
	case !j.hasUsername || j.password == "":
		v.add(keySASLJAASConfig, "", "the login module needs username and password options to authenticate with")
	case len(j.users) > 0 && !serverFile:
		v.add(keySASLJAASConfig, "", "user_<name> options list the users a server accepts; a client ignores them: remove them")
	}
	return mechanism, j.username, j.password
}
