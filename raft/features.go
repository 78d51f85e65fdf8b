package raft

import (
	"context"
	"fmt"
	"maps"
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
// (upgrade.go) and is answered when it commits. Every other update is
// checked against the feature rows ApiVersions advertises
// (metadata.KnownFeatures, capped by unstable.feature.versions.enable)
// and then refused with INVALID_UPDATE_VERSION, saying why:
// metadata.version and the other features are set when the cluster is
// formatted.

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
	level, upgrade, err := checkFeatureUpdates(r, e.featureCheck())
	if err != nil || !upgrade {
		answer(err)
		return
	}
	e.upgradeKRaftVersion(level, r.Version >= 1 && r.ValidateOnly, time.Duration(r.TimeoutMillis)*time.Millisecond, answer)
}

// featureCheck is what UpdateFeatures is checked against: this
// controller's id and feature rows, unstable.feature.versions.enable,
// the finalized kraft.version and the finalized levels of the image
// (metadata.version among them; a feature absent is at 0).
type featureCheck struct {
	id           kraft.NodeID
	features     metadata.FeatureRegistry
	unstable     bool
	kraftVersion int16
	finalized    map[string]int16
}

// featureCheck returns what UpdateFeatures is checked against now.
func (e *engine) featureCheck() featureCheck {
	img := e.pub.image.Load()
	finalized := map[string]int16{metadata.FeatureMetadataVersion: img.Features().MetadataVersion()}
	for name, level := range img.Features().Levels() {
		finalized[name] = level
	}
	return featureCheck{id: e.rc.id, features: e.rc.features, unstable: e.rc.unstableFeatures,
		kraftVersion: e.kraftVersion(), finalized: finalized}
}

// supportedRange is the range of levels of feature name this
// controller supports, 0-0 for a feature it does not know (Kafka's
// QuorumFeatures.DISABLED).
func (fc featureCheck) supportedRange(name string) (lo, hi int16) {
	if name == metadata.FeatureMetadataVersion {
		return fc.features.MetadataVersions(fc.unstable)
	}
	if f, ok := fc.features.Lookup(name); ok {
		return f.MinLevel(), f.MaxLevel(fc.unstable)
	}
	return 0, 0
}

// checkFeatureUpdates checks the updates of r against fc, in request
// order, as FeatureControlManager.updateFeature does: the upgrade type,
// a level of at least 0 within this controller's supported range
// (QuorumFeatures.reasonNotLocallySupported, which unstable feature
// versions widen), the direction of the change, and the levels the new
// level depends on, given every level the request asks for
// (Feature.validateVersion). It returns the kraft.version level to
// upgrade to when the request asks for an upgrade of it (upgrade true),
// and a [*FeatureUpdateError] for the first update it refuses. A change
// of any other feature passes these checks only to be refused: Krabka
// controllers do not write FeatureLevelRecords.
func checkFeatureUpdates(r *kmsg.UpdateFeaturesRequest, fc featureCheck) (level int16, upgrade bool, err error) {
	seen := map[string]bool{}
	proposed := maps.Clone(fc.finalized)
	for _, u := range r.FeatureUpdates {
		proposed[u.Feature] = u.MaxVersionLevel
	}
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
		l := u.MaxVersionLevel
		switch lo, hi := fc.supportedRange(u.Feature); {
		case hi == 0 && l != 0:
			return 0, false, refuse(fmt.Sprintf("Local controller %d does not support this feature.", fc.id))
		case l < lo || l > hi:
			return 0, false, refuse(fmt.Sprintf("Local controller %d only supports versions %d-%d", fc.id, lo, hi))
		}
		current := fc.finalized[u.Feature]
		if u.Feature == metadata.FeatureKRaftVersion {
			current = fc.kraftVersion
		}
		switch {
		case l < current && typ == upgradeTypeUpgrade:
			return 0, false, refuse("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
		case l > current && typ != upgradeTypeUpgrade:
			return 0, false, refuse("Can't downgrade to a newer version.")
		}
		switch u.Feature {
		case metadata.FeatureMetadataVersion:
			return 0, false, refuse("Krabka controllers change kraft.version only; metadata.version is set when the cluster is formatted (krabka storage format --release-version).")
		case metadata.FeatureKRaftVersion:
		default:
			if err := fc.features.CheckLevel(u.Feature, l, proposed, true); err != nil {
				return 0, false, refuse(err.Error())
			}
			return 0, false, refuse("Krabka controllers change kraft.version only; this feature's level is set when the cluster is formatted (krabka storage format --feature).")
		}
		switch {
		case typ == upgradeTypeUpgrade:
			level, upgrade = l, true
		case l != current:
			return 0, false, refuse("Can't downgrade the version of this feature.")
		}
	}
	return level, upgrade, nil
}
