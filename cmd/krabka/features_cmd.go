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
}

// newFeaturesCommand builds "krabka features".
func newFeaturesCommand(a *app) *cobra.Command {
	var o featuresOptions
	cmd := &cobra.Command{
		Use:   "features --bootstrap-controller HOST:PORT[,...] (describe | upgrade)",
		Short: "Describe or upgrade feature levels (kafka-features)",
		Long: "features describe prints, for each feature the controller supports, its\n" +
			"supported range and finalized level (ApiVersions), in the layout of\n" +
			"Kafka's kafka-features. features upgrade asks the quorum leader to raise\n" +
			"feature levels (UpdateFeatures); upgrade --feature kraft.version=1 turns\n" +
			"a static quorum (controller.quorum.voters) into a dynamic one.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("features needs a subcommand: describe or upgrade")
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
	upgrade := &cobra.Command{
		Use:   "upgrade (--feature NAME=LEVEL ... | --release-version VERSION) [--dry-run]",
		Short: "Upgrade feature levels",
		Long: "upgrade asks the quorum leader to raise each --feature to its level. With\n" +
			"--release-version it asks for that release's metadata.version and the\n" +
			"default levels of the other features, but never for kraft.version, which\n" +
			"changes only when named (--feature kraft.version=1): that upgrade cannot\n" +
			"be undone. --dry-run has the leader check the upgrade and change nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUpgradeFeatures(cmd.Context(), a.stdout, o)
		},
	}
	f := upgrade.Flags()
	f.StringArrayVar(&o.features, "feature", nil, "a feature upgrade NAME=LEVEL, e.g. kraft.version=1 (repeatable)")
	f.StringVar(&o.releaseVersion, "release-version", "", "the release whose metadata.version and default feature levels to upgrade to, e.g. 4.3 (kraft.version is left as it is)")
	f.BoolVar(&o.dryRun, "dry-run", false, "validate the upgrade on the leader, but do not perform it")
	cmd.AddCommand(describe, upgrade)
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
// level. kraft.version is not among them: Kafka's kafka-features sets it
// too (its default level for 4.x releases is 1), which makes a static
// quorum dynamic without being asked (KAFKA-21426).
func releaseUpdates(r string) ([]featureUpdate, error) {
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
		out = append(out, featureUpdate{name: name, level: defaultLevel(name, mv)})
	}
	return out, nil
}

// runUpgradeFeatures is "krabka features upgrade".
func runUpgradeFeatures(ctx context.Context, stdout io.Writer, o featuresOptions) error {
	addrs, err := o.quorum.controllers()
	if err != nil {
		return err
	}
	var updates []featureUpdate
	switch {
	case o.releaseVersion != "" && len(o.features) > 0:
		return errors.New("can not specify --release-version with other feature flags (--feature)")
	case o.releaseVersion != "":
		updates, err = releaseUpdates(o.releaseVersion)
	default:
		updates, err = parseFeatureUpdates(o.features)
	}
	if err != nil {
		return err
	}
	if len(updates) == 0 {
		return errors.New("you must specify at least one feature to upgrade: --feature NAME=LEVEL or --release-version VERSION")
	}
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
		if o.dryRun && req.Version < 1 {
			return fmt.Errorf("controller %s does not support --dry-run (UpdateFeatures v1)", leader.addr)
		}
		req.TimeoutMillis = int32(min(o.quorum.timeout, time.Minute) / time.Millisecond)
		req.ValidateOnly = o.dryRun
		for _, u := range updates {
			fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = u.name, u.level, 1
			req.FeatureUpdates = append(req.FeatureUpdates, fu)
		}
		resp, err := leader.request(ctx, req)
		if err != nil {
			return fmt.Errorf("%w: %w", err, errRetry)
		}
		answer = resp.(*kmsg.UpdateFeaturesResponse)
		if wire.Retriable(answer.ErrorCode) {
			// The leader moved (NOT_CONTROLLER), or the upgrade did not
			// commit in time: ask again; an upgrade made meanwhile is
			// then done already.
			return fmt.Errorf("controller %s: UpdateFeatures: %w: %w", leader.addr, wire.ErrorForCode(answer.ErrorCode), errRetry)
		}
		return nil
	})
	if err != nil {
		return err
	}
	failed := printUpgradeResults(&out, updates, answer, o.dryRun)
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d out of %d operation(s) failed", failed, len(updates))
	}
	return nil
}

// printUpgradeResults writes kafka-features' line for each update, sorted
// by feature name, and returns how many failed: the top-level error of
// the answer fails every feature, as Kafka's admin client completes each
// feature's result with it.
func printUpgradeResults(w io.Writer, updates []featureUpdate, resp *kmsg.UpdateFeaturesResponse, dryRun bool) int {
	sorted := slices.Clone(updates)
	slices.SortFunc(sorted, func(a, b featureUpdate) int { return strings.Compare(a.name, b.name) })
	failed := 0
	for _, u := range sorted {
		reason := featureError(resp, u.name)
		switch {
		case reason == "" && dryRun:
			fmt.Fprintf(w, "%s can be upgraded to %d.\n", u.name, u.level)
		case reason == "":
			fmt.Fprintf(w, "%s was upgraded to %d.\n", u.name, u.level)
		case dryRun:
			failed++
			fmt.Fprintf(w, "Can not upgrade %s to %d. %s\n", u.name, u.level, reason)
		default:
			failed++
			fmt.Fprintf(w, "Could not upgrade %s to %d. %s\n", u.name, u.level, reason)
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
