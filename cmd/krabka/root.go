package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/raft"
)

// version is the release of the binary; the build may set it with
// -ldflags "-X main.version=...". When it is empty, the module version
// recorded by the Go toolchain is used.
var version string

// buildVersion returns the version string shown by --version.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// app carries what every subcommand shares: the output streams and the
// logger configured by the root command's flags.
type app struct {
	stdout, stderr io.Writer
	logFormat      string
	// logLevel is --log-level, parsed into level; logLevelSet says it was
	// given on the command line (it then wins over krabka.log.level).
	logLevel    string
	level       slog.Level
	logLevelSet bool
	log         *slog.Logger
}

// newRootCommand builds the krabka command tree writing to stdout and
// stderr.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	a := &app{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "krabka",
		Short: "A Kafka-compatible KRaft metadata quorum",
		Long: "krabka runs and administers a KRaft metadata quorum that Kafka's brokers\n" +
			"and tools talk to. Its subcommands mirror Kafka's tools: storage\n" +
			"(kafka-storage), server-start (kafka-server-start), metadata-quorum\n" +
			"(kafka-metadata-quorum), dump-log (kafka-dump-log); dump-snapshot and dev\n" +
			"are its own.",
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			lv, err := raft.ParseLogLevel(a.logLevel)
			if err != nil {
				return fmt.Errorf("--log-level %q: %w", a.logLevel, err)
			}
			a.level, a.logLevelSet = lv, cmd.Flags().Changed(logLevelFlag)
			lg, err := newLeveledLogger(a.logFormat, a.stderr, a.level)
			if err != nil {
				return err
			}
			a.log = lg
			return nil
		},
	}
	root.AddCommand(newFeaturesCommand(a))
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&a.logLevel, logLevelFlag, "info",
		"least severe diagnostics written on stderr: debug, info, warn or error (server-start: overrides krabka.log.level)")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "text", "format of the diagnostics on stderr: text or json")
	root.AddCommand(newStorageCommand(a), newDumpLogCommand(a), newDumpSnapshotCommand(a), newServerStartCommand(a), newDevCommand(a), newMetadataQuorumCommand(a), newHealthcheckCommand(),
		newDockerStartCommand(a), newMetadataShellCommand(a))
	return root
}

// logLevelFlag names the root command's --log-level.
const logLevelFlag = "log-level"

// newLeveledLogger returns a slog logger writing the messages at level
// and above to w in the given format, durations in readable units
// ("1.5s", as time.Duration prints them) in both.
func newLeveledLogger(format string, w io.Writer, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDuration}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

// readableDuration writes a time.Duration as its String ("1.5s") rather
// than the nanosecond count slog's JSON handler writes.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// run executes the command line args and returns the process exit status:
// 0 on success, 1 after printing a one-line error on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a context that long-running commands
// (server-start) stop on, besides SIGINT and SIGTERM.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var pf *problemsFound
		if errors.As(err, &pf) {
			return pf.code
		}
		fmt.Fprintln(stderr, exitError(err))
		return 1
	}
	return 0
}
