package metadata

import (
	"fmt"
	"slices"
	"strings"
)

// Feature names of Kafka 4.3.1 besides metadata.version and
// kraft.version (server-common's Feature enum).
const (
	FeatureTransactionVersion = "transaction.version"
	FeatureGroupVersion       = "group.version"
	FeatureShareVersion       = "share.version"
	FeatureStreamsVersion     = "streams.version"
)

// LatestProductionMetadataVersion is Kafka 4.3.1's
// MetadataVersion.LATEST_PRODUCTION, 4.3-IV0: the newest metadata.version
// a node supports without unstable.feature.versions.enable.
const LatestProductionMetadataVersion = MetadataVersion4_3_IV0

// FeatureRequirement is a level another feature must be finalized at
// for a feature level to be set (one of Kafka's FeatureVersion
// dependencies).
type FeatureRequirement struct {
	// Feature names the feature, metadata.version included.
	Feature string
	// Level is the lowest level it must be at.
	Level int16
}

// FeatureLevel is one level of a feature (a constant of one of Kafka's
// *Version enums, such as TransactionVersion.TV_2).
type FeatureLevel struct {
	// Level is the feature level.
	Level int16
	// BootstrapMetadataVersion is the lowest metadata.version at which a
	// newly formatted cluster gets this level by default (Kafka's
	// bootstrapMetadataVersion).
	BootstrapMetadataVersion int16
	// Requires are the levels of other features this level depends on.
	Requires []FeatureRequirement
}

// FeatureSpec is what a node knows of one feature other than
// metadata.version: its levels and the newest production one (a
// constant of Kafka's Feature enum).
type FeatureSpec struct {
	// Name is the feature name.
	Name string
	// Levels are the known levels in ascending order, from the minimum
	// production level (0 for every feature of Kafka 4.3.1).
	Levels []FeatureLevel
	// LatestProduction is the newest level served without
	// unstable.feature.versions.enable; the levels above it are unstable.
	LatestProduction int16
}

// MinLevel is the lowest level of f (Kafka's Feature.minimumProduction).
func (f FeatureSpec) MinLevel() int16 { return f.Levels[0].Level }

// MaxLevel is the highest level of f a node supports: the newest known
// level (Kafka's latestTesting) when unstable feature versions are
// enabled, else LatestProduction.
func (f FeatureSpec) MaxLevel(unstable bool) int16 {
	if unstable {
		return f.Levels[len(f.Levels)-1].Level
	}
	return f.LatestProduction
}

// Level returns the known level l of f, refusing an unstable one unless
// unstable is set (Kafka's Feature.fromFeatureLevel).
func (f FeatureSpec) Level(l int16, unstable bool) (FeatureLevel, bool) {
	for _, fl := range f.Levels {
		if fl.Level == l && (unstable || l <= f.LatestProduction) {
			return fl, true
		}
	}
	return FeatureLevel{}, false
}

// DefaultLevel is the level a cluster formatted at metadata.version mv
// gets when nothing else is asked for: the highest level whose
// BootstrapMetadataVersion is at most mv (Kafka's Feature.defaultLevel).
func (f FeatureSpec) DefaultLevel(mv int16) int16 {
	l := f.Levels[0].Level
	for _, fl := range f.Levels {
		if fl.BootstrapMetadataVersion > mv {
			break
		}
		l = fl.Level
	}
	return l
}

// FeatureRegistry is every feature a node knows, with its levels: the
// feature rows behind ApiVersions, UpdateFeatures and storage format.
// [KnownFeatures] returns Kafka 4.3.1's.
type FeatureRegistry struct {
	// MinMetadataVersion is the lowest metadata.version supported.
	MinMetadataVersion int16
	// LatestProductionMetadataVersion is the newest metadata.version
	// served without unstable feature versions.
	LatestProductionMetadataVersion int16
	// LatestMetadataVersion is the newest metadata.version this build
	// can run, served with unstable feature versions.
	LatestMetadataVersion int16
	// Features are the other features, sorted by name.
	Features []FeatureSpec
}

// KnownFeatures returns the features of Kafka 4.3.1 (server-common's
// Feature and MetadataVersion) as this build implements them. Every
// feature's newest level is a production level; so is metadata.version's:
// Kafka 4.3.1 also carries development levels of the next release past
// 4.3-IV0, which this build does not implement, so even with
// unstable.feature.versions.enable it supports no level past 4.3-IV0.
// The result is freshly allocated; the caller may modify it.
func KnownFeatures() FeatureRegistry {
	none := []FeatureRequirement(nil)
	return FeatureRegistry{
		MinMetadataVersion:              MinMetadataVersion,
		LatestProductionMetadataVersion: LatestProductionMetadataVersion,
		LatestMetadataVersion:           MaxMetadataVersion,
		Features: []FeatureSpec{
			{Name: FeatureEligibleLeaderReplicas, LatestProduction: 1, Levels: []FeatureLevel{
				{0, MinMetadataVersion, none},
				// KIP-966; Kafka's EligibleLeaderReplicasVersion.ELRV_1
				// depends on 4.0-IV2, though ELR records exist from 4.0-IV1.
				{1, 26, []FeatureRequirement{{FeatureMetadataVersion, 24}}},
			}},
			{Name: FeatureGroupVersion, LatestProduction: 1, Levels: []FeatureLevel{
				{0, MinMetadataVersion, none},
				{1, 22, none}, // the consumer rebalance protocol (KIP-848)
			}},
			{Name: FeatureKRaftVersion, LatestProduction: 1, Levels: []FeatureLevel{
				{0, MinMetadataVersion, none},
				{1, MetadataVersion3_9_IV0, none}, // dynamic voters (KIP-853)
			}},
			{Name: FeatureShareVersion, LatestProduction: 1, Levels: []FeatureLevel{
				{0, MinMetadataVersion, none},
				// Share groups (KIP-932), which need 4.1-IV1.
				{1, 28, []FeatureRequirement{{FeatureMetadataVersion, 27}}},
			}},
			{Name: FeatureStreamsVersion, LatestProduction: 1, Levels: []FeatureLevel{
				{0, MinMetadataVersion, none},
				{1, 29, none}, // streams groups (KIP-1071)
			}},
			{Name: FeatureTransactionVersion, LatestProduction: 2, Levels: []FeatureLevel{
				{0, MinMetadataVersion, none},
				{1, 24, none}, // flexible transaction records (KIP-890)
				{2, 24, none}, // an epoch bump per transaction (KIP-890)
			}},
		},
	}
}

// Lookup returns the feature called name; metadata.version is not one.
func (r FeatureRegistry) Lookup(name string) (FeatureSpec, bool) {
	i := slices.IndexFunc(r.Features, func(f FeatureSpec) bool { return f.Name == name })
	if i < 0 {
		return FeatureSpec{}, false
	}
	return r.Features[i], true
}

// MetadataVersions returns the supported metadata.version range: up to
// LatestMetadataVersion when unstable feature versions are enabled, else
// up to LatestProductionMetadataVersion.
func (r FeatureRegistry) MetadataVersions(unstable bool) (minLevel, maxLevel int16) {
	if unstable {
		return r.MinMetadataVersion, r.LatestMetadataVersion
	}
	return r.MinMetadataVersion, r.LatestProductionMetadataVersion
}

// Supported returns the feature ranges a node supports, sorted by name,
// as Kafka's QuorumFeatures.defaultSupportedFeatureMap computes them:
// metadata.version's range, and each other feature from its minimum
// level to [FeatureSpec.MaxLevel], leaving out a feature whose maximum
// is 0.
func (r FeatureRegistry) Supported(unstable bool) []SupportedFeature {
	lo, hi := r.MetadataVersions(unstable)
	out := []SupportedFeature{{Name: FeatureMetadataVersion, Min: lo, Max: hi}}
	for _, f := range r.Features {
		if hi := f.MaxLevel(unstable); hi > 0 {
			out = append(out, SupportedFeature{Name: f.Name, Min: f.MinLevel(), Max: hi})
		}
	}
	slices.SortFunc(out, func(a, b SupportedFeature) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CheckLevel reports why feature name cannot be set to level when the
// features are at levels (metadata.version among them; a feature absent
// from levels is at 0), or nil: the level must exist (an unstable one
// only with unstable), a level above 0 needs metadata.version at least
// MinMetadataVersion, and every requirement of the level must be met
// (Kafka's Feature.fromFeatureLevel and Feature.validateVersion, whose
// messages it uses).
func (r FeatureRegistry) CheckLevel(name string, level int16, levels map[string]int16, unstable bool) error {
	f, ok := r.Lookup(name)
	if !ok {
		return fmt.Errorf("feature %s not found", name)
	}
	fl, ok := f.Level(level, unstable)
	if !ok {
		return fmt.Errorf("no feature:%s with feature level %d", name, level)
	}
	if mv := levels[FeatureMetadataVersion]; level >= 1 && mv < r.MinMetadataVersion {
		return fmt.Errorf("%s could not be set to %d because it depends on metadata.version=%d", name, level, r.MinMetadataVersion)
	}
	for _, req := range fl.Requires {
		if levels[req.Feature] < req.Level {
			return fmt.Errorf("%s could not be set to %d because it depends on %s level %d", name, level, req.Feature, req.Level)
		}
	}
	return nil
}

// metadataChanges marks the metadata.version levels that changed the
// metadata (Kafka's MetadataVersion.didMetadataChange), index = level,
// from MinMetadataVersion to MaxMetadataVersion.
var metadataChanges = [MaxMetadataVersion + 1]bool{
	7: true, 8: true, 11: true, 13: true, 14: true, 15: true, 17: true,
	23: true, 30: true,
}

// MetadataChangedBetween reports whether a level in (lower, upper] of
// metadata.version changed the metadata, so that a downgrade from upper
// to lower might lose metadata (Kafka's
// MetadataVersion.checkIfMetadataChanged). Both levels must lie in
// [MinMetadataVersion, MaxMetadataVersion]; their order does not matter.
func MetadataChangedBetween(a, b int16) bool {
	lower, upper := min(a, b), max(a, b)
	for l := upper; l > lower; l-- {
		if metadataChanges[l] {
			return true
		}
	}
	return false
}
