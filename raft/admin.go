package raft

import (
	"context"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// AdminRouter serves Kafka admin APIs on the controller listeners in
// place of the node, as Kafka's ControllerApis serves the requests an
// admin client sends with --bootstrap-controller (KIP-919): CreateTopics,
// IncrementalAlterConfigs and the like, whose records belong to the
// embedder's metadata. [Config.AdminRouter] installs one; without it a
// request for any of these APIs closes the connection, as a request for
// an API the listener does not know does.
//
// The listener authenticates the connection first (the principal of its
// TLS or SASL handshake) and then hands the router every request of a
// claimed API and version, decoded. It does not authorize them: Kafka
// checks each admin API on its own resources (CreateTopics needs CREATE
// on the cluster or on each topic), so the router asks
// [AdminHandle.Authorized] for what its API needs, and answers a refusal
// in the API's own way (TOPIC_AUTHORIZATION_FAILED for that topic, say).
// docs/security.md lists who authorizes what.
type AdminRouter interface {
	// AdminClaims lists the APIs the router serves and their versions.
	// Start calls it once; the claims are fixed for the node's lifetime.
	// A claim of an API the node serves itself (ApiVersions, the KRaft
	// RPCs, DescribeCluster, UpdateFeatures, ControllerRegistration, the
	// private RPCs: the version table of docs/wire.md), of a key that is not a Kafka API,
	// of an empty range or of versions the decoder does not know, or a
	// second claim of one key, fails Start. Every claimed range is
	// listed in every ApiVersions answer, the one a SASL listener gives
	// before authentication included.
	AdminClaims() []AdminClaim
	// ServeAdmin answers req. It runs on a goroutine of its own, one
	// per request; ctx ends when the connection closes, the node stops,
	// or controller.quorum.request.timeout.ms has passed, and the
	// answer is then REQUEST_TIMED_OUT whatever ServeAdmin returns
	// later. It must return a response of req.Request's kind
	// (req.Request.ResponseKind()), sent at the request's version, or
	// an error, answered as UNKNOWN_SERVER_ERROR (a panic is contained
	// the same way, and logged). A failure is answered in the API's
	// error response as Kafka's getErrorResponse builds it: every topic
	// of a CreateTopics, DeleteTopics or CreatePartitions, every resource
	// of an AlterConfigs or IncrementalAlterConfigs, with the code; for
	// any other API the connection is closed instead. A ServeAdmin that
	// ignores ctx keeps its goroutine until it returns, and what it
	// submits after the timeout may still commit.
	ServeAdmin(ctx context.Context, req AdminRequest) (kmsg.Response, error)
}

// AdminClaim is an API key and the versions of it an [AdminRouter]
// serves, inclusive.
type AdminClaim struct {
	Key                    int16
	MinVersion, MaxVersion int16
}

// AdminRequest is a request of a claimed API.
type AdminRequest struct {
	// Request is the decoded request, at the version it was sent in.
	Request kmsg.Request
	// Principal is who the listener's handshake says the sender is, as
	// Kafka prints a KafkaPrincipal ("User:ANONYMOUS" on PLAINTEXT).
	Principal string
	// ClientID and CorrelationID are the request header's.
	ClientID      string
	CorrelationID int32
	// Listener is the local address the request arrived on, RemoteAddr
	// the sender's.
	Listener, RemoteAddr net.Addr
	// Node is the node's side of the request: authorization for the
	// sender, submissions and reads.
	Node *AdminHandle
}

// AdminHandle is what an [AdminRouter] may ask of the node while it
// serves one request. Its methods are safe for concurrent use.
type AdminHandle struct {
	c         *Controller
	authz     *requestAuthz
	principal string
	host      string
}

// Authorized reports whether the request's sender may perform op on res,
// by the node's authorizer: always without one (Kafka's behaviour with no
// authorizer.class.name); by Kafka's StandardAuthorizer rules over the
// image's ACLs with authorizer.class.name; by [Config.ClusterGrants]
// otherwise, which judges the cluster resource with Allowed and any
// other resource only when it implements [ResourceGrants] (else the
// answer is no).
func (a *AdminHandle) Authorized(op ClusterOperation, res Resource) bool {
	return a.authz.allowedOn(a.principal, a.host, op, res)
}

// SubmitChange appends records to the metadata log as
// [Controller.SubmitChange] does, through the leader, under the
// conditions opts set.
func (a *AdminHandle) SubmitChange(ctx context.Context, records []metadata.Record, opts ...SubmitOption) (SubmitResult, error) {
	return a.c.SubmitChange(ctx, records, opts...)
}

// CurrentImage is [Controller.CurrentImage]: the node's image, which may
// be stale.
func (a *AdminHandle) CurrentImage() *metadata.Image { return a.c.CurrentImage() }

// ReadImage is [Controller.ReadImage]: a linearizable read.
func (a *AdminHandle) ReadImage(ctx context.Context) (*metadata.Image, error) {
	return a.c.ReadImage(ctx)
}

// claimedAPIs returns the version table rows of router's claims, or the
// reason they are refused.
func claimedAPIs(router AdminRouter) ([]wire.APIVersion, error) {
	if router == nil {
		return nil, nil
	}
	var rows []wire.APIVersion
	seen := map[int16]bool{}
	for _, cl := range router.AdminClaims() {
		if seen[cl.Key] {
			return nil, fmt.Errorf("raft: Config.AdminRouter claims api key %d twice", cl.Key)
		}
		seen[cl.Key] = true
		row, err := wire.ClaimedAPI(cl.Key, cl.MinVersion, cl.MaxVersion)
		if err != nil {
			return nil, fmt.Errorf("raft: Config.AdminRouter: %w", err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// serveAdmin hands a request of a claimed API to the router, contained
// as [handler.serveRouted] contains it.
func (h *handler) serveAdmin(ctx context.Context, req *transport.Request, reply *transport.Reply) {
	principal := req.Conn.Principal.String()
	ar := AdminRequest{
		Request: req.Body, Principal: principal,
		ClientID: req.Header.ClientID, CorrelationID: req.Header.CorrelationID,
		Listener: req.Conn.LocalAddr, RemoteAddr: req.Conn.RemoteAddr,
		Node: &AdminHandle{c: h.c, authz: h.authz, principal: principal, host: clientHost(req.Conn.RemoteAddr)},
	}
	h.serveRouted(ctx, req, reply, "admin", func(ctx context.Context) (kmsg.Response, error) {
		return h.admin.ServeAdmin(ctx, ar)
	}, func(code int16, msg string) (kmsg.Response, bool) {
		return wire.AdminErrorAnswer(req.Body, code, msg)
	})
}
