package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/krabka-go/krabka/metadata"
)

// metadataVersions lists Kafka's metadata.version levels by name
// (MetadataVersion.java), index = level. Level 7, 3.3-IV3, is the oldest
// a Kafka 4.x node accepts; older levels are kept only so that their
// names can be reported.
var metadataVersions = []string{
	1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1",
	6: "3.3-IV2", 7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1",
	11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0",
	16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0",
	21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3",
	26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
}

const (
	// minMetadataVersion is 3.3-IV3, the oldest level a KRaft cluster of
	// this release can be formatted at.
	minMetadataVersion = metadata.MinMetadataVersion
	// latestMetadataVersion is 4.3-IV0, the newest production level and
	// the default of storage format.
	latestMetadataVersion = metadata.LatestProductionMetadataVersion
)

// metadataVersionName returns the release name of a level, e.g.
// "4.3-IV0", or the number when the level is unknown.
func metadataVersionName(level int16) string {
	if level > 0 && int(level) < len(metadataVersions) {
		return metadataVersions[level]
	}
	return strconv.Itoa(int(level))
}

// parseReleaseVersion reads a --release-version value: a full name such
// as "3.9-IV0", or a release such as "3.9", which means that release's
// newest level, as Kafka's MetadataVersion.fromVersionString does; like
// it, only the first two dot-separated parts count, so "4.3.1" is 4.3.
// Levels past the latest production one count only when unstable
// (unstable.feature.versions.enable).
func parseReleaseVersion(s string, unstable bool) (int16, error) {
	key := s
	if parts := strings.Split(s, "."); len(parts) > 2 && strings.Join(parts[2:], "") != "" {
		key = parts[0] + "." + parts[1]
	}
	_, maxMV := knownFeatures.MetadataVersions(unstable)
	maxMV = min(maxMV, int16(len(metadataVersions)-1))
	var found int16 = -1
	for level := minMetadataVersion; level <= maxMV; level++ {
		name := metadataVersions[level]
		if name == key {
			return level, nil
		}
		if release, _, _ := strings.Cut(name, "-"); release == key {
			found = level
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("unknown release version %q: supported are %s to %s (for example 3.9 or 3.9-IV0)",
			s, metadataVersions[minMetadataVersion], metadataVersions[maxMV])
	}
	return found, nil
}

// knownFeatures are the feature rows storage format and the features
// command read: Kafka 4.3.1's (metadata.KnownFeatures).
var knownFeatures = metadata.KnownFeatures()

const (
	featureMetadataVersion = metadata.FeatureMetadataVersion
	featureKRaftVersion    = metadata.FeatureKRaftVersion
)

// featureNames returns every feature name --feature accepts, sorted.
func featureNames() []string {
	names := []string{featureMetadataVersion}
	for _, f := range knownFeatures.Features {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// defaultLevel returns the level of feature name that a cluster formatted
// at metadata.version mv gets when --feature does not set it: the highest
// level whose bootstrap metadata.version is at most mv, else 0 (Kafka's
// Feature.defaultLevel).
func defaultLevel(name string, mv int16) int16 {
	f, _ := knownFeatures.Lookup(name)
	return f.DefaultLevel(mv)
}
