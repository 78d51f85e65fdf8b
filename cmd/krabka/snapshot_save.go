package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// snapshotChunkBytes is the MaxBytes of each FetchSnapshot request: Kafka's
// default controller.quorum.fetch.snapshot.max.bytes. The leader may send
// less (it clips a chunk at its own limit and at the end of the file); the
// next request asks from the position after what it sent. Tests lower it to
// copy a snapshot in many chunks.
var snapshotChunkBytes int32 = 1 << 20

// newSnapshotCommand builds "krabka metadata-quorum snapshot".
func newSnapshotCommand(a *app, o *quorumOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot save FILE [--force]",
		Short: "Back up the quorum leader's newest snapshot",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("snapshot needs a subcommand: save")
		},
	}
	var force bool
	save := &cobra.Command{
		Use:   "save FILE [--force]",
		Short: "Copy the leader's newest snapshot into FILE and verify it",
		Long: "save learns the newest snapshot of the quorum leader (an observer Fetch\n" +
			"from offset 0 is answered with its id), copies it in FetchSnapshot chunks\n" +
			"into a temporary file next to FILE, fsyncs and verifies it (every batch's\n" +
			"CRC, the header and footer, every record decodes) and renames it to FILE.\n" +
			"It prints the snapshot id, which storage restore needs with --snapshot-id.\n" +
			"An existing FILE is refused unless --force is given. No Kafka RPC asks a\n" +
			"controller for a new snapshot: save copies the newest one there is.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSnapshotSave(cmd.Context(), a, *o, args[0], force)
		},
	}
	save.Flags().BoolVar(&force, "force", false, "replace FILE if it exists")
	cmd.AddCommand(save)
	return cmd
}

// runSnapshotSave is "krabka metadata-quorum snapshot save".
func runSnapshotSave(ctx context.Context, a *app, o quorumOptions, file string, force bool) error {
	addrs, err := o.controllers()
	if err != nil {
		return err
	}
	if !force {
		if _, err := os.Lstat(file); err == nil {
			return fmt.Errorf("%s exists; give --force to replace it", file)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var info backupInfo
	err = withLeader(ctx, addrs, func(ctx context.Context, leader *controllerConn, clusterID string) error {
		q, err := describeOn(ctx, leader)
		if err != nil {
			return err
		}
		id, err := newestSnapshotOn(ctx, leader, q.partition.LeaderEpoch)
		if err != nil {
			return err
		}
		info, err = downloadSnapshot(ctx, leader, q.partition.LeaderEpoch, id, file, force)
		return err
	})
	if err != nil {
		return err
	}
	return printBackupInfo(a, file, info)
}

// printBackupInfo prints what save and restore verified.
func printBackupInfo(a *app, file string, info backupInfo) error {
	ts := time.UnixMilli(info.header.LastContainedLogTimestamp).UTC().Format(time.RFC3339Nano)
	_, err := fmt.Fprintf(a.stdout, "Snapshot %s in %s: %d bytes, %d records, last contained log timestamp %d (%s).\n",
		snapshotIDText(info.id), file, info.size, info.records, info.header.LastContainedLogTimestamp, ts)
	return err
}

// snapshotIDText is a snapshot id as its file name spells it,
// "<end offset, 20 digits>-<epoch, 10 digits>", the form --snapshot-id takes.
func snapshotIDText(id kraft.OffsetAndEpoch) string {
	return strings.TrimSuffix(snapshot.FileName(id), snapshot.Suffix)
}

// newestSnapshotOn asks the leader for its newest snapshot id: a Fetch from
// offset 0 as an observer (replica id -1) is answered with the id of the
// snapshot to load first, the leader's newest (KIP-630). An answer with
// records instead means the leader holds no snapshot.
func newestSnapshotOn(ctx context.Context, leader *controllerConn, epoch int32) (kraft.OffsetAndEpoch, error) {
	req := kmsg.NewPtrFetchRequest()
	var err error
	if req.Version, err = leader.version(req, "Fetch", 13, 17); err != nil {
		return kraft.OffsetAndEpoch{}, err
	}
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, -1, -1
	req.MaxWaitMillis, req.MaxBytes = 0, 1
	topic := kmsg.NewFetchRequestTopic()
	topic.TopicID = wire.MetadataTopicID
	part := kmsg.NewFetchRequestTopicPartition()
	part.Partition, part.CurrentLeaderEpoch, part.FetchOffset, part.LastFetchedEpoch, part.PartitionMaxBytes = wire.MetadataPartition, epoch, 0, 0, 1
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	resp, err := leader.request(ctx, req)
	if err != nil {
		return kraft.OffsetAndEpoch{}, fmt.Errorf("%w: %w", err, errRetry)
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := answerError("Fetch", leader.addr, fr.ErrorCode, nil); err != nil {
		return kraft.OffsetAndEpoch{}, err
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return kraft.OffsetAndEpoch{}, fmt.Errorf("controller %s: Fetch answer lacks %s-%d", leader.addr, wire.MetadataTopic, wire.MetadataPartition)
	}
	p := fr.Topics[0].Partitions[0]
	if err := answerError("Fetch", leader.addr, p.ErrorCode, nil); err != nil {
		return kraft.OffsetAndEpoch{}, err
	}
	if p.SnapshotID.EndOffset < 0 || p.SnapshotID.Epoch < 0 {
		return kraft.OffsetAndEpoch{}, fmt.Errorf("the quorum leader %s holds no snapshot yet; it takes one after metadata.log.max.record.bytes.between.snapshots bytes or metadata.log.max.snapshot.interval.ms", leader.addr)
	}
	return kraft.OffsetAndEpoch{Offset: kraft.Offset(p.SnapshotID.EndOffset), Epoch: kraft.Epoch(p.SnapshotID.Epoch)}, nil
}

// downloadSnapshot copies snapshot id from the leader into a temporary
// file in file's directory, fsyncs and verifies it, and renames it to
// file (without force, only if file still does not exist), then fsyncs the
// directory. The temporary file is removed on any failure.
func downloadSnapshot(ctx context.Context, leader *controllerConn, epoch int32, id kraft.OffsetAndEpoch, file string, force bool) (info backupInfo, err error) {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*.part")
	if err != nil {
		return info, err
	}
	tmpPath := tmp.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmpPath)
		}
	}()
	if err := copySnapshot(ctx, leader, epoch, id, tmp); err != nil {
		_ = tmp.Close() // the copy's error is the one to report
		return info, err
	}
	if err := tmp.Close(); err != nil {
		return info, err
	}
	if info, err = verifyBackup(tmpPath, id); err != nil {
		return info, fmt.Errorf("the copy of snapshot %s does not verify: %w", snapshotIDText(id), err)
	}
	if force {
		err = os.Rename(tmpPath, file)
	} else if err = os.Link(tmpPath, file); err == nil {
		err = os.Remove(tmpPath)
	}
	if errors.Is(err, fs.ErrExist) {
		return info, fmt.Errorf("%s exists; give --force to replace it", file)
	}
	if err != nil {
		return info, err
	}
	return info, vfs.OS().SyncDir(dir)
}

// copySnapshot writes snapshot id, fetched from the leader chunk by chunk,
// to f and fsyncs f.
func copySnapshot(ctx context.Context, leader *controllerConn, epoch int32, id kraft.OffsetAndEpoch, f *os.File) error {
	var pos, size int64 = 0, -1
	for size < 0 || pos < size {
		chunk, total, err := fetchSnapshotChunk(ctx, leader, epoch, id, pos)
		switch {
		case err != nil:
			return err
		case size >= 0 && total != size:
			return fmt.Errorf("controller %s: snapshot %s changed size from %d to %d bytes during the copy", leader.addr, snapshotIDText(id), size, total)
		case total <= 0 || int64(len(chunk)) > total-pos || (len(chunk) == 0 && pos < total):
			return fmt.Errorf("controller %s: FetchSnapshot of %s at position %d answered %d bytes of a %d-byte snapshot", leader.addr, snapshotIDText(id), pos, len(chunk), total)
		}
		if _, err := f.Write(chunk); err != nil {
			return err
		}
		pos, size = pos+int64(len(chunk)), total
	}
	return f.Sync()
}

// fetchSnapshotChunk asks the leader for the bytes of snapshot id from
// position on and returns them with the snapshot's total size.
func fetchSnapshotChunk(ctx context.Context, leader *controllerConn, epoch int32, id kraft.OffsetAndEpoch, position int64) ([]byte, int64, error) {
	req := kmsg.NewPtrFetchSnapshotRequest()
	var err error
	if req.Version, err = leader.version(req, "FetchSnapshot", 0, 1); err != nil {
		return nil, 0, err
	}
	req.ReplicaID, req.MaxBytes = -1, snapshotChunkBytes
	topic := kmsg.NewFetchSnapshotRequestTopic()
	topic.Topic = wire.MetadataTopic
	part := kmsg.NewFetchSnapshotRequestTopicPartition()
	part.Partition, part.CurrentLeaderEpoch, part.Position = wire.MetadataPartition, epoch, position
	part.SnapshotID.EndOffset, part.SnapshotID.Epoch = int64(id.Offset), int32(id.Epoch)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	resp, err := leader.request(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	fr := resp.(*kmsg.FetchSnapshotResponse)
	if err := answerError("FetchSnapshot", leader.addr, fr.ErrorCode, nil); err != nil {
		return nil, 0, err
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return nil, 0, fmt.Errorf("controller %s: FetchSnapshot answer lacks %s-%d", leader.addr, wire.MetadataTopic, wire.MetadataPartition)
	}
	p := fr.Topics[0].Partitions[0]
	if p.ErrorCode == kerr.SnapshotNotFound.Code {
		// Retention deleted it after a newer one: start over with that.
		return nil, 0, fmt.Errorf("controller %s: snapshot %s was deleted during the copy: %w", leader.addr, snapshotIDText(id), errRetry)
	}
	if err := answerError("FetchSnapshot", leader.addr, p.ErrorCode, nil); err != nil {
		return nil, 0, err
	}
	if p.SnapshotID.EndOffset != int64(id.Offset) || p.SnapshotID.Epoch != int32(id.Epoch) || p.Position != position {
		return nil, 0, fmt.Errorf("controller %s: FetchSnapshot answered snapshot %d-%d at position %d, asked for %s at %d",
			leader.addr, p.SnapshotID.EndOffset, p.SnapshotID.Epoch, p.Position, snapshotIDText(id), position)
	}
	return p.Bytes, p.Size, nil
}

// backupInfo is what verifying a backup found.
type backupInfo struct {
	id      kraft.OffsetAndEpoch
	size    int64
	records int64
	header  snapshot.Header
	// features holds the FeatureLevelRecords of the snapshot by name, each
	// the last one for its name.
	features map[string]int16
}

// verifyBackup reads the file at path as snapshot id end to end: the
// checks of snapshot.Open (every batch's CRC, the header and footer
// records), and every metadata record decodes.
func verifyBackup(path string, id kraft.OffsetAndEpoch) (backupInfo, error) {
	r, err := snapshot.OpenAs(vfs.OS(), path, id, snapshot.ReadOptions{})
	if err != nil {
		return backupInfo{}, err
	}
	defer r.Close()
	info := backupInfo{id: id, size: r.Size(), records: r.Records(), header: r.Header(), features: map[string]int16{}}
	for r.Next() {
		b := r.Batch()
		for i := range b.Records {
			rec, err := metadata.Decode(b.Records[i].Value)
			if err != nil {
				return backupInfo{}, fmt.Errorf("snapshot %s: record %d of the batch at byte %d does not decode: %w", path, i, r.Pos(), err)
			}
			if f, ok := rec.(*metadata.FeatureLevelRecord); ok {
				info.features[f.Name] = f.FeatureLevel
			}
		}
	}
	if err := r.Err(); err != nil {
		return backupInfo{}, err
	}
	return info, nil
}

// sortedFeatureNames returns the names of features, sorted.
func sortedFeatureNames(features map[string]int16) []string {
	names := make([]string, 0, len(features))
	for n := range features {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
