package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magiconair/properties"

	"github.com/krabka-go/krabka/raft"
)

// The apache/kafka image's rule: KAFKA_ dropped, lower-cased, _ to .,
// __ to _, ___ to -.
func TestDockerPropertyKey(t *testing.T) {
	for name, want := range map[string]string{
		"KAFKA_CONTROLLER_QUORUM_VOTERS":           "controller.quorum.voters",
		"KAFKA_NODE_ID":                            "node.id",
		"KAFKA_ABC___DEF":                          "abc-def",
		"KAFKA_ABC__DEF":                           "abc_def",
		"KAFKA_LISTENER_NAME_CONTROLLER_SSL__X":    "listener.name.controller.ssl_x",
		"KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL": "sasl.mechanism.controller.protocol",
	} {
		got, err := dockerPropertyKey(name)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := dockerPropertyKey("KAFKA_"); err == nil {
		t.Error("KAFKA_ alone names a property")
	}
}

// Only KAFKA_* variables that configure the server become properties,
// sorted; a value cannot add a line of its own, and a character the
// properties reader cannot take is refused by name.
func TestDockerServerProperties(t *testing.T) {
	lines, err := dockerServerProperties([]string{
		"PATH=/bin", "KAFKA_NODE_ID=2", "KAFKA_HEAP_OPTS=-Xmx1g", "KAFKA_JMX_PORT=9999",
		"KAFKA_OPTS=-Dx", "CLUSTER_ID=abc", "KAFKA_PROCESS_ROLES=controller",
		"KAFKA_SUPER_USERS=User:a\nsuper.users=User:evil", "KAFKA_X==y",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 || !slices.IsSorted(lines) {
		t.Fatalf("lines %q, want 4 sorted", lines)
	}
	p := loadRawProperties(t, strings.Join(lines, "\n"))
	if got := p.Keys(); !slices.Equal(got, []string{"node.id", "process.roles", "super.users", "x"}) {
		t.Errorf("keys %q: a value added a line", got)
	}
	if v, _ := p.Get("super.users"); v != "User:a\nsuper.users=User:evil" {
		t.Errorf("super.users read back as %q", v)
	}
	if v, _ := p.Get("x"); v != "=y" {
		t.Errorf("x read back as %q", v)
	}
	if _, err := dockerServerProperties([]string{"KAFKA_NODE_ID=\U0001F600"}); err == nil || !strings.Contains(err.Error(), "KAFKA_NODE_ID") {
		t.Errorf("a character above U+FFFF: %v, want an error naming the variable", err)
	}
}

// The mounted file comes first and the variables win; with neither, the
// defaults run a single controller; listeners follow advertised.listeners
// on every interface when nothing sets them.
func TestPrepareDockerConfig(t *testing.T) {
	load := func(t *testing.T, path string) raft.Config {
		t.Helper()
		cfg, _, err := raft.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	t.Run("defaults", func(t *testing.T) {
		path, err := prepareDockerConfig([]string{"PATH=/bin", "KAFKA_HEAP_OPTS=-Xmx1g"}, t.TempDir(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if cfg := load(t, path); cfg.NodeID != 1 || len(cfg.QuorumVoters) != 1 {
			t.Errorf("defaults: node.id %d, voters %v", cfg.NodeID, cfg.QuorumVoters)
		}
	})
	t.Run("mounted and environment", func(t *testing.T) {
		mounted := t.TempDir()
		file := "process.roles=controller\nnode.id=7\ncontroller.listener.names=CONTROLLER\n" +
			"listeners=CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=2@127.0.0.1:9093\nmetadata.log.dir=/m\\"
		if err := os.WriteFile(filepath.Join(mounted, "server.properties"), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		path, err := prepareDockerConfig([]string{"KAFKA_NODE_ID=2"}, mounted, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if cfg := load(t, path); cfg.NodeID != 2 || cfg.MetadataLogDir != "/m" {
			t.Errorf("node.id %d (want the variable's 2), metadata.log.dir %q (want the file's /m)", cfg.NodeID, cfg.MetadataLogDir)
		}
	})
	t.Run("listeners from advertised", func(t *testing.T) {
		env := []string{"KAFKA_PROCESS_ROLES=controller", "KAFKA_NODE_ID=1", "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
			"KAFKA_ADVERTISED_LISTENERS=CONTROLLER://controller-1:9093", "KAFKA_CONTROLLER_QUORUM_VOTERS=1@controller-1:9093",
			"KAFKA_METADATA_LOG_DIR=/var/lib/krabka"}
		path, err := prepareDockerConfig(env, t.TempDir(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if v, _ := loadRawProperties(t, string(data)).Get("listeners"); v != "CONTROLLER://0.0.0.0:9093" {
			t.Errorf("listeners %q, want advertised.listeners on 0.0.0.0:\n%s", v, data)
		}
	})
	t.Run("unreadable mounted file", func(t *testing.T) {
		mounted := t.TempDir()
		if err := os.Mkdir(filepath.Join(mounted, "server.properties"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := prepareDockerConfig(nil, mounted, t.TempDir()); err == nil || !strings.Contains(err.Error(), "server.properties") {
			t.Errorf("a directory in place of the mounted file: %v", err)
		}
	})
}

// Three containers' worth of docker-start, configured by environment
// alone as a compose file for the apache/kafka image would: the first
// formats a standalone dynamic quorum, the others join it with auto-join;
// all three become voters, and a restart with the same environment finds
// its directories formatted and serves again.
func TestDockerStartRunsADynamicQuorum(t *testing.T) {
	ports := []int{freePort(t), freePort(t), freePort(t)}
	envs := make([][]string, 3)
	for i := range 3 {
		envs[i] = []string{
			"KAFKA_PROCESS_ROLES=controller", fmt.Sprintf("KAFKA_NODE_ID=%d", i+1),
			"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
			fmt.Sprintf("KAFKA_ADVERTISED_LISTENERS=CONTROLLER://127.0.0.1:%d", ports[i]),
			fmt.Sprintf("KAFKA_LISTENERS=CONTROLLER://127.0.0.1:%d", ports[i]),
			fmt.Sprintf("KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS=127.0.0.1:%d", ports[0]),
			"KAFKA_CONTROLLER_QUORUM_AUTO_JOIN_ENABLE=true",
			"KAFKA_METADATA_LOG_DIR=" + filepath.Join(t.TempDir(), "metadata"),
			"CLUSTER_ID=" + testClusterID,
		}
	}
	envs[0] = append(envs[0], "KRABKA_STANDALONE=true")
	type node struct {
		cancel context.CancelFunc
		done   chan error
		logs   *syncBuffer
	}
	start := func(i int) node {
		ctx, cancel := context.WithCancel(context.Background())
		n := node{cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
		a := &app{stdout: n.logs, stderr: n.logs, log: slog.New(slog.NewTextHandler(n.logs, nil))}
		o := dockerOptions{mountedDir: t.TempDir(), configDir: t.TempDir(), admin: adminOptions{readyMaxLag: defaultReadyMaxLag}}
		go func() { n.done <- runDockerStart(ctx, a, envs[i], o) }()
		return n
	}
	stop := func(n node) {
		n.cancel()
		select {
		case err := <-n.done:
			if err != nil {
				t.Errorf("docker-start: %v\n%s", err, n.logs.String())
			}
		case <-time.After(40 * time.Second):
			t.Fatal("docker-start did not stop")
		}
	}
	nodes := []node{start(0), start(1), start(2)}
	defer func() {
		for _, n := range nodes {
			stop(n)
		}
	}()
	voters := func() string {
		var out, errOut syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		runContext(ctx, []string{"metadata-quorum", "--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", ports[0]), "describe", "--status"}, &out, &errOut)
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "CurrentVoters:") {
				return line
			}
		}
		return ""
	}
	all := func() bool {
		v := voters()
		return strings.Contains(v, `"id": 1`) && strings.Contains(v, `"id": 2`) && strings.Contains(v, `"id": 3`)
	}
	waitFor(t, 60*time.Second, "three voters", all, func() string { return voters() + "\n" + nodes[1].logs.String() })
	stop(nodes[2])
	nodes[2] = start(2)
	waitFor(t, 30*time.Second, "node 3 serving again", func() bool {
		return strings.Contains(nodes[2].logs.String(), "All of the log directories are already formatted.") &&
			strings.Contains(nodes[2].logs.String(), "controller started")
	}, nodes[2].logs.String)
}

// loadRawProperties reads data as a Java properties file, without
// expansion or validation.
func loadRawProperties(t *testing.T, data string) *properties.Properties {
	t.Helper()
	p, err := (&properties.Loader{Encoding: properties.ISO_8859_1, DisableExpansion: true}).LoadBytes([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond until it holds or d passes, then fails with what
// says.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool, says func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v:\n%s", what, d, says())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
