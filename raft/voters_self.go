package raft

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/wire"
)

// A node of a dynamic quorum keeps its own entry in the voter set right:
// it compares the entry with what it advertises and asks the leader to
// update it, or, with auto-join, adds itself.

// localVoter is this node's entry as it would publish it in a
// VotersRecord: its directory id, its controller endpoints (an empty host
// stands for localhost, as Kafka's tool writes it) and the kraft.version
// range this runtime supports.
func (e *engine) localVoter() control.VotersRecordVoter {
	v := control.VotersRecordVoter{
		VoterId: int32(e.rc.id), VoterDirectoryId: [16]byte(e.rc.core.DirectoryID),
		KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MinSupportedVersion: wire.MinKRaftVersion, MaxSupportedVersion: wire.MaxKRaftVersion},
	}
	for _, ep := range e.rc.advertised {
		host := ep.Host
		if host == "" {
			host = "localhost"
		}
		v.Endpoints = append(v.Endpoints, control.VotersRecordEndpoint{Name: ep.Name, Host: host, Port: ep.Port})
	}
	return v
}

// sameEntry reports whether two VotersRecord entries publish the same
// endpoints and kraft.version range.
func sameEntry(a, b control.VotersRecordVoter) bool {
	if a.KRaftVersionFeature.MinSupportedVersion != b.KRaftVersionFeature.MinSupportedVersion ||
		a.KRaftVersionFeature.MaxSupportedVersion != b.KRaftVersionFeature.MaxSupportedVersion {
		return false
	}
	return slices.EqualFunc(a.Endpoints, b.Endpoints, func(x, y control.VotersRecordEndpoint) bool {
		return x.Name == y.Name && x.Host == y.Host && x.Port == y.Port
	})
}

// reconcileOwnVoterEntry is what a node of a dynamic quorum asks of the
// leader on its own about its entry in the voter set, at most once per
// fetch timeout (Kafka's update-voter period,
// KafkaRaftClient.pollFollowerAsVoter and pollFollowerAsObserver): a voter
// whose entry differs from its own endpoints sends UpdateRaftVoter (a
// leader applies it to itself); with
// controller.quorum.auto.join.enable an observer adds itself with
// AddRaftVoter (AckWhenCommitted false), or first removes the entry of
// its node id with another directory id (a replaced disk).
//
// At kraft.version 0 a voter following a leader sends UpdateRaftVoter once
// in each epoch instead, so that the leader learns the directory id,
// endpoints and kraft.version range the upgrade to kraft.version 1 needs
// (KafkaRaftClient.shouldSendUpdateVoteRequest; upgrade.go).
func (e *engine) reconcileOwnVoterEntry() {
	st := e.lastStatus
	if e.resigning || st.ShuttingDown || (st.Role != kraft.Follower && st.Role != kraft.Leader) {
		// Checked again when the role allows; a deadline passed
		// meanwhile is due at once then.
		e.timers.stop(timerSelfCheck)
		return
	}
	now := e.clock.Now()
	if now.Before(e.selfDue) {
		e.timers.set(timerSelfCheck, e.selfDue)
		return
	}
	// The period also spaces the requests: the next check is a fetch
	// timeout later, answered or not.
	e.selfDue = now.Add(e.rc.core.FetchTimeout)
	e.timers.set(timerSelfCheck, e.selfDue)
	me := e.localVoter()
	h, ok := e.voters.latest()
	if !ok {
		// kraft.version 0: report to the leader once in its epoch.
		if st.IsVoter && st.Role == kraft.Follower && e.updatedEpoch != st.Epoch && me.VoterDirectoryId != [16]byte{} {
			e.sendOwnUpdate(st, e.updateRequest(st, me))
		}
		return
	}
	var req kmsg.Request
	i := slices.IndexFunc(h.rec.Voters, func(v control.VotersRecordVoter) bool { return v.VoterId == me.VoterId })
	switch {
	case st.IsVoter:
		if i < 0 || sameEntry(h.rec.Voters[i], me) || e.updatedEpoch == st.Epoch {
			return
		}
		req = e.updateRequest(st, me)
	case !e.rc.autoJoin:
		return
	case i >= 0:
		r := kmsg.NewPtrRemoveRaftVoterRequest()
		r.ClusterID = clusterIDPtr(e.clusterID)
		r.VoterID, r.VoterDirectoryID = h.rec.Voters[i].VoterId, h.rec.Voters[i].VoterDirectoryId
		req = r
	default:
		r := kmsg.NewPtrAddRaftVoterRequest()
		r.Version = 1
		r.ClusterID = clusterIDPtr(e.clusterID)
		r.TimeoutMillis = int32(e.rc.core.RequestTimeout / time.Millisecond)
		r.VoterID, r.VoterDirectoryID = me.VoterId, me.VoterDirectoryId
		for _, ep := range me.Endpoints {
			r.Listeners = append(r.Listeners, kmsg.AddRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
		r.AckWhenCommitted = false
		req = r
	}
	if st.Role == kraft.Leader {
		// A leader updates its own entry directly.
		if r, ok := req.(*kmsg.UpdateRaftVoterRequest); ok && e.updateVoter(r) == nil {
			e.updatedEpoch = st.Epoch
		}
		return
	}
	e.sendOwnUpdate(st, req)
}

// updateRequest is the UpdateRaftVoter that publishes me, this node's
// entry, to the leader of st's epoch.
func (e *engine) updateRequest(st kraft.Status, me control.VotersRecordVoter) *kmsg.UpdateRaftVoterRequest {
	r := kmsg.NewPtrUpdateRaftVoterRequest()
	r.ClusterID, r.CurrentLeaderEpoch = clusterIDPtr(e.clusterID), int32(st.Epoch)
	r.VoterID, r.VoterDirectoryID = me.VoterId, me.VoterDirectoryId
	for _, ep := range me.Endpoints {
		r.Listeners = append(r.Listeners, kmsg.UpdateRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
	}
	r.KRaftVersionFeature.MinSupportedVersion = me.KRaftVersionFeature.MinSupportedVersion
	r.KRaftVersionFeature.MaxSupportedVersion = me.KRaftVersionFeature.MaxSupportedVersion
	return r
}

// sendOwnUpdate sends req, a request about this node's own entry, to the
// leader of st's epoch; an accepted UpdateRaftVoter is not sent again in
// that epoch.
func (e *engine) sendOwnUpdate(st kraft.Status, req kmsg.Request) {
	epoch := st.Epoch
	e.sendToLeader(req, false, func(err error) {
		if _, ok := req.(*kmsg.UpdateRaftVoterRequest); ok && (err == nil || errors.Is(err, ErrStaticQuorum)) {
			e.updatedEpoch = epoch
		}
		if err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelInfo, "voter request to the leader refused",
				slog.Int(logKeyAPIKey, int(req.Key())), slog.String(logKeyError, err.Error()))
		}
	})
}
