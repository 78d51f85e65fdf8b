package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// "krabka features version-mapping" and "feature-dependencies", Kafka's
// kafka-features subcommands of the same names: both read this build's
// feature table (metadata.KnownFeatures and the metadata.version names)
// and connect to nothing.

// kafkaFeatureOrder lists the features other than metadata.version in the
// order Kafka's tool prints them (server-common's Feature enum,
// Feature.PRODUCTION_FEATURES).
var kafkaFeatureOrder = []string{
	featureKRaftVersion,
	"transaction.version",
	"group.version",
	"eligible.leader.replicas.version",
	"share.version",
	"streams.version",
}

// newVersionMappingCommand builds "krabka features version-mapping".
func newVersionMappingCommand(a *app, o *featuresOptions) *cobra.Command {
	var release string
	cmd := &cobra.Command{
		Use:   "version-mapping [--release-version VERSION]",
		Short: "Print the feature levels a release implies (offline)",
		Long: "version-mapping prints the metadata.version of a release and the level\n" +
			"each other feature gets by default at it (what storage format sets), as\n" +
			"Kafka's kafka-features version-mapping does; without --release-version,\n" +
			"for the latest production release. It reads this build's feature table\n" +
			"and connects to nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := offlineOnly(o.quorum, "version-mapping"); err != nil {
				return err
			}
			if !cmd.Flags().Changed("release-version") {
				release = metadataVersionName(latestMetadataVersion)
			}
			return runVersionMapping(a.stdout, release)
		},
	}
	cmd.Flags().StringVar(&release, "release-version", "", "the release to map, e.g. 3.9 or 3.9-IV0 (default: the latest production release, "+metadataVersionName(latestMetadataVersion)+")")
	return cmd
}

// newFeatureDependenciesCommand builds "krabka features
// feature-dependencies".
func newFeatureDependenciesCommand(a *app, o *featuresOptions) *cobra.Command {
	var features []string
	cmd := &cobra.Command{
		Use:   "feature-dependencies --feature NAME=LEVEL ...",
		Short: "Print the feature levels a feature level needs (offline)",
		Long: "feature-dependencies prints, for each --feature NAME=LEVEL, the levels of\n" +
			"other features it needs, as Kafka's kafka-features feature-dependencies\n" +
			"does. It reads this build's feature table and connects to nothing.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := offlineOnly(o.quorum, "feature-dependencies"); err != nil {
				return err
			}
			return runFeatureDependencies(a.stdout, features)
		},
	}
	cmd.Flags().StringArrayVar(&features, "feature", nil, "a feature level NAME=LEVEL to look up, e.g. share.version=1 (repeatable, required)")
	_ = cmd.MarkFlagRequired("feature")
	return cmd
}

// offlineOnly refuses the connection flags for subcommand, which reads
// nothing from a controller.
func offlineOnly(o quorumOptions, subcommand string) error {
	if o.bootstrapControllers != "" || o.bootstrapServers != "" {
		return fmt.Errorf("features %s reads this build's feature table and connects to nothing: drop --bootstrap-controller and --bootstrap-server", subcommand)
	}
	return nil
}

// runVersionMapping prints "metadata.version=<level> (<release>)", release
// as given, then "<feature>=<level>" for the default level of each other
// feature at that metadata.version (Kafka's
// FeatureCommand.handleVersionMapping).
func runVersionMapping(stdout io.Writer, release string) error {
	mv, err := parseReleaseVersion(release, true)
	if err != nil {
		return fmt.Errorf("unknown release version '%s'. Supported versions are: %s to %s",
			release, metadataVersionName(minMetadataVersion), metadataVersionName(latestMetadataVersion))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%d (%s)\n", featureMetadataVersion, mv, release)
	for _, name := range kafkaFeatureOrder {
		fmt.Fprintf(&b, "%s=%d\n", name, defaultLevel(name, mv))
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// runFeatureDependencies prints, for each NAME=LEVEL of values in order,
// "<f>=<n> has no dependencies." or "<f>=<n> requires:" and one indented
// "<dep>=<level>" line per dependency, metadata.version levels with their
// release name (Kafka's FeatureCommand.handleFeatureDependencies). The
// lines of the values before one it refuses are printed.
func runFeatureDependencies(stdout io.Writer, values []string) error {
	var b strings.Builder
	flush := func(err error) error {
		if _, werr := io.WriteString(stdout, b.String()); werr != nil {
			return werr
		}
		return err
	}
	for _, v := range values {
		updates, err := parseFeatureUpdates([]string{v})
		if err != nil {
			return flush(err)
		}
		name, level := updates[0].name, updates[0].level
		if name == featureMetadataVersion {
			if level < minMetadataVersion || level > latestMetadataVersion {
				return flush(fmt.Errorf("unknown metadata.version %d", level))
			}
			fmt.Fprintf(&b, "%s=%d (%s) has no dependencies.\n", name, level, metadataVersionName(level))
			continue
		}
		f, ok := knownFeatures.Lookup(name)
		if !ok {
			return flush(fmt.Errorf("unknown feature: %s (known: %s)", name, strings.Join(featureNames(), ", ")))
		}
		fl, ok := f.Level(level, true)
		if !ok {
			return flush(errors.New("no feature:" + name + " with feature level " + strconv.Itoa(int(level))))
		}
		if len(fl.Requires) == 0 {
			fmt.Fprintf(&b, "%s=%d has no dependencies.\n", name, level)
			continue
		}
		fmt.Fprintf(&b, "%s=%d requires:\n", name, level)
		for _, req := range fl.Requires {
			if req.Feature == featureMetadataVersion {
				fmt.Fprintf(&b, "    %s=%d (%s)\n", req.Feature, req.Level, metadataVersionName(req.Level))
			} else {
				fmt.Fprintf(&b, "    %s=%d\n", req.Feature, req.Level)
			}
		}
	}
	return flush(nil)
}
