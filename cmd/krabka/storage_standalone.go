package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/raft"
)

// standaloneEpochJump is how far unsafe-force-standalone moves the epoch
// above the highest one the survivor knows: far enough that no epoch the
// lost majority (or an old voter coming back) could have reached by
// elections of its own is as high, so the survivor's new leadership wins
// every epoch comparison (docs/decisions.md, "unsafe-force-standalone").
const standaloneEpochJump = 1000

// newForceStandaloneCommand builds "krabka storage unsafe-force-standalone",
// the offline counterpart of Confluent's force-standalone recovery.
func newForceStandaloneCommand(a *app) *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "unsafe-force-standalone -c server.properties",
		Short: "Make a stopped survivor the only voter of its quorum, after a majority is lost (offline, unsafe)",
		Long: "unsafe-force-standalone rewrites the metadata log of a stopped node so that it\n" +
			"starts as the only voter and leader of its quorum. Use it only after a majority\n" +
			"of the voters is lost for good, on the survivor with the highest log end\n" +
			"(storage log-end). Records committed by the lost voters beyond the survivor's\n" +
			"log end are lost. It appends, at an epoch 1000 above any the node knows, a\n" +
			"LeaderChange naming this node (and, in a dynamic quorum, a VotersRecord with\n" +
			"only this node) and writes quorum-state with this node as that epoch's leader.\n" +
			"A static quorum must first have controller.quorum.voters edited to this node.\n" +
			"See docs/operations.md, \"Losing a majority\".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runForceStandalone(a, config, time.Now())
		},
	}
	cmd.Flags().StringVarP(&config, "config", "c", "", "the server.properties file of the survivor (required)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// runForceStandalone is "krabka storage unsafe-force-standalone". It checks
// everything before it writes: the log, then quorum-state, each durable
// (fsynced) before the next.
func runForceStandalone(a *app, path string, now time.Time) error {
	cfg, err := loadControllerConfig(path)
	if err != nil {
		return err
	}
	dynamic := len(cfg.QuorumVoters) == 0
	if !dynamic && (len(cfg.QuorumVoters) != 1 || int(cfg.QuorumVoters[0].ID) != int(cfg.NodeID)) {
		var others []string
		for _, v := range cfg.QuorumVoters {
			if int(v.ID) != int(cfg.NodeID) {
				others = append(others, fmt.Sprint(v.ID))
			}
		}
		return fmt.Errorf("config %s: controller.quorum.voters still lists voters %s; edit it to this node alone (%d@host:port) first, then run unsafe-force-standalone again; nothing was changed",
			path, strings.Join(others, ","), cfg.NodeID)
	}
	// readLogEnd refuses a directory a running node holds.
	end, err := readLogEnd(path)
	if err != nil {
		return err
	}
	dir := end.MetadataLogDir
	fsys := vfs.OS()
	// Hold the directory's lock until everything is written, so that no
	// node starts on it in between.
	lock, err := logstore.LockDir(fsys, dir)
	if errors.Is(err, logstore.ErrLocked) {
		return fmt.Errorf("metadata log directory %s is locked: a node is running on it; stop it first; nothing was changed", dir)
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	mp, err := logstore.ReadMetaProperties(fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("metadata log directory %s is not formatted (no %s); unsafe-force-standalone rewrites a formatted survivor and changed nothing", dir, logstore.MetaPropertiesFileName)
	}
	if err != nil {
		return err
	}
	if int(mp.NodeID) != int(cfg.NodeID) {
		return fmt.Errorf("%s belongs to node %d, not to node.id %d of %s; nothing was changed", filepath.Join(dir, logstore.MetaPropertiesFileName), mp.NodeID, cfg.NodeID, path)
	}
	self := kraft.ReplicaKey{ID: kraft.NodeID(cfg.NodeID)}
	var voters *control.VotersRecord
	if dynamic {
		if mp.DirectoryID.IsZero() {
			return fmt.Errorf("%s has no directory.id; a dynamic quorum needs one; nothing was changed", filepath.Join(dir, logstore.MetaPropertiesFileName))
		}
		self.DirectoryID = mp.DirectoryID
		if voters, err = standaloneVotersRecord(cfg, mp.DirectoryID); err != nil {
			return err
		}
	}
	known := end.LogEndEpoch
	if q := end.QuorumState; q != nil && q.LeaderEpoch > known {
		known = q.LeaderEpoch
	}
	epoch := known + standaloneEpochJump
	if _, err := fmt.Fprintf(a.stdout, "Node %d: log end offset %d at epoch %d, highest known epoch %d (%s).\n", cfg.NodeID, end.LogEndOffset, end.LogEndEpoch, known, dir); err != nil {
		return err
	}

	batches, err := standaloneBatches(self, voters, epoch, now)
	if err != nil {
		return err
	}
	part := filepath.Join(dir, raft.PartitionDirName)
	offset, err := appendStandaloneBatches(fsys, part, end, batches, epoch)
	if err != nil {
		return err
	}
	qs := logstore.QuorumStateData{LeaderID: self.ID, LeaderEpoch: epoch, VotedID: kraft.NoNode}
	if dynamic {
		qs.DataVersion = 1
	} else {
		qs.CurrentVoters = []kraft.NodeID{self.ID}
	}
	if err := logstore.WriteQuorumState(fsys, part, qs); err != nil {
		return fmt.Errorf("write %s: %w (the log already holds the new epoch; run unsafe-force-standalone again)", filepath.Join(part, logstore.QuorumStateFileName), err)
	}
	kind, withVoters, formatFlag := "static", "", ""
	next := "edit controller.quorum.voters on every node to list them again, and restart them one at a time, this node first"
	if dynamic {
		kind, withVoters, formatFlag = "dynamic", " (and a VotersRecord)", " --no-initial-controllers"
		next = "start each one and add it with: krabka metadata-quorum --bootstrap-controller HOST:PORT add-controller --command-config its.properties"
	}
	_, err = fmt.Fprintf(a.stdout, "Forced node %d standalone (%s quorum): appended a LeaderChange at offset %d, epoch %d, with node %d as the only voter%s, and wrote %s.\n"+
		"Records committed by the lost voters after offset %d are lost.\n"+
		"Next steps:\n"+
		"  1. Start this node; it leads a one-voter quorum.\n"+
		"  2. Never start another old voter with its old log directory: wipe its log directories and format them again with --cluster-id %s%s.\n"+
		"  3. Add them back: %s.\n",
		cfg.NodeID, kind, offset, epoch, cfg.NodeID, withVoters, filepath.Join(part, logstore.QuorumStateFileName),
		end.LogEndOffset, mp.ClusterID, formatFlag, next)
	return err
}

// standaloneVotersRecord is the VotersRecord of the forced quorum: this node
// alone, with its directory id and its first controller listener as format
// --standalone publishes it, and this runtime's kraft.version range.
func standaloneVotersRecord(cfg raft.Config, dirID kraft.UUID) (*control.VotersRecord, error) {
	v, err := standaloneVoter(cfg)
	if err != nil {
		return nil, err
	}
	rec := control.NewVotersRecord()
	rec.Voters = []control.VotersRecordVoter{{
		VoterId: v.id, VoterDirectoryId: [16]byte(dirID),
		Endpoints:           []control.VotersRecordEndpoint{{Name: strings.ToUpper(cfg.ControllerListenerNames[0]), Host: v.host, Port: v.port}},
		KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MinSupportedVersion: wire.MinKRaftVersion, MaxSupportedVersion: wire.MaxKRaftVersion},
	}}
	return rec, nil
}

// standaloneBatches encodes the control batches the forced leader appends,
// as the engine encodes them: a LeaderChange (leader and only voter: self),
// then for a dynamic quorum a VotersRecord batch. Offsets are stamped when
// appended.
func standaloneBatches(self kraft.ReplicaKey, voters *control.VotersRecord, epoch int32, now time.Time) ([]byte, error) {
	lc := control.NewLeaderChangeMessage()
	lc.LeaderId = int32(self.ID)
	lc.Voters = []control.LeaderChangeMessageVoter{{VoterId: int32(self.ID)}}
	lc.GrantingVoters = []control.LeaderChangeMessageVoter{{VoterId: int32(self.ID)}}
	msgs := []control.Message{lc}
	if voters != nil {
		msgs = append(msgs, voters)
	}
	var out []byte
	for _, m := range msgs {
		key, value, err := control.Encode(m)
		if err != nil {
			return nil, err
		}
		p := recordbatch.DefaultParams()
		p.PartitionLeaderEpoch = epoch
		if out, err = recordbatch.AppendControlBatch(out, p, now.UnixMilli(), recordbatch.KeyValue{Key: key, Value: value}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendStandaloneBatches opens the log of part (recovering it as the node
// would, restarted at the newest snapshot when the log does not reach it),
// appends batches at epoch, fsyncs and returns the first batch's offset.
func appendStandaloneBatches(fsys vfs.FS, part string, end logEnd, batches []byte, epoch int32) (int64, error) {
	l, _, err := logstore.Open(fsys, part, logstore.DefaultOptions())
	if errors.Is(err, logstore.ErrLocked) {
		return 0, fmt.Errorf("%s is locked: a node is running on it; stop it first; nothing was changed", part)
	}
	if err != nil {
		return 0, fmt.Errorf("open the log %s: %w", part, err)
	}
	switch got := l.LogEndOffset(); {
	case got > end.LogEndOffset:
		return 0, errors.Join(fmt.Errorf("the log %s ends at offset %d after recovery, not at %d as read; nothing was changed", part, got, end.LogEndOffset), l.Close())
	case got < end.LogEndOffset:
		// The log does not reach the newest snapshot: the node restarts
		// its log there, and so does this.
		if err := l.TruncateFullyAndStartAt(end.LogEndOffset); err != nil {
			return 0, errors.Join(fmt.Errorf("restart the log %s at offset %d: %w", part, end.LogEndOffset, err), l.Close())
		}
	}
	res, err := l.AppendAsLeader(batches, epoch)
	if err == nil {
		_, err = l.Sync()
	}
	if err != nil {
		return 0, errors.Join(fmt.Errorf("append to the log %s: %w", part, err), l.Close())
	}
	return res.FirstOffset, l.Close()
}
