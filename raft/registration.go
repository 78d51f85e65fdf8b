package raft

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/metadata"
)

// Controller registration (KIP-919): every controller registers its
// listeners, its incarnation id and the feature ranges it supports in the
// metadata log (RegisterControllerRecord), as Kafka's
// ControllerRegistrationManager does, and the leader appends the record a
// ControllerRegistration request asks for, as Kafka's
// QuorumController.registerController does.

// Kafka's resend backoff of a failed registration
// (ControllerRegistrationManager: ExponentialBackoff(100, 2, 120000)):
// 100 ms, doubled after each failure, at most two minutes.
const (
	registrationBackoffInitial = 100 * time.Millisecond
	registrationBackoffMax     = 2 * time.Minute
)

// errRegistrationMetadataVersion is Kafka's refusal of a registration
// while metadata.version is older than 3.7-IV0.
const errRegistrationMetadataVersion = "The current MetadataVersion is too old to support controller registrations."

// registration is this node's side of controller registration, owned by
// the engine goroutine.
type registration struct {
	// off is Config.DisableControllerRegistration, or a node started with
	// StartObserver (a broker's process, which registers as a broker).
	off bool
	// incarnation identifies this run of the node: new at every start,
	// so that a restarted node registers again.
	incarnation [16]byte
	// caughtUp is set once the node has applied the log up to the high
	// watermark it learned from the leader, the point from which Kafka's
	// metadata loader publishes.
	caughtUp bool
	// attempt numbers the requests sent; inFlight is the one awaiting an
	// answer (0: none) until inFlightUntil, after which it counts as
	// failed.
	attempt, inFlight uint64
	inFlightUntil     time.Time
	// acked is set when the leader answered NONE: the record is
	// committed, and the node waits to see it in its image rather than
	// sending again.
	acked bool
	// failures counts the failed attempts since the last success; due is
	// when the next attempt may be sent.
	failures int
	due      time.Time
	// last is this node's registration in the last image looked at.
	last *metadata.Controller
}

// newIncarnation returns a random incarnation id, or one drawn from seed
// when it is not 0 (a simulated node, whose runs must repeat).
func newIncarnation(seed uint64) [16]byte {
	var id [16]byte
	if seed != 0 {
		for i := range id {
			seed = seed*6364136223846793005 + 1442695040888963407
			id[i] = byte(seed >> 56)
		}
	} else {
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	}
	id[6] = id[6]&0x0f | 0x40 // a version 4 UUID, as Kafka's Uuid.randomUuid
	id[8] = id[8]&0x3f | 0x80
	return id
}

// maybeRegister sends this node's registration when it is due: the node
// is a controller, has caught up with the leader's log, the finalized
// metadata.version supports registration (3.7-IV0 or later), its image
// holds no registration of this incarnation, and no request is in flight
// or was acknowledged. It runs every turn and allocates nothing until it
// sends.
func (e *engine) maybeRegister() {
	r := &e.reg
	if r.off {
		return
	}
	img := e.pub.image.Load()
	cur, _ := img.Cluster().Controller(int32(e.rc.id))
	if cur != r.last {
		r.last = cur
		if cur == nil || cur.IncarnationID != r.incarnation {
			// Another incarnation's registration replaced ours, or the
			// image does not hold it yet: only an answer counts.
			r.acked = false
		}
	}
	if cur != nil && cur.IncarnationID == r.incarnation {
		e.timers.stop(timerRegistration)
		return
	}
	now := e.clock.Now()
	if r.inFlight != 0 {
		if now.Before(r.inFlightUntil) {
			e.timers.set(timerRegistration, r.inFlightUntil)
			return
		}
		// The answer was lost (a dropped callback, a dead connection).
		e.registrationFailed(r.inFlight, errors.New("no answer within the request timeout"))
	}
	st := e.lastStatus
	if r.acked || e.resigning || st.ShuttingDown || st.Leader.LeaderID == kraft.NoNode {
		e.timers.stop(timerRegistration)
		return
	}
	if !r.caughtUp {
		if e.applier.hw <= 0 || e.applier.applied < e.applier.hw {
			return
		}
		r.caughtUp = true
	}
	if img.Features().MetadataVersion() < metadata.MetadataVersion3_7_IV0 {
		return
	}
	if now.Before(r.due) {
		e.timers.set(timerRegistration, r.due)
		return
	}
	r.attempt++
	attempt := r.attempt
	r.inFlight, r.inFlightUntil = attempt, now.Add(2*e.rc.core.RequestTimeout)
	e.timers.set(timerRegistration, r.inFlightUntil)
	req := e.registrationRequest()
	if st.Role == kraft.Leader {
		e.registerController(req, func(code int16, msg string) { e.registrationAnswered(attempt, code, msg) })
		return
	}
	sent := e.sendToLeader(req, false, func(err error) {
		if err != nil {
			e.registrationFailed(attempt, err)
			return
		}
		e.registrationAnswered(attempt, 0, "")
	})
	if !sent {
		e.registrationFailed(attempt, ErrLeaderUnknown)
	}
}

// registrationAnswered records the leader's answer to attempt.
func (e *engine) registrationAnswered(attempt uint64, code int16, msg string) {
	if code != 0 {
		e.registrationFailed(attempt, fmt.Errorf("%w: %s", kerr.ErrorForCode(code), msg))
		return
	}
	r := &e.reg
	if r.inFlight != attempt {
		return
	}
	r.inFlight, r.acked, r.failures = 0, true, 0
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "the leader acknowledged this controller's registration")
}

// registrationFailed schedules the next attempt after a failure of
// attempt, with Kafka's exponential backoff.
func (e *engine) registrationFailed(attempt uint64, err error) {
	r := &e.reg
	if r.inFlight != attempt {
		return
	}
	delay := registrationBackoffMax
	if r.failures < 20 {
		delay = min(registrationBackoffInitial<<r.failures, registrationBackoffMax)
	}
	r.inFlight = 0
	r.failures++
	r.due = e.clock.Now().Add(delay)
	e.timers.set(timerRegistration, r.due)
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "controller registration failed; trying again",
		slog.Duration("backoff", delay), slog.String(logKeyError, err.Error()))
}

// registrationRequest is this node's ControllerRegistration: its id and
// incarnation, its advertised controller listeners (a wildcard or empty
// host named by this machine's host name, as Kafka resolves wildcard
// hosts) with their security protocols, and every feature range it
// supports (Kafka's QuorumFeatures.defaultSupportedFeatureMap).
func (e *engine) registrationRequest() *kmsg.ControllerRegistrationRequest {
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID, req.IncarnationID = int32(e.rc.id), e.reg.incarnation
	for i, ep := range e.rc.advertised {
		l := kmsg.NewControllerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = ep.Name, registeredHost(ep.Host), ep.Port, int16(e.rc.advertisedProtocols[i])
		req.Listeners = append(req.Listeners, l)
	}
	for _, f := range e.rc.features.Supported(e.rc.unstableFeatures) {
		rf := kmsg.NewControllerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		req.Features = append(req.Features, rf)
	}
	return req
}

// registeredHost is the host a listener bound to host registers: host
// itself, or for a wildcard (empty, 0.0.0.0, ::) this machine's host name
// (Kafka's ListenerInfo.withWildcardHostnamesResolved).
func registeredHost(host string) string {
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return host
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		return name
	}
	return "localhost"
}

// registerController carries out a ControllerRegistration on this node,
// as Kafka's QuorumController.registerController does: only the leader
// registers (NOT_CONTROLLER elsewhere), only at metadata.version 3.7-IV0
// or later (UNSUPPORTED_VERSION), and it appends one
// RegisterControllerRecord of the request's controller id, incarnation
// id, listeners and features (ZkMigrationReady false: Kafka 4 has no
// ZooKeeper migration), answered NONE once committed. The record must
// also pass the image's replay checks (a non-zero incarnation id, unique
// listener and feature names, every finalized level supported): a
// refusal there is INVALID_REGISTRATION with the image's reason. It runs
// on the engine goroutine; answer gets the code and message.
func (e *engine) registerController(req *kmsg.ControllerRegistrationRequest, answer func(code int16, msg string)) {
	st := e.lastStatus
	if st.Role != kraft.Leader || e.resigning || st.ShuttingDown {
		answer(kerr.NotController.Code, kerr.NotController.Description)
		return
	}
	if e.pub.image.Load().Features().MetadataVersion() < metadata.MetadataVersion3_7_IV0 {
		answer(kerr.UnsupportedVersion.Code, errRegistrationMetadataVersion)
		return
	}
	rec := metadata.NewRegisterControllerRecord()
	rec.ControllerId, rec.IncarnationId = req.ControllerID, req.IncarnationID
	for _, l := range req.Listeners {
		rec.EndPoints = append(rec.EndPoints, metadata.RegisterControllerRecordControllerEndpoint{
			Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	for _, f := range req.Features {
		rec.Features = append(rec.Features, metadata.RegisterControllerRecordControllerFeature{
			Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
	}
	enc, err := metadata.Encode(rec)
	if err != nil {
		answer(kerr.InvalidRegistration.Code, err.Error())
		return
	}
	// Forwarded: a leader that loses its leadership before proposing it
	// answers NOT_CONTROLLER rather than sending it on.
	e.sub.queue(&submission{
		records: []metadata.Record{rec}, encoded: [][]byte{enc}, forwarded: true, queued: e.clock.Now(),
		complete: func(_ SubmitResult, err error) { answer(registrationCode(err)) },
	})
}

// registrationCode is the answer to a registration whose submission ended
// with err.
func registrationCode(err error) (int16, string) {
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrLeaderUnknown), errors.Is(err, ErrShuttingDown):
		return kerr.NotController.Code, kerr.NotController.Description
	case errors.Is(err, metadata.ErrUnsupportedFeature):
		return kerr.UnsupportedVersion.Code, err.Error()
	case errors.Is(err, ErrInvalidChange):
		return kerr.InvalidRegistration.Code, err.Error()
	}
	return kerr.UnknownServerError.Code, err.Error()
}
