package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// restoreOptions are the flags of "krabka storage restore".
type restoreOptions struct {
	snapshotFile string
	snapshotID   string
	config       string
	clusterID    string
}

// newRestoreCommand builds "krabka storage restore".
func newRestoreCommand(a *app) *cobra.Command {
	var o restoreOptions
	cmd := &cobra.Command{
		Use:   "restore --snapshot FILE [--snapshot-id ID] -c server.properties [--cluster-id ID]",
		Short: "Build a new node's log directories from a saved snapshot",
		Long: "restore verifies a snapshot saved by metadata-quorum snapshot save, then\n" +
			"prepares the unformatted log directories of a new node as format does,\n" +
			"with the feature levels of the snapshot in bootstrap.checkpoint, and puts\n" +
			"the snapshot into the metadata log directory, so that the node starts at\n" +
			"the snapshot's end offset with its image. Every node of the new quorum is\n" +
			"restored from the same file with the same cluster id. A formatted\n" +
			"directory is refused and left unchanged.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRestore(a, o, time.Now())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.snapshotFile, "snapshot", "", "the saved snapshot (required)")
	f.StringVar(&o.snapshotID, "snapshot-id", "", "the snapshot's id as save printed it, OFFSET-EPOCH (default: from FILE's name, when it is a snapshot file name)")
	f.StringVarP(&o.config, "config", "c", "", "the server.properties file of the node (required)")
	f.StringVarP(&o.clusterID, "cluster-id", "t", "", "the new cluster's id (default: a new one, printed)")
	_ = cmd.MarkFlagRequired("snapshot")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// restoreSnapshotID returns the id of the snapshot to restore: --snapshot-id,
// or the id FILE's name gives.
func restoreSnapshotID(o restoreOptions) (kraft.OffsetAndEpoch, error) {
	if o.snapshotID != "" {
		id, kind, err := snapshot.ParseFileName(o.snapshotID + snapshot.Suffix)
		if err != nil || kind != snapshot.KindSnapshot {
			return id, fmt.Errorf("--snapshot-id %q: want OFFSET-EPOCH as snapshot save prints it, e.g. 00000000000000000123-0000000002", o.snapshotID)
		}
		return id, nil
	}
	id, kind, err := snapshot.ParseFileName(filepath.Base(o.snapshotFile))
	if err != nil || kind != snapshot.KindSnapshot {
		return id, fmt.Errorf("--snapshot %s: the file name does not give the snapshot id; give --snapshot-id as snapshot save printed it", o.snapshotFile)
	}
	return id, nil
}

// runRestore is "krabka storage restore".
func runRestore(a *app, o restoreOptions, now time.Time) error {
	id, err := restoreSnapshotID(o)
	if err != nil {
		return err
	}
	if id == snapshot.Bootstrap {
		return errors.New("--snapshot-id 0-0 is the bootstrap snapshot, which holds no metadata")
	}
	clusterID := o.clusterID
	if clusterID != "" {
		if err := parseClusterID(clusterID); err != nil {
			return err
		}
	}
	cfg, err := loadControllerConfig(o.config)
	if err != nil {
		return err
	}
	dirs, err := logDirectories(o.config, cfg)
	if err != nil {
		return fmt.Errorf("config %s: %w", o.config, err)
	}
	metadataDir := filepath.Clean(cfg.MetadataLogDir)
	for _, d := range dirs {
		if err := checkUnformatted(d, d == metadataDir); err != nil {
			return err
		}
	}
	info, err := verifyBackup(o.snapshotFile, id)
	if err != nil {
		return fmt.Errorf("--snapshot %s is damaged: %w", o.snapshotFile, err)
	}
	values, err := restoredFeatureRecords(info)
	if err != nil {
		return fmt.Errorf("--snapshot %s: %w", o.snapshotFile, err)
	}
	metadataDirID, err := restoredDirectoryID(cfg, info.header)
	if err != nil {
		return err
	}
	if err := printBackupInfo(a, o.snapshotFile, info); err != nil {
		return err
	}
	if clusterID == "" {
		u, err := randomUUID()
		if err != nil {
			return err
		}
		clusterID = u.String()
		if _, err := fmt.Fprintf(a.stdout, "Generated cluster id %s; restore the other nodes with --cluster-id %s.\n", clusterID, clusterID); err != nil {
			return err
		}
	}
	// meta.properties goes last into every directory, once all the other
	// files are in place, so that it marks a complete restore.
	fsys := vfs.OS()
	for _, d := range dirs {
		if err := logstore.MkdirAllDurable(fsys, d); err != nil {
			return fmt.Errorf("create log directory %s: %w", d, err)
		}
		if err := snapshot.WriteBootstrapCheckpoint(fsys, d, now.UnixMilli(), values); err != nil {
			return fmt.Errorf("write bootstrap.checkpoint in %s: %w", d, err)
		}
		if d == metadataDir {
			if err := installRestoredSnapshot(fsys, d, o.snapshotFile, id); err != nil {
				return err
			}
		}
	}
	for _, d := range dirs {
		dirID := metadataDirID
		if d != metadataDir || dirID.IsZero() {
			if dirID, err = randomUUID(); err != nil {
				return err
			}
		}
		mp := logstore.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: kraft.NodeID(cfg.NodeID), DirectoryID: dirID}
		if err := logstore.WriteMetaProperties(fsys, d, mp, now); err != nil {
			return fmt.Errorf("write meta.properties in %s: %w", d, err)
		}
		if _, err := fmt.Fprintf(a.stdout, "Restored log directory %s of node %d into cluster %s.\n", d, cfg.NodeID, clusterID); err != nil {
			return err
		}
	}
	return nil
}

// loadControllerConfig loads the server.properties at path of a
// controller with a node.id, as the offline storage commands that write a
// node's log need it.
func loadControllerConfig(path string) (raft.Config, error) {
	cfg, _, err := raft.LoadConfig(path)
	if err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if !slices.Contains(cfg.ProcessRoles, raft.ControllerRole) {
		return cfg, fmt.Errorf("config %s: process.roles must include controller", path)
	}
	if cfg.NodeID < 0 {
		return cfg, fmt.Errorf("config %s: node.id is not set", path)
	}
	return cfg, nil
}

// checkUnformatted refuses a directory that holds meta.properties, and in
// the metadata log directory a metadata partition directory with any file
// in it: restore builds a new node and never writes into an existing one.
func checkUnformatted(dir string, metadataDir bool) error {
	_, err := os.Stat(filepath.Join(dir, logstore.MetaPropertiesFileName))
	switch {
	case err == nil:
		return fmt.Errorf("log directory %s is already formatted; restore writes only into unformatted directories and changed nothing", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("check log directory %s: %w", dir, err)
	case !metadataDir:
		return nil
	}
	part := filepath.Join(dir, metadataPartitionDir)
	entries, err := os.ReadDir(part)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", part, err)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty; restore writes only into unformatted directories and changed nothing", part)
	}
	return nil
}

// restoredFeatureRecords returns the bootstrap.checkpoint records of the
// snapshot's features as format writes them: metadata.version first, then
// every other feature with a level above 0 sorted by name, never
// kraft.version (the snapshot's header carries it).
func restoredFeatureRecords(info backupInfo) ([][]byte, error) {
	mv, ok := info.features[featureMetadataVersion]
	if !ok {
		return nil, errors.New("the snapshot holds no metadata.version FeatureLevelRecord")
	}
	var values [][]byte
	add := func(name string, level int16) error {
		rec := metadata.NewFeatureLevelRecord()
		rec.Name, rec.FeatureLevel = name, level
		b, err := metadata.Encode(rec)
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		values = append(values, b)
		return nil
	}
	if err := add(featureMetadataVersion, mv); err != nil {
		return nil, err
	}
	for _, name := range sortedFeatureNames(info.features) {
		if level := info.features[name]; name != featureMetadataVersion && name != featureKRaftVersion && level > 0 {
			if err := add(name, level); err != nil {
				return nil, err
			}
		}
	}
	return values, nil
}

// restoredDirectoryID returns the directory id of the restored metadata log
// directory. A static quorum (controller.quorum.voters) takes its voters
// from the configuration and needs a kraft.version 0 snapshot; the id is
// then a new one (zero here). A dynamic quorum takes its voters from the
// snapshot's header (a kraft.version 1 VotersRecord is the voter set in
// force at the snapshot's end offset, KIP-853): the node keeps the directory
// id its voter entry names, so that the restored voters are the snapshot's;
// a node the record does not list restores as an observer with a new id.
func restoredDirectoryID(cfg raft.Config, h snapshot.Header) (kraft.UUID, error) {
	dynamic := len(cfg.QuorumVoters) == 0
	switch {
	case !dynamic && h.KRaftVersion > 0:
		return kraft.UUID{}, errors.New("the snapshot is of a dynamic quorum (kraft.version 1, its voters in the header); restore it into nodes without controller.quorum.voters")
	case !dynamic:
		return kraft.UUID{}, nil
	case h.KRaftVersion == 0 || h.Voters == nil:
		return kraft.UUID{}, errors.New("the snapshot is of a static quorum (kraft.version 0, no voter set); restore it into nodes with controller.quorum.voters")
	}
	for _, v := range h.Voters.Voters {
		if v.VoterId == int32(cfg.NodeID) {
			return v.VoterDirectoryId, nil
		}
	}
	return kraft.UUID{}, nil
}

// installRestoredSnapshot copies the snapshot file into the metadata
// partition directory of dir under its id's name, through the atomic
// install of a downloaded snapshot (verified, fsynced, renamed, directory
// fsynced).
func installRestoredSnapshot(fsys vfs.FS, dir, file string, id kraft.OffsetAndEpoch) error {
	part := filepath.Join(dir, metadataPartitionDir)
	if err := logstore.MkdirAllDurable(fsys, part); err != nil {
		return fmt.Errorf("create %s: %w", part, err)
	}
	var unique [8]byte
	if _, err := rand.Read(unique[:]); err != nil {
		return err
	}
	src, err := os.Open(file)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	d, err := snapshot.NewDownload(fsys, part, id, binary.BigEndian.Uint64(unique[:]), snapshot.DownloadOptions{MaxSize: max(fi.Size(), 1)})
	if err != nil {
		return fmt.Errorf("restore snapshot into %s: %w", part, err)
	}
	buf := make([]byte, 1<<20)
	for !d.Done() {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			if werr := d.Write(d.Position(), fi.Size(), buf[:n]); werr != nil {
				return errors.Join(fmt.Errorf("restore snapshot into %s: %w", part, werr), d.Abort())
			}
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !(errors.Is(err, io.EOF) && d.Done()) {
			return errors.Join(fmt.Errorf("restore snapshot into %s: read %s: %w", part, file, err), d.Abort())
		}
	}
	if err := d.Install(); err != nil {
		return fmt.Errorf("restore snapshot into %s: %w", part, err)
	}
	return nil
}
