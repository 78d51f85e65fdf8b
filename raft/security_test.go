package raft

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// startSecuredNode starts a lone voter whose listener is SASL_PLAINTEXT
// with PLAIN (users admin and alice, testJAAS), checked by the
// StandardAuthorizer with super.users=User:admin, and whose cluster holds
// one ACL (ALTER for User:admin), so that alice is authenticated and
// granted nothing.
func startSecuredNode(t *testing.T) *hostileNode {
	t.Helper()
	h := startHostileNode(t, func(cfg *Config) {
		saslNode(cfg, SecuritySASLPlaintext)
		cfg.AuthorizerClassName = StandardAuthorizerClass
		cfg.SuperUsers = []string{"User:admin"}
	})
	if _, err := h.c.SubmitChange(t.Context(), []metadata.Record{clusterACL(1, "User:admin", OperationAlter, aclAllow)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ACL to be applied", func() bool {
		st := h.c.QuorumState()
		return st.AppliedOffset == st.LogEndOffset
	})
	return h
}

// saslHandshake sends SaslHandshake v1 for PLAIN and fails unless it is
// accepted.
func (c *rawConn) saslHandshake(corr int32) {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = transport.MechanismPlain
	if resp := c.call(corr, hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		c.t.Fatalf("SaslHandshake PLAIN: error %d", resp.ErrorCode)
	}
}

// plainLogin runs the PLAIN exchange for user and password and returns
// SaslAuthenticate's error code.
func (c *rawConn) plainLogin(user, password string) int16 {
	c.t.Helper()
	c.saslHandshake(100)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	return c.call(101, auth).(*kmsg.SASLAuthenticateResponse).ErrorCode
}

// guardedRequests returns, for every API of the version table that the
// authorizer checks (all but ApiVersions and the SASL exchange), a request
// that would change the node were it served: a Fetch from a replica it
// would record, a Vote and a BeginQuorumEpoch of a later epoch, a write,
// voter changes, a feature upgrade.
func guardedRequests(t *testing.T, h *hostileNode) map[int16]kmsg.Request {
	t.Helper()
	st := h.c.QuorumState()
	epoch := kraft.Epoch(st.Epoch)
	enc, err := metadata.Encode(topicRecord("forbidden"))
	if err != nil {
		t.Fatal(err)
	}
	submitReq := wire.NewSubmitChangeRequest()
	submitReq.Records = [][]byte{enc}
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.VoterDirectoryID = 2, [16]byte{2}
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
	add.Listeners = append(add.Listeners, l)
	remove := kmsg.NewPtrRemoveRaftVoterRequest()
	remove.VoterID, remove.VoterDirectoryID = 1, [16]byte{0xd1, 1}
	update := kmsg.NewPtrUpdateRaftVoterRequest()
	update.CurrentLeaderEpoch, update.VoterID, update.VoterDirectoryID = st.Epoch, 1, [16]byte{0xd1, 1}
	ul := kmsg.NewUpdateRaftVoterRequestListener()
	ul.Name, ul.Host, ul.Port = "CONTROLLER", "127.0.0.1", 2
	update.Listeners = append(update.Listeners, ul)
	features := kmsg.NewPtrUpdateFeaturesRequest()
	features.TimeoutMillis = 5000
	fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "kraft.version", 1, upgradeTypeUpgrade
	features.FeatureUpdates = append(features.FeatureUpdates, fu)
	reqs := map[int16]kmsg.Request{
		wire.KeyFetch: kraftRequest(t, h, fetchFrom(h)),
		wire.KeyVote: kraftRequest(t, h, &kraft.VoteRequest{Replica: kraft.ReplicaKey{ID: 2}, Voter: kraft.ReplicaKey{ID: 1},
			ReplicaEpoch: epoch + 5, LastOffsetEpoch: epoch, LastOffset: kraft.Offset(st.LogEndOffset)}),
		wire.KeyBeginQuorumEpoch: kraftRequest(t, h, &kraft.BeginQuorumEpochRequest{Voter: kraft.ReplicaKey{ID: 1}, LeaderID: 2, LeaderEpoch: epoch + 5}),
		wire.KeyEndQuorumEpoch:   kraftRequest(t, h, &kraft.EndQuorumEpochRequest{LeaderID: 1, LeaderEpoch: epoch}),
		wire.KeyDescribeQuorum:   describeQuorumRequest(),
		wire.KeyUpdateFeatures:   features,
		wire.KeyFetchSnapshot: kraftRequest(t, h, &kraft.FetchSnapshotRequest{Replica: kraft.ReplicaKey{ID: 2}, CurrentLeaderEpoch: epoch,
			SnapshotID: kraft.OffsetAndEpoch{Offset: 1, Epoch: epoch}, MaxBytes: 1 << 20}),
		wire.KeyDescribeCluster:        kmsg.NewPtrDescribeClusterRequest(),
		wire.KeyControllerRegistration: registrationRequestFor(9, 1),
		wire.KeyAddRaftVoter:           add,
		wire.KeyRemoveRaftVoter:        remove,
		wire.KeyUpdateRaftVoter:        update,
		wire.KeySubmitChange:           submitReq,
		wire.KeyMetadataFetch:          wire.NewMetadataFetchRequest(),
		wire.KeyReadImage:              wire.NewReadImageRequest(),
	}
	for _, a := range wire.SupportedAPIs() {
		r, ok := reqs[a.Key]
		switch {
		case a.Key == wire.KeyAPIVersions || a.Key == wire.KeySASLHandshake || a.Key == wire.KeySASLAuthenticate:
		case !ok:
			t.Fatalf("the version table's %s (%d) has no guarded request here", a.Name, a.Key)
		default:
			r.SetVersion(a.Max)
		}
	}
	return reqs
}

// TestSecurityCriterion: every KRaft RPC and private RPC, each carrying a
// change the node would make were it served, sent to a SASL listener
// checked by the StandardAuthorizer
//
//   - before authentication (W18) is not read: the connection is closed
//     without an answer (apache/kafka#3558);
//   - after SaslHandshake, in the middle of the exchange, is answered with
//     its own error response carrying ILLEGAL_SASL_STATE and the
//     connection is closed (SaslServerAuthenticator.handleSaslToken);
//   - authenticated as a principal with no ACL (W21) is answered with its
//     own error response carrying CLUSTER_AUTHORIZATION_FAILED (31), and
//     the connection stays open (ControllerApis);
//
// and none of them changes the node: its quorum state, image and replica
// states are as before. A super user is served on the same listener, so
// the refusals are the authorizer's and not a listener that serves
// nothing.
func TestSecurityCriterion(t *testing.T) {
	h := startSecuredNode(t)
	addr := h.c.Addr()
	for key, req := range guardedRequests(t, h) {
		name := fmt.Sprintf("%s v%d", kmsg.NameForKey(key), req.GetVersion())
		if key >= 1000 {
			name = fmt.Sprintf("private %d v%d", key, req.GetVersion())
		}
		t.Run(name, func(t *testing.T) {
			h := &hostileNode{t: t, c: h.c}
			before := h.mark()

			conn := dialRaw(t, addr)
			conn.send(1, req)
			conn.expectClosed()
			h.unchanged(before)

			conn = dialRaw(t, addr)
			conn.saslHandshake(1)
			conn.send(2, req)
			resp := conn.recv(2, req)
			if resp.Key() != key || resp.GetVersion() != req.GetVersion() || errorCode(resp) != kerr.IllegalSaslState.Code {
				t.Errorf("in the SASL exchange: %T v%d error %d, want the request's own answer with ILLEGAL_SASL_STATE", resp, resp.GetVersion(), errorCode(resp))
			}
			conn.expectClosed()
			h.unchanged(before)

			conn = dialRaw(t, addr)
			if code := conn.plainLogin("alice", "alice-secret"); code != 0 {
				t.Fatalf("alice's PLAIN login: error %d", code)
			}
			resp = conn.call(3, req)
			if resp.Key() != key || resp.GetVersion() != req.GetVersion() || errorCode(resp) != kerr.ClusterAuthorizationFailed.Code {
				t.Errorf("alice without ACLs: %T v%d error %d, want the request's own answer with CLUSTER_AUTHORIZATION_FAILED", resp, resp.GetVersion(), errorCode(resp))
			}
			if _, err := apiVersionsOn(t, conn.nc); err != nil {
				t.Errorf("the refused connection did not stay open: %v", err)
			}
			h.unchanged(before)
		})
	}
	t.Run("super user served", func(t *testing.T) {
		conn := dialRaw(t, addr)
		if code := conn.plainLogin("admin", "admin-secret"); code != 0 {
			t.Fatalf("admin's PLAIN login: error %d", code)
		}
		resp := conn.call(2, describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Errorf("admin's DescribeQuorum = %+v", resp)
		}
	})
}

// TestHostileSASLListener: on a SASL listener, a frame above
// sasl.server.max.receive.size (512 KiB) before authentication closes the
// connection before its body is read (W5), and a wrong password is
// answered SASL_AUTHENTICATION_FAILED and the connection closed (W19);
// neither changes anything.
func TestHostileSASLListener(t *testing.T) {
	h := startSecuredNode(t)
	before := h.mark()
	conn := dialRaw(t, h.c.Addr())
	conn.write(binary.BigEndian.AppendUint32(nil, uint32(transport.DefaultSASLMaxReceiveSize)+1))
	conn.expectClosed()

	conn = dialRaw(t, h.c.Addr())
	if code := conn.plainLogin("alice", "wrong"); code != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("a wrong password: error %d, want SASL_AUTHENTICATION_FAILED", code)
	}
	conn.expectClosed()
	h.unchanged(before)
}
