package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/wire"
)

// The kraft.version 0→1 upgrade of a static quorum in the runtime
// (KIP-853; Kafka's KafkaRaftClient.upgradeKRaftVersion), asked for by
// UpdateFeatures (features.go).
//
// While kraft.version is 0 every voter following a leader sends it one
// UpdateRaftVoter per epoch with its directory id, controller endpoints
// and supported kraft.version range (reconcileOwnVoterEntry). The leader
// accepts it without writing anything: the core notes the directory id
// and range (kraft.Node.NoteVoterUpdate), the runtime keeps the entry
// with its endpoints in reports, for that epoch only. The upgrade asks
// the core for the voter set (kraft.Node.PlanKRaftUpgrade, which refuses
// while a voter has not reported), builds the VotersRecord from the
// reports and this leader's own entry, and appends it after a
// KRaftVersion record of level 1 in one control batch. It runs in the
// voter-change slot (voters.go) and is answered when the batch commits.
//
// From the append on the voter history holds a Voters record, which makes
// kraft.version 1 on every node that has it, whatever its configuration
// says: a node still started with controller.quorum.voters reads its
// voter set from the log (loadVoterHistory), answers ApiVersions with
// kraft.version 1, and accepts AddRaftVoter and RemoveRaftVoter.

// upgradeReports are the UpdateRaftVoter entries a leader of a static
// quorum accepted in its epoch.
type upgradeReports struct {
	epoch kraft.Epoch
	byID  map[kraft.NodeID]control.VotersRecordVoter
}

// note keeps v as voter v.VoterId's entry in epoch, forgetting the
// entries of earlier epochs.
func (r *upgradeReports) note(epoch kraft.Epoch, v control.VotersRecordVoter) {
	if r.byID == nil || r.epoch != epoch {
		r.epoch, r.byID = epoch, map[kraft.NodeID]control.VotersRecordVoter{}
	}
	r.byID[kraft.NodeID(v.VoterId)] = v
}

// get returns the entry voter key reported in epoch.
func (r *upgradeReports) get(epoch kraft.Epoch, key kraft.ReplicaKey) (control.VotersRecordVoter, bool) {
	v, ok := r.byID[key.ID]
	if !ok || r.epoch != epoch || v.VoterDirectoryId != [16]byte(key.DirectoryID) {
		return control.VotersRecordVoter{}, false
	}
	return v, true
}

// noteUpgradeReport is the leader's part of an UpdateRaftVoter at
// kraft.version 0, once its checks passed (Kafka's UpdateVoterHandler
// updates the leader's in-memory upgrade state only). The leader's own
// entry is taken from its configuration at the upgrade instead.
func (e *engine) noteUpgradeReport(r *kmsg.UpdateRaftVoterRequest) error {
	if kraft.NodeID(r.VoterID) == e.rc.id {
		return nil
	}
	f := r.KRaftVersionFeature
	key := kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: kraft.UUID(r.VoterDirectoryID)}
	if err := e.node.NoteVoterUpdate(e.now(), key, f.MinSupportedVersion, f.MaxSupportedVersion); err != nil {
		if errors.Is(err, kraft.ErrNotLeader) {
			return notLeaderHint(e.lastStatus.Leader)
		}
		return fmt.Errorf("%w: %w", ErrVoterNotFound, err)
	}
	v := control.VotersRecordVoter{
		VoterId: r.VoterID, VoterDirectoryId: r.VoterDirectoryID,
		KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion},
	}
	for _, l := range r.Listeners {
		v.Endpoints = append(v.Endpoints, control.VotersRecordEndpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	e.reports.note(e.lastStatus.Epoch, v)
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "a voter reported its endpoints for the kraft.version upgrade",
		slog.Int(logKeyPeer, int(r.VoterID)), slog.Int(logKeyEpoch, int(e.lastStatus.Epoch)))
	return nil
}

// upgradeKRaftVersion upgrades kraft.version to level on the leader and
// calls answer once: with nil when the upgrade's control batch commits
// (within timeout, the request's TimeoutMs; controller.quorum.request.timeout.ms
// when it is not positive),
// at once when the quorum is at level already or validateOnly is set
// and the upgrade would be made, and with an error otherwise: a
// [*FeatureUpdateError] for an upgrade refused (Kafka's
// InvalidUpdateVersionException), the leader conditions of leaderCheck,
// or a voter change's failure (lost leadership, the request timeout).
func (e *engine) upgradeKRaftVersion(level int16, validateOnly bool, timeout time.Duration, answer func(error)) {
	rec, err := e.planUpgrade(level)
	switch {
	case err != nil:
		answer(err)
		return
	case rec == nil || validateOnly:
		answer(nil)
		return
	}
	for _, moved := range movedVoters(e.rc.voters, rec, e.rc.listenerName) {
		// Not refused: the new address may reach the voter as well (a
		// host name for an IP address); an operator must know, as the
		// voters reach each other there from now on.
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "the kraft.version upgrade names a voter at another address than controller.quorum.voters; "+
			"from now on the voters reach it at the address it advertises (advertised.listeners)", moved...)
	}
	ch := e.newChange("upgrade", int32(e.rc.id), [16]byte(e.rc.core.DirectoryID), true, answer)
	e.beginChange(ch)
	if timeout > 0 {
		e.timers.set(timerVoterChange, e.clock.Now().Add(timeout))
	}
	e.logger.LogAttrs(context.Background(), slog.LevelInfo, "upgrading kraft.version",
		slog.Int(logKeyEpoch, int(e.lastStatus.Epoch)), slog.Int(logKeyKRaftVersion, int(level)))
	e.appendChangeAt(ch, rec, level)
}

// planUpgrade checks the upgrade to level and returns the VotersRecord it
// appends; nil without an error when kraft.version is level already.
func (e *engine) planUpgrade(level int16) (*control.VotersRecord, error) {
	if err := e.leaderCheck(e.lastStatus.Epoch); err != nil {
		return nil, err
	}
	if e.change != nil {
		// Kafka's compare-and-set of the upgrade state fails the same
		// way while the voters change under it.
		return nil, &FeatureUpdateError{Message: fmt.Sprintf("Unable to upgrade version for kraft.version to %d due to changing voters (a %s is in flight)", level, e.change.op)}
	}
	keys, err := e.node.PlanKRaftUpgrade(level)
	switch {
	case errors.Is(err, kraft.ErrNotLeader):
		return nil, notLeaderHint(e.lastStatus.Leader)
	case err != nil:
		return nil, &FeatureUpdateError{Message: err.Error()}
	case keys == nil:
		return nil, nil
	}
	rec := control.NewVotersRecord()
	for _, k := range keys {
		if k.ID == e.rc.id {
			rec.Voters = append(rec.Voters, e.localVoter())
			continue
		}
		v, ok := e.reports.get(e.lastStatus.Epoch, k)
		if !ok {
			// The core counts a voter's report only through this
			// runtime, which keeps its entry in the same step.
			panic(fmt.Sprintf("raft: invariant: the core admits the kraft.version upgrade, but voter %s's report is not kept", k))
		}
		rec.Voters = append(rec.Voters, v)
	}
	return rec, nil
}

// movedVoters lists, as log attributes, each voter of rec whose endpoint
// on listener differs from its address in controller.quorum.voters
// (static), in rec's order.
func movedVoters(static []QuorumVoter, rec *control.VotersRecord, listener string) [][]slog.Attr {
	var out [][]slog.Attr
	for _, v := range rec.Voters {
		i := slices.IndexFunc(static, func(s QuorumVoter) bool { return int32(s.ID) == v.VoterId })
		if i < 0 {
			continue
		}
		ep, ok := voterInfos(&control.VotersRecord{Voters: []control.VotersRecordVoter{v}})[0].endpoint(listener)
		advertised := QuorumVoter{Host: ep.Host, Port: ep.Port}.Address()
		if ok && advertised == static[i].Address() {
			continue
		}
		if !ok {
			advertised = "none on " + listener
		}
		out = append(out, []slog.Attr{slog.Int(logKeyPeer, int(v.VoterId)),
			slog.String(logKeyAddr, advertised), slog.String(logKeyStaticAddr, static[i].Address())})
	}
	return out
}

// UpgradeKRaftVersion upgrades a static quorum to kraft.version 1, as
// UpdateFeatures on kraft.version does (KafkaRaftClient.upgradeKRaftVersion):
// on the leader it runs there, on another node it is sent to the leader.
// The leader appends a KRaftVersion record and the VotersRecord of the
// static voters with the directory ids, endpoints and kraft.version
// ranges they reported (UpdateRaftVoter, once per epoch), and the call
// returns when that commits; a quorum at kraft.version 1 already returns
// at once. With validateOnly the leader only checks. Errors match
// [ErrInvalidFeatureUpdate] (a [*FeatureUpdateError]: a voter has not
// reported yet, or cannot run kraft.version 1), [ErrLeaderUnknown] when no
// leader is known or the leader changed meanwhile, [ErrChangeUnavailable]
// when the upgrade did not commit within the request timeout (it may
// still commit: call again), [ErrShuttingDown], or ctx's error.
// Cancelling ctx stops the wait only.
func (c *Controller) UpgradeKRaftVersion(ctx context.Context, validateOnly bool) error {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.ValidateOnly = 2, validateOnly
	req.TimeoutMillis = int32(c.rc.core.RequestTimeout / time.Millisecond)
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = wire.FeatureKRaftVersion, 1, upgradeTypeUpgrade
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	return c.voterChange(ctx, req, "upgrade kraft.version to 1")
}
