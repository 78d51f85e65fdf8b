package raft

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
		{"a feature this controller does not support", 2, 0, []update{{name: "group.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature group.version. Local controller 3 does not support this feature."},
		{"the first refusal refuses all", 2, 0, []update{{name: "kraft.version", level: 1, typ: 1}, {name: "group.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature group.version. Local controller 3 does not support this feature."},
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
			level, upgrade, err := checkFeatureUpdates(req, c.current, 3)
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
