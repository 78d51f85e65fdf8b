package raft

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
		{"metadata.version at the level in force", 2, 0, []update{{name: "metadata.version", level: 30, typ: 1}}, 0, false, ""},
		{"metadata.version out of range", 2, 0, []update{{name: "metadata.version", level: 99, typ: 1}}, 0, false,
			prefix + "99 for feature metadata.version. Local controller 3 only supports versions 7-30"},
		{"a feature this controller does not know", 2, 0, []update{{name: "test.feature.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature test.feature.version. Local controller 3 does not support this feature."},
		{"another feature's upgrade is a record", 2, 0, []update{{name: "group.version", level: 1, typ: 1}}, 0, false, ""},
		{"another feature's safe downgrade is a record", 2, 0, []update{{name: "transaction.version", level: 0, typ: 2}}, 0, false, ""},
		{"a level beyond a feature's rows", 2, 0, []update{{name: "transaction.version", level: 3, typ: 1}}, 0, false,
			prefix + "3 for feature transaction.version. Local controller 3 only supports versions 0-2"},
		{"the first refusal refuses all", 2, 0, []update{{name: "kraft.version", level: 1, typ: 1}, {name: "test.feature.version", level: 1, typ: 1}}, 0, false,
			prefix + "1 for feature test.feature.version. Local controller 3 does not support this feature."},
		{"a feature named twice: the last row counts", 2, 0, []update{{name: "kraft.version", level: 2, typ: 1}, {name: "kraft.version", level: 1, typ: 1}}, 1, true, ""},
		{"refusals in Kafka's HashMap order, not the request's", 2, 0, []update{{name: "metadata.version", level: 29, typ: 2}, {name: "streams.version", level: 0, typ: 1}, {name: "group.version", level: 2, typ: 1}}, 0, false,
			prefix + "2 for feature group.version. Local controller 3 only supports versions 0-1"},
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
			plan, err := checkFeatureUpdates(req, fc)
			level, upgrade := plan.kraftLevel, plan.upgrade
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
			prefix + "1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 24", 0},
	} {
		t.Run(tc.what, func(t *testing.T) {
			fc := featureCheck{id: 3, features: reg, unstable: tc.unstable, kraftVersion: 1,
				finalized: map[string]int16{metadata.FeatureMetadataVersion: tc.mv}}
			plan, err := checkFeatureUpdates(tc.req, fc)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want || plan.kraftLevel != tc.level {
				t.Errorf("checkFeatureUpdates = %d, %q; want %d, %q", plan.kraftLevel, got, tc.level, tc.want)
			}
		})
	}
}

// TestCheckFeatureUpdatesPlansRecords checks what an accepted request
// other than kraft.version writes, one FeatureLevelRecord per feature in
// request order, and that each registered broker's range bounds the
// level, as FeatureControlManager checks brokersAndFeatures.
func TestCheckFeatureUpdatesPlansRecords(t *testing.T) {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = 2
	for _, u := range []struct {
		name  string
		level int16
		typ   int8
	}{{"group.version", 1, 1}, {"kraft.version", 1, 1}, {"transaction.version", 0, 3}} {
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = u.name, u.level, u.typ
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
	}
	fc := featureCheck{id: 3, features: metadata.KnownFeatures(),
		finalized: map[string]int16{metadata.FeatureMetadataVersion: 30, metadata.FeatureTransactionVersion: 2}}
	plan, err := checkFeatureUpdates(req, fc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range plan.records {
		got = append(got, fmt.Sprintf("%s=%d", r.Name, r.FeatureLevel))
	}
	if !slices.Equal(got, []string{"group.version=1", "transaction.version=0"}) || !plan.upgrade || plan.kraftLevel != 1 {
		t.Errorf("plan: records %v, kraft.version upgrade %v to %d", got, plan.upgrade, plan.kraftLevel)
	}

	// A registered broker that supports group.version only at 0.
	d := metadata.NewDelta(metadata.EmptyImage())
	for _, r := range []metadata.Record{featureLevelRecord(metadata.FeatureMetadataVersion, 30), brokerRecord(7)} {
		if err := d.ReplayNext(r, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	fc.img = d.Apply()
	_, err = checkFeatureUpdates(req, fc)
	want := "Invalid update version 1 for feature group.version. Broker 7 does not support this feature."
	if err == nil || err.Error() != want {
		t.Errorf("with a broker without group.version: %v, want %q", err, want)
	}
}

// Registered controllers bound a level as FeatureControlManager's
// reasonNotSupported checks them, after the brokers: one whose range
// stops below the level refuses it with Kafka's "Controller N" reason,
// this controller's own registration is skipped (its range was checked
// as "Local controller"), and a controller that lists no range for a
// feature supports only its level 0.
func TestCheckFeatureUpdatesRegisteredControllers(t *testing.T) {
	d := metadata.NewDelta(metadata.EmptyImage())
	for _, r := range []metadata.Record{featureLevelRecord(metadata.FeatureMetadataVersion, 29),
		controllerRecord(2, 29), controllerRecord(3, 29)} {
		if err := d.ReplayNext(r, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	fc := featureCheck{id: 3, features: metadata.KnownFeatures(), kraftVersion: 1, img: d.Apply(),
		finalized: map[string]int16{metadata.FeatureMetadataVersion: 29}}
	check := func(name string, level int16, typ int8) string {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = 2
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = name, level, typ
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
		if _, err := checkFeatureUpdates(req, fc); err != nil {
			return err.Error()
		}
		return ""
	}
	for _, c := range []struct {
		name  string
		level int16
		typ   int8
		want  string
	}{
		{metadata.FeatureMetadataVersion, 30, 1, "Invalid update version 30 for feature metadata.version. Controller 2 only supports versions 7-29"},
		{metadata.FeatureMetadataVersion, 24, 2, ""},
		{metadata.FeatureGroupVersion, 1, 1, "Invalid update version 1 for feature group.version. Controller 2 does not support this feature."},
		{metadata.FeatureGroupVersion, 0, 2, ""},
	} {
		if got := check(c.name, c.level, c.typ); got != c.want {
			t.Errorf("%s=%d: %q, want %q", c.name, c.level, got, c.want)
		}
	}
	// Without controller 2, this controller's own registration, which
	// stops at 29 too, does not refuse 30.
	d = metadata.NewDelta(metadata.EmptyImage())
	for _, r := range []metadata.Record{featureLevelRecord(metadata.FeatureMetadataVersion, 29), controllerRecord(3, 29)} {
		if err := d.ReplayNext(r, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	fc.img = d.Apply()
	if got := check(metadata.FeatureMetadataVersion, 30, 1); got != "" {
		t.Errorf("metadata.version=30 with only this controller registered: %q", got)
	}
}

// controllerRecord registers controller id supporting metadata.version
// 7-maxMV and nothing else.
func controllerRecord(id int32, maxMV int16) *metadata.RegisterControllerRecord {
	r := metadata.NewRegisterControllerRecord()
	r.ControllerId = id
	r.IncarnationId[15] = 1
	r.Features = append(r.Features, metadata.RegisterControllerRecordControllerFeature{Name: metadata.FeatureMetadataVersion, MinSupportedVersion: 7, MaxSupportedVersion: maxMV})
	return r
}

func featureLevelRecord(name string, level int16) *metadata.FeatureLevelRecord {
	r := metadata.NewFeatureLevelRecord()
	r.Name, r.FeatureLevel = name, level
	return r
}

// brokerRecord registers broker id supporting metadata.version 7-30 and
// nothing else.
func brokerRecord(id int32) *metadata.RegisterBrokerRecord {
	r := metadata.NewRegisterBrokerRecord()
	r.BrokerId = id
	r.IncarnationId[15] = 1
	r.Features = append(r.Features, metadata.RegisterBrokerRecordBrokerFeature{Name: metadata.FeatureMetadataVersion, MinSupportedVersion: 7, MaxSupportedVersion: 30})
	return r
}

// TestUpdateFeaturesWritesFeatureLevels sends UpdateFeatures to a
// running controller, as kafka-features does: an upgrade and a safe
// downgrade of group.version commit FeatureLevelRecords the image then
// holds, a validate-only request changes nothing, and a level past the
// feature's rows is refused.
func TestUpdateFeaturesWritesFeatureLevels(t *testing.T) {
	c := newTestCluster(t, 1)
	node := c.node(c.leader())
	cl := newKgoClient(t, node.Addr().String(), -1, 0)
	send := func(name string, level int16, typ int8, validateOnly bool) *kmsg.UpdateFeaturesResponse {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly = 2, 10000, validateOnly
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = name, level, typ
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
		resp, err := req.RequestWith(t.Context(), cl.SeedBrokers()[0])
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	level := func() int16 { return node.CurrentImage().Features().Level(metadata.FeatureGroupVersion) }
	// The first leader's bootstrap records set metadata.version.
	waitFor(t, "the bootstrap metadata.version", func() bool { return node.CurrentImage().Features().MetadataVersion() != 0 })

	if r := send(metadata.FeatureGroupVersion, 1, 1, true); r.ErrorCode != 0 || level() != 0 {
		t.Fatalf("validate-only upgrade: error %d %q, group.version %d", r.ErrorCode, deref(r.ErrorMessage), level())
	}
	if r := send(metadata.FeatureGroupVersion, 1, 1, false); r.ErrorCode != 0 || level() != 1 {
		t.Fatalf("upgrade: error %d %v, group.version %d", r.ErrorCode, r.ErrorMessage, level())
	}
	r := send(metadata.FeatureTransactionVersion, 3, 1, false)
	if r.ErrorCode != kerr.InvalidUpdateVersion.Code || r.ErrorMessage == nil ||
		!strings.HasSuffix(*r.ErrorMessage, "Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2") {
		t.Errorf("transaction.version 3: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := send(metadata.FeatureGroupVersion, 0, 2, false); r.ErrorCode != 0 || level() != 0 {
		t.Fatalf("safe downgrade: error %d %v, group.version %d", r.ErrorCode, r.ErrorMessage, level())
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// Kafka's FeatureControlManager on downgrades and level 0 (what
// kafka-features downgrade and disable send): the direction must match
// the upgrade type, kraft.version is never downgraded, a metadata.version
// downgrade across a level that changed the metadata is refused, safe or
// unsafe, while one across none is a record, as an upgrade is
// (updateMetadataVersion, MetadataVersion.checkIfMetadataChanged), and a
// level 0 disables a feature with a record, which a feature no node knows
// cannot take.
func TestCheckFeatureUpdatesDowngrades(t *testing.T) {
	const (
		upgrade, safe, unsafe = 1, 2, 3
		prefix                = "Invalid update version "
		lossy                 = "Refusing to perform the requested downgrade because it might delete metadata information."
		unsupported           = "Unsafe metadata downgrade is not supported in this version."
	)
	cases := []struct {
		what    string
		mv      int16 // the finalized metadata.version
		name    string
		level   int16
		typ     int8
		records string // the planned records, "name=level ..."
		err     string
	}{
		{"safe downgrade", 30, "transaction.version", 1, safe, "transaction.version=1", ""},
		{"unsafe downgrade", 30, "transaction.version", 1, unsafe, "transaction.version=1", ""},
		{"disable", 30, "group.version", 0, safe, "group.version=0", ""},
		{"unsafe disable", 30, "group.version", 0, unsafe, "group.version=0", ""},
		{"disable a feature already off", 30, "streams.version", 0, safe, "streams.version=0", ""},
		{"downgrade typed as an upgrade", 30, "transaction.version", 1, upgrade, "",
			prefix + "1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"downgrade to a newer level", 30, "streams.version", 1, safe, "",
			prefix + "1 for feature streams.version. Can't downgrade to a newer version."},
		{"disable a feature no node knows", 30, "test.feature.version", 0, safe, "",
			prefix + "0 for feature test.feature.version. Feature test.feature.version not found."},
		{"disable kraft.version", 30, "kraft.version", 0, safe, "",
			prefix + "0 for feature kraft.version. Can't downgrade the version of this feature."},
		{"unsafely disable kraft.version", 30, "kraft.version", 0, unsafe, "",
			prefix + "0 for feature kraft.version. Can't downgrade the version of this feature."},
		{"metadata.version past a metadata change", 30, "metadata.version", 29, safe, "",
			"Unsupported metadata.version downgrade from 30 to 29. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"metadata.version unsafely past a metadata change", 30, "metadata.version", 22, unsafe, "",
			"Unsupported metadata.version downgrade from 30 to 22. Unsafe metadata downgrade is not supported in this version."},
		{"metadata.version downgrade typed as an upgrade", 30, "metadata.version", 29, upgrade, "",
			prefix + "29 for feature metadata.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"metadata.version below the supported range", 30, "metadata.version", 6, safe, "",
			prefix + "6 for feature metadata.version. Local controller 3 only supports versions 7-30"},
		{"metadata.version downgrade without a metadata change", 29, "metadata.version", 24, safe, "metadata.version=24", ""},
		{"metadata.version unsafe downgrade without a metadata change", 29, "metadata.version", 24, unsafe, "metadata.version=24", ""},
		{"metadata.version downgrade to the level that last changed the metadata", 25, "metadata.version", 23, safe, "metadata.version=23", ""},
		{"metadata.version downgrade past 4.0-IV1", 25, "metadata.version", 22, safe, "", "Unsupported metadata.version downgrade from 25 to 22. " + lossy},
		{"metadata.version unsafe downgrade past 4.0-IV1", 25, "metadata.version", 22, unsafe, "", "Unsupported metadata.version downgrade from 25 to 22. " + unsupported},
		{"metadata.version downgrade from 4.0-IV0 to 3.9-IV0", 22, "metadata.version", 21, safe, "metadata.version=21", ""},
		{"metadata.version downgrade from 3.6-IV0 to 3.5-IV2", 12, "metadata.version", 11, safe, "metadata.version=11", ""},
		{"metadata.version downgrade from 3.6-IV1 to 3.6-IV0", 13, "metadata.version", 12, safe, "", "Unsupported metadata.version downgrade from 13 to 12. " + lossy},
		{"metadata.version downgrade from 3.4-IV0 to 3.3-IV3", 8, "metadata.version", 7, safe, "", "Unsupported metadata.version downgrade from 8 to 7. " + lossy},
		{"metadata.version upgrade", 29, "metadata.version", 30, upgrade, "metadata.version=30", ""},
		{"metadata.version upgrade past levels that changed the metadata", 7, "metadata.version", 30, upgrade, "metadata.version=30", ""},
		{"metadata.version safe downgrade at the level in force", 29, "metadata.version", 29, safe, "metadata.version=29", ""},
		{"metadata.version unsafe downgrade to a newer level", 29, "metadata.version", 30, unsafe, "",
			prefix + "30 for feature metadata.version. Can't downgrade to a newer version."},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.Version = 2
			fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = c.name, c.level, c.typ
			req.FeatureUpdates = append(req.FeatureUpdates, fu)
			fc := featureCheck{id: 3, features: metadata.KnownFeatures(), kraftVersion: 1,
				finalized: map[string]int16{metadata.FeatureMetadataVersion: c.mv, "transaction.version": 2, "group.version": 1}}
			plan, err := checkFeatureUpdates(req, fc)
			got := ""
			if err != nil {
				got = err.Error()
			}
			var records []string
			for _, r := range plan.records {
				records = append(records, fmt.Sprintf("%s=%d", r.Name, r.FeatureLevel))
			}
			if rs := strings.Join(records, " "); got != c.err || rs != c.records || plan.upgrade {
				t.Errorf("checkFeatureUpdates = records %q, kraft upgrade %v, error %q; want records %q, error %q", rs, plan.upgrade, got, c.records, c.err)
			}
		})
	}
}

// A metadata.version downgrade is checked as Kafka's
// FeatureControlManager checks it: a finalized feature that depends on a
// higher metadata.version does not stop it (updateMetadataVersion checks
// no dependency), but a feature the same request raises is checked
// against the lowered level (Feature.validateVersion on the proposed
// levels).
func TestCheckFeatureUpdatesMetadataVersionDependencies(t *testing.T) {
	fc := featureCheck{id: 3, features: metadata.KnownFeatures(), kraftVersion: 1,
		finalized: map[string]int16{metadata.FeatureMetadataVersion: 29, metadata.FeatureShareVersion: 1}}
	request := func(updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesRequest {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version, req.FeatureUpdates = 2, updates
		return req
	}
	update := func(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = name, level, typ
		return fu
	}
	plan, err := checkFeatureUpdates(request(update(metadata.FeatureMetadataVersion, 24, 2)), fc)
	if err != nil || len(plan.records) != 1 || plan.records[0].Name != metadata.FeatureMetadataVersion || plan.records[0].FeatureLevel != 24 {
		t.Errorf("downgrade to 24 with share.version 1 finalized: records %v, error %v; want metadata.version=24", plan.records, err)
	}
	fc.finalized[metadata.FeatureShareVersion] = 0
	_, err = checkFeatureUpdates(request(update(metadata.FeatureMetadataVersion, 24, 2), update(metadata.FeatureShareVersion, 1, 1)), fc)
	want := "Invalid update version 1 for feature share.version. share.version could not be set to 1 because it depends on metadata.version level 27"
	if err == nil || err.Error() != want {
		t.Errorf("share.version 1 with metadata.version lowered to 24: %v, want %q", err, want)
	}
}

// The key order of a java.util.HashMap<String, …> filled in turn, as
// Java 17 prints it for these lists (HashMap.keySet()).
func TestJavaHashMapOrder(t *testing.T) {
	cases := []struct{ in, want string }{
		{"metadata.version eligible.leader.replicas.version group.version share.version streams.version transaction.version",
			"group.version metadata.version share.version streams.version transaction.version eligible.leader.replicas.version"},
		{"kraft.version test.feature.version", "kraft.version test.feature.version"},
		{"transaction.version group.version kraft.version group.version", "group.version kraft.version transaction.version"},
		{"a b c d e f g h i j k l m n o p", "a b c d e f g h i j k l m n o p"}, // 16 keys: capacity 32
		{"zz.version é.version metadata.version", "é.version metadata.version zz.version"},
	}
	for _, c := range cases {
		if got := strings.Join(javaHashMapOrder(strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("javaHashMapOrder(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
