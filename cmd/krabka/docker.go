package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/magiconair/properties"
	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/raft"
)

// The container entrypoint: what the apache/kafka image does before it
// starts a node (KafkaDockerWrapper "setup", then kafka-storage format,
// then kafka-server-start), so that a compose file written for that image
// runs krabka with the same environment.
const (
	// dockerMountedConfigDir is where the apache/kafka image looks for a
	// mounted server.properties.
	dockerMountedConfigDir = "/mnt/shared/config"
	// dockerConfigDir is where docker-start writes the server.properties
	// it runs.
	dockerConfigDir = "/etc/krabka"
	// dockerDefaultClusterID is the cluster id of a container started
	// without CLUSTER_ID.
	dockerDefaultClusterID = "MkU3OEVBNTcwNTJENDM2Qg"
	// dockerDefaultProperties is the configuration of a container started
	// with neither KAFKA_* variables nor a mounted server.properties: one
	// controller that is its own quorum.
	dockerDefaultProperties = "process.roles=controller\n" +
		"node.id=1\n" +
		"controller.listener.names=CONTROLLER\n" +
		"listeners=CONTROLLER://0.0.0.0:9093\n" +
		"advertised.listeners=CONTROLLER://localhost:9093\n" +
		"controller.quorum.voters=1@localhost:9093\n" +
		"metadata.log.dir=/var/lib/krabka/metadata\n"
)

// dockerExcludedEnv are the KAFKA_ variables of the apache/kafka image
// that configure the JVM, log4j or JMX, not server.properties
// (KafkaDockerWrapper's ExcludeServerPropsEnv).
var dockerExcludedEnv = []string{
	"KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS",
	"KAFKA_JMX_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS",
	"KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS", "KAFKA_TOOLS_LOG4J_LOGLEVEL",
	"KAFKA_JMX_HOSTNAME", "KAFKA_JMX_PORT",
}

// dockerOptions are docker-start's directories.
type dockerOptions struct {
	mountedDir, configDir string
	admin                 adminOptions
}

// newDockerStartCommand builds "krabka docker-start", the image's
// default command.
func newDockerStartCommand(a *app) *cobra.Command {
	o := dockerOptions{}
	cmd := &cobra.Command{
		Use:   "docker-start",
		Short: "Configure from KAFKA_* variables, format once and run (the container entrypoint)",
		Long: "docker-start does what the apache/kafka image does when a container starts.\n" +
			"It writes server.properties from the KAFKA_* environment variables (KAFKA_\n" +
			"dropped, lower-cased, _ to ., __ to _, ___ to -), appended to a mounted\n" +
			dockerMountedConfigDir + "/server.properties if there is one, so the variables win;\n" +
			"with neither, a single controller that is its own quorum. It formats the log\n" +
			"directories that are not formatted yet with CLUSTER_ID (a dynamic quorum's first\n" +
			"node with KRABKA_STANDALONE=true, or KRABKA_INITIAL_CONTROLLERS; the others join\n" +
			"with --no-initial-controllers) and runs server-start on the result until\n" +
			"SIGTERM (docs/operations.md, \"Containers\").",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDockerStart(ctx, a, os.Environ(), o)
		},
	}
	cmd.Flags().StringVar(&o.mountedDir, "mounted-config-dir", dockerMountedConfigDir, "directory whose server.properties, if any, the variables are appended to")
	cmd.Flags().StringVar(&o.configDir, "config-dir", dockerConfigDir, "directory to write the server.properties that runs into")
	o.admin.register(cmd)
	return cmd
}

// runDockerStart configures the node from env (KEY=VALUE entries) and
// the mounted file, formats what is not formatted, and serves until ctx
// ends.
func runDockerStart(ctx context.Context, a *app, env []string, o dockerOptions) error {
	if err := o.admin.validate(); err != nil {
		return err
	}
	path, err := prepareDockerConfig(env, o.mountedDir, o.configDir)
	if err != nil {
		return err
	}
	a.log.Info("wrote the configuration", "file", path, "from", dockerSources(env, o.mountedDir))
	if err := formatForDocker(a, env, path); err != nil {
		return err
	}
	return runServer(ctx, a, path, nil, o.admin)
}

// dockerSources names what the configuration came from, for the log: the
// variables' names (never their values, which may be secrets) and the
// mounted file.
func dockerSources(env []string, mountedDir string) string {
	var names []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "KAFKA_") && !slices.Contains(dockerExcludedEnv, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	from := strings.Join(names, ",")
	if _, err := os.Stat(filepath.Join(mountedDir, "server.properties")); err == nil {
		from = strings.TrimPrefix(from+","+filepath.Join(mountedDir, "server.properties"), ",")
	}
	if from == "" {
		from = "the defaults"
	}
	return from
}

// dockerServerProperties returns the server.properties lines of the
// KAFKA_* variables of env (KEY=VALUE entries), sorted by key, with keys
// and values escaped so that a value cannot add a line of its own.
func dockerServerProperties(env []string) ([]string, error) {
	var lines []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "KAFKA_") || slices.Contains(dockerExcludedEnv, name) {
			continue
		}
		key, err := dockerPropertyKey(name)
		if err != nil {
			return nil, err
		}
		if strings.ContainsFunc(value, func(r rune) bool { return r > 0xffff }) {
			return nil, fmt.Errorf("environment variable %s: characters above U+FFFF are not supported in properties", name)
		}
		lines = append(lines, logstore.EscapeProperty(key, true)+"="+logstore.EscapeProperty(value, false))
	}
	slices.Sort(lines)
	return lines, nil
}

// dockerPropertyKey maps an environment variable name to its property
// key as the apache/kafka image does: KAFKA_ dropped, lower-cased, then
// _ to ., ___ to - and __ to _ (KAFKA_ABC___DEF is abc-def).
func dockerPropertyKey(name string) (string, error) {
	rest := strings.TrimPrefix(name, "KAFKA_")
	if rest == "" {
		return "", fmt.Errorf("environment variable %s names no property", name)
	}
	key := strings.ToLower(rest)
	key = strings.ReplaceAll(key, "___", "\x00")
	key = strings.ReplaceAll(key, "__", "\x01")
	key = strings.ReplaceAll(key, "_", ".")
	key = strings.ReplaceAll(key, "\x00", "-")
	return strings.ReplaceAll(key, "\x01", "_"), nil
}

// prepareDockerConfig writes configDir/server.properties from env and the
// mounted file, as KafkaDockerWrapper.prepareServerConfigs does, and
// returns its path. When env sets advertised.listeners but not listeners
// and the mounted file sets no listeners, listeners are the advertised
// ones on every interface (0.0.0.0), as the image's configure script
// derives them.
func prepareDockerConfig(env []string, mountedDir, configDir string) (string, error) {
	lines, err := dockerServerProperties(env)
	if err != nil {
		return "", err
	}
	var base []byte
	mounted := filepath.Join(mountedDir, "server.properties")
	switch data, err := os.ReadFile(mounted); {
	case err == nil:
		// Two newlines end the file's last line even when it ends in a
		// backslash that continues it.
		base = append(data, "\n\n"...)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read the mounted %s: %w", mounted, err)
	}
	content := string(base) + strings.Join(lines, "\n")
	if strings.TrimSpace(content) == "" {
		content = dockerDefaultProperties
	}
	p, err := (&properties.Loader{Encoding: properties.ISO_8859_1, DisableExpansion: true}).LoadBytes([]byte(content))
	if err != nil {
		return "", fmt.Errorf("server.properties from the environment: %w", err)
	}
	if adv, ok := p.Get("advertised.listeners"); ok {
		if _, ok := p.Get("listeners"); !ok {
			content += "\nlisteners=" + logstore.EscapeProperty(listenersFromAdvertised(adv), false)
		}
	}
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", configDir, err)
	}
	path := filepath.Join(configDir, "server.properties")
	if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// listenersFromAdvertised replaces the host of every NAME://HOST:PORT of
// advertised with 0.0.0.0.
func listenersFromAdvertised(advertised string) string {
	var out []string
	for l := range strings.SplitSeq(advertised, ",") {
		l = strings.TrimSpace(l)
		name, hostPort, ok := strings.Cut(l, "://")
		if i := strings.LastIndex(hostPort, ":"); ok && i >= 0 {
			l = name + "://0.0.0.0" + hostPort[i:]
		}
		out = append(out, l)
	}
	return strings.Join(out, ",")
}

// formatForDocker formats the directories of the server.properties at
// path that are not formatted yet, with CLUSTER_ID (or the image's
// default) and, for a dynamic quorum, the mode KRABKA_STANDALONE or
// KRABKA_INITIAL_CONTROLLERS names, --no-initial-controllers otherwise.
func formatForDocker(a *app, env []string, path string) error {
	get := func(name string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
	o := formatOptions{clusterID: get("CLUSTER_ID"), config: path, ignoreFormatted: true}
	if o.clusterID == "" {
		o.clusterID = dockerDefaultClusterID
	}
	switch s := get("KRABKA_STANDALONE"); s {
	case "", "false":
	case "true":
		o.standalone = true
	default:
		return fmt.Errorf("environment variable KRABKA_STANDALONE=%q: want true or false", s)
	}
	o.initialControllers = get("KRABKA_INITIAL_CONTROLLERS")
	cfg, _, err := raft.LoadConfig(path)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(cfg.QuorumVoters) == 0 && !o.standalone && o.initialControllers == "" {
		o.noInitialControllers = true
	}
	return runFormat(a, o, time.Now())
}
