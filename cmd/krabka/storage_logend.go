package main

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/raft"
)

// newLogEndCommand builds "krabka storage log-end", Krabka's own: Kafka has
// no offline tool that reads a stopped controller's position in the log.
func newLogEndCommand(a *app) *cobra.Command {
	var config string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "log-end -c server.properties [--json]",
		Short: "Print a stopped node's log end, snapshot, election state and voter set (offline)",
		Long: "log-end reads the metadata log directory of a stopped node, without changing\n" +
			"it, and prints where its log ends (offset and epoch), its log start, its\n" +
			"newest snapshot, its quorum-state file, the highest offset it knows to be\n" +
			"committed and the voter set in force at its log end. After a majority of\n" +
			"the voters is lost, run it on every survivor and compare the log ends\n" +
			"(epoch first, then offset) to choose the node to rebuild the quorum from.\n" +
			"It takes the directory's lock and fails while a node runs on it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := readLogEnd(config)
			if err != nil {
				return err
			}
			if asJSON {
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(append(b, '\n'))
				return err
			}
			_, err = io.WriteString(a.stdout, r.String())
			return err
		},
	}
	cmd.Flags().StringVarP(&config, "config", "c", "", "the server.properties file of the node (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of the text")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// Where a committed offset comes from (logEnd.CommittedFrom).
const (
	committedFromSnapshot = "snapshot"
	committedFromNothing  = "none"
)

// Where the voter set in force comes from (voterSet.Source).
const (
	votersFromConfig    = "controller.quorum.voters"
	votersFromLog       = "log"
	votersFromSnapshot  = "snapshot"
	votersFromBootstrap = "bootstrap snapshot"
	votersFromNothing   = "none"
)

// logEnd is what "storage log-end" reports about a stopped node.
type logEnd struct {
	MetadataLogDir string `json:"metadataLogDir"`
	NodeID         int32  `json:"nodeId"`
	// DirectoryID and ClusterID come from meta.properties; empty when it
	// is missing or (directory.id) older than Kafka 3.7.
	DirectoryID string `json:"directoryId"`
	ClusterID   string `json:"clusterId"`
	// LogStartOffset, LogEndOffset and LogEndEpoch are the log as the node
	// will start with it: the last valid batch's end and epoch, or the
	// newest snapshot's id when the log does not reach it (the node then
	// restarts its log at the snapshot).
	LogStartOffset int64 `json:"logStartOffset"`
	LogEndOffset   int64 `json:"logEndOffset"`
	LogEndEpoch    int32 `json:"logEndEpoch"`
	// NewestSnapshot is the newest snapshot that reads back whole, without
	// the bootstrap snapshot 0-0; nil when there is none.
	NewestSnapshot *snapshotID `json:"newestSnapshot"`
	// QuorumState is the quorum-state file; nil when there is none.
	QuorumState *quorumStateFile `json:"quorumState"`
	// CommittedOffset is the highest offset below which every record is
	// known to be committed: the newest snapshot's end offset (a snapshot
	// covers committed records only), or 0 (CommittedFrom "none"). The
	// high watermark is not stored on disk, so records above it may be
	// committed too.
	CommittedOffset int64  `json:"committedOffset"`
	CommittedFrom   string `json:"committedOffsetFrom"`
	// Voters is the voter set in force at the log end.
	Voters voterSet `json:"voters"`
	// Notes say what the reader skipped or found damaged.
	Notes []string `json:"notes"`
}

type snapshotID struct {
	EndOffset int64 `json:"endOffset"`
	Epoch     int32 `json:"epoch"`
}

func snapshotIDOf(id kraft.OffsetAndEpoch) snapshotID {
	return snapshotID{EndOffset: int64(id.Offset), Epoch: int32(id.Epoch)}
}

// String is the id as snapshot file names spell it: end offset, then
// epoch.
func (id snapshotID) String() string { return fmt.Sprintf("%d-%d", id.EndOffset, id.Epoch) }

type quorumStateFile struct {
	DataVersion      int16  `json:"dataVersion"`
	LeaderEpoch      int32  `json:"leaderEpoch"`
	LeaderID         int32  `json:"leaderId"`
	VotedID          int32  `json:"votedId"`
	VotedDirectoryID string `json:"votedDirectoryId,omitempty"`
}

// voterSet is the voter set in force and where it was found.
type voterSet struct {
	// Dynamic is false for a static quorum (controller.quorum.voters).
	Dynamic bool `json:"dynamic"`
	// Source is one of the votersFrom constants.
	Source string `json:"source"`
	// Offset is the base offset of the batch holding the VotersRecord
	// (Source "log"); Snapshot the snapshot's id (Source "snapshot").
	Offset   *int64      `json:"offset,omitempty"`
	Snapshot *snapshotID `json:"snapshot,omitempty"`
	Voters   []voter     `json:"voters"`
}

// voter is one member of the voter set.
type voter struct {
	ID int32 `json:"id"`
	// DirectoryID is empty in a static quorum.
	DirectoryID string `json:"directoryId,omitempty"`
	// Endpoints are NAME://host:port (host:port in a static quorum).
	Endpoints []string `json:"endpoints"`
}

// readLogEnd reads the metadata log directory of the node configured by the
// properties file at path, holding its lock while it reads. It writes
// nothing but the lock file.
func readLogEnd(path string) (logEnd, error) {
	// Unused properties are the node's own start's to report.
	cfg, _, err := raft.LoadConfig(path)
	if err != nil {
		return logEnd{}, fmt.Errorf("config %s: %w", path, err)
	}
	dir := filepath.Clean(cfg.MetadataLogDir)
	r := logEnd{MetadataLogDir: dir, NodeID: int32(cfg.NodeID), Notes: []string{}}
	if _, err := os.Stat(dir); err != nil {
		return r, fmt.Errorf("metadata log directory %s: %w", dir, err)
	}
	fsys := vfs.OS()
	lock, err := logstore.LockDir(fsys, dir)
	if errors.Is(err, logstore.ErrLocked) {
		return r, fmt.Errorf("metadata log directory %s is locked: a node is running on it; stop it first, log-end reads a stopped node", dir)
	}
	if err != nil {
		return r, err
	}
	defer lock.Close()

	switch mp, err := logstore.ReadMetaProperties(fsys, dir); {
	case err == nil:
		r.ClusterID = mp.ClusterID
		if mp.NodeID >= 0 && int32(mp.NodeID) != r.NodeID {
			r.Notes = append(r.Notes, fmt.Sprintf("meta.properties belongs to node %d, not to node.id %d: the node refuses to start", mp.NodeID, r.NodeID))
		}
		if !mp.DirectoryID.IsZero() {
			r.DirectoryID = mp.DirectoryID.String()
		}
	case errors.Is(err, fs.ErrNotExist):
		r.Notes = append(r.Notes, "no meta.properties: the directory was never formatted")
	default:
		r.Notes = append(r.Notes, err.Error())
	}

	part := filepath.Join(dir, raft.PartitionDirName)
	switch qs, err := logstore.ReadQuorumState(fsys, part); {
	case err == nil:
		r.QuorumState = &quorumStateFile{DataVersion: qs.DataVersion, LeaderEpoch: qs.LeaderEpoch, LeaderID: int32(qs.LeaderID), VotedID: int32(qs.VotedID)}
		if !qs.VotedDirectoryID.IsZero() {
			r.QuorumState.VotedDirectoryID = qs.VotedDirectoryID.String()
		}
	case !errors.Is(err, fs.ErrNotExist):
		r.Notes = append(r.Notes, err.Error())
	}

	snaps, err := readSnapshots(fsys, part, &r.Notes)
	if err != nil {
		return r, err
	}
	scan, err := scanSegments(part)
	if err != nil {
		return r, err
	}
	r.Notes = append(r.Notes, scan.notes...)

	newest := snaps.newest
	logVoters := scan.voters
	switch {
	case newest != nil && scan.segments > 0 && (scan.end < newest.EndOffset || scan.start > newest.EndOffset):
		r.Notes = append(r.Notes, fmt.Sprintf("the log segments hold offsets from %d up to %d, which do not reach the newest snapshot %s: the node restarts its log at the snapshot", scan.start, scan.end, *newest))
		fallthrough
	case newest != nil && scan.segments == 0:
		r.LogStartOffset, r.LogEndOffset, r.LogEndEpoch = newest.EndOffset, newest.EndOffset, newest.Epoch
		logVoters = nil
	default:
		r.LogStartOffset, r.LogEndOffset, r.LogEndEpoch = scan.start, scan.end, scan.lastEpoch
		if !scan.hasBatches && newest != nil {
			r.LogEndEpoch = newest.Epoch
		}
		// The node moves its log start up to the oldest snapshot at or
		// above the first segment.
		for _, id := range snaps.ids {
			if int64(id.Offset) >= r.LogStartOffset {
				r.LogStartOffset = int64(id.Offset)
				break
			}
		}
	}
	r.CommittedFrom = committedFromNothing
	if newest != nil {
		r.NewestSnapshot = newest
		r.CommittedOffset, r.CommittedFrom = newest.EndOffset, committedFromSnapshot
	}
	r.Voters = voterSetInForce(cfg, snaps, logVoters)
	return r, nil
}

// snapshotSet is what readSnapshots found.
type snapshotSet struct {
	// ids are the complete snapshots' ids, oldest first, without 0-0.
	ids []kraft.OffsetAndEpoch
	// newest is the newest snapshot that reads back whole (nil: none),
	// and newestVoters the voter set in its header.
	newest       *snapshotID
	newestVoters *control.VotersRecord
	// bootstrapVoters is the voter set of the bootstrap snapshot 0-0.
	bootstrapVoters *control.VotersRecord
}

// readSnapshots lists the snapshots of the partition directory part and
// verifies the newest ones until one reads back whole, as the node does
// when it starts; each one it skips is noted.
func readSnapshots(fsys vfs.FS, part string, notes *[]string) (snapshotSet, error) {
	var s snapshotSet
	listing, err := snapshot.List(fsys, part)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	hasBootstrap := false
	for _, info := range listing.Snapshots {
		if info.ID == snapshot.Bootstrap {
			hasBootstrap = true
			continue
		}
		s.ids = append(s.ids, info.ID)
	}
	for i := len(s.ids) - 1; i >= 0 && s.newest == nil; i-- {
		r, err := snapshot.Open(fsys, filepath.Join(part, snapshot.FileName(s.ids[i])), snapshot.ReadOptions{})
		if err != nil {
			*notes = append(*notes, fmt.Sprintf("snapshot %s is skipped: %v", snapshotIDOf(s.ids[i]), err))
			continue
		}
		id := snapshotIDOf(s.ids[i])
		s.newest, s.newestVoters = &id, r.Header().Voters
		_ = r.Close()
	}
	if hasBootstrap {
		r, err := snapshot.Open(fsys, filepath.Join(part, snapshot.FileName(snapshot.Bootstrap)), snapshot.ReadOptions{})
		if err != nil {
			*notes = append(*notes, fmt.Sprintf("bootstrap snapshot 0-0 is skipped: %v", err))
		} else {
			s.bootstrapVoters = r.Header().Voters
			_ = r.Close()
		}
	}
	return s, nil
}

// voterSetInForce returns the voter set at the log end, chosen as the node
// chooses it: in a static quorum the configured voters; in a dynamic one the
// newest VotersRecord of the log after the newest snapshot, else that
// snapshot's, else (with no snapshot) the bootstrap snapshot's. A
// VotersRecord is in force from the moment it is appended (KIP-853), so
// one not yet committed counts.
func voterSetInForce(cfg raft.Config, snaps snapshotSet, logVoters []votersAt) voterSet {
	if len(cfg.QuorumVoters) > 0 {
		vs := voterSet{Source: votersFromConfig}
		for _, v := range cfg.QuorumVoters {
			vs.Voters = append(vs.Voters, voter{ID: int32(v.ID), Endpoints: []string{v.Address()}})
		}
		return vs
	}
	vs := voterSet{Dynamic: true, Source: votersFromNothing}
	var rec *control.VotersRecord
	switch {
	case len(logVoters) > 0 && (snaps.newest == nil || logVoters[len(logVoters)-1].offset >= snaps.newest.EndOffset):
		last := logVoters[len(logVoters)-1]
		vs.Source, vs.Offset, rec = votersFromLog, &last.offset, last.rec
	case snaps.newest != nil && snaps.newestVoters != nil:
		vs.Source, vs.Snapshot, rec = votersFromSnapshot, &snapshotID{EndOffset: snaps.newest.EndOffset, Epoch: snaps.newest.Epoch}, snaps.newestVoters
	case snaps.newest == nil && snaps.bootstrapVoters != nil:
		vs.Source, rec = votersFromBootstrap, snaps.bootstrapVoters
	}
	if rec != nil {
		for _, v := range rec.Voters {
			out := voter{ID: v.VoterId, DirectoryID: kraft.UUID(v.VoterDirectoryId).String()}
			for _, ep := range v.Endpoints {
				out.Endpoints = append(out.Endpoints, ep.Name+"://"+raft.HostPort{Host: ep.Host, Port: ep.Port}.Address())
			}
			vs.Voters = append(vs.Voters, out)
		}
	}
	return vs
}

// votersAt is a VotersRecord of the log and the base offset of its batch.
type votersAt struct {
	offset int64
	rec    *control.VotersRecord
}

// segmentScan is what scanSegments read from the log segments.
type segmentScan struct {
	segments int
	// start is the first segment's base offset; end the offset after the
	// last valid batch (start when there is none).
	start, end int64
	hasBatches bool
	lastEpoch  int32
	voters     []votersAt
	notes      []string
}

// scanSegments reads every segment of the partition directory part in
// offset order and validates each batch as the log's recovery does
// (length, magic, CRC-32C, contiguous offsets, epochs that never
// decrease). It stops at the first batch that fails: the log is taken to
// end there, and the damage is noted. Zeros after the last batch of the
// last segment are the space a running node allocates ahead of its
// appends, not damage. It changes nothing on disk.
func scanSegments(part string) (segmentScan, error) {
	var s segmentScan
	entries, err := os.ReadDir(part)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if len(name) != 24 || !strings.HasSuffix(name, ".log") || e.IsDir() {
			continue
		}
		base, err := strconv.ParseInt(name[:20], 10, 64)
		if err != nil {
			continue
		}
		bases = append(bases, base)
	}
	slices.Sort(bases)
	s.segments = len(bases)
	if len(bases) == 0 {
		return s, nil
	}
	s.start, s.end = bases[0], bases[0]
	for i, base := range bases {
		path := filepath.Join(part, fmt.Sprintf("%020d.log", base))
		if base != s.end {
			s.notes = append(s.notes, fmt.Sprintf("%s starts at offset %d, but the log before it ends at %d: the log is read up to offset %d", path, base, s.end, s.end))
			return s, nil
		}
		damaged, err := s.scanSegment(path, i == len(bases)-1)
		if err != nil {
			return s, err
		}
		if damaged {
			if i < len(bases)-1 {
				s.notes = append(s.notes, fmt.Sprintf("%d later segments are not read", len(bases)-1-i))
			}
			return s, nil
		}
	}
	return s, nil
}

// scanSegment reads the segment at path, continuing s. It reports whether
// the segment is damaged (and notes where).
func (s *segmentScan) scanSegment(path string, last bool) (damaged bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var pos int64
	var prefix [12]byte
	buf := make([]byte, 0, 64<<10)
	for {
		n, err := io.ReadFull(br, prefix[:])
		if err == io.EOF {
			return false, nil
		}
		// bad notes the damage at pos, unless consumed (the bytes read
		// from pos) and the rest of the last segment are zeros.
		bad := func(consumed []byte, reason string) (bool, error) {
			if last {
				zeros, err := onlyZeros(consumed, br)
				if err != nil {
					return false, err
				}
				if zeros {
					return false, nil
				}
			}
			s.notes = append(s.notes, fmt.Sprintf("%s: damaged at byte %d (offset %d): %s; the log is read up to offset %d", path, pos, s.end, reason, s.end))
			return true, nil
		}
		if err == io.ErrUnexpectedEOF {
			return bad(prefix[:n], "the file ends inside a batch")
		}
		if err != nil {
			return false, err
		}
		length := int32(binary.BigEndian.Uint32(prefix[8:]))
		if length < recordbatch.HeaderSize-12 || int(length)+12 > logstore.DefaultMaxBatchBytes {
			return bad(prefix[:], fmt.Sprintf("batch length %d is out of bounds", length))
		}
		buf = append(buf[:0], prefix[:]...)
		buf = slices.Grow(buf, int(length))[:12+int(length)]
		if m, err := io.ReadFull(br, buf[12:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return bad(buf[:12+m], fmt.Sprintf("the file ends inside a batch (%d of %d bytes)", 12+m, 12+int(length)))
			}
			return false, err
		}
		h, err := recordbatch.Validate(buf)
		switch {
		case err != nil:
			return bad(buf, err.Error())
		case h.BaseOffset != s.end:
			return bad(buf, fmt.Sprintf("batch starts at offset %d, want %d", h.BaseOffset, s.end))
		case s.hasBatches && h.PartitionLeaderEpoch < s.lastEpoch:
			return bad(buf, fmt.Sprintf("batch epoch %d is below the previous batch's %d", h.PartitionLeaderEpoch, s.lastEpoch))
		}
		if h.IsControl() {
			if rec := votersRecordIn(slices.Clone(buf)); rec != nil {
				s.voters = append(s.voters, votersAt{offset: h.BaseOffset, rec: rec})
			}
		}
		s.end, s.lastEpoch, s.hasBatches = h.NextOffset(), h.PartitionLeaderEpoch, true
		pos += int64(len(buf))
	}
}

// onlyZeros reports whether head and everything left in r are zero bytes.
func onlyZeros(head []byte, r io.Reader) (bool, error) {
	for _, b := range head {
		if b != 0 {
			return false, nil
		}
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// votersRecordIn returns the last VotersRecord of the control batch b, or
// nil. Control records of unknown types are skipped, as Kafka's readers
// skip them.
func votersRecordIn(b []byte) *control.VotersRecord {
	batch, err := recordbatch.Parse(b)
	if err != nil {
		return nil
	}
	var out *control.VotersRecord
	for _, rec := range batch.Records {
		if msg, err := control.Decode(rec.Key, rec.Value); err == nil {
			if v, ok := msg.(*control.VotersRecord); ok {
				out = v
			}
		}
	}
	return out
}

// String renders the report as "storage log-end" prints it: one
// "Label: value" line per fact, values from column 25 as in
// metadata-quorum describe --status, one Voter line per voter and one Note
// line per note.
func (r logEnd) String() string {
	var b strings.Builder
	line := func(label string, value any) { fmt.Fprintf(&b, "%-24s%v\n", label+":", value) }
	orNone := func(s string) string { return cmp.Or(s, "none") }
	line("MetadataLogDir", r.MetadataLogDir)
	line("NodeId", r.NodeID)
	line("DirectoryId", orNone(r.DirectoryID))
	line("ClusterId", orNone(r.ClusterID))
	line("LogStartOffset", r.LogStartOffset)
	line("LogEndOffset", r.LogEndOffset)
	line("LogEndEpoch", r.LogEndEpoch)
	if s := r.NewestSnapshot; s != nil {
		line("NewestSnapshot", fmt.Sprintf("%d-%d", s.EndOffset, s.Epoch))
	} else {
		line("NewestSnapshot", "none")
	}
	if q := r.QuorumState; q != nil {
		line("QuorumStateEpoch", q.LeaderEpoch)
		line("QuorumStateLeaderId", q.LeaderID)
		line("QuorumStateVotedId", q.VotedID)
		if q.VotedDirectoryID != "" {
			line("QuorumStateVotedDirId", q.VotedDirectoryID)
		}
	} else {
		line("QuorumState", "none (no quorum-state file)")
	}
	if r.CommittedFrom == committedFromSnapshot {
		line("CommittedOffset", fmt.Sprintf("%d (the newest snapshot's end offset; the high watermark is not stored on disk, so records after it may be committed too)", r.CommittedOffset))
	} else {
		line("CommittedOffset", fmt.Sprintf("%d (no snapshot: no record is known to be committed; the high watermark is not stored on disk)", r.CommittedOffset))
	}
	vs := r.Voters
	kind := "static"
	if vs.Dynamic {
		kind = "dynamic"
	}
	switch {
	case vs.Offset != nil:
		line("VoterSet", fmt.Sprintf("%s, from the VotersRecord at log offset %d", kind, *vs.Offset))
	case vs.Snapshot != nil:
		line("VoterSet", fmt.Sprintf("%s, from snapshot %d-%d", kind, vs.Snapshot.EndOffset, vs.Snapshot.Epoch))
	default:
		line("VoterSet", kind+", from "+vs.Source)
	}
	for _, v := range vs.Voters {
		s := strconv.Itoa(int(v.ID))
		if v.DirectoryID != "" {
			s += " " + v.DirectoryID
		}
		line("Voter", s+" "+strings.Join(v.Endpoints, ","))
	}
	for _, n := range r.Notes {
		line("Note", n)
	}
	return b.String()
}
