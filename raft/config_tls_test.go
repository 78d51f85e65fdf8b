package raft

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sslBase is a valid single-node file whose CONTROLLER listener is SSL.
const sslBase = baseProperties + "listener.security.protocol.map=CONTROLLER:SSL\n" +
	"ssl.keystore.type=PEM\nssl.keystore.location=/etc/krabka/keystore.pem\n"

// TestValidateSSLRules: the TLS properties Krabka reads are checked on
// their own and per SSL listener, each problem naming the property (the
// per-listener one when that is where the value came from).
func TestValidateSSLRules(t *testing.T) {
	for _, tt := range []struct {
		name, props string
		key, reason string
	}{
		{"SSL without a key store", baseProperties + "listener.security.protocol.map=CONTROLLER:SSL\n",
			keySSLKeystoreLocation, "listener CONTROLLER is mapped to SSL and needs a key store"},
		{"inline key without chain", sslBase + "listener.name.controller.ssl.keystore.key=x\n",
			"ssl.keystore.certificate.chain", "the certificate chain must be set too"},
		{"file and inline key store", sslBase + "ssl.keystore.key=x\nssl.keystore.certificate.chain=y\n",
			keySSLKeystoreLocation, "either as a file"},
		{"file and inline trust store", sslBase + "ssl.truststore.type=PEM\nssl.truststore.location=/t\nssl.truststore.certificates=z\n",
			keySSLTruststoreLocation, "either as a file"},
		{"TLS 1.1", sslBase + "ssl.enabled.protocols=TLSv1.2,TLSv1.1\n", keySSLEnabledProtocols, "protocol TLSv1.1 is older than TLS 1.2"},
		{"ssl.protocol TLSv1", sslBase + "ssl.protocol=TLSv1\n", keySSLProtocol, "protocol TLSv1 is older than TLS 1.2"},
		{"insecure suite", sslBase + "ssl.cipher.suites=TLS_RSA_WITH_RC4_128_SHA\n", keySSLCipherSuites, "TLS_RSA_WITH_RC4_128_SHA is insecure"},
		{"unknown suite", sslBase + "ssl.cipher.suites=TLS_DHE_RSA_WITH_AES_128_GCM_SHA256\n", keySSLCipherSuites, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256 is not a cipher suite Go's TLS implements"},
		{"some TLS 1.3 suites", sslBase + "ssl.cipher.suites=TLS_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n", keySSLCipherSuites, "cannot leave out TLS_AES_128_GCM_SHA256"},
		{"no TLS 1.2 suite", sslBase + "ssl.cipher.suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256\n", keySSLCipherSuites, "lists no TLS 1.2 cipher suite"},
		{"client auth", sslBase + "listener.name.controller.ssl.client.auth=always\n", "listener.name.controller.ssl.client.auth", "must be required, requested or none"},
		{"endpoint identification", sslBase + "ssl.endpoint.identification.algorithm=ldaps\n", keySSLEndpointIdentification, "must be https"},
		{"override for a plaintext listener", baseProperties + "listener.name.controller.ssl.client.auth=required\n",
			"listener.name.controller.ssl.client.auth", "not a controller listener mapped to SSL"},
		{"TLS setting without an SSL listener", baseProperties + "ssl.client.auth=required\n", keySSLClientAuth, "no controller listener is mapped to SSL"},
		{"upper-case listener", sslBase + "listener.name.CONTROLLER.ssl.client.auth=required\n",
			"listener.name.CONTROLLER.ssl.client.auth", "write listener.name.controller.ssl.client.auth"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseProperties([]byte(tt.props))
			got := configErrors(t, err)
			if !slices.ContainsFunc(got, func(e *ConfigError) bool { return e.Key == tt.key && strings.Contains(e.Reason, tt.reason) }) {
				t.Errorf("ParseProperties = %v, want a problem with %s saying %q", err, tt.key, tt.reason)
			}
		})
	}
}

// TestValidateSSLStoreRules: Kafka's rules for key and trust stores
// (DefaultSslEngineFactory.createKeystore and createTruststore), each
// broken on a listener mapped to SSL, name the property at fault; a JKS
// trust store needs its password, which Kafka would not require.
func TestValidateSSLStoreRules(t *testing.T) {
	for _, tt := range []struct {
		name, key, reason string
		lines             []string
	}{
		{"a file without its type or password", keySSLKeystorePassword, "JKS key store file (ssl.keystore.type=JKS, Kafka's default), which opens with its password; for a PEM file set ssl.keystore.type=PEM",
			[]string{"ssl.keystore.location=/k.pem"}},
		{"PKCS12 without password", keySSLKeystorePassword, "required: listener CONTROLLER has a PKCS12 key store file",
			[]string{"ssl.keystore.type=PKCS12", "ssl.keystore.location=/k.p12"}},
		{"PEM with a store password", keySSLKeystorePassword, "a PEM key store has no store password",
			[]string{"ssl.keystore.type=PEM", "ssl.keystore.location=/k.pem", "ssl.keystore.password=hunter2"}},
		{"inline PEM with a store password", keySSLKeystorePassword, "a PEM key store has no store password",
			[]string{"ssl.keystore.type=PEM", "ssl.keystore.key=k", "ssl.keystore.certificate.chain=c", "ssl.keystore.password=hunter2"}},
		{"a key store password without a file", keySSLKeystorePassword, "no key store file (ssl.keystore.location) is",
			[]string{"ssl.keystore.type=PKCS12", "ssl.keystore.password=hunter2"}},
		{"inline of type JKS", keySSLKeystoreType, "an inline key store (ssl.keystore.key) is PEM, but the key store type is JKS",
			[]string{"ssl.keystore.key=k", "ssl.keystore.certificate.chain=c"}},
		{"inline trust store of type PKCS12", keySSLTruststoreType, "an inline trust store (ssl.truststore.certificates) is PEM, but the trust store type is PKCS12",
			[]string{"ssl.keystore.type=PEM", "ssl.keystore.location=/k.pem", "ssl.truststore.type=PKCS12", "ssl.truststore.certificates=c"}},
		{"a trust store password without a file", keySSLTruststorePassword, "no trust store file (ssl.truststore.location) is",
			[]string{"ssl.keystore.type=PEM", "ssl.keystore.location=/k.pem", "ssl.truststore.password=hunter2"}},
		{"PEM trust store with a password", keySSLTruststorePassword, "a PEM trust store has no password",
			[]string{"ssl.keystore.type=PEM", "ssl.keystore.location=/k.pem", "ssl.truststore.type=PEM", "ssl.truststore.location=/t.pem", "ssl.truststore.password=hunter2"}},
		{"JCEKS", keySSLTruststoreType, "Krabka reads JKS, PKCS12, PEM stores",
			[]string{"ssl.truststore.type=JCEKS"}},
		{"lower-case pem", keySSLKeystoreType, "write PEM in upper case",
			[]string{"ssl.keystore.type=pem", "ssl.keystore.location=/k.pem"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			props := baseProperties + "listener.security.protocol.map=CONTROLLER:SSL\n" + strings.Join(tt.lines, "\n") + "\n"
			_, _, err := ParseProperties([]byte(props))
			got := configErrors(t, err)
			if !slices.ContainsFunc(got, func(e *ConfigError) bool { return e.Key == tt.key && strings.Contains(e.Reason, tt.reason) }) {
				t.Errorf("ParseProperties = %v, want a problem with %s saying %q", err, tt.key, tt.reason)
			}
			if strings.Contains(fmt.Sprint(err), "hunter2") {
				t.Errorf("the error shows a password: %v", err)
			}
		})
	}
}

// TestValidateAcceptsSSL: a complete SSL listener is valid, Properties
// shows its settings (the inline key hidden), and a per-listener
// override wins over the node-wide key.
func TestValidateAcceptsSSL(t *testing.T) {
	c, w, err := ParseProperties([]byte(sslBase + "ssl.truststore.type=PEM\nssl.truststore.location=/etc/krabka/ca.pem\n" +
		"ssl.client.auth=none\nlistener.name.controller.ssl.client.auth=required\n" +
		"ssl.enabled.protocols=TLSv1.3\nssl.protocol=TLSv1.3\nssl.endpoint.identification.algorithm=\n" +
		"ssl.cipher.suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256\n"))
	if err != nil || len(w) != 0 {
		t.Fatalf("ParseProperties = %v, warnings %v", err, w)
	}
	s := c.listenerSSL("CONTROLLER")
	if got := s[keySSLClientAuth]; got.value != "required" || got.key != "listener.name.controller.ssl.client.auth" {
		t.Errorf("ssl.client.auth for CONTROLLER = %+v, want the override", got)
	}
	if got := s[keySSLEndpointIdentification]; !got.set || got.value != "" {
		t.Errorf("ssl.endpoint.identification.algorithm = %+v, want set and empty", got)
	}
	if p := c.Properties(); p[keySSLKeystoreLocation] != "/etc/krabka/keystore.pem" {
		t.Errorf("Properties()[%s] = %q", keySSLKeystoreLocation, p[keySSLKeystoreLocation])
	}
	d := ForTests(1, "/data").listenerSSL("CONTROLLER")
	for key, want := range map[string]string{keySSLKeystoreType: "JKS", keySSLClientAuth: "none", keySSLEnabledProtocols: "TLSv1.2,TLSv1.3", keySSLProtocol: "TLSv1.3", keySSLEndpointIdentification: "https"} {
		if d[key].value != want || d[key].set {
			t.Errorf("default of %s = %+v, want Kafka's %q", key, d[key], want)
		}
	}
}

// TestLoadConfigSSLController: the SSL controller file of
// docs/security.md loads without a problem or a warning, and each
// listener gets the node-wide settings with its own overrides.
func TestLoadConfigSSLController(t *testing.T) {
	c, w, err := LoadConfig(filepath.Join("testdata", "config", "ssl-controller.properties"))
	if err != nil || len(w) != 0 {
		t.Fatalf("LoadConfig = %v, warnings %v", err, w)
	}
	for listener, want := range map[string]map[string]string{
		"CONTROLLER": {keySSLKeystoreLocation: "/etc/krabka/c1.pem", keySSLClientAuth: "required", keySSLEnabledProtocols: "TLSv1.3", keySSLCipherSuites: ""},
		"ADMIN": {keySSLKeystoreLocation: "/etc/krabka/c1.pem", keySSLClientAuth: "requested", keySSLEnabledProtocols: "TLSv1.2,TLSv1.3",
			keySSLCipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
	} {
		s := c.listenerSSL(listener)
		for key, v := range want {
			if s[key].value != v {
				t.Errorf("%s %s = %q, want %q", listener, key, s[key].value, v)
			}
		}
	}
}
