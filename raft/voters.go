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
	op    string // "add", "remove" or "upgrade" (kraft.version), for logs
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
	// held is the voter set of a leader removing itself, not yet appended:
	// it waits until everything the leader holds has committed, while the
	// leader proposes nothing else (appendOwnRemoval).
	held *control.VotersRecord
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
	case e.kraftVersion() < 1:
		return ErrStaticQuorum
	}
	if h, ok := e.voters.latest(); !ok || h.bootstrap || e.node.PendingVoterChange() {
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
	h, _ := e.voters.latest()
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
	if i < 0 || av.SupportedFeatures[i].MinVersion > e.kraftVersion() || av.SupportedFeatures[i].MaxVersion < e.kraftVersion() {
		e.finishChange(fmt.Errorf("%w: it does not support kraft.version %d", ErrInvalidVoter, e.kraftVersion()))
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
	h, _ := e.voters.latest()
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
	if ch.key == (kraft.ReplicaKey{ID: e.rc.core.ID, DirectoryID: e.rc.core.DirectoryID}) {
		ch.held = rec
		e.appendOwnRemoval(ch)
		return
	}
	e.appendChange(ch, rec)
}

// appendOwnRemoval appends the held voter set of a leader that removes
// itself once everything it holds has committed. Until then the leader
// proposes nothing else (flushSubmissions), so the wait is one round of
// fetches. Appended any earlier, the record could sit above entries only
// this leader holds: should it lose power before a voter fetches them, it
// restarts outside its own voter set and never campaigns, while the
// other voters need its vote and their logs are too short for it. With
// its whole log below the record committed, a voter of the previous set
// holds that log, and the restarted node votes for it (kraft's voteBar).
func (e *engine) appendOwnRemoval(ch *voterChange) {
	st := e.lastStatus
	if st.Role != kraft.Leader || st.Epoch != ch.epoch || st.HighWatermark < st.LogEndOffset {
		return // resolveVoterChange fails it or calls again
	}
	rec := ch.held
	ch.held = nil
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
	h, _ := e.voters.latest()
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
	e.appendChangeAt(ch, rec, 0)
}

// appendChangeAt is appendChange with a KRaftVersion record of level
// kraftVersion before the VotersRecord when it is above 0 (the
// kraft.version upgrade, upgrade.go).
func (e *engine) appendChangeAt(ch *voterChange, rec *control.VotersRecord, kraftVersion int16) {
	off, err := e.proposeVoters(rec, kraftVersion)
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
	if ch.held != nil {
		e.appendOwnRemoval(ch)
	}
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
	if err := e.updateCheck(r); err != nil {
		return err
	}
	if e.kraftVersion() < 1 {
		return e.noteUpgradeReport(r)
	}
	h, _ := e.voters.latest()
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
	kv := e.kraftVersion()
	switch {
	case f.MinSupportedVersion < 0 || f.MaxSupportedVersion < 0 || f.MaxSupportedVersion < f.MinSupportedVersion:
		return fmt.Errorf("%w: invalid kraft.version range [%d, %d]", ErrInvalidVoter, f.MinSupportedVersion, f.MaxSupportedVersion)
	case e.change != nil:
		return ErrChangeInFlight
	case e.applier.hw < 0:
		return ErrNoCommitInEpoch
	}
	if kv < 1 {
		switch {
		case f.MinSupportedVersion > kv || f.MaxSupportedVersion < kv:
			return leavesOut(f, kv)
		case !e.lastStatus.Voters.Contains(kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID)}):
			return fmt.Errorf("%w: node %d", ErrVoterNotFound, r.VoterID)
		}
		return nil
	}
	h, ok := e.voters.latest()
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

// clusterIDPtr is the ClusterID field of a request: null when unknown.
func clusterIDPtr(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}
