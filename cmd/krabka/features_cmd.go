package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// "krabka features", Kafka's kafka-features (FeatureCommand): describe
// prints the features the controllers support and their finalized
// levels from ApiVersions; upgrade sends UpdateFeatures to the quorum
// leader. The one feature Krabka's controllers change is kraft.version:
// upgrading it to 1 makes a static quorum dynamic (docs/operations.md).

// featuresOptions are the flags of "krabka features".
type featuresOptions struct {
	quorum         quorumOptions
	features       []string
	releaseVersion string
	dryRun         bool
	unsafe         bool
}

// newFeaturesCommand builds "krabka features".
func newFeaturesCommand(a *app) *cobra.Command {
	var o featuresOptions
	cmd := &cobra.Command{
		Use:   "features --bootstrap-controller HOST:PORT[,...] (describe | upgrade | downgrade | disable) | (version-mapping | feature-dependencies)",
		Short: "Describe, upgrade, downgrade or disable feature levels (kafka-features)",
		Long: "features describe prints, for each feature the controller supports, its\n" +
			"supported range and finalized level (ApiVersions), in the layout of\n" +
			"Kafka's kafka-features. features upgrade, downgrade and disable ask the\n" +
			"quorum leader to change feature levels (UpdateFeatures); upgrade --feature\n" +
			"kraft.version=1 turns a static quorum (controller.quorum.voters) into a\n" +
			"dynamic one. version-mapping and feature-dependencies read this build's\n" +
			"feature table and connect to nothing.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("features needs a subcommand: describe, upgrade, downgrade, disable, version-mapping or feature-dependencies")
		},
	}
	connectionFlags(cmd, &o.quorum)
	describe := &cobra.Command{
		Use:   "describe",
		Short: "Print the supported and finalized feature levels",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDescribeFeatures(cmd.Context(), a.stdout, o.quorum)
		},
	}
	upgrade := newUpdateCommand(a, &o, opUpgrade, "upgrade (--feature NAME=LEVEL ... | --release-version VERSION) [--dry-run]",
		"Upgrade feature levels",
		"upgrade asks the quorum leader to raise each --feature to its level. With\n"+
			"--release-version it asks for that release's metadata.version and the\n"+
			"default levels above 0 of the other features, but never for kraft.version,\n"+
			"which changes only when named (--feature kraft.version=1): that upgrade\n"+
			"cannot be undone. --dry-run has the leader check the upgrade and change\n"+
			"nothing.",
		"a feature upgrade NAME=LEVEL, e.g. kraft.version=1 (repeatable)")
	downgrade := newUpdateCommand(a, &o, opDowngrade, "downgrade (--feature NAME=LEVEL ... | --release-version VERSION) [--dry-run] [--unsafe]",
		"Downgrade feature levels",
		"downgrade asks the quorum leader to lower each --feature to its level\n"+
			"(a safe downgrade; --unsafe asks for an unsafe one, which may destroy\n"+
			"metadata). With --release-version it asks for that release's\n"+
			"metadata.version and the default level of every other feature but\n"+
			"kraft.version, which is never downgraded. The leader refuses, as Kafka's\n"+
			"controller does, a metadata.version downgrade past a level that changed\n"+
			"the metadata. --dry-run has the leader check the downgrade and change\n"+
			"nothing.",
		"a feature downgrade NAME=LEVEL, e.g. transaction.version=1 (repeatable)")
	disable := newUpdateCommand(a, &o, opDisable, "disable --feature NAME ... [--dry-run] [--unsafe]",
		"Disable features (downgrade them to level 0)",
		"disable asks the quorum leader to downgrade each --feature to level 0,\n"+
			"which removes it from the finalized features; --unsafe asks for an unsafe\n"+
			"downgrade. kraft.version and metadata.version cannot be disabled.\n"+
			"--dry-run has the leader check it and change nothing.",
		"a feature to disable, by name, e.g. group.version (repeatable)")
	cmd.AddCommand(describe, upgrade, downgrade, disable, newVersionMappingCommand(a, &o), newFeatureDependenciesCommand(a, &o))
	return cmd
}

// newUpdateCommand builds the subcommand of op (upgrade, downgrade or
// disable) with its flags: --feature (described by featureHelp) and
// --dry-run; --release-version for upgrade and downgrade; --unsafe for
// downgrade and disable.
func newUpdateCommand(a *app, o *featuresOptions, op featureOp, use, short, long, featureHelp string) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUpdateFeatures(cmd.Context(), a.stdout, *o, op)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.features, "feature", nil, featureHelp)
	if op != opDisable {
		example := map[featureOp]string{opUpgrade: "4.3", opDowngrade: "4.2"}[op]
		f.StringVar(&o.releaseVersion, "release-version", "", fmt.Sprintf("the release whose metadata.version and default feature levels to %s to, e.g. %s (kraft.version is left as it is)", op, example))
	}
	if op != opUpgrade {
		f.BoolVar(&o.unsafe, "unsafe", false, "ask for an unsafe downgrade, which may destroy metadata")
	}
	f.BoolVar(&o.dryRun, "dry-run", false, fmt.Sprintf("validate the %s on the leader, but do not perform it", op))
	return cmd
}

// featureRow is one line of describe.
type featureRow struct {
	name               string
	minLevel, maxLevel int16
	finalized          int16
}

// describeLevel formats a level of feature name as kafka-features does:
// metadata.version by its release name.
func describeLevel(name string, level int16) string {
	if name == featureMetadataVersion {
		if level > 0 && int(level) < len(metadataVersions) {
			return metadataVersions[level]
		}
		return "UNKNOWN " + strconv.Itoa(int(level))
	}
	return strconv.Itoa(int(level))
}

// runDescribeFeatures is "krabka features describe".
func runDescribeFeatures(ctx context.Context, stdout io.Writer, o quorumOptions) error {
	addrs, err := o.controllers()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	av, err := apiVersionsOf(ctx, addrs)
	if err != nil {
		return err
	}
	rows, epoch := featureRows(av)
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "Feature: %s\tSupportedMinVersion: %s\tSupportedMaxVersion: %s\tFinalizedVersionLevel: %s\tEpoch: %s\n",
			r.name, describeLevel(r.name, r.minLevel), describeLevel(r.name, r.maxLevel), describeLevel(r.name, r.finalized), epoch)
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// apiVersionsOf asks the first controller of addrs that answers for its
// ApiVersions at v4, the first version that lists the features whose
// minimum level is 0 (kraft.version among them).
func apiVersionsOf(ctx context.Context, cs controllers) (*kmsg.ApiVersionsResponse, error) {
	var errs []error
	for _, addr := range cs.addrs {
		c, err := dialController(ctx, addr, cs.security)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 4
		req.ClientSoftwareName, req.ClientSoftwareVersion = "krabka", "devel"
		resp, err := c.request(ctx, req)
		c.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if err := answerError("ApiVersions", addr, av.ErrorCode, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		return av, nil
	}
	return nil, fmt.Errorf("no controller of --bootstrap-controller answered: %w", errors.Join(errs...))
}

// featureRows are describe's lines, sorted by feature name, and the
// epoch of the finalized levels ("-" when the controller gives none).
func featureRows(av *kmsg.ApiVersionsResponse) ([]featureRow, string) {
	var rows []featureRow
	for _, f := range av.SupportedFeatures {
		r := featureRow{name: f.Name, minLevel: f.MinVersion, maxLevel: f.MaxVersion}
		for _, fin := range av.FinalizedFeatures {
			if fin.Name == f.Name {
				r.finalized = fin.MaxVersionLevel
			}
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b featureRow) int { return strings.Compare(a.name, b.name) })
	epoch := "-"
	if av.FinalizedFeaturesEpoch >= 0 {
		epoch = strconv.FormatInt(av.FinalizedFeaturesEpoch, 10)
	}
	return rows, epoch
}

// featureUpdate is one requested level.
type featureUpdate struct {
	name  string
	level int16
}

// parseFeatureUpdates reads the --feature values, as kafka-features
// does (FeatureCommand.parseNameAndLevel).
func parseFeatureUpdates(values []string) ([]featureUpdate, error) {
	var out []featureUpdate
	for _, v := range values {
		name, levelText, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--feature %q: can't parse feature=level string: equals sign not found", v)
		}
		name, levelText = strings.TrimSpace(name), strings.TrimSpace(levelText)
		if name == "" {
			return nil, fmt.Errorf("--feature %q: no feature name before the equals sign", v)
		}
		level, err := strconv.ParseInt(levelText, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("--feature %q: can't parse feature=level string: unable to parse %s as a short", v, levelText)
		}
		if slices.ContainsFunc(out, func(u featureUpdate) bool { return u.name == name }) {
			return nil, fmt.Errorf("--feature %q: feature %s was specified more than once", v, name)
		}
		out = append(out, featureUpdate{name: name, level: int16(level)})
	}
	return out, nil
}

// releaseUpdates are the updates of --release-version r: its
// metadata.version and the default level of every other feature at that
// level, leaving out the levels of 0 of an upgrade, as Kafka's
// kafka-features does (an upgrade to 0 would be a downgrade).
// kraft.version is not among them: Kafka's kafka-features sets it too
// (its default level for 4.x releases is 1), which makes a static quorum
// dynamic without being asked (KAFKA-21426).
func releaseUpdates(r string, op featureOp) ([]featureUpdate, error) {
	// Every level this build knows is named; the controllers refuse an
	// unstable one unless unstable.feature.versions.enable is set.
	mv, err := parseReleaseVersion(r, true)
	if err != nil {
		return nil, fmt.Errorf("--release-version: %w", err)
	}
	out := []featureUpdate{{name: featureMetadataVersion, level: mv}}
	for _, name := range featureNames() {
		if name == featureMetadataVersion || name == featureKRaftVersion {
			continue
		}
		if l := defaultLevel(name, mv); l > 0 || op != opUpgrade {
			out = append(out, featureUpdate{name: name, level: l})
		}
	}
	return out, nil
}

// featureOp is the change "krabka features" asks for: its subcommand.
type featureOp string

const (
	opUpgrade   featureOp = "upgrade"
	opDowngrade featureOp = "downgrade"
	opDisable   featureOp = "disable"
)

// upgradeType is the UpdateFeatures v1+ UpgradeType op asks for:
// UPGRADE (1), SAFE_DOWNGRADE (2), or UNSAFE_DOWNGRADE (3) with --unsafe
// (Kafka's FeatureCommand.downgradeType).
func (op featureOp) upgradeType(unsafe bool) int8 {
	switch {
	case op == opUpgrade:
		return 1
	case unsafe:
		return 3
	}
	return 2
}

// featureUpdates are the updates the flags of op ask for.
func featureUpdates(o featuresOptions, op featureOp) ([]featureUpdate, error) {
	if op == opDisable {
		return parseFeatureNames(o.features)
	}
	switch {
	case o.releaseVersion != "" && len(o.features) > 0:
		return nil, errors.New("can not specify --release-version with other feature flags (--feature)")
	case o.releaseVersion != "":
		return releaseUpdates(o.releaseVersion, op)
	}
	return parseFeatureUpdates(o.features)
}

// parseFeatureNames reads the --feature values of disable, each a
// feature name, at level 0.
func parseFeatureNames(values []string) ([]featureUpdate, error) {
	var out []featureUpdate
	for _, v := range values {
		name := strings.TrimSpace(v)
		switch {
		case name == "":
			return nil, fmt.Errorf("--feature %q: a feature name is needed", v)
		case strings.Contains(name, "="):
			return nil, fmt.Errorf("--feature %q: disable takes a feature name, not NAME=LEVEL", v)
		case slices.ContainsFunc(out, func(u featureUpdate) bool { return u.name == name }):
			return nil, fmt.Errorf("--feature %q: feature %s was specified more than once", v, name)
		}
		out = append(out, featureUpdate{name: name})
	}
	return out, nil
}

// runUpdateFeatures is "krabka features upgrade", "downgrade" and
// "disable": one UpdateFeatures request to the quorum leader, with
// kafka-features' line for each feature.
func runUpdateFeatures(ctx context.Context, stdout io.Writer, o featuresOptions, op featureOp) error {
	addrs, err := o.quorum.controllers()
	if err != nil {
		return err
	}
	updates, err := featureUpdates(o, op)
	if err != nil {
		return err
	}
	if len(updates) == 0 {
		if op == opDisable {
			return errors.New("you must specify at least one feature to disable: --feature NAME")
		}
		return fmt.Errorf("you must specify at least one feature to %s: --feature NAME=LEVEL or --release-version VERSION", op)
	}
	typ := op.upgradeType(o.unsafe)
	ctx, cancel := context.WithTimeout(ctx, o.quorum.timeout)
	defer cancel()
	var out strings.Builder
	if o.releaseVersion != "" {
		out.WriteString("--release-version does not change kraft.version; to make a static quorum dynamic, upgrade it by name: --feature kraft.version=1\n")
	}
	var answer *kmsg.UpdateFeaturesResponse
	err = withLeader(ctx, addrs, func(ctx context.Context, leader *controllerConn, _ string) (err error) {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		if req.Version, err = leader.version(req, "UpdateFeatures", 0, 2); err != nil {
			return err
		}
		switch {
		case o.dryRun && req.Version < 1:
			return fmt.Errorf("controller %s does not support --dry-run (UpdateFeatures v1)", leader.addr)
		case typ == 3 && req.Version < 1:
			return fmt.Errorf("controller %s does not support --unsafe (UpdateFeatures v1)", leader.addr)
		}
		req.TimeoutMillis = int32(min(o.quorum.timeout, time.Minute) / time.Millisecond)
		req.ValidateOnly = o.dryRun
		for _, u := range updates {
			fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			// v0 has AllowDowngrade in place of the upgrade type.
			fu.Feature, fu.MaxVersionLevel, fu.UpgradeType, fu.AllowDowngrade = u.name, u.level, typ, typ != 1
			req.FeatureUpdates = append(req.FeatureUpdates, fu)
		}
		resp, err := leader.request(ctx, req)
		if err != nil {
			return fmt.Errorf("%w: %w", err, errRetry)
		}
		answer = resp.(*kmsg.UpdateFeaturesResponse)
		if wire.Retriable(answer.ErrorCode) {
			// The leader moved (NOT_CONTROLLER), or the change did not
			// commit in time: ask again; a change made meanwhile is
			// then done already.
			return fmt.Errorf("controller %s: UpdateFeatures: %w: %w", leader.addr, wire.ErrorForCode(answer.ErrorCode), errRetry)
		}
		return nil
	})
	if err != nil {
		return err
	}
	failed := printUpdateResults(&out, op, updates, answer, o.dryRun)
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d out of %d operation(s) failed", failed, len(updates))
	}
	return nil
}

// printUpdateResults writes kafka-features' line for each update of op,
// sorted by feature name ("X was upgraded to N.", "X was disabled.",
// "Could not downgrade X to N. <reason>"; "can be" and "Can not" for a
// dry run), and returns how many failed: the top-level error of the
// answer fails every feature, as Kafka's admin client completes each
// feature's result with it.
func printUpdateResults(w io.Writer, op featureOp, updates []featureUpdate, resp *kmsg.UpdateFeaturesResponse, dryRun bool) int {
	sorted := slices.Clone(updates)
	slices.SortFunc(sorted, func(a, b featureUpdate) int { return strings.Compare(a.name, b.name) })
	failed := 0
	for _, u := range sorted {
		done, what := fmt.Sprintf("%sd to %d.", op, u.level), fmt.Sprintf("%s %s to %d", op, u.name, u.level)
		if op == opDisable {
			done, what = "disabled.", "disable "+u.name
		}
		reason := featureError(resp, u.name)
		switch {
		case reason == "" && dryRun:
			fmt.Fprintf(w, "%s can be %s\n", u.name, done)
		case reason == "":
			fmt.Fprintf(w, "%s was %s\n", u.name, done)
		case dryRun:
			failed++
			fmt.Fprintf(w, "Can not %s. %s\n", what, reason)
		default:
			failed++
			fmt.Fprintf(w, "Could not %s. %s\n", what, reason)
		}
	}
	return failed
}

// featureError is the reason the answer gives for feature name's
// failure, "" when it succeeded: the top-level error, else the feature's
// own result (UpdateFeatures v0 and v1).
func featureError(resp *kmsg.UpdateFeaturesResponse, name string) string {
	reason := func(code int16, msg *string) string {
		if code == 0 {
			return ""
		}
		if msg != nil && *msg != "" {
			return *msg
		}
		return wire.ErrorForCode(code).Error()
	}
	if r := reason(resp.ErrorCode, resp.ErrorMessage); r != "" {
		return r
	}
	for _, res := range resp.Results {
		if res.Feature == name {
			return reason(res.ErrorCode, res.ErrorMessage)
		}
	}
	return ""
}
