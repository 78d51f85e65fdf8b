package metadata_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krabka-go/krabka/metadata"
)

// TestKnownFeaturesAreKafka431s checks the feature rows against Kafka
// 4.3.1's Feature enum: every production feature, its levels and its
// newest production level (QuorumFeatures.defaultSupportedFeatureMap).
func TestKnownFeaturesAreKafka431s(t *testing.T) {
	want := []metadata.SupportedFeature{
		{Name: "eligible.leader.replicas.version", Min: 0, Max: 1},
		{Name: "group.version", Min: 0, Max: 1},
		{Name: "kraft.version", Min: 0, Max: 1},
		{Name: "metadata.version", Min: 7, Max: 30},
		{Name: "share.version", Min: 0, Max: 1},
		{Name: "streams.version", Min: 0, Max: 1},
		{Name: "transaction.version", Min: 0, Max: 2},
	}
	r := metadata.KnownFeatures()
	if d := cmp.Diff(want, r.Supported(false)); d != "" {
		t.Errorf("Supported(false) (-want +got):\n%s", d)
	}
	// Every level of Kafka 4.3.1's feature enums is a production level,
	// and this build implements no metadata.version past 4.3-IV0, so
	// enabling unstable feature versions adds nothing here (the
	// synthetic registry below shows what it adds when there is
	// something to add).
	if d := cmp.Diff(want, r.Supported(true)); d != "" {
		t.Errorf("Supported(true) (-want +got):\n%s", d)
	}
	for _, f := range r.Features {
		if f.MaxLevel(true) != f.LatestProduction {
			t.Errorf("%s has unstable levels above %d", f.Name, f.LatestProduction)
		}
	}
}

// TestDefaultLevelsOfRelease43 checks the levels kafka-storage format
// writes for release 4.3 (BootstrapMetadata.fromVersions with
// Feature.defaultLevel) and for older releases.
func TestDefaultLevels(t *testing.T) {
	r := metadata.KnownFeatures()
	for _, tc := range []struct {
		mv   int16
		want map[string]int16
	}{
		{30, map[string]int16{"eligible.leader.replicas.version": 1, "group.version": 1, "kraft.version": 1, "share.version": 1, "streams.version": 1, "transaction.version": 2}},
		{28, map[string]int16{"eligible.leader.replicas.version": 1, "group.version": 1, "kraft.version": 1, "share.version": 1, "streams.version": 0, "transaction.version": 2}},
		{21, map[string]int16{"eligible.leader.replicas.version": 0, "group.version": 0, "kraft.version": 1, "share.version": 0, "streams.version": 0, "transaction.version": 0}},
		{7, map[string]int16{"eligible.leader.replicas.version": 0, "group.version": 0, "kraft.version": 0, "share.version": 0, "streams.version": 0, "transaction.version": 0}},
	} {
		got := map[string]int16{}
		for _, f := range r.Features {
			got[f.Name] = f.DefaultLevel(tc.mv)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("default levels at metadata.version %d (-want +got):\n%s", tc.mv, d)
		}
	}
}

func TestCheckLevel(t *testing.T) {
	r := metadata.KnownFeatures()
	mv := func(l int16) map[string]int16 { return map[string]int16{"metadata.version": l} }
	for _, tc := range []struct {
		name    string
		feature string
		level   int16
		levels  map[string]int16
		want    string
	}{
		{"production level", "transaction.version", 2, mv(30), ""},
		{"level 0 needs nothing", "share.version", 0, nil, ""},
		{"unknown level", "transaction.version", 3, mv(30), "no feature:transaction.version with feature level 3"},
		{"unknown feature", "test.feature.version", 1, mv(30), "feature test.feature.version not found"},
		{"metadata.version dependency", "eligible.leader.replicas.version", 1, mv(22),
			"eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 24"},
		{"met dependency", "eligible.leader.replicas.version", 1, mv(24), ""},
		{"share groups need 4.1-IV1", "share.version", 1, mv(26), "share.version could not be set to 1 because it depends on metadata.version level 27"},
		{"no metadata.version", "group.version", 1, nil, "group.version could not be set to 1 because it depends on metadata.version=7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.CheckLevel(tc.feature, tc.level, tc.levels, false)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckLevel(%s, %d, %v) = %q, want %q", tc.feature, tc.level, tc.levels, got, tc.want)
			}
		})
	}
}

// unstableRegistry is KnownFeatures with an unstable level added to
// transaction.version and to metadata.version, as a release carrying a
// development level has them.
func unstableRegistry() metadata.FeatureRegistry {
	r := metadata.KnownFeatures()
	r.LatestMetadataVersion = 31
	for i := range r.Features {
		if r.Features[i].Name == "transaction.version" {
			r.Features[i].Levels = append(r.Features[i].Levels, metadata.FeatureLevel{Level: 3, BootstrapMetadataVersion: 31})
		}
	}
	return r
}

// TestUnstableFeatureLevels checks what unstable.feature.versions.enable
// changes, as Kafka's QuorumFeatures and Feature.fromFeatureLevel do: the
// unstable levels are supported, settable and advertised only with it.
func TestUnstableFeatureLevels(t *testing.T) {
	r := unstableRegistry()
	tv, _ := r.Lookup("transaction.version")
	if tv.MaxLevel(false) != 2 || tv.MaxLevel(true) != 3 {
		t.Errorf("transaction.version MaxLevel = %d / %d, want 2 / 3", tv.MaxLevel(false), tv.MaxLevel(true))
	}
	if lo, hi := r.MetadataVersions(false); lo != 7 || hi != 30 {
		t.Errorf("MetadataVersions(false) = %d-%d, want 7-30", lo, hi)
	}
	if _, hi := r.MetadataVersions(true); hi != 31 {
		t.Errorf("MetadataVersions(true) max = %d, want 31", hi)
	}
	levels := map[string]int16{"metadata.version": 31}
	if err := r.CheckLevel("transaction.version", 3, levels, false); err == nil {
		t.Error("an unstable level was accepted without unstable feature versions")
	}
	if err := r.CheckLevel("transaction.version", 3, levels, true); err != nil {
		t.Errorf("an unstable level was refused with unstable feature versions: %v", err)
	}
	find := func(fs []metadata.SupportedFeature, name string) metadata.SupportedFeature {
		for _, f := range fs {
			if f.Name == name {
				return f
			}
		}
		return metadata.SupportedFeature{}
	}
	if f := find(r.Supported(false), "transaction.version"); f.Max != 2 {
		t.Errorf("Supported(false) transaction.version = %+v", f)
	}
	if f := find(r.Supported(true), "transaction.version"); f.Max != 3 {
		t.Errorf("Supported(true) transaction.version = %+v", f)
	}
	if f := find(r.Supported(true), "metadata.version"); f.Max != 31 {
		t.Errorf("Supported(true) metadata.version = %+v", f)
	}
}

// TestSupportedOmitsFeaturesWithoutLevels checks Kafka's rule that a
// feature whose maximum is 0 is not advertised.
func TestSupportedOmitsFeaturesWithoutLevels(t *testing.T) {
	r := metadata.KnownFeatures()
	r.Features = append(r.Features, metadata.FeatureSpec{Name: "zz.version", Levels: []metadata.FeatureLevel{{Level: 0}, {Level: 1}}})
	for _, f := range r.Supported(false) {
		if f.Name == "zz.version" {
			t.Errorf("a feature whose only production level is 0 is advertised: %+v", f)
		}
	}
	found := false
	for _, f := range r.Supported(true) {
		found = found || f.Name == "zz.version" && f.Max == 1
	}
	if !found {
		t.Error("with unstable feature versions, a feature with an unstable level 1 is not advertised")
	}
}

// Kafka's MetadataVersion.checkIfMetadataChanged over 4.3.1's levels: a
// downgrade loses metadata when a level above the target, up to the
// source, changed it (3.3-IV3, 3.4-IV0, 3.5-IV2, 3.6-IV1, 3.6-IV2,
// 3.7-IV0, 3.7-IV2, 4.0-IV1, 4.3-IV0).
func TestMetadataChangedBetween(t *testing.T) {
	cases := []struct {
		from, to int16
		want     bool
	}{
		{30, 30, false},
		{30, 29, true}, // 4.3-IV0 changed the metadata
		{29, 24, false},
		{29, 23, false}, // 4.0-IV1's own change is kept
		{29, 22, true},
		{22, 17, false},
		{17, 16, true},
		{8, 7, true},
		{10, 8, false},
		{24, 29, false}, // the order does not matter
		{22, 23, true},
	}
	for _, c := range cases {
		if got := metadata.MetadataChangedBetween(c.from, c.to); got != c.want {
			t.Errorf("MetadataChangedBetween(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
