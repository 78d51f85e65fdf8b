package raft

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// clusterAuthorizationFailed is Kafka's message for
// CLUSTER_AUTHORIZATION_FAILED (Errors.CLUSTER_AUTHORIZATION_FAILED).
const clusterAuthorizationFailed = "Cluster authorization failed."

// refusalLogInterval is how often a refusal of one principal is logged
// at most; refusalLogPrincipals bounds how many principals are
// remembered.
const (
	refusalLogInterval   = time.Minute
	refusalLogPrincipals = 1024
)

// requestAuthz checks each request of the controller listener against the
// node's ClusterGrants before it is served.
type requestAuthz struct {
	// grants is nil when the node has no authorizer: every request is
	// served.
	grants ClusterGrants
	logger *slog.Logger

	mu sync.Mutex
	// logged is when each principal's last refusal was logged.
	logged map[string]time.Time
}

// newRequestAuthz returns the check of cfg: its ClusterGrants, else the
// standard authorizer over the images image returns when
// authorizer.class.name names it, else none.
func newRequestAuthz(cfg Config, image func() *metadata.Image, logger *slog.Logger) *requestAuthz {
	a := &requestAuthz{grants: cfg.ClusterGrants, logger: logger, logged: map[string]time.Time{}}
	if a.grants == nil && cfg.AuthorizerClassName == StandardAuthorizerClass {
		a.grants = newStandardAuthorizer(cfg.SuperUsers, cfg.AllowEveryoneIfNoACLFound, image)
	}
	return a
}

// requiredOperation is the operation on the cluster that req needs, as
// Kafka's ControllerApis asks: CLUSTER_ACTION for the replication and
// election RPCs and ControllerRegistration, DESCRIBE for DescribeQuorum, ALTER for the voter changes,
// UpdateFeatures and DescribeCluster. Of the private RPCs, SubmitChange writes the log
// (ALTER) and ReadImage reads the image (DESCRIBE); MetadataFetch returns
// the committed log's batches as Fetch does, so it needs what Fetch needs
// (CLUSTER_ACTION), or DESCRIBE would read through it the records Fetch
// guards (credentials and ACLs among them). ok is false for ApiVersions,
// which is always served, and for requests the listener does not serve.
func requiredOperation(req kmsg.Request) (op ClusterOperation, ok bool) {
	switch req.(type) {
	case *kmsg.FetchRequest:
		if bugzoo.Active(bugzoo.Z26) {
			return 0, false
		}
		return OperationClusterAction, true
	case *kmsg.VoteRequest, *kmsg.BeginQuorumEpochRequest, *kmsg.EndQuorumEpochRequest,
		*kmsg.FetchSnapshotRequest, *kmsg.UpdateRaftVoterRequest, *kmsg.ControllerRegistrationRequest, *wire.MetadataFetchRequest:
		return OperationClusterAction, true
	case *kmsg.DescribeQuorumRequest, *wire.ReadImageRequest:
		return OperationDescribe, true
	case *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest, *kmsg.DescribeClusterRequest, *kmsg.UpdateFeaturesRequest, *wire.SubmitChangeRequest:
		return OperationAlter, true
	}
	return 0, false
}

// allows reports whether req may be served; a refusal is logged, at most
// once a refusalLogInterval per principal.
func (a *requestAuthz) allows(ctx context.Context, req *transport.Request) bool {
	if a == nil || a.grants == nil {
		return true
	}
	op, ok := requiredOperation(req.Body)
	if !ok {
		return true
	}
	principal, host := req.Conn.Principal.String(), clientHost(req.Conn.RemoteAddr)
	if a.grants.Allowed(principal, host, op) {
		return true
	}
	if a.shouldLog(principal) {
		a.logger.LogAttrs(ctx, slog.LevelWarn, "request refused: the principal lacks the operation on the cluster",
			slog.String(logKeyPrincipal, principal), slog.String(logKeyHost, host),
			slog.String(logKeyOperation, op.String()), slog.Int(logKeyAPIKey, int(req.Body.Key())))
	}
	return false
}

// allowedOn reports whether principal, connected from host, may perform
// op on res (the check of [AdminHandle.Authorized]): always without an
// authorizer; by the grants' AllowedOn when they implement
// [ResourceGrants]; by Allowed for the cluster; else not.
func (a *requestAuthz) allowedOn(principal, host string, op ClusterOperation, res Resource) bool {
	if a == nil || a.grants == nil {
		return true
	}
	if rg, ok := a.grants.(ResourceGrants); ok {
		return rg.AllowedOn(principal, host, op, res)
	}
	if res == ClusterResource {
		return a.grants.Allowed(principal, host, op)
	}
	return false
}

// shouldLog reports whether a refusal of principal is to be logged now.
func (a *requestAuthz) shouldLog(principal string) bool {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if last, ok := a.logged[principal]; ok && now.Sub(last) < refusalLogInterval {
		return false
	}
	if len(a.logged) >= refusalLogPrincipals {
		clear(a.logged)
	}
	a.logged[principal] = now
	return true
}

// clientHost is the IP address of a client, as ACL entries name hosts.
func clientHost(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.IP.String()
	}
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// refusalAnswer is req's own error response with
// CLUSTER_AUTHORIZATION_FAILED and Kafka's message, as Kafka's
// getErrorResponse of each request builds it ([wire.ErrorAnswer]).
func refusalAnswer(req kmsg.Request) kmsg.Response {
	return wire.ErrorAnswer(req, kerr.ClusterAuthorizationFailed.Code, clusterAuthorizationFailed)
}

// clusterAuthorizedOperations is the bit set DescribeCluster reports for
// a principal (1 << code for each cluster operation it may perform), over
// the operations Kafka defines for the cluster resource.
func clusterAuthorizedOperations(g ClusterGrants, principal, host string) int32 {
	var set int32
	for _, op := range []ClusterOperation{OperationAlter, OperationAlterConfigs, OperationClusterAction, OperationCreate,
		OperationDescribe, OperationDescribeConfigs, OperationIdempotentWrite} {
		if g.Allowed(principal, host, op) {
			set |= 1 << op
		}
	}
	return set
}

// warnUnprotectedListeners logs one WARN when the node has no authorizer
// and a controller listener reachable beyond loopback authenticates no
// one (PLAINTEXT, or SSL without ssl.client.auth=required): every client
// that reaches it may change the quorum.
func warnUnprotectedListeners(ctx context.Context, cfg Config, logger *slog.Logger) {
	if cfg.ClusterGrants != nil || cfg.AuthorizerClassName != "" {
		return
	}
	var open []string
	for _, name := range cfg.ControllerListenerNames {
		ep, ok := findEndpoint(cfg.Listeners, strings.ToUpper(name))
		if !ok || loopbackHost(ep.Host) {
			continue
		}
		switch p, _ := cfg.ListenerSecurityProtocol(ep.Name); {
		case p == SecuritySASLPlaintext, p == SecuritySASLSSL:
			continue // every client authenticates
		case p == SecuritySSL && strings.EqualFold(cfg.listenerSSL(ep.Name)[keySSLClientAuth].value, "required"):
			continue
		}
		open = append(open, ep.Name)
	}
	if len(open) > 0 {
		logger.LogAttrs(ctx, slog.LevelWarn, "controller listener authenticates no client and no authorizer is set: anyone who reaches it may send every request, voter changes included; set authorizer.class.name or require client certificates (docs/security.md)",
			slog.String(logKeyListener, strings.Join(open, ",")))
	}
}

// loopbackHost reports whether a listener bound to host is reachable from
// this machine only: a loopback address or localhost. An empty host binds
// every interface.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
