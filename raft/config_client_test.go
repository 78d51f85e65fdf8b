package raft

import (
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/tlstest"
)

// TestParseClientProperties: a tools' client file gives the protocol,
// the TLS of its stores and the SASL login it names; every key it would
// not honour is refused by name, without its value.
func TestParseClientProperties(t *testing.T) {
	sec, err := ParseClientProperties(nil)
	if err != nil || sec.Protocol != SecurityPlaintext || sec.TLS != nil || sec.SASLMechanism != "" {
		t.Fatalf("an empty file = %+v, %v; want PLAINTEXT", sec, err)
	}
	ca := tlstest.NewCA(t, "test CA")
	leaf := ca.Issue(t, "client", tlstest.Options{})
	dir := t.TempDir()
	sec, err = ParseClientProperties([]byte("security.protocol=sasl_ssl\nsasl.mechanism=SCRAM-SHA-256\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";` + "\n" +
		"ssl.keystore.location=" + writeFile(t, dir, "k.jks", leaf.JKS(t, "ks", "ks")) + "\nssl.keystore.password=ks\n" +
		"ssl.truststore.type=PEM\nssl.truststore.location=" + writeFile(t, dir, "ca.pem", ca.PEM) + "\nssl.endpoint.identification.algorithm=\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sec.Protocol != SecuritySASLSSL || sec.SASLMechanism != "SCRAM-SHA-256" || sec.SASLUsername != "alice" || sec.SASLPassword != "alice-secret" {
		t.Errorf("ParseClientProperties = %+v", sec)
	}
	tc := sec.TLS("controller-1.example")
	if cert, err := tc.GetClientCertificate(nil); err != nil || !cert.Leaf.Equal(leaf.Cert) {
		t.Errorf("the client presents %v, %v; want the key store's certificate", cert, err)
	}
	if !tc.InsecureSkipVerify || tc.VerifyConnection == nil {
		t.Error("ssl.endpoint.identification.algorithm= leaves the host name unchecked, but the chain must still be checked")
	}
	// A JKS trust store without ssl.truststore.password is read, its
	// integrity unchecked, as Kafka's client reads it.
	sec, err = ParseClientProperties([]byte("security.protocol=SSL\nssl.truststore.location=" + writeFile(t, dir, "t.jks", tlstest.JKSTruststore(t, "ts", ca)) + "\n"))
	if err != nil {
		t.Fatalf("a JKS trust store without a password: %v", err)
	}
	if roots := sec.TLS("controller-1.example").RootCAs; roots == nil || !roots.Equal(tlstest.Pool(ca)) {
		t.Errorf("the JKS trust store without a password trusts %v, want the CA", roots)
	}

	for _, tt := range []struct {
		key, want string
		lines     []string
	}{
		{"request.timeout.ms", "not a client setting Krabka's tools honour", []string{"request.timeout.ms=5000"}},
		{"sasl.jaas.config", "required: the PLAIN login module", []string{"security.protocol=SASL_SSL", "sasl.mechanism=PLAIN"}},
		{"sasl.mechanism", "mechanism OAUTHBEARER is not implemented", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=OAUTHBEARER"}},
		{"sasl.jaas.config", "PlainLoginModule", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="hunter2";`}},
		{"sasl.jaas.config", "security.protocol is PLAINTEXT, so this SASL setting would be ignored", []string{"sasl.jaas.config=x"}},
		{"ssl.principal.mapping.rules", "not a client setting", []string{"security.protocol=SSL", "ssl.principal.mapping.rules=DEFAULT"}},
		{"security.protocol", "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", []string{"security.protocol=TLS"}},
	} {
		props := strings.Join(tt.lines, "\n") + "\n"
		_, err := ParseClientProperties([]byte(props))
		got := configErrors(t, err)
		if len(got) == 0 || got[0].Key != tt.key || !strings.Contains(got[0].Reason, tt.want) {
			t.Errorf("ParseClientProperties(%q) = %v, want a problem with %s saying %q", props, err, tt.key, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows a password: %v", err)
		}
	}
}

// TestLoadConfigWithClient: a controller's server.properties gives its
// Config, with security.protocol and sasl.mechanism left out of it (a
// ParseProperties Warning says the tools read them), and the client
// settings the tools take from it: those keys, the node-wide login and
// the node-wide stores.
func TestLoadConfigWithClient(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	dir := t.TempDir()
	props := baseProperties + "listener.security.protocol.map=CONTROLLER:SASL_SSL\nsasl.enabled.mechanisms=PLAIN\nsasl.mechanism.controller.protocol=PLAIN\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";` + "\n" +
		"ssl.keystore.type=PKCS12\nssl.keystore.password=ks\nssl.keystore.location=" + writeFile(t, dir, "k.p12", ca.Issue(t, "c1", tlstest.Options{}).PKCS12(t, "ks")) + "\n" +
		"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
	path := writeFile(t, dir, "server.properties", []byte(props))
	cfg, w, sec, err := LoadConfigWithClient(path)
	if err != nil || len(w) != 0 {
		t.Fatalf("LoadConfigWithClient = %v, warnings %v", err, w)
	}
	if p, _ := cfg.ListenerSecurityProtocol("CONTROLLER"); p != SecuritySASLSSL {
		t.Errorf("the controller's listener is %v", p)
	}
	if sec.Protocol != SecuritySASLSSL || sec.TLS == nil || sec.SASLMechanism != "PLAIN" || sec.SASLUsername != "admin" {
		t.Errorf("client settings = %+v", sec)
	}
	_, w, err = ParseProperties([]byte(props))
	if err != nil || len(w) != 2 || !strings.Contains(w[0].Reason, "read by krabka metadata-quorum add-controller") {
		t.Errorf("ParseProperties = %v, warnings %v; want the two client keys named as the tools'", err, w)
	}
}
