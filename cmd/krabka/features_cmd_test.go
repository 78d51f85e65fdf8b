package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFeaturesUsage(t *testing.T) {
	mustFail(t, "features needs a subcommand", "features", "--bootstrap-controller", "localhost:9093")
	mustFail(t, "--bootstrap-controller is required", "features", "describe")
	mustFail(t, "krabka runs controllers only", "features", "--bootstrap-server", "localhost:9092", "describe")
	mustFail(t, "you must specify at least one feature to upgrade", "features", "--bootstrap-controller", "localhost:9093", "upgrade")
	mustFail(t, "can not specify --release-version with other feature flags", "features", "--bootstrap-controller", "localhost:9093",
		"upgrade", "--release-version", "4.3", "--feature", "kraft.version=1")
	mustFail(t, `--release-version: unknown release version "9.9"`, "features", "--bootstrap-controller", "localhost:9093", "upgrade", "--release-version", "9.9")
	mustFail(t, `--feature "kraft.version": can't parse feature=level string: equals sign not found`,
		"features", "--bootstrap-controller", "localhost:9093", "upgrade", "--feature", "kraft.version")
	mustFail(t, `--feature "kraft.version=one": can't parse feature=level string: unable to parse one as a short`,
		"features", "--bootstrap-controller", "localhost:9093", "upgrade", "--feature", "kraft.version=one")
	mustFail(t, "feature kraft.version was specified more than once",
		"features", "--bootstrap-controller", "localhost:9093", "upgrade", "--feature", "kraft.version=1", "--feature", "kraft.version=1")
	mustFail(t, `--feature "=1": no feature name before the equals sign`,
		"features", "--bootstrap-controller", "localhost:9093", "upgrade", "--feature", "=1")
	mustFail(t, `unknown command "extra"`, "features", "--bootstrap-controller", "localhost:9093", "describe", "extra")
	mustFail(t, "you must specify at least one feature to downgrade", "features", "--bootstrap-controller", "localhost:9093", "downgrade")
	mustFail(t, "can not specify --release-version with other feature flags", "features", "--bootstrap-controller", "localhost:9093",
		"downgrade", "--release-version", "4.2", "--feature", "group.version=0")
	mustFail(t, "you must specify at least one feature to disable: --feature NAME", "features", "--bootstrap-controller", "localhost:9093", "disable")
	mustFail(t, `--feature "group.version=0": disable takes a feature name, not NAME=LEVEL`,
		"features", "--bootstrap-controller", "localhost:9093", "disable", "--feature", "group.version=0")
	mustFail(t, `--feature "group.version": feature group.version was specified more than once`,
		"features", "--bootstrap-controller", "localhost:9093", "disable", "--feature", "group.version", "--feature", "group.version")
	mustFail(t, "unknown flag: --unsafe", "features", "--bootstrap-controller", "localhost:9093", "upgrade", "--feature", "group.version=1", "--unsafe")
	mustFail(t, "unknown flag: --release-version", "features", "--bootstrap-controller", "localhost:9093", "disable", "--release-version", "4.2")
}

// --release-version names metadata.version and the release's default
// levels of the other features, never kraft.version (KAFKA-21426); an
// upgrade leaves out the levels of 0, as kafka-features does.
func TestReleaseUpdatesLeaveKRaftVersionOut(t *testing.T) {
	for _, c := range []struct {
		op   featureOp
		want string
	}{
		{opUpgrade, "metadata.version=21"},
		{opDowngrade, "metadata.version=21 eligible.leader.replicas.version=0 group.version=0 share.version=0 streams.version=0 transaction.version=0"},
	} {
		got, err := releaseUpdates("3.9", c.op)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, u := range got {
			parts = append(parts, fmt.Sprintf("%s=%d", u.name, u.level))
		}
		if s := strings.Join(parts, " "); s != c.want {
			t.Errorf("releaseUpdates(3.9, %s) = %s, want %s", c.op, s, c.want)
		}
	}
}

// The UpgradeType each subcommand sends (FeatureCommand.downgradeType).
func TestFeatureOpUpgradeType(t *testing.T) {
	for _, c := range []struct {
		op     featureOp
		unsafe bool
		want   int8
	}{{opUpgrade, false, 1}, {opDowngrade, false, 2}, {opDowngrade, true, 3}, {opDisable, false, 2}, {opDisable, true, 3}} {
		if got := c.op.upgradeType(c.unsafe); got != c.want {
			t.Errorf("%s.upgradeType(%v) = %d, want %d", c.op, c.unsafe, got, c.want)
		}
	}
}

// kafka-features' result lines: sorted by feature, the top-level error
// failing every feature, else each feature's own result (v0, v1).
func TestPrintUpgradeResults(t *testing.T) {
	updates := []featureUpdate{{"kraft.version", 1}, {"group.version", 1}}
	msg := "The update failed for all features since the following feature had an error: no"
	top := kmsg.NewPtrUpdateFeaturesResponse()
	top.ErrorCode, top.ErrorMessage = kerr.InvalidUpdateVersion.Code, &msg
	perFeature := kmsg.NewPtrUpdateFeaturesResponse()
	for _, r := range []struct {
		name string
		code int16
	}{{"group.version", kerr.InvalidUpdateVersion.Code}, {"kraft.version", 0}} {
		res := kmsg.NewUpdateFeaturesResponseResult()
		res.Feature, res.ErrorCode = r.name, r.code
		perFeature.Results = append(perFeature.Results, res)
	}
	cases := []struct {
		what   string
		resp   *kmsg.UpdateFeaturesResponse
		dryRun bool
		out    string
		failed int
	}{
		{"success", kmsg.NewPtrUpdateFeaturesResponse(), false, "group.version was upgraded to 1.\nkraft.version was upgraded to 1.\n", 0},
		{"dry run", kmsg.NewPtrUpdateFeaturesResponse(), true, "group.version can be upgraded to 1.\nkraft.version can be upgraded to 1.\n", 0},
		{"top-level error", top, false, "Could not upgrade group.version to 1. " + msg + "\nCould not upgrade kraft.version to 1. " + msg + "\n", 2},
		{"per-feature error", perFeature, true, "Can not upgrade group.version to 1. INVALID_UPDATE_VERSION: " + kerr.InvalidUpdateVersion.Description +
			"\nkraft.version can be upgraded to 1.\n", 1},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			var b strings.Builder
			if failed := printUpdateResults(&b, opUpgrade, updates, c.resp, c.dryRun); b.String() != c.out || failed != c.failed {
				t.Errorf("printUpdateResults = %q, %d failed; want %q, %d", b.String(), failed, c.out, c.failed)
			}
		})
	}
}

// kafka-features' lines for downgrade and disable (FeatureCommand.update).
func TestPrintDowngradeAndDisableResults(t *testing.T) {
	msg := "The update failed for all features since the following feature had an error: no"
	failed := kmsg.NewPtrUpdateFeaturesResponse()
	failed.ErrorCode, failed.ErrorMessage = kerr.InvalidUpdateVersion.Code, &msg
	ok := kmsg.NewPtrUpdateFeaturesResponse()
	cases := []struct {
		op     featureOp
		resp   *kmsg.UpdateFeaturesResponse
		dryRun bool
		out    string
	}{
		{opDowngrade, ok, false, "group.version was downgraded to 0.\ntransaction.version was downgraded to 1.\n"},
		{opDowngrade, ok, true, "group.version can be downgraded to 0.\ntransaction.version can be downgraded to 1.\n"},
		{opDowngrade, failed, false, "Could not downgrade group.version to 0. " + msg + "\nCould not downgrade transaction.version to 1. " + msg + "\n"},
		{opDowngrade, failed, true, "Can not downgrade group.version to 0. " + msg + "\nCan not downgrade transaction.version to 1. " + msg + "\n"},
		{opDisable, ok, false, "group.version was disabled.\ntransaction.version was disabled.\n"},
		{opDisable, ok, true, "group.version can be disabled.\ntransaction.version can be disabled.\n"},
		{opDisable, failed, false, "Could not disable group.version. " + msg + "\nCould not disable transaction.version. " + msg + "\n"},
		{opDisable, failed, true, "Can not disable group.version. " + msg + "\nCan not disable transaction.version. " + msg + "\n"},
	}
	for _, c := range cases {
		updates := []featureUpdate{{"transaction.version", 1}, {"group.version", 0}}
		if c.op == opDisable {
			updates[0].level = 0
		}
		var b strings.Builder
		printUpdateResults(&b, c.op, updates, c.resp, c.dryRun)
		if b.String() != c.out {
			t.Errorf("printUpdateResults(%s, dry run %v) = %q, want %q", c.op, c.dryRun, b.String(), c.out)
		}
	}
}

// FuzzParseFeatureUpdates: any --feature value is parsed or refused, never
// a panic; what parses prints back as NAME=LEVEL and parses the same.
func FuzzParseFeatureUpdates(f *testing.F) {
	for _, s := range []string{"kraft.version=1", "kraft.version", "a=b", " metadata.version = 30 ", "x=99999", "=1", "x=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseFeatureUpdates([]string{s})
		if err != nil {
			return
		}
		if len(got) != 1 {
			t.Fatalf("parseFeatureUpdates(%q) = %v, want one update", s, got)
		}
		again, err := parseFeatureUpdates([]string{fmt.Sprintf("%s=%d", got[0].name, got[0].level)})
		if err != nil || len(again) != 1 || again[0] != got[0] {
			t.Fatalf("%q parsed to %v, which reparses to %v, %v", s, got, again, err)
		}
	})
}
