package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/dumplog"
	"github.com/krabka-go/krabka/internal/vfs"
)

// dumpLogOptions are the flags of "krabka dump-log".
type dumpLogOptions struct {
	files []string
	opts  dumplog.Options
}

// newDumpLogCommand builds "krabka dump-log", Kafka's kafka-dump-log.
func newDumpLogCommand(a *app) *cobra.Command {
	var o dumpLogOptions
	cmd := &cobra.Command{
		Use:   "dump-log --files FILE[,FILE...]",
		Short: "Print metadata log segments and snapshots (kafka-dump-log)",
		Long: "dump-log prints .log segments, <offset>-<epoch>.checkpoint snapshots and\n" +
			"bootstrap.checkpoint files batch by batch in the layout of Kafka's\n" +
			"kafka-dump-log. With --cluster-metadata-decoder every record is printed\n" +
			"and metadata records are decoded to JSON.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDumpLog(a, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.files, "files", nil, "comma-separated files to dump (required)")
	f.BoolVar(&o.opts.MetadataDecoder, "cluster-metadata-decoder", false, "decode records as KRaft metadata records (implies --deep-iteration)")
	f.BoolVar(&o.opts.PrintDataLog, "print-data-log", false, "print record keys and values (implies --deep-iteration)")
	f.BoolVar(&o.opts.DeepIteration, "deep-iteration", false, "print every record, not only the batches")
	f.BoolVar(&o.opts.SkipRecordMetadata, "skip-record-metadata", false, "leave out the offset, timestamp and sizes of records")
	f.Int64Var(&o.opts.MaxBytes, "max-bytes", 0, "read at most this many bytes of each file (0: all)")
	_ = cmd.MarkFlagRequired("files")
	return cmd
}

// runDumpLog is "krabka dump-log".
func runDumpLog(a *app, o dumpLogOptions) error {
	if o.opts.MaxBytes < 0 {
		return fmt.Errorf("--max-bytes %d: must not be negative", o.opts.MaxBytes)
	}
	var files []string
	for _, f := range o.files {
		if f = strings.TrimSpace(f); f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return errors.New("--files names no file")
	}
	// Check every name before printing anything, so that a typo fails
	// at once rather than after pages of output.
	for _, f := range files {
		if _, _, err := dumplog.Describe(f); err != nil {
			return err
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read %s: %w", f, err)
		}
		sum, err := dumplog.Dump(a.stdout, f, data, o.opts)
		if err != nil {
			return err
		}
		if sum.InvalidBatches > 0 || sum.Errors > 0 || sum.InvalidTrailingBytes > 0 {
			a.log.Warn("damaged file", "file", f, "batches", sum.Batches, "invalid_batches", sum.InvalidBatches,
				"undecodable", sum.Errors, "invalid_trailing_bytes", sum.InvalidTrailingBytes)
		}
	}
	return nil
}

// newDumpSnapshotCommand builds "krabka dump-snapshot".
func newDumpSnapshotCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "dump-snapshot FILE",
		Short: "Verify a snapshot and print its header, voters and records",
		Long: "dump-snapshot verifies a <offset>-<epoch>.checkpoint snapshot or a\n" +
			"bootstrap.checkpoint completely, then prints its header (last contained\n" +
			"log timestamp, kraft.version, voters), its record and batch counts and\n" +
			"every metadata record as JSON. A damaged file fails with the byte\n" +
			"position of the damage.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return dumplog.DumpSnapshot(a.stdout, vfs.OS(), args[0])
		},
	}
}
