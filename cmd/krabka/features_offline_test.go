package main

import (
	"strings"
	"testing"
)

// version-mapping prints what Kafka 4.3.1's kafka-features prints: the
// release as given, then every feature in Kafka's order at its default
// level (FeatureCommand.handleVersionMapping); an unknown release is
// refused with Kafka's message.
func TestVersionMapping(t *testing.T) {
	latest := "metadata.version=30 (4.3-IV0)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\neligible.leader.replicas.version=1\nshare.version=1\nstreams.version=1\n"
	const unknown = "Error: unknown release version '%s'. Supported versions are: 3.3-IV3 to 4.3-IV0\n"
	cases := []struct {
		what string
		args []string
		out  string
		err  string // the release named in the refusal, "" for none
	}{
		{"the latest production release by default", nil, latest, ""},
		{"a release by name", []string{"--release-version", "4.3-IV0"}, latest, ""},
		{"3.9", []string{"--release-version", "3.9"},
			"metadata.version=21 (3.9)\nkraft.version=1\ntransaction.version=0\ngroup.version=0\neligible.leader.replicas.version=0\nshare.version=0\nstreams.version=0\n", ""},
		{"4.0-IV1", []string{"--release-version", "4.0-IV1"},
			"metadata.version=23 (4.0-IV1)\nkraft.version=1\ntransaction.version=0\ngroup.version=1\neligible.leader.replicas.version=0\nshare.version=0\nstreams.version=0\n", ""},
		{"4.1", []string{"--release-version", "4.1"},
			"metadata.version=27 (4.1)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\neligible.leader.replicas.version=1\nshare.version=0\nstreams.version=0\n", ""},
		{"the oldest release", []string{"--release-version", "3.3"},
			"metadata.version=7 (3.3)\nkraft.version=0\ntransaction.version=0\ngroup.version=0\neligible.leader.replicas.version=0\nshare.version=0\nstreams.version=0\n", ""},
		{"a patch release counts as its release", []string{"--release-version", "4.2.1"},
			"metadata.version=29 (4.2.1)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\neligible.leader.replicas.version=1\nshare.version=1\nstreams.version=1\n", ""},
		{"older than 3.3-IV3", []string{"--release-version", "3.2"}, "", "3.2"},
		{"ZooKeeper-era", []string{"--release-version", "2.9-IV2"}, "", "2.9-IV2"},
		{"not a release", []string{"--release-version", "invalid"}, "", "invalid"},
		{"newer than this build", []string{"--release-version", "4.4-IV0"}, "", "4.4-IV0"},
		{"empty", []string{"--release-version", ""}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			r := runKrabka(t, append([]string{"features", "version-mapping"}, c.args...)...)
			wantCode, wantErr := 0, ""
			if c.out == "" {
				wantCode, wantErr = 1, strings.Replace(unknown, "%s", c.err, 1)
			}
			if r.code != wantCode || r.stdout != c.out || r.stderr != wantErr {
				t.Errorf("version-mapping %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
					strings.Join(c.args, " "), r.code, r.stdout, r.stderr, wantCode, c.out, wantErr)
			}
		})
	}
}

// feature-dependencies prints what Kafka 4.3.1's kafka-features prints
// (FeatureCommand.handleFeatureDependencies), one --feature after another;
// the first it refuses ends the command with Kafka's message, after the
// lines of those before it.
func TestFeatureDependencies(t *testing.T) {
	cases := []struct {
		what     string
		features []string
		out      string
		err      string // "" for none
	}{
		{"a level with a dependency", []string{"share.version=1"}, "share.version=1 requires:\n    metadata.version=27 (4.1-IV1)\n", ""},
		{"levels without one", []string{"kraft.version=1", "transaction.version=2", "group.version=0", "streams.version=1"},
			"kraft.version=1 has no dependencies.\ntransaction.version=2 has no dependencies.\ngroup.version=0 has no dependencies.\nstreams.version=1 has no dependencies.\n", ""},
		{"metadata.version", []string{"metadata.version=21", "eligible.leader.replicas.version=1"},
			"metadata.version=21 (3.9-IV0) has no dependencies.\neligible.leader.replicas.version=1 requires:\n    metadata.version=24 (4.0-IV2)\n", ""},
		{"an unknown feature", []string{"group.version=1", "test.feature.version=1"}, "group.version=1 has no dependencies.\n",
			"unknown feature: test.feature.version (known: eligible.leader.replicas.version, group.version, kraft.version, metadata.version, share.version, streams.version, transaction.version)"},
		{"an unknown level", []string{"transaction.version=3"}, "", "no feature:transaction.version with feature level 3"},
		{"a negative level", []string{"group.version=-1"}, "", "no feature:group.version with feature level -1"},
		{"an unknown metadata.version", []string{"metadata.version=6"}, "", "unknown metadata.version 6"},
		{"a metadata.version past this build's", []string{"metadata.version=31"}, "", "unknown metadata.version 31"},
		{"no level", []string{"group.version"}, "", `--feature "group.version": can't parse feature=level string: equals sign not found`},
		{"a level that is not a number", []string{"group.version=one"}, "", `--feature "group.version=one": can't parse feature=level string: unable to parse one as a short`},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			args := []string{"features", "feature-dependencies"}
			for _, f := range c.features {
				args = append(args, "--feature", f)
			}
			r := runKrabka(t, args...)
			wantCode, wantErr := 0, ""
			if c.err != "" {
				wantCode, wantErr = 1, "Error: "+c.err+"\n"
			}
			if r.code != wantCode || r.stdout != c.out || r.stderr != wantErr {
				t.Errorf("feature-dependencies %v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
					c.features, r.code, r.stdout, r.stderr, wantCode, c.out, wantErr)
			}
		})
	}
}

// The offline subcommands need --feature where Kafka's do, and refuse
// the connection flags, which they would not use.
func TestOfflineFeaturesUsage(t *testing.T) {
	mustFail(t, `required flag(s) "feature" not set`, "features", "feature-dependencies")
	mustFail(t, "features version-mapping reads this build's feature table and connects to nothing: drop --bootstrap-controller and --bootstrap-server",
		"features", "--bootstrap-controller", "localhost:9093", "version-mapping")
	mustFail(t, "features feature-dependencies reads this build's feature table and connects to nothing",
		"features", "--bootstrap-server", "localhost:9092", "feature-dependencies", "--feature", "group.version=1")
}
