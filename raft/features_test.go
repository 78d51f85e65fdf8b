package raft

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/metadata"
)

// FeatureControlManager.updateFeature's checks, in its order, for the one
// feature a Krabka controller changes, and the refusal of the others.
func TestCheckFeatureUpdates(t *testing.T) {
	type update struct {
		name  string
		level int16
		typ   int8 // v1+ UpgradeType
		allow bool // v0 AllowDowngrade
	}
	const prefix = "Invalid update version "
	cases := []struct {
		what    string
		version int16
		current int16
		updates []update
		level   int16
		upgrade bool
		err     string // "" for none
	}{
		{"upgrade", 2, 0, []update{{name: "kraft.version", level: 1, typ: 1}}, 1, true, ""},
		{"upgrade at the level already (the raft layer calls it done)", 2, 1, []update{{name: "kraft.version", level: 1, typ: 1}}, 1, true, ""},
		{"v0 upgrade", 0, 0, []update{{name: "kraft.version", level: 1}}, 1, true, ""},
		{"nothing to update", 2, 0, nil, 0, false, ""},
		{"safe downgrade to the level in force", 2, 1, []update{{name: "kraft.version", level: 1, typ: 2}}, 0, false, ""},
		{"unknown upgrade type", 2, 0, []update{{name: "kraft.version", level: 1, typ: 7}}, 0, false,
			prefix + "1 for feature kraft.version. The controller does not support the given upgrade type."},
		{"negative level", 2, 0, []update{{name: "kraft.version", level: -1, typ: 1}}, 0, false,
			prefix + "-1 for feature kraft.version. A feature version cannot be less than 0."},
		{"level beyond the supported range", 2, 0, []update{{name: "kraft.version", level: 2, typ: 1}}, 0, false,
			prefix + "2 for feature kraft.version. Local controller 3 only supports versions 0-1"},
		{"downgrade typed as an upgrade", 2, 1, []update{{name: "kraft.version", level: 0, typ: 1}}, 0, false,
			prefix + "0 for feature kraft.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"v0 downgrade", 0, 1, []update{{name: "kraft.version", level: 0, allow: true}}, 0, false,
			prefix + "0 for feature kraft.version. Can't downgrade the version of this feature."},
		{"unsafe downgrade", 2, 1, []update{{name: "kraft.version", level: 0, typ: 3}}, 0, false,
			prefix + "0 for feature kraft.version. Can't downgrade the version of this feature."},
		{"downgrade to a newer version", 2, 0, []update{{name: "kraft.version", level: 1, typ: 2}}, 0, false,
			prefix + "1 for feature kraft.version. Can't downgrade to a newer version."},
		{"metadata.version is set at format time", 2, 0, []update{{name: "metadata.version", level: 30, typ: 1}}, 0, false,
			prefix + "30 for feature metadata.version. Krabka controllers change kraft.version only; metadata.version is set when the cluster is formatted (krabka storage format --release-version)."},
		{"metadata.version out of range", 2, 0, []update{{name: "metadata.version", level: 99, typ: 1}}, 0, false,
			prefix + "99 for feature metadata.version. Local controller 3 only supports versions 7-30"},
		{"a feature this controller does not know", 2, 0, []update{{name: "test.feature.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature test.feature.version. Local controller 3 does not support this feature."},
		{"a feature set at format time", 2, 0, []update{{name: "group.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature group.version. Krabka controllers change kraft.version only; this feature's level is set when the cluster is formatted (krabka storage format --feature)."},
		{"a level beyond a feature's rows", 2, 0, []update{{name: "transaction.version", level: 3, typ: 1}}, 0, false,
			prefix + "3 for feature transaction.version. Local controller 3 only supports versions 0-2"},
		{"the first refusal refuses all", 2, 0, []update{{name: "kraft.version", level: 1, typ: 1}, {name: "test.feature.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature test.feature.version. Local controller 3 does not support this feature."},
		{"a feature named twice", 2, 0, []update{{name: "kraft.version", level: 1, typ: 1}, {name: "kraft.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature kraft.version. The request updates this feature more than once."},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.Version = c.version
			for _, u := range c.updates {
				fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
				fu.Feature, fu.MaxVersionLevel, fu.UpgradeType, fu.AllowDowngrade = u.name, u.level, u.typ, u.allow
				req.FeatureUpdates = append(req.FeatureUpdates, fu)
			}
			fc := featureCheck{id: 3, features: metadata.KnownFeatures(), kraftVersion: c.current,
				finalized: map[string]int16{metadata.FeatureMetadataVersion: 30}}
			level, upgrade, err := checkFeatureUpdates(req, fc)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrInvalidFeatureUpdate) {
					t.Errorf("error %v does not match ErrInvalidFeatureUpdate", err)
				}
			}
			if level != c.level || upgrade != c.upgrade || got != c.err {
				t.Errorf("checkFeatureUpdates = %d, %v, %q; want %d, %v, %q", level, upgrade, got, c.level, c.upgrade, c.err)
			}
		})
	}
}

// TestCheckFeatureUpdatesRowsAndUnstableLevels checks that UpdateFeatures
// takes its ranges from the feature rows and unstable.feature.versions.enable,
// and checks a level's dependencies on the levels the request proposes.
func TestCheckFeatureUpdatesRowsAndUnstableLevels(t *testing.T) {
	reg := withUnstableLevel(metadata.FeatureKRaftVersion, 2)
	update := func(name string, level int16, typ int8) *kmsg.UpdateFeaturesRequest {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = 2
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = name, level, typ
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
		return req
	}
	const prefix = "Invalid update version "
	for _, tc := range []struct {
		what     string
		req      *kmsg.UpdateFeaturesRequest
		unstable bool
		mv       int16
		want     string
		level    int16
	}{
		{"an unstable level without the flag", update("kraft.version", 2, 1), false, 30,
			prefix + "2 for feature kraft.version. Local controller 3 only supports versions 0-1", 0},
		{"an unstable level with the flag", update("kraft.version", 2, 1), true, 30, "", 2},
		{"an unstable metadata.version without the flag", update("metadata.version", 31, 1), false, 30,
			prefix + "31 for feature metadata.version. Local controller 3 only supports versions 7-30", 0},
		{"a dependency not met", update("eligible.leader.replicas.version", 1, 1), false, 22,
			prefix + "1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23", 0},
	} {
		t.Run(tc.what, func(t *testing.T) {
			fc := featureCheck{id: 3, features: reg, unstable: tc.unstable, kraftVersion: 1,
				finalized: map[string]int16{metadata.FeatureMetadataVersion: tc.mv}}
			level, _, err := checkFeatureUpdates(tc.req, fc)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want || level != tc.level {
				t.Errorf("checkFeatureUpdates = %d, %q; want %d, %q", level, got, tc.level, tc.want)
			}
		})
	}
}
