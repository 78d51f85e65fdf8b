package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/gctune"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metrics/prom"
	"github.com/krabka-go/krabka/raft"
)

// shutdownTimeout bounds the graceful stop after SIGINT or SIGTERM.
const shutdownTimeout = 30 * time.Second

// newServerStartCommand builds "krabka server-start", Kafka's
// kafka-server-start for a controller node.
func newServerStartCommand(a *app) *cobra.Command {
	var overrides []string
	var admin adminOptions
	cmd := &cobra.Command{
		Use:   "server-start server.properties [--override KEY=VALUE]...",
		Short: "Run a controller node from its server.properties (kafka-server-start)",
		Long: "server-start runs a KRaft controller from a server.properties file until it\n" +
			"receives SIGINT or SIGTERM, then resigns leadership and stops. The log\n" +
			"directory must have been formatted with krabka storage format (or Kafka's\n" +
			"kafka-storage format). With --admin-address it serves /metrics, /livez\n" +
			"and /readyz over HTTP there (docs/operations.md).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := admin.validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServer(ctx, a, args[0], overrides, admin)
		},
	}
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "a property KEY=VALUE that replaces the file's value (repeatable)")
	admin.register(cmd)
	return cmd
}

// runServer starts the controller configured by the properties file at
// path, with overrides (KEY=VALUE) replacing its values, and serves until
// ctx is done or the node fails.
func runServer(ctx context.Context, a *app, path string, overrides []string, admin adminOptions) error {
	cfg, warnings, err := loadServerConfig(path, overrides)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	// --log-level wins over krabka.log.level; the file's level, when the
	// command line gives none, sets the binary's own lines too.
	if a.logLevelSet {
		cfg.LogLevel = a.logLevel
	} else if cfg.LogLevel != "" {
		lv, _ := raft.ParseLogLevel(cfg.LogLevel) // LoadConfig validated it
		lg, err := newLeveledLogger(a.logFormat, a.stderr, lv)
		if err != nil {
			return err
		}
		a.log = lg
	}
	for _, w := range warnings {
		a.log.Warn("property not used", "file", path, "key", w.Key, "reason", w.Reason)
	}
	// Kafka refuses to start on a directory that was never formatted:
	// the cluster id and the directory id come from meta.properties.
	if _, err := logstore.ReadMetaProperties(vfs.OS(), cfg.MetadataLogDir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no meta.properties in %s: format the directory first with krabka storage format", cfg.MetadataLogDir)
		}
		return err
	}
	cfg.Logger = a.log
	var reg *prometheus.Registry
	if admin.address != "" {
		var rec *prom.Recorder
		if reg, rec, err = newMetricsRegistry(); err != nil {
			return err
		}
		cfg.Metrics = rec
	}
	// A controller's live heap is small; without a floor the collector
	// runs every few milliseconds under load (internal/gctune). GOGC in
	// the environment turns this off.
	defer gctune.Start(gctune.DefaultFloor)()
	if addr := os.Getenv(pprofEnv); addr != "" {
		stopPprof, bound, err := startPprof(addr)
		if err != nil {
			return err
		}
		defer stopPprof()
		a.log.Info("serving runtime profiles", "address", "http://"+bound+"/debug/pprof/")
	}
	// The node's own context is not ctx: a signal asks for the graceful
	// Shutdown below, while cancelling the node's context would stop it
	// abruptly.
	nodeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	c, err := raft.Start(nodeCtx, cfg)
	if err != nil {
		return fmt.Errorf("start node %d: %w", cfg.NodeID, err)
	}
	if admin.address != "" {
		if err := reg.Register(prom.NewListenerCollector(c.ListenerStats)); err != nil {
			cancel()
			_ = c.Shutdown(context.Background())
			return err
		}
		h, err := adminHandler(reg, c, admin.healthOptions())
		if err != nil {
			cancel()
			_ = c.Shutdown(context.Background())
			return err
		}
		stopAdmin, bound, err := startAdmin(admin.address, h)
		if err != nil {
			cancel()
			_ = c.Shutdown(context.Background())
			return err
		}
		defer stopAdmin()
		a.log.Info("serving the admin endpoint", "address", "http://"+bound+"/", "paths", "/metrics /livez[/CHECK] /readyz[/CHECK]")
	}
	var runErr error
	select {
	case <-ctx.Done():
	case <-c.Done():
		runErr = c.Err()
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer scancel()
	if err := c.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		runErr = errors.Join(runErr, fmt.Errorf("shutdown: %w", err))
	}
	if runErr != nil {
		return fmt.Errorf("node %d stopped: %w", cfg.NodeID, runErr)
	}
	return nil
}
