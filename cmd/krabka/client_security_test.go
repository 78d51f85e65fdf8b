package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/tlstest"
	"github.com/krabka-go/krabka/raft"
)

// secureController starts a controller whose listener is SASL_SSL with
// SCRAM-SHA-512 (credentials bootstrapped for the controller and alice)
// and PKCS12 stores, and returns its address, the CA that signed its
// certificate, and the server.properties lines of its listener security.
func secureController(t *testing.T) (addr string, ca *tlstest.CA, security []string) {
	t.Helper()
	ca = tlstest.NewCA(t, "tools CA")
	dir := t.TempDir()
	leaf := ca.Issue(t, "controller-1", tlstest.Options{Names: []string{"127.0.0.1"}})
	port := freePort(t)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	security = []string{
		"listener.security.protocol.map=CONTROLLER:SASL_SSL",
		"sasl.enabled.mechanisms=SCRAM-SHA-512", "sasl.mechanism.controller.protocol=SCRAM-SHA-512",
		`listener.name.controller.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="controller" password="controller-secret";`,
		"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + tlstest.WriteFile(t, dir, "controller.p12", leaf.PKCS12(t, "ks-secret")), "ssl.keystore.password=ks-secret",
		"ssl.truststore.type=PKCS12", "ssl.truststore.location=" + tlstest.WriteFile(t, dir, "truststore.p12", tlstest.PKCS12Truststore(t, "ts-secret", ca)), "ssl.truststore.password=ts-secret",
	}
	tn := newTestNode(t, 1, append([]string{"listeners=CONTROLLER://" + addr, "advertised.listeners=CONTROLLER://" + addr,
		"controller.quorum.voters=1@" + addr, "controller.quorum.election.timeout.ms=300"}, security...)...)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", tn.props,
		"--add-scram", "SCRAM-SHA-512=[name=controller,password=controller-secret]",
		"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]")
	waitLeader(t, []*raft.Controller{launchNode(t, tn.props)})
	return addr, ca, security
}

// clientConfig writes a --command-config file of lines.
func clientConfig(t *testing.T, lines ...string) string {
	t.Helper()
	return tlstest.WriteFile(t, t.TempDir(), "client.properties", []byte(strings.Join(lines, "\n")+"\n"))
}

// TestToolsClientSecurity: metadata-quorum and features reach a SASL_SSL
// controller with the client settings of --command-config (TLS with a
// PKCS12 trust store, SCRAM-SHA-512 as alice); without them, with a
// wrong password, or with a setting the tools do not honour, they fail
// and say why.
func TestToolsClientSecurity(t *testing.T) {
	addr, ca, _ := secureController(t)
	trust := tlstest.WriteFile(t, t.TempDir(), "trust.p12", tlstest.PKCS12Truststore(t, "client-secret", ca))
	base := []string{
		"security.protocol=SASL_SSL",
		"ssl.truststore.type=PKCS12", "ssl.truststore.location=" + trust, "ssl.truststore.password=client-secret",
		"sasl.mechanism=SCRAM-SHA-512",
	}
	login := func(password string) string {
		return `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="` + password + `";`
	}
	good := clientConfig(t, append(base, login("alice-secret"))...)

	r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", addr, "--command-config", good, "describe", "--status")
	if !strings.Contains(r.stdout, "LeaderId:") || !strings.Contains(r.stdout, "CurrentVoters:") {
		t.Errorf("describe --status over SASL_SSL printed %q", r.stdout)
	}
	r = mustSucceed(t, "metadata-quorum", "--bootstrap-controller", addr, "--command-config", good, "describe", "--replication")
	if !strings.Contains(r.stdout, "Leader") {
		t.Errorf("describe --replication over SASL_SSL printed %q", r.stdout)
	}
	r = mustSucceed(t, "features", "--bootstrap-controller", addr, "--command-config", good, "describe")
	if !strings.Contains(r.stdout, "metadata.version") {
		t.Errorf("features describe over SASL_SSL printed %q", r.stdout)
	}

	if r := runKrabka(t, "metadata-quorum", "--bootstrap-controller", addr, "--timeout", "2s", "describe", "--status"); r.code == 0 {
		t.Errorf("describe without --command-config reached a SASL_SSL controller: %q", r.stdout)
	}
	for name, tt := range map[string]struct {
		lines []string
		want  string
	}{
		"wrong password":     {append(base, login("hunter2")), "SaslAuthenticate as alice"},
		"unknown key":        {append(base, login("alice-secret"), "client.id=tools"), "client.id: not a client setting Krabka's tools honour"},
		"server key":         {append(base, login("alice-secret"), "ssl.client.auth=required"), "ssl.client.auth: not a client setting"},
		"GSSAPI":             {[]string{"security.protocol=SASL_SSL", "ssl.truststore.type=PKCS12", "ssl.truststore.location=" + trust, "ssl.truststore.password=client-secret", login("alice-secret")}, "Kafka's default GSSAPI is not implemented"},
		"TLS with PLAINTEXT": {[]string{"ssl.truststore.location=" + trust}, "security.protocol is PLAINTEXT, so this TLS setting would be ignored"},
		"wrong trust store":  {[]string{"security.protocol=SSL", "ssl.truststore.type=PKCS12", "ssl.truststore.location=" + trust, "ssl.truststore.password=nope"}, "does not open with ssl.truststore.password"},
		"PLAIN server JAAS":  {append(base[:4], "sasl.mechanism=PLAIN", `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";`), "user_<name> options list the users a server accepts"},
	} {
		t.Run(name, func(t *testing.T) {
			mustFail(t, tt.want, "metadata-quorum", "--bootstrap-controller", addr, "--timeout", "5s", "--command-config", clientConfig(t, tt.lines...), "describe", "--status")
		})
	}
	for _, r := range []result{
		runKrabka(t, "metadata-quorum", "--bootstrap-controller", addr, "--command-config", clientConfig(t, append(base, login("hunter2"))...), "describe", "--status"),
		runKrabka(t, "metadata-quorum", "--bootstrap-controller", addr, "--command-config", clientConfig(t, "client.id=x", "sasl.jaas.config="+login("alice-secret")), "describe", "--status"),
	} {
		for _, secret := range []string{"hunter2", "alice-secret"} {
			if strings.Contains(r.stderr, secret) {
				t.Errorf("stderr shows a password: %q", r.stderr)
			}
		}
	}
}

// TestAddControllerClientSecurity: add-controller reaches a SASL_SSL
// quorum with the client settings of the new controller's own
// server.properties (security.protocol and sasl.mechanism, which the
// controller does not read, the node-wide login and its stores), so the
// leader answers its AddRaftVoter; without them the tool cannot connect.
func TestAddControllerClientSecurity(t *testing.T) {
	addr, _, security := secureController(t)
	props := func(client ...string) string {
		port := freePort(t)
		tn := newTestNode(t, 2, append(append([]string{fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", port),
			fmt.Sprintf("advertised.listeners=CONTROLLER://127.0.0.1:%d", port), "controller.quorum.bootstrap.servers=" + addr}, security...), client...)...)
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", tn.props, "--no-initial-controllers")
		return tn.props
	}
	secured := props("security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="controller" password="controller-secret";`)
	r := runKrabka(t, "metadata-quorum", "--bootstrap-controller", addr, "--timeout", "5s", "add-controller", "--command-config", secured)
	// The quorum is static (controller.quorum.voters): the leader
	// refuses to add a voter, which it can only say over the secured
	// connection.
	if r.code == 0 || !strings.Contains(r.stderr, "AddRaftVoter") {
		t.Errorf("add-controller with the file's client settings: exit %d, stderr %q; want the leader's AddRaftVoter answer", r.code, r.stderr)
	}
	r = runKrabka(t, "metadata-quorum", "--bootstrap-controller", addr, "--timeout", "2s", "add-controller", "--command-config", props())
	if r.code == 0 || strings.Contains(r.stderr, "AddRaftVoter") {
		t.Errorf("add-controller without client settings: exit %d, stderr %q; want no answer from the SASL_SSL listener", r.code, r.stderr)
	}
}
