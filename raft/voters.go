package raft

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
)

// The KIP-853 voter RPCs: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter
// (KIP-853; Kafka's AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler), with Kafka's checks in Kafka's order.
//
// On a static quorum (kraft.version 0) the leader refuses AddRaftVoter and
// RemoveRaftVoter with UNSUPPORTED_VERSION once the earlier checks pass,
// and accepts an UpdateRaftVoter without writing anything.
//
// On a dynamic quorum (kraft.version 1) the leader runs at most one add or
// remove at a time (voterChange), each within the request timeout. An add
// first asks the new voter for its ApiVersions, to learn the kraft.version
// range it supports, and requires that it fetched as an observer and
// caught up; then the leader appends a VotersRecord with the new set, in
// force at once, and answers when it commits (or at once when the request
// says AckWhenCommitted=false). A remove appends the set without the
// voter and answers when it commits; a leader that removed itself resigns
// then (the core does that). An update replaces the voter's endpoints and
// range and answers at once.

// voterChange is the add or remove the leader is carrying out.
type voterChange struct {
	op    string // "add" or "remove", for logs
	epoch kraft.Epoch
	// offset is where the VotersRecord was appended; -1 while an add
	// waits for the new voter's ApiVersions. The change is due within the
	// request timeout (timerVoterChange).
	offset kraft.Offset
	// ack: answer once the record commits, else once it is appended.
	ack    bool
	answer func(code int16)
	// add only: the new voter's key and entry, and the connection that
	// asks it for its ApiVersions.
	key   kraft.ReplicaKey
	voter control.VotersRecordVoter
	probe *transport.Peer
}

// newChange prepares the bookkeeping of a change of voter (id, dir) in
// this epoch; beginChange puts it in flight.
func (e *engine) newChange(op string, id int32, dir [16]byte, ack bool, answer func(int16)) *voterChange {
	return &voterChange{
		op: op, epoch: e.lastStatus.Epoch, offset: -1, ack: ack, answer: answer,
		key: kraft.ReplicaKey{ID: kraft.NodeID(id), DirectoryID: kraft.Uuid(dir)},
	}
}

// beginChange makes ch the change in flight, due within the request
// timeout.
func (e *engine) beginChange(ch *voterChange) {
	e.change = ch
	e.timers.set(timerVoterChange, e.clock.Now().Add(e.rc.core.RequestTimeout))
}

// serveVoterRPC answers AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter
// through the engine goroutine.
func (h *handler) serveVoterRPC(ctx context.Context, req kmsg.Request, reply *transport.Reply) {
	answer := func(resp kmsg.Response) { reply.Send(resp) }
	if h.c.enqueue(ctx, event{call: func(e *engine) { e.voterRPC(req, answer) }}) != nil {
		reply.Close()
	}
}

// voterRPC answers one voter RPC on the engine goroutine: at once, or,
// for a change in flight, when it completes.
func (e *engine) voterRPC(req kmsg.Request, answer func(kmsg.Response)) {
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
		e.addVoter(r, func(code int16) {
			resp.ErrorCode, resp.ErrorMessage = code, defaultMessage(code)
			answer(resp)
		})
	case *kmsg.RemoveRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		e.removeVoter(r, func(code int16) {
			resp.ErrorCode, resp.ErrorMessage = code, defaultMessage(code)
			answer(resp)
		})
	case *kmsg.UpdateRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
		resp.ErrorCode = e.updateVoter(r)
		st := e.lastStatus
		resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = int32(st.Leader.LeaderID), int32(st.Leader.Epoch)
		if v, ok := e.pub.voterEndpoint(int32(st.Leader.LeaderID), e.rc.listenerName); ok {
			resp.CurrentLeader.Host, resp.CurrentLeader.Port = v.Host, int32(v.Port)
		}
		answer(resp)
	default:
		answer(req.ResponseKind())
	}
}

// leaderCode is Kafka's validation of a leader-only request at epoch (the
// local epoch for requests that carry none).
func (e *engine) leaderCode(epoch kraft.Epoch) int16 {
	st := e.lastStatus
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

// firstChecks are the checks every voter RPC starts with: the cluster id,
// the leader validation, the voter key, and (when listeners is not nil)
// an endpoint on the leader's default listener.
func (e *engine) firstChecks(clusterID *string, leaderCode int16, voterID int32, dir [16]byte, listeners []string) int16 {
	switch {
	case clusterID != nil && e.clusterID != "" && *clusterID != e.clusterID:
		return kerr.InconsistentClusterID.Code
	case leaderCode != 0:
		return leaderCode
	case voterID < 0 || dir == [16]byte{}:
		return kerr.InvalidRequest.Code
	case listeners != nil && !slices.Contains(listeners, e.rc.listenerName):
		return kerr.InvalidRequest.Code
	}
	return 0
}

// changeCode is the check that a membership change may start now (§4.5
// steps 3–6): none in flight, a high watermark in this epoch, kraft.version
// 1, and the latest voter set committed and in the log.
func (e *engine) changeCode() int16 {
	switch {
	case e.change != nil:
		return kerr.RequestTimedOut.Code
	case e.applier.hw < 0 || !e.caughtUp(e.lastStatus.Epoch):
		return kerr.RequestTimedOut.Code
	case !e.rc.dynamic:
		return kerr.UnsupportedVersion.Code
	}
	if h, ok := e.latestVoters(); !ok || h.bootstrap || e.node.PendingVoterChange() {
		return kerr.RequestTimedOut.Code
	}
	return 0
}

// listenerNames lists the names of a request's listeners (never nil).
func listenerNames[L any](ls []L, name func(L) string) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, name(l))
	}
	return out
}

// addVoter runs AddRaftVoter (§4.5).
func (e *engine) addVoter(r *kmsg.AddRaftVoterRequest, answer func(int16)) {
	names := listenerNames(r.Listeners, func(l kmsg.AddRaftVoterRequestListener) string { return l.Name })
	code := e.firstChecks(r.ClusterID, e.leaderCode(e.lastStatus.Epoch), r.VoterID, r.VoterDirectoryID, names)
	if code == 0 {
		code = e.changeCode()
	}
	if code == 0 {
		h, _ := e.latestVoters()
		if slices.ContainsFunc(h.rec.Voters, func(v control.VotersRecordVoter) bool { return v.VoterId == r.VoterID }) {
			code = kerr.DuplicateVoter.Code
		}
	}
	if code != 0 {
		answer(code)
		return
	}
	ch := e.newChange("add", r.VoterID, r.VoterDirectoryID, r.Version < 1 || r.AckWhenCommitted, answer)
	ch.voter = control.VotersRecordVoter{VoterId: r.VoterID, VoterDirectoryId: r.VoterDirectoryID}
	var addr string
	for _, l := range r.Listeners {
		ch.voter.Endpoints = append(ch.voter.Endpoints, control.VotersRecordEndpoint{Name: l.Name, Host: l.Host, Port: l.Port})
		if l.Name == e.rc.listenerName {
			addr = QuorumVoter{Host: l.Host, Port: l.Port}.Address()
		}
	}
	p, err := e.dialProbe(addr)
	if err != nil {
		answer(kerr.RequestTimedOut.Code)
		return
	}
	ch.probe = p
	e.beginChange(ch)
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "adding a voter",
		slog.Int(logKeyPeer, int(r.VoterID)), slog.String(logKeyAddr, addr))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4 // below v4 a feature whose minimum is 0 is left out
	req.ClientSoftwareName, req.ClientSoftwareVersion = "krabka", "1"
	sent := p.Send(req, func(resp kmsg.Response, err error) {
		select {
		case e.inbox <- event{call: func(e *engine) { e.addProbed(ch, resp, err) }}:
		default: // the deadline answers it
		}
	})
	if !sent {
		e.finishChange(kerr.RequestTimedOut.Code)
	}
}

// addProbed continues an add with the new voter's ApiVersions answer
// (§4.5 steps 9–11).
func (e *engine) addProbed(ch *voterChange, resp kmsg.Response, err error) {
	if e.change != ch || ch.offset >= 0 {
		return // finished already (deadline, lost leadership)
	}
	e.closeProbe(ch)
	av, _ := resp.(*kmsg.ApiVersionsResponse)
	if err != nil || av == nil || av.ErrorCode != 0 {
		e.finishChange(kerr.RequestTimedOut.Code)
		return
	}
	i := slices.IndexFunc(av.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
		return f.Name == wire.FeatureKRaftVersion
	})
	if i < 0 || av.SupportedFeatures[i].MinVersion > e.rc.kraftVersion() || av.SupportedFeatures[i].MaxVersion < e.rc.kraftVersion() {
		e.finishChange(kerr.InvalidRequest.Code)
		return
	}
	f := av.SupportedFeatures[i]
	ch.voter.KRaftVersionFeature = control.VotersRecordKRaftVersionFeature{MinSupportedVersion: f.MinVersion, MaxSupportedVersion: f.MaxVersion}
	if code := e.leaderCode(ch.epoch); code != 0 {
		e.finishChange(code)
		return
	}
	if e.node.PendingVoterChange() {
		e.finishChange(kerr.RequestTimedOut.Code)
		return
	}
	// Caught up: it fetched within the last hour and was caught up once.
	caughtUp := false
	now := e.now()
	for _, rs := range e.node.Status().Replicas {
		if rs.Key == ch.key && !rs.Voter {
			caughtUp = rs.LastCaughtUp >= 0 && rs.LastFetch >= 0 && now-rs.LastFetch < kraft.Instant(time.Hour/time.Millisecond)
		}
	}
	if !caughtUp {
		e.finishChange(kerr.RequestTimedOut.Code)
		return
	}
	h, _ := e.latestVoters()
	rec := control.NewVotersRecord()
	rec.Voters = append(slices.Clone(h.rec.Voters), ch.voter)
	e.appendChange(ch, rec)
}

// removeVoter runs RemoveRaftVoter (§4.6).
func (e *engine) removeVoter(r *kmsg.RemoveRaftVoterRequest, answer func(int16)) {
	code := e.firstChecks(r.ClusterID, e.leaderCode(e.lastStatus.Epoch), r.VoterID, r.VoterDirectoryID, nil)
	if code == 0 {
		code = e.changeCode()
	}
	var rec *control.VotersRecord
	if code == 0 {
		h, _ := e.latestVoters()
		rec = control.NewVotersRecord()
		rec.Voters = slices.DeleteFunc(slices.Clone(h.rec.Voters), func(v control.VotersRecordVoter) bool {
			return v.VoterId == r.VoterID && v.VoterDirectoryId == r.VoterDirectoryID
		})
		if len(rec.Voters) == len(h.rec.Voters) || len(h.rec.Voters) < 2 {
			code = kerr.VoterNotFound.Code
		}
	}
	if code != 0 {
		answer(code)
		return
	}
	ch := e.newChange("remove", r.VoterID, r.VoterDirectoryID, true, answer)
	e.beginChange(ch)
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "removing a voter", slog.Int(logKeyPeer, int(r.VoterID)))
	e.appendChange(ch, rec)
}

// appendChange appends the VotersRecord of a change; without
// AckWhenCommitted the change is answered now.
func (e *engine) appendChange(ch *voterChange, rec *control.VotersRecord) {
	off, err := e.proposeVoters(rec, 0)
	if err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "voter set not appended", slog.String(logKeyError, err.Error()))
		e.finishChange(kerr.NotLeaderForPartition.Code)
		return
	}
	ch.offset = off
	if !ch.ack {
		e.finishChange(0)
	}
}

// checkChange completes the change in flight once its record commits,
// and fails it when leadership is lost or the request timeout passes.
func (e *engine) checkChange() {
	ch := e.change
	if ch == nil {
		return
	}
	st := e.lastStatus
	switch {
	case ch.offset >= 0 && max(e.applier.hw, st.HighWatermark) > ch.offset:
		// The core's own high watermark counts too: a leader that
		// removed itself resigns in the step that commits the removal.
		e.finishChange(0)
	case st.Role != kraft.Leader || st.Epoch != ch.epoch:
		e.finishChange(kerr.NotLeaderForPartition.Code)
	case e.timers.expired(timerVoterChange, e.clock.Now()):
		e.finishChange(kerr.RequestTimedOut.Code)
	}
}

// finishChange answers the change in flight with code and frees the slot.
func (e *engine) finishChange(code int16) {
	ch := e.change
	if ch == nil {
		return
	}
	e.change = nil
	e.timers.stop(timerVoterChange)
	e.closeProbe(ch)
	if code == 0 {
		e.logger.LogAttrs(context.Background(), slog.LevelInfo, "voter change done",
			slog.String(logKeyChange, ch.op), slog.Int(logKeyPeer, int(ch.key.ID)))
	} else {
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "voter change failed",
			slog.String(logKeyChange, ch.op), slog.Int(logKeyPeer, int(ch.key.ID)), slog.String(logKeyError, kerr.ErrorForCode(code).Error()))
	}
	ch.answer(code)
}

// closeProbe closes an add's ApiVersions connection, off the engine
// goroutine (Close waits for the connection's goroutine).
func (e *engine) closeProbe(ch *voterChange) {
	if p := ch.probe; p != nil {
		ch.probe = nil
		e.spawn(func(context.Context) { p.Close() })
	}
}

// updateVoter runs UpdateRaftVoter (§4.7) and returns its error code. On
// a static quorum success changes nothing on disk.
func (e *engine) updateVoter(r *kmsg.UpdateRaftVoterRequest) int16 {
	names := listenerNames(r.Listeners, func(l kmsg.UpdateRaftVoterRequestListener) string { return l.Name })
	code := e.firstChecks(r.ClusterID, e.leaderCode(kraft.Epoch(r.CurrentLeaderEpoch)), r.VoterID, r.VoterDirectoryID, names)
	if code != 0 {
		return code
	}
	f := r.KRaftVersionFeature
	switch {
	case f.MinSupportedVersion < 0 || f.MaxSupportedVersion < 0 || f.MaxSupportedVersion < f.MinSupportedVersion:
		return kerr.InvalidRequest.Code
	case e.change != nil || e.applier.hw < 0:
		return kerr.RequestTimedOut.Code
	}
	kv := e.rc.kraftVersion()
	if !e.rc.dynamic {
		switch {
		case f.MinSupportedVersion > kv || f.MaxSupportedVersion < kv:
			return kerr.InvalidRequest.Code
		case !e.lastStatus.Voters.Contains(kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID)}):
			return kerr.VoterNotFound.Code
		}
		return 0
	}
	h, ok := e.latestVoters()
	switch {
	case !ok || h.bootstrap || e.node.PendingVoterChange() || !e.caughtUp(e.lastStatus.Epoch):
		return kerr.RequestTimedOut.Code
	case f.MinSupportedVersion > kv || f.MaxSupportedVersion < kv:
		return kerr.InvalidRequest.Code
	}
	i := slices.IndexFunc(h.rec.Voters, func(v control.VotersRecordVoter) bool {
		return v.VoterId == r.VoterID && v.VoterDirectoryId == r.VoterDirectoryID
	})
	if i < 0 {
		return kerr.VoterNotFound.Code
	}
	rec := control.NewVotersRecord()
	rec.Voters = slices.Clone(h.rec.Voters)
	v := &rec.Voters[i]
	v.Endpoints = nil
	for _, l := range r.Listeners {
		v.Endpoints = append(v.Endpoints, control.VotersRecordEndpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	v.KRaftVersionFeature = control.VotersRecordKRaftVersionFeature{MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion}
	if _, err := e.proposeVoters(rec, 0); err != nil {
		return kerr.NotLeaderForPartition.Code
	}
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "updated a voter's endpoints", slog.Int(logKeyPeer, int(r.VoterID)))
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

// maybeSelfMaintain is what a node of a dynamic quorum asks of the leader
// on its own, at most once per fetch timeout (Kafka's update-voter
// period, KafkaRaftClient.pollFollowerAsVoter and pollFollowerAsObserver): a voter whose entry in the voter set
// differs from its own endpoints sends UpdateRaftVoter (a leader applies
// it to itself); with
// controller.quorum.auto.join.enable an observer adds itself with
// AddRaftVoter (AckWhenCommitted false), or first removes the entry of
// its node id with another directory id (a replaced disk).
func (e *engine) maybeSelfMaintain() {
	st := e.lastStatus
	if !e.rc.dynamic || e.resigning || st.ShuttingDown || (st.Role != kraft.Follower && st.Role != kraft.Leader) {
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
	h, ok := e.latestVoters()
	if !ok {
		return
	}
	me := e.localVoter()
	var req kmsg.Request
	i := slices.IndexFunc(h.rec.Voters, func(v control.VotersRecordVoter) bool { return v.VoterId == me.VoterId })
	switch {
	case st.IsVoter:
		if i < 0 || sameEntry(h.rec.Voters[i], me) || e.updatedEpoch == st.Epoch {
			return
		}
		r := kmsg.NewPtrUpdateRaftVoterRequest()
		r.ClusterID, r.CurrentLeaderEpoch = clusterIDPtr(e.clusterID), int32(st.Epoch)
		r.VoterID, r.VoterDirectoryID = me.VoterId, me.VoterDirectoryId
		for _, ep := range me.Endpoints {
			r.Listeners = append(r.Listeners, kmsg.UpdateRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
		r.KRaftVersionFeature.MinSupportedVersion = me.KRaftVersionFeature.MinSupportedVersion
		r.KRaftVersionFeature.MaxSupportedVersion = me.KRaftVersionFeature.MaxSupportedVersion
		req = r
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
	epoch := st.Epoch
	if st.Role == kraft.Leader {
		// A leader updates its own entry directly.
		if r, ok := req.(*kmsg.UpdateRaftVoterRequest); ok && e.updateVoter(r) == 0 {
			e.updatedEpoch = epoch
		}
		return
	}
	e.sendToLeader(req, false, func(code int16) {
		if _, ok := req.(*kmsg.UpdateRaftVoterRequest); ok && (code == 0 || code == kerr.UnsupportedVersion.Code) {
			e.updatedEpoch = epoch
		}
		if code != 0 {
			e.logger.LogAttrs(context.Background(), slog.LevelInfo, "voter request to the leader refused",
				slog.Int(logKeyAPIKey, int(req.Key())), slog.String(logKeyError, kerr.ErrorForCode(code).Error()))
		}
	})
}

// clusterIDPtr is the ClusterID field of a request: null when unknown.
func clusterIDPtr(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}

// sendToLeader sends a voter RPC to the leader on the forwarding
// connection; done gets the answer's error code (BROKER_NOT_AVAILABLE when
// the request failed) on the engine goroutine, or, if anyGoroutine, on the
// connection's when the engine's queue is full (else the answer is
// dropped). It reports whether the request was sent.
func (e *engine) sendToLeader(req kmsg.Request, anyGoroutine bool, done func(code int16)) bool {
	st := e.lastStatus
	if st.Leader.LeaderID == kraft.NoNode || st.Leader.LeaderID == st.ID {
		return false
	}
	l := e.link(st.Leader.LeaderID)
	if l == nil {
		return false
	}
	return l.forward.Send(req, func(resp kmsg.Response, err error) {
		code := kerr.BrokerNotAvailable.Code
		if err == nil {
			code = voterAnswerCode(resp)
		}
		select {
		case e.inbox <- event{call: func(*engine) { done(code) }}:
		default:
			if anyGoroutine {
				done(code)
			}
		}
	})
}

// voterAnswerCode is the error code of a voter RPC's answer.
func voterAnswerCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode
	case *kmsg.UpdateRaftVoterResponse:
		return r.ErrorCode
	}
	return kerr.UnknownServerError.Code
}

// Voter names a controller to add to a dynamic voter set: its node id,
// the directory id of its metadata log directory (meta.properties) and
// the endpoints it advertises, one of them on the first controller
// listener.
type Voter struct {
	ID          NodeID
	DirectoryID [16]byte
	Endpoints   []Endpoint
}

// AddVoter adds v to the voter set of a dynamic quorum, as AddRaftVoter
// does (Kafka's AddVoterHandler): v must run as an observer that has caught up with
// the leader. On the leader it runs there; on another node it is sent to
// the leader. It returns once the new set is committed. Errors are the
// *kerr.Error of Kafka's answer (errors.Is with kerr.DuplicateVoter,
// kerr.RequestTimedOut, kerr.UnsupportedVersion on a static quorum, ...),
// [ErrLeaderUnknown] when no leader is known, or ctx's error.
func (c *Controller) AddVoter(ctx context.Context, v Voter) error {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.Version = 1
	req.ClusterID = clusterIDPtr(c.eng.clusterID)
	req.TimeoutMillis = int32(c.rc.core.RequestTimeout / time.Millisecond)
	req.VoterID, req.VoterDirectoryID, req.AckWhenCommitted = int32(v.ID), v.DirectoryID, true
	for _, ep := range v.Endpoints {
		req.Listeners = append(req.Listeners, kmsg.AddRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
	}
	return c.voterChange(ctx, req, fmt.Sprintf("add voter %d", v.ID))
}

// RemoveVoter removes the voter (id, directoryID) from the voter set of a
// dynamic quorum, as RemoveRaftVoter does (Kafka's RemoveVoterHandler), and returns
// once the new set is committed. A leader that removes itself resigns
// then. Errors as for [Controller.AddVoter] (kerr.VoterNotFound for a
// replica that is not a voter).
func (c *Controller) RemoveVoter(ctx context.Context, id NodeID, directoryID [16]byte) error {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.ClusterID = clusterIDPtr(c.eng.clusterID)
	req.VoterID, req.VoterDirectoryID = int32(id), directoryID
	return c.voterChange(ctx, req, fmt.Sprintf("remove voter %d", id))
}

// voterChange runs a voter RPC on this node when it leads, else on the
// leader, and waits for the answer.
func (c *Controller) voterChange(ctx context.Context, req kmsg.Request, what string) error {
	done := make(chan int16, 1)
	answer := func(code int16) {
		select {
		case done <- code:
		default:
		}
	}
	err := c.enqueue(ctx, event{call: func(e *engine) {
		if e.lastStatus.Role == kraft.Leader {
			e.voterRPC(req, func(resp kmsg.Response) { answer(voterAnswerCode(resp)) })
			return
		}
		if !e.sendToLeader(req, true, answer) {
			answer(kerr.NotLeaderForPartition.Code)
		}
	}})
	if err != nil {
		return err
	}
	select {
	case code := <-done:
		switch code {
		case 0:
			return nil
		case kerr.NotLeaderForPartition.Code, kerr.BrokerNotAvailable.Code:
			return fmt.Errorf("raft: %s: %w: %w", what, ErrLeaderUnknown, wire.ErrorForCode(code))
		}
		return fmt.Errorf("raft: %s: %w", what, wire.ErrorForCode(code))
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrShuttingDown
	}
}

// ChangeMembership makes the voter set of a dynamic quorum equal to
// voters, one voter at a time as KIP-853 requires: a target that adds one
// voter to the set in force is [Controller.AddVoter], one that drops one
// is [Controller.RemoveVoter], the set itself changes nothing. A target
// further away (two voters, or a voter's directory id replaced) is
// refused with [ErrInvalidChange]: make the changes one by one, each
// committed before the next. Voters are matched by node id and directory
// id; only an added voter's endpoints are used. The set in force is the
// one this node has seen, which on a follower may trail the leader's.
func (c *Controller) ChangeMembership(ctx context.Context, voters []Voter) error {
	current := c.eng.pub.voterList()
	in := func(id NodeID, dir [16]byte, set []voterInfo) bool {
		return slices.ContainsFunc(set, func(v voterInfo) bool { return v.id == id && v.dir == dir })
	}
	var added []Voter
	for _, v := range voters {
		if !in(v.ID, v.DirectoryID, current) {
			added = append(added, v)
		}
	}
	var removed []voterInfo
	for _, v := range current {
		if !slices.ContainsFunc(voters, func(w Voter) bool { return w.ID == v.id && w.DirectoryID == v.dir }) {
			removed = append(removed, v)
		}
	}
	switch {
	case len(added) == 0 && len(removed) == 0:
		return nil
	case len(added) == 1 && len(removed) == 0:
		return c.AddVoter(ctx, added[0])
	case len(added) == 0 && len(removed) == 1:
		return c.RemoveVoter(ctx, removed[0].id, removed[0].dir)
	}
	return fmt.Errorf("%w: the target adds %d voters and removes %d; change one voter at a time", ErrInvalidChange, len(added), len(removed))
}
