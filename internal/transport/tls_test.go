package transport

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/tlstest"
)

// tlsServer serves h over TLS with the certificate of leaf; clientCAs,
// when not nil, are required to have signed a client certificate.
func tlsServer(t *testing.T, h Handler, leaf *tlstest.Leaf, clientCAs *tlstest.CA) *Server {
	t.Helper()
	tc := &tls.Config{Certificates: []tls.Certificate{leaf.TLSCertificate(t)}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		tc.ClientCAs = tlstest.Pool(clientCAs)
	}
	cfg := testServerConfig(h)
	cfg.Handshake = TLS{Config: tc}
	return startTCP(t, cfg)
}

// tlsPeer is a Peer of addr that speaks TLS with cfg.
func tlsPeer(t *testing.T, addr string, tc *tls.Config) *Peer {
	t.Helper()
	return tlsPeerFunc(t, addr, func(host string) *tls.Config {
		c := tc.Clone()
		c.ServerName = host
		return c
	})
}

// tlsPeerFunc is tlsPeer with a configuration per host.
func tlsPeerFunc(t *testing.T, addr string, tc func(host string) *tls.Config) *Peer {
	t.Helper()
	return testPeer(t, func(cfg *PeerConfig) {
		cfg.Addr = addr
		cfg.RequestTimeout = testDeadline
		cfg.TLS = tc
	})
}

// TestTLSPeerAndListener: a Peer with TLS gets answers from a TLS
// listener that requires a client certificate, the listener names the
// client by its certificate's subject, and the Peer checks the server's
// certificate against the host of its address.
func TestTLSPeerAndListener(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	server := ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}})
	client := ca.Issue(t, "controller-2", tlstest.Options{})
	principals := make(chan Principal, 1)
	h := withAPIVersions(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		principals <- req.Conn.Principal
		reply.Send(nameEcho(req))
	}))
	s := tlsServer(t, h, server, ca)

	p := tlsPeer(t, s.Addr().String(), &tls.Config{
		RootCAs:      tlstest.Pool(ca),
		Certificates: []tls.Certificate{client.TLSCertificate(t)},
		MinVersion:   tls.VersionTLS12,
	})
	got := make(chan outcome, 1)
	p.Send(describeQuorumFor("over tls"), collect(got))
	if name := answeredName(t, <-got); name != "over tls" {
		t.Fatalf("answer %q", name)
	}
	if pr := <-principals; pr.String() != "User:CN=controller-2,O=krabka" {
		t.Errorf("principal = %v, want User:CN=controller-2,O=krabka", pr)
	}
}

// TestTLSPeerAsksForTheHostOfItsAddress: the Peer's TLS configuration
// is asked for with the host of the address it dials.
func TestTLSPeerAsksForTheHostOfItsAddress(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	s := tlsServer(t, withAPIVersions(HandlerFunc(func(_ context.Context, req *Request, reply *Reply) { reply.Send(nameEcho(req)) })),
		ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), nil)
	hosts := make(chan string, 1)
	p := tlsPeerFunc(t, s.Addr().String(), func(host string) *tls.Config {
		hosts <- host
		return &tls.Config{RootCAs: tlstest.Pool(ca), ServerName: host, MinVersion: tls.VersionTLS12}
	})
	got := make(chan outcome, 1)
	p.Send(describeQuorumFor("x"), collect(got))
	answeredName(t, <-got)
	if h := <-hosts; h != "127.0.0.1" {
		t.Errorf("configuration asked for host %q, want 127.0.0.1", h)
	}
}

// TestTLSPeerRefusesAnUntrustedServer: a server whose certificate comes
// from another CA, or names another host, gets no request.
func TestTLSPeerRefusesAnUntrustedServer(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	for name, leaf := range map[string]*tlstest.Leaf{
		"other CA":   other.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}),
		"other host": ca.Issue(t, "server", tlstest.Options{Names: []string{"elsewhere.example"}}),
	} {
		t.Run(name, func(t *testing.T) {
			s := tlsServer(t, echoHandler(), leaf, nil)
			p := tlsPeer(t, s.Addr().String(), &tls.Config{RootCAs: tlstest.Pool(ca), MinVersion: tls.VersionTLS12})
			got := make(chan outcome, 1)
			p.Send(describeQuorumFor("x"), collect(got))
			o := <-got
			if o.err == nil {
				t.Fatal("request answered by an untrusted server")
			}
			if st := p.Stats(); st.DialFailures == 0 || st.Sent != 0 {
				t.Errorf("stats = %+v, want a failed dial and nothing sent", st)
			}
		})
	}
}

// TestTLSListenerClosesPlaintextAndUncertifiedClients: a client that
// does not speak TLS, and one without the required client certificate,
// are disconnected without an answer, and their connections are freed.
func TestTLSListenerClosesPlaintextAndUncertifiedClients(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	s := tlsServer(t, echoHandler(), ca.Issue(t, "server", tlstest.Options{Names: []string{"127.0.0.1"}}), ca)

	c := dialTCP(t, s.Addr())
	c.send(1, describeQuorum())
	var b [512]byte
	for {
		// Go's TLS server may answer a plaintext client with an alert
		// record before it closes; it never answers the request.
		n, err := c.nc.Read(b[:])
		if err != nil {
			break
		}
		if n > 0 && b[0] != 0x15 { // TLS alert record
			t.Fatalf("plaintext client read %x; want at most a TLS alert", b[:n])
		}
	}

	nc, err := net.DialTimeout("tcp", s.Addr().String(), testDeadline)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(nc, &tls.Config{RootCAs: tlstest.Pool(ca), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13})
	defer func() { _ = tc.Close() }()
	err = tc.HandshakeContext(t.Context())
	if err == nil {
		// In TLS 1.3 the server checks the client's certificate after
		// the client's handshake is done: the refusal comes on read.
		_, err = tc.Read(b[:])
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("client without a certificate: %v, want the certificate-required alert", err)
	}
	waitFor(t, func() bool { return s.Stats().Active == 0 }, "the refused connections to be freed")
}
