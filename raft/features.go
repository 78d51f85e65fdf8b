package raft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// UpdateFeatures (API 57, KIP-584) on the controller listener, authorized
// as ALTER on CLUSTER (ControllerApis.handleUpdateFeatures). The active
// controller checks every update as Kafka's FeatureControlManager does,
// in the order Kafka's controller checks them (the last row of a feature
// named twice), against the feature rows ApiVersions advertises
// (metadata.KnownFeatures, capped by unstable.feature.versions.enable),
// and the first refusal refuses the request as a whole
// (QuorumController.updateFeatures is atomic). A kraft.version upgrade
// runs the raft upgrade (upgrade.go); the other features are changed by
// FeatureLevelRecords committed as one batch; the answer comes when all
// of it has committed; a level of 0 disables a feature (its record
// removes it from the image). Downgrades follow FeatureControlManager: a
// safe or unsafe downgrade type is needed, kraft.version is never
// downgraded, and a metadata.version downgrade across a level that
// changed the metadata is refused; metadata.version's other changes,
// upgrades and the downgrades that lose nothing, are FeatureLevelRecords
// like any feature's.

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
	plan, err := checkFeatureUpdates(r, e.featureCheck())
	if err != nil {
		answer(err)
		return
	}
	validateOnly := r.Version >= 1 && r.ValidateOnly
	kraftStep := func(err error) {
		if err != nil || !plan.upgrade {
			answer(err)
			return
		}
		e.upgradeKRaftVersion(plan.kraftLevel, validateOnly, time.Duration(r.TimeoutMillis)*time.Millisecond, answer)
	}
	if len(plan.records) == 0 || validateOnly {
		kraftStep(nil)
		return
	}
	// The FeatureLevelRecords commit as one batch, validated against the
	// image like any submission (every registered node must support the
	// level); a kraft.version upgrade in the same request runs once they
	// have committed.
	s := &submission{forwarded: true, queued: e.clock.Now()}
	for _, rec := range plan.records {
		b, err := metadata.Encode(rec)
		if err != nil {
			panic(fmt.Sprintf("raft: invariant: encode %s: %v", rec.APIKey(), err))
		}
		s.records, s.encoded = append(s.records, rec), append(s.encoded, b)
	}
	s.complete = func(_ SubmitResult, err error) {
		if err != nil {
			var re *metadata.ReplayError
			if errors.As(err, &re) {
				err = &FeatureUpdateError{Message: re.Error()}
			}
		}
		kraftStep(err)
	}
	e.sub.queue(s)
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
	// img holds the registered brokers and controllers, whose ranges a
	// level must be in; nil checks none.
	img *metadata.Image
}

// featureCheck returns what UpdateFeatures is checked against now.
func (e *engine) featureCheck() featureCheck {
	img := e.pub.image.Load()
	finalized := map[string]int16{metadata.FeatureMetadataVersion: img.Features().MetadataVersion()}
	for name, level := range img.Features().Levels() {
		finalized[name] = level
	}
	return featureCheck{id: e.rc.id, features: e.rc.features, unstable: e.rc.unstableFeatures,
		kraftVersion: e.kraftVersion(), finalized: finalized, img: img}
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

// featurePlan is what an accepted UpdateFeatures request does: the
// FeatureLevelRecords to commit, and the kraft.version upgrade to run
// (when upgrade is set).
type featurePlan struct {
	records    []*metadata.FeatureLevelRecord
	kraftLevel int16
	upgrade    bool
}

// checkFeatureUpdates checks the updates of r against fc, the last row
// of a feature named twice, in the order of Kafka's HashMap of them
// ([javaHashMapOrder]), as FeatureControlManager.updateFeature does: the upgrade type,
// a level of at least 0 within this controller's supported range
// (QuorumFeatures.reasonNotLocallySupported, which unstable feature
// versions widen) and every registered node's, the direction of the
// change, and the levels the new level depends on, given every level
// the request asks for (Feature.validateVersion). It returns the plan,
// or a [*FeatureUpdateError] for the first update it refuses.
// metadata.version is checked as updateMetadataVersion does instead
// ([checkMetadataVersionUpdate]): an upgrade, and a downgrade past no
// level that changed the metadata, write its FeatureLevelRecord.
func checkFeatureUpdates(r *kmsg.UpdateFeaturesRequest, fc featureCheck) (plan featurePlan, err error) {
	// Kafka's QuorumController.updateFeatures puts the updates in a
	// HashMap by feature name: the last row for a name wins, and the
	// updates are checked in the map's order.
	last := map[string]kmsg.UpdateFeaturesRequestFeatureUpdate{}
	var names []string
	proposed := maps.Clone(fc.finalized)
	for _, u := range r.FeatureUpdates {
		names = append(names, u.Feature)
		last[u.Feature] = u
		proposed[u.Feature] = u.MaxVersionLevel
	}
	for _, name := range javaHashMapOrder(names) {
		u := last[name]
		refuse := func(reason string) error {
			return &FeatureUpdateError{Message: fmt.Sprintf("Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, reason)}
		}
		typ := u.UpgradeType
		if r.Version < 1 {
			typ = upgradeTypeUpgrade
			if u.AllowDowngrade {
				typ = upgradeTypeSafeDowngrade
			}
		}
		switch {
		case typ != upgradeTypeUpgrade && typ != upgradeTypeSafeDowngrade && typ != upgradeTypeUnsafeDowngrade:
			return featurePlan{}, refuse("The controller does not support the given upgrade type.")
		case u.MaxVersionLevel < 0:
			return featurePlan{}, refuse("A feature version cannot be less than 0.")
		}
		l := u.MaxVersionLevel
		lo, hi := fc.supportedRange(u.Feature)
		if reason := notSupported(l, fmt.Sprintf("Local controller %d", fc.id), lo, hi); reason != "" {
			return featurePlan{}, refuse(reason)
		}
		if reason := fc.notSupportedByRegistered(u.Feature, l); reason != "" {
			return featurePlan{}, refuse(reason)
		}
		current := fc.finalized[u.Feature]
		if u.Feature == metadata.FeatureKRaftVersion {
			current = fc.kraftVersion
		}
		switch {
		case l < current && typ == upgradeTypeUpgrade:
			return featurePlan{}, refuse("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
		case l > current && typ != upgradeTypeUpgrade:
			return featurePlan{}, refuse("Can't downgrade to a newer version.")
		}
		switch u.Feature {
		case metadata.FeatureKRaftVersion:
			switch {
			case typ == upgradeTypeUpgrade:
				plan.kraftLevel, plan.upgrade = l, true
			case l != current:
				return featurePlan{}, refuse("Can't downgrade the version of this feature.")
			}
			continue
		case metadata.FeatureMetadataVersion:
			// As Kafka's updateMetadataVersion, which writes the level
			// in force again too and checks no other feature's
			// dependencies against the new level.
			if err := checkMetadataVersionUpdate(current, l, typ == upgradeTypeUnsafeDowngrade); err != nil {
				return featurePlan{}, err
			}
		default:
			if _, ok := fc.features.Lookup(u.Feature); !ok {
				// Only level 0 of a feature no node knows passes the
				// range checks (Kafka's Feature.featureFromName).
				return featurePlan{}, refuse(fmt.Sprintf("Feature %s not found.", u.Feature))
			}
			// The range was checked above, unstable levels included.
			if err := fc.features.CheckLevel(u.Feature, l, proposed, true); err != nil {
				return featurePlan{}, refuse(err.Error())
			}
		}
		rec := metadata.NewFeatureLevelRecord()
		rec.Name, rec.FeatureLevel = u.Feature, l
		plan.records = append(plan.records, rec)
	}
	return plan, nil
}

// checkMetadataVersionUpdate refuses a downgrade of metadata.version
// from current to level that might lose metadata, as Kafka's
// FeatureControlManager.updateMetadataVersion does: a level above level,
// up to current, changed the metadata (Kafka's
// MetadataVersion.checkIfMetadataChanged), and an unsafe downgrade of
// that kind is not supported either. A downgrade past no such level, safe
// or unsafe, an upgrade and the level in force pass; both levels lie in
// the supported range, checked before.
func checkMetadataVersionUpdate(current, level int16, unsafe bool) error {
	if level >= current || !metadata.MetadataChangedBetween(current, level) {
		return nil
	}
	reason := "Refusing to perform the requested downgrade because it might delete metadata information."
	if unsafe {
		reason = "Unsafe metadata downgrade is not supported in this version."
	}
	return &FeatureUpdateError{Message: fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. %s", current, level, reason)}
}

// notSupported is Kafka's QuorumFeatures.reasonNotSupported: why who,
// supporting levels lo-hi, cannot take level, or "".
func notSupported(level int16, who string, lo, hi int16) string {
	switch {
	case level >= lo && level <= hi:
		return ""
	case hi == 0:
		return who + " does not support this feature."
	case lo == hi:
		return fmt.Sprintf("%s only supports versions %d", who, lo)
	}
	return fmt.Sprintf("%s only supports versions %d-%d", who, lo, hi)
}

// notSupportedByRegistered is why a registered node cannot take level of
// feature name, or "", as Kafka's FeatureControlManager.reasonNotSupported
// asks after this controller: every registered broker, then every other
// registered controller (Kafka asks them from metadata.version 3.7-IV0,
// the first that registers controllers, as the image does). kraft.version
// is left to the raft upgrade, which checks the voters. Kafka also refuses
// while a quorum voter has not registered; Krabka's controllers do not
// register, so that rule is not applied.
func (fc featureCheck) notSupportedByRegistered(name string, level int16) string {
	if name == metadata.FeatureKRaftVersion || fc.img == nil {
		return ""
	}
	for b := range fc.img.Cluster().Brokers() {
		lo, hi := registeredRange(b.Features, name)
		if reason := notSupported(level, fmt.Sprintf("Broker %d", b.ID), lo, hi); reason != "" {
			return reason
		}
	}
	for c := range fc.img.Cluster().Controllers() {
		if kraft.NodeID(c.ID) == fc.id {
			continue
		}
		lo, hi := registeredRange(c.Features, name)
		if reason := notSupported(level, fmt.Sprintf("Controller %d", c.ID), lo, hi); reason != "" {
			return reason
		}
	}
	return ""
}

// registeredRange is the range of feature name a registration lists,
// 0-0 when it lists none (Kafka's QuorumFeatures.DISABLED default).
func registeredRange(features []metadata.SupportedFeature, name string) (lo, hi int16) {
	for _, f := range features {
		if f.Name == name {
			return f.Min, f.Max
		}
	}
	return 0, 0
}

// javaHashMapOrder returns names, each once, in the order a Java
// HashMap<String, …> into which they are put in turn iterates its keys
// (default capacity 16, doubled past a load of 0.75; String.hashCode
// over UTF-16, spread as HashMap.hash does; a key put again keeps its
// place). Kafka's controller checks UpdateFeatures in this order, which
// decides whose refusal answers a request with several. It is exact
// while no bucket holds 8 names, which would make Java resize early.
func javaHashMapOrder(names []string) []string {
	var keys []string
	for _, n := range names {
		if !slices.Contains(keys, n) {
			keys = append(keys, n)
		}
	}
	capacity := 16
	for len(keys) > capacity*3/4 {
		capacity *= 2
	}
	bucket := func(s string) int {
		var h int32
		for _, c := range utf16.Encode([]rune(s)) {
			h = 31*h + int32(c)
		}
		u := uint32(h)
		return int((u ^ u>>16) & uint32(capacity-1))
	}
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(bucket(a), bucket(b)) })
	return keys
}
