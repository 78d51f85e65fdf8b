package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// shellOptions are the flags of "krabka metadata-shell".
type shellOptions struct {
	snapshot  string
	directory string
	quorum    quorumOptions
	// noRedact prints secrets instead of "[redacted]".
	noRedact bool
}

// newMetadataShellCommand builds "krabka metadata-shell", Kafka's
// kafka-metadata-shell.
func newMetadataShellCommand(a *app) *cobra.Command {
	var o shellOptions
	cmd := &cobra.Command{
		Use:   "metadata-shell (--snapshot FILE | --directory DIR | --bootstrap-controller HOST:PORT[,...]) [command ...]",
		Short: "Browse the metadata image (kafka-metadata-shell)",
		Long: "metadata-shell loads a metadata image and shows it as Kafka's\n" +
			"kafka-metadata-shell does: a tree with /image (provenance, features,\n" +
			"cluster, topics, configs, clientQuotas, producerIds, acls, scram,\n" +
			"delegationToken) and /local (version, commitId), browsed with ls, cd,\n" +
			"cat, find, tree, pwd, history, man, help and exit. Without a command it\n" +
			"reads commands from stdin after the prompt \">> \"; with one it runs it\n" +
			"and exits (shell-only commands are not available then).\n\n" +
			"--snapshot reads one snapshot (.checkpoint) or log segment (.log) file;\n" +
			"--directory replays a stopped node's metadata log directory (its newest\n" +
			"snapshot, then the log segments after it); --bootstrap-controller reads\n" +
			"a live quorum: the leader's image at or after a linearizable read.\n" +
			"SCRAM credentials, delegation tokens and password configs print as\n" +
			"[redacted] unless --no-redact is given.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMetadataShell(cmd.Context(), a, cmd.InOrStdin(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.snapshot, "snapshot", "s", "", "the snapshot or log segment file to read")
	f.StringVar(&o.directory, "directory", "", "the metadata log directory of a stopped node to replay")
	f.StringVar(&o.quorum.bootstrapControllers, "bootstrap-controller", "", "comma-separated host:port of controllers of a live quorum")
	f.DurationVar(&o.quorum.timeout, "timeout", 30*time.Second, "with --bootstrap-controller: how long to wait for the leader's image")
	f.BoolVar(&o.noRedact, "no-redact", false, "print secrets instead of [redacted]")
	// Everything after the first command word belongs to the command.
	f.SetInterspersed(false)
	return cmd
}

// runMetadataShell is "krabka metadata-shell".
func runMetadataShell(ctx context.Context, a *app, stdin io.Reader, o shellOptions, args []string) error {
	n := 0
	for _, s := range []string{o.snapshot, o.directory, o.quorum.bootstrapControllers} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return errors.New("metadata-shell needs exactly one of --snapshot, --directory and --bootstrap-controller")
	}
	var si shellImage
	var err error
	switch {
	case o.snapshot != "":
		si, err = loadShellFile(a, o.snapshot)
	case o.directory != "":
		si, err = loadShellDirectory(a, o.directory)
	default:
		si, err = loadShellLive(ctx, o.quorum)
	}
	if err != nil {
		return err
	}
	st := newShellState(shellRoot(si), len(args) == 0)
	st.redacted = !o.noRedact
	if len(args) == 0 {
		// ls lays out columns in the terminal's width, as Kafka's shell
		// does; a plain line reader knows it only from $COLUMNS.
		st.width, _ = strconv.Atoi(os.Getenv("COLUMNS"))
		return st.interact(stdin, a.stdout)
	}
	var w strings.Builder
	st.run(&w, parseShellCommand(args, false))
	if _, err := io.WriteString(a.stdout, w.String()); err != nil {
		return err
	}
	if st.failed {
		return &problemsFound{code: 1}
	}
	return nil
}

// buildCommit is the VCS revision the binary was built from (Kafka's
// AppInfoParser.getCommitId), "unknown" when the build did not record it.
func buildCommit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// shellLoader replays records into an image for the shell. A record the
// image rejects is skipped, as Kafka's metadata loader does, and counted.
type shellLoader struct {
	delta    *metadata.Delta
	timeMs   int64
	rejected int
	dec      recordbatch.Decoder
}

func newShellLoader() *shellLoader {
	return &shellLoader{delta: metadata.NewDelta(metadata.EmptyImage())}
}

// image returns what the loader replayed.
func (l *shellLoader) image() shellImage {
	return shellImage{img: l.delta.Apply(), timeMs: l.timeMs}
}

// replay replays one record at offset in epoch.
func (l *shellLoader) replay(value []byte, offset int64, epoch int32) error {
	rec, err := metadata.Decode(value)
	if err != nil {
		return fmt.Errorf("record at offset %d does not decode: %w", offset, err)
	}
	if err := l.delta.Replay(rec, offset, epoch); err != nil {
		var re *metadata.ReplayError
		if !errors.As(err, &re) {
			return err
		}
		l.rejected++
		return l.delta.Skip(offset, epoch)
	}
	return nil
}

// replaySnapshot replays the snapshot file at path as snapshot id.
func (l *shellLoader) replaySnapshot(path string, id kraft.OffsetAndEpoch, named bool) error {
	var r *snapshot.Reader
	var err error
	if named {
		r, err = snapshot.Open(vfs.OS(), path, snapshot.ReadOptions{})
	} else {
		r, err = snapshot.OpenAs(vfs.OS(), path, id, snapshot.ReadOptions{})
	}
	if err != nil {
		return err
	}
	defer r.Close()
	id = r.ID()
	offset, epoch := int64(id.Offset)-1, int32(id.Epoch)
	for r.Next() {
		b := r.Batch()
		for i := range b.Records {
			if err := l.replay(b.Records[i].Value, offset, epoch); err != nil {
				return fmt.Errorf("snapshot %s: %w", path, err)
			}
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	l.timeMs = r.Header().LastContainedLogTimestamp
	return nil
}

// replayBatches replays the whole batches of data whose records are at
// offset from and later, and returns the offset after the last batch and
// the number of bytes read. It stops at the first batch that does not
// decode and reports it.
func (l *shellLoader) replayBatches(data []byte, from int64) (next int64, used int, err error) {
	next = from
	for used < len(data) {
		b, err := l.dec.Decode(data[used:])
		if err != nil {
			return next, used, fmt.Errorf("batch at byte %d: %w", used, err)
		}
		if !b.IsControl() {
			for i := range b.Records {
				off := b.RecordOffset(&b.Records[i])
				if off < from {
					continue
				}
				if err := l.replay(b.Records[i].Value, off, b.PartitionLeaderEpoch); err != nil {
					return next, used, err
				}
			}
			l.timeMs = b.MaxTimestamp
		}
		used += b.Size()
		next = max(next, b.NextOffset())
	}
	return next, used, nil
}

// replaySegment replays the log segment at path from offset from on. A
// damaged tail ends the replay with a warning, as the runtime cuts a torn
// tail.
func (l *shellLoader) replaySegment(a *app, path string, from int64) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return from, err
	}
	next, _, err := l.replayBatches(data, from)
	if err != nil {
		var be *recordbatch.Error
		if !errors.As(err, &be) {
			return next, fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprintf(a.stderr, "WARNING: %s: %v; the replay stops there\n", path, err)
		return next, errStopReplay
	}
	return next, nil
}

// errStopReplay ends a directory's replay at a damaged segment.
var errStopReplay = errors.New("replay stopped")

// warnRejected reports the records the image rejected.
func (l *shellLoader) warnRejected(a *app) {
	if l.rejected > 0 {
		fmt.Fprintf(a.stderr, "WARNING: %d records were rejected by replay and skipped\n", l.rejected)
	}
}

// lockIfLocked takes dir/.lock when the file exists, as Kafka's shell
// does (MetadataShell.takeDirectoryLockIfExists): a directory a node ran
// in must not be read while a node runs in it. It returns a no-op closer
// when there is no lock file.
func lockIfLocked(dir string) (io.Closer, error) {
	if _, err := os.Stat(filepath.Join(dir, logstore.LockFileName)); err != nil {
		return io.NopCloser(nil), nil
	}
	c, err := logstore.LockDir(vfs.OS(), dir)
	if errors.Is(err, logstore.ErrLocked) {
		abs, _ := filepath.Abs(dir)
		return nil, fmt.Errorf("unable to lock %s: please ensure that no broker or controller process is using this directory before proceeding", abs)
	}
	return c, err
}

// loadShellFile loads --snapshot: a snapshot, bootstrap.checkpoint or a
// log segment, holding the log directory's lock (two levels up, as
// Kafka's shell takes it) if it has one.
func loadShellFile(a *app, path string) (shellImage, error) {
	if _, err := os.Stat(path); err != nil {
		return shellImage{}, fmt.Errorf("--snapshot: %w", err)
	}
	lock, err := lockIfLocked(filepath.Dir(filepath.Dir(filepath.Clean(path))))
	if err != nil {
		return shellImage{}, err
	}
	defer lock.Close()
	l := newShellLoader()
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".log"):
		if _, err := l.replaySegment(a, path, 0); err != nil && !errors.Is(err, errStopReplay) {
			return shellImage{}, err
		}
	case base == snapshot.BootstrapFile:
		if err := l.replaySnapshot(path, kraft.OffsetAndEpoch{}, true); err != nil {
			return shellImage{}, err
		}
	default:
		if id, kind, err := snapshot.ParseFileName(base); err == nil && kind == snapshot.KindSnapshot {
			if err := l.replaySnapshot(path, id, true); err != nil {
				return shellImage{}, err
			}
			break
		}
		// Another name, such as a copy from metadata-quorum snapshot
		// save: read its batches as Kafka's shell reads any file, with
		// the offsets they carry (0 up in a snapshot file).
		data, err := os.ReadFile(path)
		if err != nil {
			return shellImage{}, fmt.Errorf("--snapshot: %w", err)
		}
		if _, _, err := l.replayBatches(data, 0); err != nil || len(data) == 0 {
			return shellImage{}, fmt.Errorf("--snapshot %s: want a snapshot (<offset>-<epoch>.checkpoint, a copy of one, bootstrap.checkpoint) or a log segment (<offset>.log), and its record batches do not read: %v", path, cmp.Or(err, errors.New("empty file")))
		}
	}
	l.warnRejected(a)
	return l.image(), nil
}

// loadShellDirectory loads --directory: the metadata log directory (or
// its __cluster_metadata-0 partition directory) of a stopped node. It
// replays the newest snapshot that verifies, then every log segment
// record after it up to the log end (records a leader had not committed
// yet included, as a node's log holds them).
func loadShellDirectory(a *app, dir string) (shellImage, error) {
	dir = filepath.Clean(dir)
	logDir, part := dir, filepath.Join(dir, raft.PartitionDirName)
	if filepath.Base(dir) == raft.PartitionDirName {
		logDir, part = filepath.Dir(dir), dir
	}
	entries, err := os.ReadDir(part)
	if errors.Is(err, fs.ErrNotExist) {
		return shellImage{}, fmt.Errorf("--directory %s: no %s directory: not a metadata log directory", dir, raft.PartitionDirName)
	}
	if err != nil {
		return shellImage{}, fmt.Errorf("--directory: %w", err)
	}
	lock, err := lockIfLocked(logDir)
	if err != nil {
		return shellImage{}, err
	}
	defer lock.Close()

	var snaps []kraft.OffsetAndEpoch
	var segments []string
	for _, e := range entries {
		name := e.Name()
		if id, kind, err := snapshot.ParseFileName(name); err == nil && kind == snapshot.KindSnapshot {
			snaps = append(snaps, id)
		} else if len(name) == 24 && strings.HasSuffix(name, ".log") {
			segments = append(segments, name)
		}
	}
	slices.SortFunc(snaps, func(x, y kraft.OffsetAndEpoch) int { return int(x.Offset - y.Offset) })
	slices.Sort(segments)
	l := newShellLoader()
	var from int64
	for i := len(snaps) - 1; i >= 0; i-- {
		candidate := newShellLoader()
		path := filepath.Join(part, snapshot.FileName(snaps[i]))
		if err := candidate.replaySnapshot(path, snaps[i], true); err != nil {
			fmt.Fprintf(a.stderr, "WARNING: snapshot %s is not used: %v\n", path, err)
			continue
		}
		l, from = candidate, int64(snaps[i].Offset)
		break
	}
	for _, name := range segments {
		_, err := l.replaySegment(a, filepath.Join(part, name), from)
		if errors.Is(err, errStopReplay) {
			break
		}
		if err != nil {
			return shellImage{}, err
		}
	}
	l.warnRejected(a)
	return l.image(), nil
}

// shellFetchBytes is the MaxBytes of each MetadataFetch of a live read.
const shellFetchBytes = 1 << 20

// loadShellLive loads --bootstrap-controller: it asks the leader for a
// linearizable ReadImage, whose offset covers every change committed
// before the request, then rebuilds the image up to at least that offset
// from the leader's newest snapshot (FetchSnapshot) and its log
// (MetadataFetch).
func loadShellLive(ctx context.Context, o quorumOptions) (shellImage, error) {
	addrs, err := o.controllers()
	if err != nil {
		return shellImage{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var si shellImage
	err = withLeader(ctx, addrs, func(ctx context.Context, leader *controllerConn, _ string) error {
		barrier, err := readImageBarrier(ctx, leader)
		if err != nil {
			return err
		}
		si, err = fetchImage(ctx, leader, barrier)
		return err
	})
	return si, err
}

// readImageBarrier returns the offset of a linearizable ReadImage answer.
func readImageBarrier(ctx context.Context, leader *controllerConn) (int64, error) {
	req := wire.NewReadImageRequest()
	req.Linearizable = true
	resp, err := leader.request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", err, errRetry)
	}
	r := resp.(*wire.ReadImageResponse)
	if err := answerError("ReadImage", leader.addr, r.ErrorCode, r.ErrorMessage); err != nil {
		return 0, err
	}
	return r.Offset, nil
}

// fetchImage replays the leader's metadata log until the image holds
// every record up to barrier.
func fetchImage(ctx context.Context, leader *controllerConn, barrier int64) (shellImage, error) {
	l := newShellLoader()
	var next int64
	for next <= barrier {
		req := wire.NewMetadataFetchRequest()
		req.FetchOffset, req.MaxBytes = next, shellFetchBytes
		resp, err := leader.request(ctx, req)
		if err != nil {
			return shellImage{}, fmt.Errorf("%w: %w", err, errRetry)
		}
		r := resp.(*wire.MetadataFetchResponse)
		if err := answerError("MetadataFetch", leader.addr, r.ErrorCode, nil); err != nil {
			return shellImage{}, err
		}
		if r.SnapshotID.EndOffset >= 0 && r.SnapshotID.Epoch >= 0 && next < r.LogStartOffset {
			id := kraft.OffsetAndEpoch{Offset: kraft.Offset(r.SnapshotID.EndOffset), Epoch: kraft.Epoch(r.SnapshotID.Epoch)}
			if err := fetchSnapshotInto(ctx, leader, r.LeaderEpoch, id, l); err != nil {
				return shellImage{}, err
			}
			next = int64(id.Offset)
			continue
		}
		if len(r.Records) == 0 {
			// The leader's high watermark is past the barrier, but the
			// answer can trail it by a moment: ask again shortly.
			select {
			case <-ctx.Done():
				return shellImage{}, fmt.Errorf("controller %s: the log did not reach offset %d: %w", leader.addr, barrier, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		n, _, err := l.replayBatches(r.Records, next)
		if err != nil {
			return shellImage{}, fmt.Errorf("controller %s: MetadataFetch at offset %d: %w", leader.addr, next, err)
		}
		next = n
	}
	return l.image(), nil
}

// fetchSnapshotInto copies snapshot id from the leader into a temporary
// file, verifies and replays it.
func fetchSnapshotInto(ctx context.Context, leader *controllerConn, epoch int32, id kraft.OffsetAndEpoch, l *shellLoader) error {
	f, err := os.CreateTemp("", "krabka-shell-*.checkpoint")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := copySnapshot(ctx, leader, epoch, id, f); err != nil {
		_ = f.Close() // the copy's error is the one to report
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return l.replaySnapshot(f.Name(), id, false)
}
