package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/raft"
)

func TestLoadServerConfigOverrides(t *testing.T) {
	n := newTestNode(t, 1, staticVoters, "unknown.in.file=1")
	odd := filepath.Join(n.root, " dir with = : # ! \\ tabs\tand ünïcödé ")
	cfg, warnings, err := loadServerConfig(n.props, []string{
		"node.id=7", "controller.quorum.voters=1@localhost:9093,7@localhost:9094",
		"metadata.log.dir=" + odd,
		"unknown.override=x",
		"node.id=1", // a later override wins
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeID != 1 || len(cfg.QuorumVoters) != 2 || cfg.QuorumVoters[1].ID != 7 {
		t.Errorf("node.id %d, voters %+v", cfg.NodeID, cfg.QuorumVoters)
	}
	// Values are trimmed as in the file; everything inside survives.
	if want := strings.TrimSpace(odd); cfg.MetadataLogDir != want {
		t.Errorf("metadata.log.dir %q, want %q", cfg.MetadataLogDir, want)
	}
	want := raft.Warnings{
		{Key: "unknown.in.file", Reason: "not used by a Krabka controller; ignored"},
		{Key: "unknown.override", Reason: "not used by a Krabka controller; ignored"},
	}
	if len(warnings) != 2 || warnings[0] != want[0] || warnings[1] != want[1] {
		t.Errorf("warnings %v, want %v", warnings, want)
	}
	// Without overrides the file is read as it is.
	if cfg, _, err := loadServerConfig(n.props, nil); err != nil || cfg.NodeID != 1 || cfg.MetadataLogDir != n.meta {
		t.Errorf("no overrides: node.id %d, metadata.log.dir %s, %v", cfg.NodeID, cfg.MetadataLogDir, err)
	}
}

func TestLoadServerConfigFileEndingInAContinuation(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	writeFile(t, n.props, []byte(strings.Join([]string{
		"process.roles=controller", "node.id=1", "controller.listener.names=CONTROLLER",
		"listeners=CONTROLLER://:9093", staticVoters, "metadata.log.dir=" + n.meta + `\`,
	}, "\n")))
	cfg, _, err := loadServerConfig(n.props, []string{"node.id=1", "controller.quorum.voters=1@localhost:9093"})
	if err != nil || cfg.MetadataLogDir != n.meta {
		t.Errorf("metadata.log.dir %q, %v", cfg.MetadataLogDir, err)
	}
}

func TestServerStartOverride(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	other := filepath.Join(n.root, "other")
	// The override wins over the file: the node looks in the other
	// directory, and warns about the unknown key as it would in the file.
	r := runKrabka(t, "server-start", n.props, "--override", "metadata.log.dir="+other, "--override", "no.such.key=1")
	if r.code != 1 || !strings.Contains(r.stderr, "Error: no meta.properties in "+other+": format the directory first") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `msg="property not used" file=`+n.props+" key=no.such.key") {
		t.Errorf("stderr lacks the warning: %q", r.stderr)
	}
	mustFail(t, `--override "node.id": want KEY=VALUE, e.g. --override node.id=2`, "server-start", n.props, "--override", "node.id")
	mustFail(t, `--override "=1": want KEY=VALUE`, "server-start", n.props, "--override="+"=1")
	mustFail(t, "flag needs an argument: --override", "server-start", n.props, "--override")
	mustFail(t, "node.id", "server-start", n.props, "--override", "node.id=x")
	mustFail(t, "characters above U+FFFF are not supported", "server-start", n.props, "--override", "metadata.log.dir=/🦀")
}
