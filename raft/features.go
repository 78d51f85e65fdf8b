package raft

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// UpdateFeatures (API 57, KIP-584) on the controller listener, authorized
// as ALTER on CLUSTER (ControllerApis.handleUpdateFeatures). The active
// controller checks every update as Kafka's FeatureControlManager does,
// in request order, and the first refusal refuses the request as a whole
// (QuorumController.updateFeatures is atomic). kraft.version is the one
// feature a Krabka controller changes: an upgrade runs the raft upgrade
// (upgrade.go) and is answered when it commits. Every other feature is
// refused with INVALID_UPDATE_VERSION and says why: metadata.version is
// set when the cluster is formatted, and the controllers support no other
// feature (ApiVersions lists none).

// Kafka's FeatureUpdate.UpgradeType codes (UpdateFeatures v1+; v0 has
// AllowDowngrade instead).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

// serveUpdateFeatures answers UpdateFeatures through the engine
// goroutine.
func (h *handler) serveUpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest, reply *transport.Reply) {
	ev := event{call: func(e *engine) {
		e.updateFeatures(req, func(err error) { reply.Send(wire.AnswerUpdateFeatures(req, err)) })
	}}
	if h.c.enqueue(ctx, ev) != nil {
		reply.Close()
	}
}

// updateFeatures runs UpdateFeatures on the engine goroutine and calls
// answer once with its outcome (see [wire.AnswerUpdateFeatures]).
func (e *engine) updateFeatures(r *kmsg.UpdateFeaturesRequest, answer func(error)) {
	if err := e.leaderCheck(e.lastStatus.Epoch); err != nil {
		answer(err)
		return
	}
	level, upgrade, err := checkFeatureUpdates(r, e.kraftVersion(), e.rc.id)
	if err != nil || !upgrade {
		answer(err)
		return
	}
	e.upgradeKRaftVersion(level, r.Version >= 1 && r.ValidateOnly, time.Duration(r.TimeoutMillis)*time.Millisecond, answer)
}

// checkFeatureUpdates checks the updates of r against this controller
// (node id, finalized kraft.version kraftVersion), in request order, as
// FeatureControlManager.updateFeature does. It returns the kraft.version
// level to upgrade to when the request asks for an upgrade of it
// (upgrade true), and a [*FeatureUpdateError] for the first update it
// refuses.
func checkFeatureUpdates(r *kmsg.UpdateFeaturesRequest, kraftVersion int16, id kraft.NodeID) (level int16, upgrade bool, err error) {
	seen := map[string]bool{}
	for _, u := range r.FeatureUpdates {
		refuse := func(reason string) error {
			return &FeatureUpdateError{Message: fmt.Sprintf("Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, reason)}
		}
		if seen[u.Feature] {
			return 0, false, refuse("The request updates this feature more than once.")
		}
		seen[u.Feature] = true
		typ := u.UpgradeType
		if r.Version < 1 {
			typ = upgradeTypeUpgrade
			if u.AllowDowngrade {
				typ = upgradeTypeSafeDowngrade
			}
		}
		switch {
		case typ != upgradeTypeUpgrade && typ != upgradeTypeSafeDowngrade && typ != upgradeTypeUnsafeDowngrade:
			return 0, false, refuse("The controller does not support the given upgrade type.")
		case u.MaxVersionLevel < 0:
			return 0, false, refuse("A feature version cannot be less than 0.")
		}
		switch u.Feature {
		case wire.FeatureKRaftVersion:
		case metadata.FeatureMetadataVersion:
			if u.MaxVersionLevel < metadata.MinMetadataVersion || u.MaxVersionLevel > metadata.MaxMetadataVersion {
				return 0, false, refuse(fmt.Sprintf("Local controller %d only supports versions %d-%d", id, metadata.MinMetadataVersion, metadata.MaxMetadataVersion))
			}
			return 0, false, refuse("Krabka controllers change kraft.version only; metadata.version is set when the cluster is formatted (krabka storage format --release-version).")
		default:
			return 0, false, refuse(fmt.Sprintf("Local controller %d does not support this feature.", id))
		}
		switch l := u.MaxVersionLevel; {
		case l > kraft.MaxKRaftVersion:
			return 0, false, refuse(fmt.Sprintf("Local controller %d only supports versions %d-%d", id, wire.MinKRaftVersion, wire.MaxKRaftVersion))
		case l < kraftVersion && typ == upgradeTypeUpgrade:
			return 0, false, refuse("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
		case l > kraftVersion && typ != upgradeTypeUpgrade:
			return 0, false, refuse("Can't downgrade to a newer version.")
		case typ == upgradeTypeUpgrade:
			level, upgrade = l, true
		case l != kraftVersion:
			return 0, false, refuse("Can't downgrade the version of this feature.")
		}
	}
	return level, upgrade, nil
}
