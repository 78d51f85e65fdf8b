package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/tlstest"
)

// composeCommand returns the docker compose command line available:
// "docker compose" (the plugin) or docker-compose.
func composeCommand() ([]string, error) {
	if _, err := run("docker", "compose", "version"); err == nil {
		return []string{"docker", "compose"}, nil
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		return nil, fmt.Errorf("neither docker compose nor docker-compose: %w", err)
	}
	if _, err := run("docker-compose", "version"); err != nil {
		return nil, err
	}
	return []string{"docker-compose"}, nil
}

// TestComposeQuorum brings deploy/docker-compose.yml up with the image of
// deploy/Dockerfile under a project name of its own, waits until the three
// controllers agree on a leader (krabka metadata-quorum describe --status,
// run with the binary of a controller's image on the compose network, the
// only place the advertised host names resolve) and until Docker reports
// each healthy (the compose healthcheck), and tears it down with its
// volumes.
func TestComposeQuorum(t *testing.T) { testCompose(t, "docker-compose.yml") }

// TestComposeDynamicQuorum does the same with
// deploy/docker-compose.dynamic.yml: three controllers configured by
// KAFKA_* variables alone through the image's default command, one
// formatting a standalone quorum and two joining it, until all three are
// voters and healthy.
func TestComposeDynamicQuorum(t *testing.T) { testCompose(t, "docker-compose.dynamic.yml") }

// TestComposeSecureQuorum does the same with
// deploy/docker-compose.secure.yml: three controllers on SASL_SSL,
// authenticating to each other with SCRAM-SHA-512 over TLS with
// certificates made here (a CA, and one certificate per controller for
// its compose host name) and mounted as KRABKA_CERTS; describe runs with
// the client settings of config/secure/client.properties.
func TestComposeSecureQuorum(t *testing.T) {
	certs := t.TempDir()
	ca := tlstest.NewCA(t, "krabka-compose-ca")
	tlstest.WriteFile(t, certs, "ca.pem", ca.PEM)
	for id := 1; id <= 3; id++ {
		host := "controller-" + strconv.Itoa(id)
		leaf := ca.Issue(t, host, tlstest.Options{Names: []string{host}})
		tlstest.WriteFile(t, certs, host+".pem", leaf.Keystore())
	}
	// The containers read them through the bind mount, whatever user
	// the engine maps the image's root to.
	for _, p := range []string{"ca.pem", "controller-1.pem", "controller-2.pem", "controller-3.pem"} {
		if err := os.Chmod(filepath.Join(certs, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(certs, 0o755); err != nil {
		t.Fatal(err)
	}
	testComposeWith(t, "docker-compose.secure.yml", []string{"KRABKA_CERTS=" + certs},
		"--command-config", "/etc/krabka/client.properties")
}

// testCompose runs the compose file name of deploy/ until its three
// controllers are voters under one leader and healthy.
func testCompose(t *testing.T, name string) { testComposeWith(t, name, nil) }

// testComposeWith is testCompose with env added to compose's environment
// and describeArgs to the describe command line.
func testComposeWith(t *testing.T, name string, extraEnv []string, describeArgs ...string) {
	if testing.Short() {
		t.Skip("runs real processes for seconds")
	}
	if err := dockerUsable(); err != nil {
		if os.Getenv("CI") == "true" && netnsUsable() != nil {
			t.Fatalf("docker: %v", err)
		}
		t.Skipf("docker: %v", err)
	}
	compose, err := composeCommand()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	sweepOnce.Do(sweep)
	bin := buildBinary(t, "")
	project := uniqueTag()
	image := project + ":latest"
	if err := buildImage(image, map[string]string{"krabka": bin}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = run("docker", "rmi", "-f", image) })
	file := filepath.Join(repoRoot(), "deploy", name)
	env := append(append(os.Environ(), "KRABKA_IMAGE="+image), extraEnv...)
	dc := func(args ...string) (string, error) {
		full := append(append(append([]string(nil), compose[1:]...), "-f", file, "-p", project), args...)
		cmd := exec.Command(compose[0], full...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%s %s: %w\n%s", compose[0], strings.Join(full, " "), err, out)
		}
		return string(out), nil
	}
	cfg, err := dc("config")
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 3; id++ {
		if !strings.Contains(cfg, "controller-"+strconv.Itoa(id)+":") {
			t.Fatalf("docker compose config has no controller-%d:\n%s", id, cfg)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := dc("logs", "--no-color")
			t.Logf("compose logs:\n%s", out)
		}
		if _, err := dc("down", "-v", "--remove-orphans", "-t", "30"); err != nil {
			t.Errorf("compose down: %v", err)
		}
	})
	// The project name kf<pid>-<n> lets the sweep of a later run remove
	// what a crashed one left.
	if _, err := dc("up", "-d", "--no-build"); err != nil {
		t.Fatal(err)
	}
	container, err := dc("ps", "-q", "controller-1")
	if err != nil {
		t.Fatal(err)
	}
	container = strings.TrimSpace(container)
	var out string
	waitFor(t, 90*time.Second, "leader of the compose quorum", func() bool {
		args := append([]string{"exec", container, "/krabka", "metadata-quorum",
			"--bootstrap-controller", "controller-1:9093,controller-2:9093,controller-3:9093",
			"--timeout", "5s"}, describeArgs...)
		out, err = run("docker", append(args, "describe", "--status")...)
		if err != nil {
			out = err.Error()
			return false
		}
		m := statusLeader.FindStringSubmatch(out)
		voters := ""
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "CurrentVoters:") {
				voters = line
			}
		}
		return m != nil && m[1] != "-1" && strings.Contains(voters, `{"id": 1,`) &&
			strings.Contains(voters, `{"id": 2,`) && strings.Contains(voters, `{"id": 3,`)
	}, func() string { return out })
	t.Logf("compose project %s:\n%s", project, out)
	if len(describeArgs) > 0 {
		// Without the client settings the listener serves nothing.
		if out, err := run("docker", "exec", container, "/krabka", "metadata-quorum",
			"--bootstrap-controller", "controller-1:9093", "--timeout", "5s", "describe", "--status"); err == nil {
			t.Errorf("describe without %v succeeded:\n%s", describeArgs, out)
		}
	}
	// The compose file's healthcheck runs krabka healthcheck against each
	// controller's /readyz: with a leader elected, all three turn healthy.
	for id := 1; id <= 3; id++ {
		c, err := dc("ps", "-q", "controller-"+strconv.Itoa(id))
		if err != nil {
			t.Fatal(err)
		}
		c = strings.TrimSpace(c)
		var health string
		waitFor(t, 90*time.Second, "controller-"+strconv.Itoa(id)+" healthy", func() bool {
			health, err = run("docker", "inspect", "-f", "{{.State.Health.Status}}", c)
			return err == nil && strings.TrimSpace(health) == "healthy"
		}, func() string { return health })
	}
}
