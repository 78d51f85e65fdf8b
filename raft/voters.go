package raft

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
)

// The KIP-853 voter RPCs on a static quorum. This runtime runs
// kraft.version 0 (voters from controller.quorum.voters), where Kafka's
// leader refuses AddRaftVoter and RemoveRaftVoter with UNSUPPORTED_VERSION
// once the earlier checks pass, and accepts an UpdateRaftVoter without
// writing anything (KRAFT.md §4.5–§4.7). The checks run in Kafka's order.

// serveVoterRPC answers AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter on
// the engine goroutine.
func (h *handler) serveVoterRPC(ctx context.Context, req kmsg.Request, reply *transport.Reply) {
	if h.c.enqueue(ctx, event{call: func(e *engine) { reply.Send(e.voterRPC(req)) }}) != nil {
		reply.Close()
	}
}

// voterRPC builds the answer to one voter RPC from the engine's state.
func (e *engine) voterRPC(req kmsg.Request) kmsg.Response {
	st := e.lastStatus
	// leaderOnly is Kafka's validation of a leader-only request at epoch
	// (the local epoch for requests that carry none).
	leaderOnly := func(epoch kraft.Epoch) int16 {
		switch {
		case epoch < st.Epoch:
			return kerr.FencedLeaderEpoch.Code
		case epoch > st.Epoch:
			return kerr.UnknownLeaderEpoch.Code
		case st.Role != kraft.Leader:
			return kerr.NotLeaderForPartition.Code
		case st.ShuttingDown || e.resigning:
			return kerr.BrokerNotAvailable.Code
		}
		return 0
	}
	hasDefaultListener := func(names []string) bool {
		for _, n := range names {
			if n == e.rc.listenerName {
				return true
			}
		}
		return false
	}
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
		var names []string
		for _, l := range r.Listeners {
			names = append(names, l.Name)
		}
		code := e.membershipCode(r.ClusterID, leaderOnly(st.Epoch), r.VoterID, r.VoterDirectoryID, func() bool { return hasDefaultListener(names) })
		resp.ErrorCode, resp.ErrorMessage = code, defaultMessage(code)
		return resp
	case *kmsg.RemoveRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		code := e.membershipCode(r.ClusterID, leaderOnly(st.Epoch), r.VoterID, r.VoterDirectoryID, nil)
		resp.ErrorCode, resp.ErrorMessage = code, defaultMessage(code)
		return resp
	case *kmsg.UpdateRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
		resp.ErrorCode = e.updateVoterCode(r, leaderOnly(kraft.Epoch(r.CurrentLeaderEpoch)), hasDefaultListener)
		resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = int32(st.Leader.LeaderID), int32(st.Leader.Epoch)
		if v, ok := e.pub.voterEndpoint(int32(st.Leader.LeaderID), e.rc.listenerName); ok {
			resp.CurrentLeader.Host, resp.CurrentLeader.Port = v.Host, int32(v.Port)
		}
		return resp
	}
	return req.ResponseKind()
}

// membershipCode runs the checks of AddRaftVoter (§4.5 steps 1–5; with a
// listener check) and RemoveRaftVoter (§4.6) up to the kraft.version
// check, which a static quorum always fails.
func (e *engine) membershipCode(clusterID *string, leaderCode int16, voterID int32, dir [16]byte, listenerOK func() bool) int16 {
	switch {
	case clusterID != nil && e.clusterID != "" && *clusterID != e.clusterID:
		return kerr.InconsistentClusterID.Code
	case leaderCode != 0:
		return leaderCode
	case voterID < 0 || dir == [16]byte{}:
		return kerr.InvalidRequest.Code
	case listenerOK != nil && !listenerOK():
		return kerr.InvalidRequest.Code
	case e.hw < 0:
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnsupportedVersion.Code
}

// updateVoterCode runs UpdateRaftVoter's checks (§4.7) for kraft.version 0:
// success changes nothing on disk.
func (e *engine) updateVoterCode(r *kmsg.UpdateRaftVoterRequest, leaderCode int16, hasDefaultListener func([]string) bool) int16 {
	var names []string
	for _, l := range r.Listeners {
		names = append(names, l.Name)
	}
	f := r.KRaftVersionFeature
	switch {
	case r.ClusterID != nil && e.clusterID != "" && *r.ClusterID != e.clusterID:
		return kerr.InconsistentClusterID.Code
	case leaderCode != 0:
		return leaderCode
	case r.VoterID < 0 || r.VoterDirectoryID == [16]byte{}:
		return kerr.InvalidRequest.Code
	case !hasDefaultListener(names):
		return kerr.InvalidRequest.Code
	case f.MinSupportedVersion < 0 || f.MaxSupportedVersion < 0 || f.MaxSupportedVersion < f.MinSupportedVersion:
		return kerr.InvalidRequest.Code
	case e.hw < 0:
		return kerr.RequestTimedOut.Code
	case f.MinSupportedVersion > 0: // the finalized kraft.version is 0
		return kerr.InvalidRequest.Code
	case !e.lastStatus.Voters.Contains(kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID)}):
		return kerr.VoterNotFound.Code
	}
	return 0
}

// defaultMessage is Kafka's error message for an answer that has none of
// its own: the error's default text; null for NONE.
func defaultMessage(code int16) *string {
	if code == 0 {
		return nil
	}
	e := kerr.ErrorForCode(code)
	if ke, ok := e.(*kerr.Error); ok {
		msg := ke.Description
		return &msg
	}
	msg := e.Error()
	return &msg
}
