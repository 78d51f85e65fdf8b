package raft

import (
	"context"
	"errors"
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
	answer func(error)
	// add only: the new voter's key and entry, and the connection that
	// asks it for its ApiVersions.
	key   kraft.ReplicaKey
	voter control.VotersRecordVoter
	probe peerSender
}

// newChange prepares the bookkeeping of a change of voter (id, dir) in
// this epoch; beginChange puts it in flight.
func (e *engine) newChange(op string, id int32, dir [16]byte, ack bool, answer func(error)) *voterChange {
	return &voterChange{
		op: op, epoch: e.lastStatus.Epoch, offset: -1, ack: ack, answer: answer,
		key: kraft.ReplicaKey{ID: kraft.NodeID(id), DirectoryID: kraft.UUID(dir)},
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
		e.addVoter(r, func(err error) {
			resp.ErrorCode, resp.ErrorMessage = voterAnswer(err)
			answer(resp)
		})
	case *kmsg.RemoveRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		e.removeVoter(r, func(err error) {
			resp.ErrorCode, resp.ErrorMessage = voterAnswer(err)
			answer(resp)
		})
	case *kmsg.UpdateRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
		resp.ErrorCode = wire.CodeForError(e.updateVoter(r))
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

// voterAnswer is the error code and message of a voter RPC's answer for
// err: Kafka's default message for the code, null for NONE.
func voterAnswer(err error) (int16, *string) {
	code := wire.CodeForError(err)
	return code, defaultMessage(code)
}

// leaderCheck is Kafka's validation of a leader-only request at epoch
// (the local epoch for requests that carry none;
// KafkaRaftClient.validateLeaderOnlyRequest).
func (e *engine) leaderCheck(epoch kraft.Epoch) error {
	st := e.lastStatus
	switch {
	case epoch < st.Epoch:
		return fmt.Errorf("%w: epoch %d, this node is in %d", ErrFencedLeaderEpoch, epoch, st.Epoch)
	case epoch > st.Epoch:
		return fmt.Errorf("%w: epoch %d, this node is in %d", ErrUnknownLeaderEpoch, epoch, st.Epoch)
	case st.Role != kraft.Leader:
		return notLeaderHint(st.Leader)
	case st.ShuttingDown || e.resigning:
		return ErrShuttingDown
	}
	return nil
}

// firstChecks are the checks every voter RPC starts with: the cluster id,
// the leader validation, the voter key, and (when listeners is not nil)
// an endpoint on the leader's default listener.
func (e *engine) firstChecks(clusterID *string, leaderErr error, voterID int32, dir [16]byte, listeners []string) error {
	switch {
	case clusterID != nil && e.clusterID != "" && *clusterID != e.clusterID:
		return fmt.Errorf("%w: %q, this cluster is %q", ErrInconsistentClusterID, *clusterID, e.clusterID)
	case leaderErr != nil:
		return leaderErr
	case voterID < 0 || dir == [16]byte{}:
		return fmt.Errorf("%w: node id %d, directory id %x", ErrInvalidVoter, voterID, dir)
	case listeners != nil && !slices.Contains(listeners, e.rc.listenerName):
		return fmt.Errorf("%w: no endpoint on listener %s", ErrInvalidVoter, e.rc.listenerName)
	}
	return nil
}

// changeCheck is the check that a membership change may start now, as
// Kafka's AddVoterHandler and RemoveVoterHandler make it: none in flight,
// a high watermark in this epoch, kraft.version 1, and the latest voter
// set committed and in the log.
func (e *engine) changeCheck() error {
	switch {
	case e.change != nil:
		return ErrChangeInFlight
	case e.applier.hw < 0 || !e.caughtUp(e.lastStatus.Epoch):
		return ErrNoCommitInEpoch
	case !e.rc.dynamic:
		return ErrStaticQuorum
	}
	if h, ok := e.latestVoters(); !ok || h.bootstrap || e.node.PendingVoterChange() {
		return ErrVotersUncommitted
	}
	return nil
}

// listenerNames lists the names of a request's listeners (never nil).
func listenerNames[L any](ls []L, name func(L) string) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, name(l))
	}
	return out
}

// addVoter runs AddRaftVoter (Kafka's AddVoterHandler).
func (e *engine) addVoter(r *kmsg.AddRaftVoterRequest, answer func(error)) {
	if err := e.addCheck(r); err != nil {
		answer(err)
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
		answer(fmt.Errorf("%w: %w", ErrVoterUnreachable, err))
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
		e.finishChange(fmt.Errorf("%w: the request was not sent", ErrVoterUnreachable))
	}
}

// addCheck runs AddRaftVoter's checks, in Kafka's order, up to the
// ApiVersions request.
func (e *engine) addCheck(r *kmsg.AddRaftVoterRequest) error {
	names := listenerNames(r.Listeners, func(l kmsg.AddRaftVoterRequestListener) string { return l.Name })
	if err := e.firstChecks(r.ClusterID, e.leaderCheck(e.lastStatus.Epoch), r.VoterID, r.VoterDirectoryID, names); err != nil {
		return err
	}
	if err := e.changeCheck(); err != nil {
		return err
	}
	h, _ := e.latestVoters()
	if slices.ContainsFunc(h.rec.Voters, func(v control.VotersRecordVoter) bool { return v.VoterId == r.VoterID }) {
		return fmt.Errorf("%w: node %d", ErrDuplicateVoter, r.VoterID)
	}
	return nil
}

// addProbed continues an add with the new voter's ApiVersions answer:
// the new voter must support the quorum's kraft.version and have caught
// up as an observer (Kafka's AddVoterHandler).
func (e *engine) addProbed(ch *voterChange, resp kmsg.Response, err error) {
	if e.change != ch || ch.offset >= 0 {
		return // finished already (deadline, lost leadership)
	}
	e.closeProbe(ch)
	av, _ := resp.(*kmsg.ApiVersionsResponse)
	if err != nil || av == nil || av.ErrorCode != 0 {
		e.finishChange(probeError(av, err))
		return
	}
	i := slices.IndexFunc(av.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
		return f.Name == wire.FeatureKRaftVersion
	})
	if i < 0 || av.SupportedFeatures[i].MinVersion > e.rc.kraftVersion() || av.SupportedFeatures[i].MaxVersion < e.rc.kraftVersion() {
		e.finishChange(fmt.Errorf("%w: it does not support kraft.version %d", ErrInvalidVoter, e.rc.kraftVersion()))
		return
	}
	f := av.SupportedFeatures[i]
	ch.voter.KRaftVersionFeature = control.VotersRecordKRaftVersionFeature{MinSupportedVersion: f.MinVersion, MaxSupportedVersion: f.MaxVersion}
	if err := e.leaderCheck(ch.epoch); err != nil {
		e.finishChange(err)
		return
	}
	if e.node.PendingVoterChange() {
		e.finishChange(ErrVotersUncommitted)
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
		e.finishChange(fmt.Errorf("%w: node %d", ErrVoterNotCaughtUp, ch.key.ID))
		return
	}
	h, _ := e.latestVoters()
	rec := control.NewVotersRecord()
	rec.Voters = append(slices.Clone(h.rec.Voters), ch.voter)
	e.appendChange(ch, rec)
}

// removeVoter runs RemoveRaftVoter (Kafka's RemoveVoterHandler).
func (e *engine) removeVoter(r *kmsg.RemoveRaftVoterRequest, answer func(error)) {
	rec, err := e.removeCheck(r)
	if err != nil {
		answer(err)
		return
	}
	ch := e.newChange("remove", r.VoterID, r.VoterDirectoryID, true, answer)
	e.beginChange(ch)
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "removing a voter", slog.Int(logKeyPeer, int(r.VoterID)))
	e.appendChange(ch, rec)
}

// removeCheck runs RemoveRaftVoter's checks, in Kafka's order, and
// returns the voter set without the voter.
func (e *engine) removeCheck(r *kmsg.RemoveRaftVoterRequest) (*control.VotersRecord, error) {
	if err := e.firstChecks(r.ClusterID, e.leaderCheck(e.lastStatus.Epoch), r.VoterID, r.VoterDirectoryID, nil); err != nil {
		return nil, err
	}
	if err := e.changeCheck(); err != nil {
		return nil, err
	}
	h, _ := e.latestVoters()
	rec := control.NewVotersRecord()
	rec.Voters = slices.DeleteFunc(slices.Clone(h.rec.Voters), func(v control.VotersRecordVoter) bool {
		return v.VoterId == r.VoterID && v.VoterDirectoryId == r.VoterDirectoryID
	})
	switch {
	case len(rec.Voters) == len(h.rec.Voters):
		return nil, fmt.Errorf("%w: node %d with directory id %x", ErrVoterNotFound, r.VoterID, r.VoterDirectoryID)
	case len(h.rec.Voters) < 2:
		return nil, fmt.Errorf("%w: node %d is the last voter", ErrVoterNotFound, r.VoterID)
	}
	return rec, nil
}

// appendChange appends the VotersRecord of a change; without
// AckWhenCommitted the change is answered now.
func (e *engine) appendChange(ch *voterChange, rec *control.VotersRecord) {
	off, err := e.proposeVoters(rec, 0)
	if err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "voter set not appended", slog.String(logKeyError, err.Error()))
		e.finishChange(fmt.Errorf("%w: the voter set was not appended: %w", ErrNotLeader, err))
		return
	}
	ch.offset = off
	if !ch.ack {
		e.finishChange(nil)
	}
}

// resolveVoterChange completes the change in flight once its record
// commits, and fails it when leadership is lost or the request timeout
// passes.
func (e *engine) resolveVoterChange() {
	ch := e.change
	if ch == nil {
		return
	}
	st := e.lastStatus
	switch {
	case ch.offset >= 0 && max(e.applier.hw, st.HighWatermark) > ch.offset:
		// The core's own high watermark counts too: a leader that
		// removed itself resigns in the step that commits the removal.
		e.finishChange(nil)
	case st.Role != kraft.Leader || st.Epoch != ch.epoch:
		e.finishChange(fmt.Errorf("%w: leadership of epoch %d lost during the change", ErrNotLeader, ch.epoch))
	case e.timers.expired(timerVoterChange, e.clock.Now()):
		e.finishChange(ErrChangeTimedOut)
	}
}

// finishChange answers the change in flight with err (nil for done) and
// frees the slot.
func (e *engine) finishChange(err error) {
	ch := e.change
	if ch == nil {
		return
	}
	e.change = nil
	e.timers.stop(timerVoterChange)
	e.closeProbe(ch)
	if err == nil {
		e.logger.LogAttrs(context.Background(), slog.LevelInfo, "voter change done",
			slog.String(logKeyChange, ch.op), slog.Int(logKeyPeer, int(ch.key.ID)))
	} else {
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "voter change failed",
			slog.String(logKeyChange, ch.op), slog.Int(logKeyPeer, int(ch.key.ID)), slog.String(logKeyError, err.Error()))
	}
	ch.answer(err)
}

// closeProbe closes an add's ApiVersions connection, off the engine
// goroutine (Close waits for the connection's goroutine).
func (e *engine) closeProbe(ch *voterChange) {
	if p := ch.probe; p != nil {
		ch.probe = nil
		e.spawn(func(context.Context) { p.Close() })
	}
}

// updateVoter runs UpdateRaftVoter (Kafka's UpdateVoterHandler). On a static quorum success
// changes nothing on disk.
func (e *engine) updateVoter(r *kmsg.UpdateRaftVoterRequest) error {
	if err := e.updateCheck(r); err != nil || !e.rc.dynamic {
		return err
	}
	h, _ := e.latestVoters()
	i := slices.IndexFunc(h.rec.Voters, func(v control.VotersRecordVoter) bool {
		return v.VoterId == r.VoterID && v.VoterDirectoryId == r.VoterDirectoryID
	})
	if i < 0 {
		return fmt.Errorf("%w: node %d with directory id %x", ErrVoterNotFound, r.VoterID, r.VoterDirectoryID)
	}
	rec := control.NewVotersRecord()
	rec.Voters = slices.Clone(h.rec.Voters)
	v := &rec.Voters[i]
	v.Endpoints = nil
	for _, l := range r.Listeners {
		v.Endpoints = append(v.Endpoints, control.VotersRecordEndpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	f := r.KRaftVersionFeature
	v.KRaftVersionFeature = control.VotersRecordKRaftVersionFeature{MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion}
	if _, err := e.proposeVoters(rec, 0); err != nil {
		return fmt.Errorf("%w: the voter set was not appended: %w", ErrNotLeader, err)
	}
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "updated a voter's endpoints", slog.Int(logKeyPeer, int(r.VoterID)))
	return nil
}

// updateCheck runs UpdateRaftVoter's checks, in Kafka's order, short of
// finding the voter in a dynamic voter set.
func (e *engine) updateCheck(r *kmsg.UpdateRaftVoterRequest) error {
	names := listenerNames(r.Listeners, func(l kmsg.UpdateRaftVoterRequestListener) string { return l.Name })
	if err := e.firstChecks(r.ClusterID, e.leaderCheck(kraft.Epoch(r.CurrentLeaderEpoch)), r.VoterID, r.VoterDirectoryID, names); err != nil {
		return err
	}
	f := r.KRaftVersionFeature
	kv := e.rc.kraftVersion()
	switch {
	case f.MinSupportedVersion < 0 || f.MaxSupportedVersion < 0 || f.MaxSupportedVersion < f.MinSupportedVersion:
		return fmt.Errorf("%w: invalid kraft.version range [%d, %d]", ErrInvalidVoter, f.MinSupportedVersion, f.MaxSupportedVersion)
	case e.change != nil:
		return ErrChangeInFlight
	case e.applier.hw < 0:
		return ErrNoCommitInEpoch
	}
	if !e.rc.dynamic {
		switch {
		case f.MinSupportedVersion > kv || f.MaxSupportedVersion < kv:
			return leavesOut(f, kv)
		case !e.lastStatus.Voters.Contains(kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID)}):
			return fmt.Errorf("%w: node %d", ErrVoterNotFound, r.VoterID)
		}
		return nil
	}
	h, ok := e.latestVoters()
	switch {
	case !ok || h.bootstrap || e.node.PendingVoterChange():
		return ErrVotersUncommitted
	case !e.caughtUp(e.lastStatus.Epoch):
		return ErrNoCommitInEpoch
	case f.MinSupportedVersion > kv || f.MaxSupportedVersion < kv:
		return leavesOut(f, kv)
	}
	return nil
}

// leavesOut is the error of an update whose kraft.version range leaves
// out the quorum's kraft.version kv.
func leavesOut(f kmsg.UpdateRaftVoterRequestKRaftVersionFeature, kv int16) error {
	return fmt.Errorf("%w: kraft.version range [%d, %d] leaves out %d", ErrInvalidVoter, f.MinSupportedVersion, f.MaxSupportedVersion, kv)
}

// probeError is the error of an add whose ApiVersions request to the new
// voter failed (err) or was refused (av).
func probeError(av *kmsg.ApiVersionsResponse, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrVoterUnreachable, err)
	case av == nil:
		return fmt.Errorf("%w: not an ApiVersions answer", ErrVoterUnreachable)
	}
	return fmt.Errorf("%w: it answered %v", ErrVoterUnreachable, wire.ErrorForCode(av.ErrorCode))
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

// reconcileOwnVoterEntry is what a node of a dynamic quorum asks of the
// leader on its own about its entry in the voter set, at most once per
// fetch timeout (Kafka's update-voter period,
// KafkaRaftClient.pollFollowerAsVoter and pollFollowerAsObserver): a voter
// whose entry differs from its own endpoints sends UpdateRaftVoter (a
// leader applies it to itself); with
// controller.quorum.auto.join.enable an observer adds itself with
// AddRaftVoter (AckWhenCommitted false), or first removes the entry of
// its node id with another directory id (a replaced disk).
func (e *engine) reconcileOwnVoterEntry() {
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
		if r, ok := req.(*kmsg.UpdateRaftVoterRequest); ok && e.updateVoter(r) == nil {
			e.updatedEpoch = epoch
		}
		return
	}
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

// clusterIDPtr is the ClusterID field of a request: null when unknown.
func clusterIDPtr(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}

// sendToLeader sends a voter RPC to the leader on the forwarding
// connection; done gets the answer's error ([voterAnswerError]; one
// matching [ErrLeaderUnknown] when the request failed) on the engine
// goroutine, or, if anyGoroutine, on the connection's when the engine's
// queue is full (else the answer is dropped). It reports whether the
// request was sent.
func (e *engine) sendToLeader(req kmsg.Request, anyGoroutine bool, done func(error)) bool {
	st := e.lastStatus
	if st.Leader.LeaderID == kraft.NoNode || st.Leader.LeaderID == st.ID {
		return false
	}
	l := e.link(st.Leader.LeaderID)
	if l == nil {
		return false
	}
	return l.forward.Send(req, func(resp kmsg.Response, err error) {
		if err != nil {
			err = fmt.Errorf("%w: the leader did not answer: %w", ErrLeaderUnknown, err)
		} else {
			err = voterAnswerError(resp)
		}
		select {
		case e.inbox <- event{call: func(*engine) { done(err) }}:
		default:
			if anyGoroutine {
				done(err)
			}
		}
	})
}

// voterConditions are the errors a leader answers a voter RPC with.
var voterConditions = []error{
	ErrNotLeader, ErrShuttingDown, ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch,
	ErrInconsistentClusterID, ErrInvalidVoter, ErrDuplicateVoter, ErrVoterNotFound,
	ErrStaticQuorum, ErrChangeUnavailable,
}

// voterAnswerError is the error of the leader's answer to a voter RPC:
// nil for NONE, one matching [ErrLeaderUnknown] when the node is not the
// leader or shuts down, else the condition of its error code (one of
// voterConditions, or a Kafka error this runtime does not answer with).
func voterAnswerError(resp kmsg.Response) error {
	var code int16
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		code = r.ErrorCode
	case *kmsg.RemoveRaftVoterResponse:
		code = r.ErrorCode
	case *kmsg.UpdateRaftVoterResponse:
		code = r.ErrorCode
	default:
		return fmt.Errorf("raft: unexpected answer %T to a voter request", resp)
	}
	err := wire.ConditionForCode(code, voterConditions...)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotLeader):
		return fmt.Errorf("%w: the node asked is not the leader", ErrLeaderUnknown)
	case errors.Is(err, ErrShuttingDown):
		return fmt.Errorf("%w: the leader is shutting down", ErrLeaderUnknown)
	}
	return fmt.Errorf("the leader answered: %w", err)
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
// the leader. It returns once the new set is committed. Errors match
// (errors.Is) [ErrDuplicateVoter], [ErrInvalidVoter], [ErrStaticQuorum]
// on a static quorum, [ErrInconsistentClusterID], [ErrChangeUnavailable]
// when the change cannot be made now (on the leader, the condition of its
// own: [ErrChangeInFlight], [ErrVotersUncommitted], [ErrNoCommitInEpoch],
// [ErrVoterUnreachable], [ErrVoterNotCaughtUp], [ErrChangeTimedOut]),
// [ErrLeaderUnknown] when no leader is known or the leader changed or
// shut down meanwhile, [ErrShuttingDown] when this node shuts down, or
// ctx's error. A leader that does not follow this runtime may answer a
// Kafka error of another kind (a *kerr.Error).
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
// then. Errors as for [Controller.AddVoter] ([ErrVoterNotFound] for a
// replica that is not a voter, or the last voter).
func (c *Controller) RemoveVoter(ctx context.Context, id NodeID, directoryID [16]byte) error {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.ClusterID = clusterIDPtr(c.eng.clusterID)
	req.VoterID, req.VoterDirectoryID = int32(id), directoryID
	return c.voterChange(ctx, req, fmt.Sprintf("remove voter %d", id))
}

// voterChange runs a voter RPC on this node when it leads, else on the
// leader, and waits for the answer.
func (c *Controller) voterChange(ctx context.Context, req kmsg.Request, what string) error {
	done := make(chan error, 1)
	answer := func(err error) {
		select {
		case done <- err:
		default:
		}
	}
	err := c.enqueue(ctx, event{call: func(e *engine) {
		if e.lastStatus.Role == kraft.Leader {
			e.changeVoters(req, answer)
			return
		}
		if !e.sendToLeader(req, true, answer) {
			answer(ErrLeaderUnknown)
		}
	}})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return voterChangeError(what, err)
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrShuttingDown
	}
}

// changeVoters runs an AddRaftVoter or RemoveRaftVoter request of this
// leader's own; done gets its outcome.
func (e *engine) changeVoters(req kmsg.Request, done func(error)) {
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		e.addVoter(r, done)
	case *kmsg.RemoveRaftVoterRequest:
		e.removeVoter(r, done)
	default:
		done(fmt.Errorf("raft: %s is not a voter change", kmsg.NameForKey(req.Key())))
	}
}

// voterChangeError is the error [Controller.AddVoter] and
// [Controller.RemoveVoter] return for what's outcome err: one that
// also matches [ErrLeaderUnknown] when this node lost the leadership
// or shuts down.
func voterChangeError(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrShuttingDown):
		return fmt.Errorf("raft: %s: %w: %w", what, ErrLeaderUnknown, err)
	}
	return fmt.Errorf("raft: %s: %w", what, err)
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
