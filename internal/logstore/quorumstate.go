package logstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// QuorumStateFileName is the name of the election-state file in the
// partition directory (Kafka's FileQuorumStateStore).
const QuorumStateFileName = "quorum-state"

// maxQuorumStateBytes bounds what ReadQuorumState reads. A real file is a
// few hundred bytes; v0 files list the voters, so allow generous room.
const maxQuorumStateBytes = 1 << 20

// QuorumStateData is the content of Kafka's quorum-state file, the on-disk
// form of the durable election state (kraft.ElectionState): Kafka's
// QuorumStateData.json plus the top-level "data_version".
// The whole state is written in one atomic file replacement, so epoch, vote
// and leader can never be torn apart.
type QuorumStateData struct {
	// DataVersion is the file's data_version: 0 (kraft.version 0) or 1
	// (kraft.version 1, KRaftVersion.quorumStateVersion).
	DataVersion int16
	// LeaderID is the known leader of LeaderEpoch, or -1.
	LeaderID kraft.NodeID
	// LeaderEpoch is the current epoch.
	LeaderEpoch int32
	// VotedID is the replica voted for in LeaderEpoch, or -1.
	VotedID kraft.NodeID
	// VotedDirectoryID is the directory id of the replica voted for
	// (version 1 only; zero means none).
	VotedDirectoryID kraft.UUID
	// ClusterID is the legacy "clusterId" of version 0 (Kafka writes "").
	ClusterID string
	// AppliedOffset is the legacy "appliedOffset" of version 0 (Kafka
	// writes 0).
	AppliedOffset int64
	// CurrentVoters is the legacy "currentVoters" of version 0: the ids of
	// the latest voter set. Nil is written as JSON null.
	CurrentVoters []kraft.NodeID
}

// ReadQuorumState reads and parses the quorum-state file in dir. A missing
// file returns an error that wraps fs.ErrNotExist (a fresh node).
func ReadQuorumState(fsys vfs.FS, dir string) (QuorumStateData, error) {
	path := filepath.Join(dir, QuorumStateFileName)
	data, err := readSmallFile(fsys, path, maxQuorumStateBytes)
	if err != nil {
		return QuorumStateData{}, fmt.Errorf("logstore: read quorum state %s: %w", path, err)
	}
	qs, err := ParseQuorumState(data)
	if err != nil {
		return QuorumStateData{}, fmt.Errorf("logstore: read quorum state %s: %w", path, err)
	}
	return qs, nil
}

// WriteQuorumState replaces the quorum-state file in dir atomically
// (quorum-state.tmp, fsync, rename, fsync of dir), as
// FileQuorumStateStore.writeElectionStateToFile does. When it returns nil
// the new state is durable; after a crash at any point the file holds the
// old state or the new one, never a mix.
func WriteQuorumState(fsys vfs.FS, dir string, qs QuorumStateData) error {
	data, err := qs.MarshalJSON()
	if err != nil {
		return err
	}
	return writeFileAtomic(fsys, filepath.Join(dir, QuorumStateFileName), data)
}

// MarshalJSON encodes qs exactly as Kafka writes it: one line without a
// trailing newline, keys in the schema's field order for the data version,
// then "data_version".
func (qs QuorumStateData) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	switch qs.DataVersion {
	case 0:
		cid, err := json.Marshal(qs.ClusterID)
		if err != nil {
			return nil, fmt.Errorf("logstore: encode quorum state: %w", err)
		}
		fmt.Fprintf(&b, `{"clusterId":%s,"leaderId":%d,"leaderEpoch":%d,"votedId":%d,"appliedOffset":%d,"currentVoters":`,
			cid, qs.LeaderID, qs.LeaderEpoch, qs.VotedID, qs.AppliedOffset)
		if qs.CurrentVoters == nil {
			b.WriteString("null")
		} else {
			b.WriteByte('[')
			for i, v := range qs.CurrentVoters {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"voterId":%d}`, v)
			}
			b.WriteByte(']')
		}
		b.WriteString(`,"data_version":0}`)
	case 1:
		fmt.Fprintf(&b, `{"leaderId":%d,"leaderEpoch":%d,"votedId":%d,"votedDirectoryId":"%s","data_version":1}`,
			qs.LeaderID, qs.LeaderEpoch, qs.VotedID, qs.VotedDirectoryID)
	default:
		return nil, fmt.Errorf("logstore: encode quorum state: unsupported data_version %d", qs.DataVersion)
	}
	return b.Bytes(), nil
}

// ParseQuorumState parses the content of a quorum-state file. Like Kafka it
// reads the first line only; a missing or unknown data_version, a missing
// field of that version, a value of the wrong type or a negative epoch is an
// error. Unknown fields are ignored, as Kafka's generated reader does.
func ParseQuorumState(data []byte) (QuorumStateData, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return QuorumStateData{}, fmt.Errorf("parse quorum state: %w", err)
	}
	if raw == nil {
		return QuorumStateData{}, errors.New("parse quorum state: not a JSON object")
	}
	dv, ok := raw["data_version"]
	if !ok {
		return QuorumStateData{}, errors.New("parse quorum state: missing data_version")
	}
	version, err := jsonInt(dv, math.MinInt16, math.MaxInt16)
	if err != nil {
		return QuorumStateData{}, fmt.Errorf("parse quorum state: data_version: %w", err)
	}
	if version != 0 && version != 1 {
		return QuorumStateData{}, fmt.Errorf("parse quorum state: unknown data_version %d (this version reads 0 and 1)", version)
	}
	qs := QuorumStateData{DataVersion: int16(version)}
	int32Field := func(name string) (int32, error) {
		v, ok := raw[name]
		if !ok {
			return 0, fmt.Errorf("parse quorum state: missing %s for data_version %d", name, version)
		}
		n, err := jsonInt(v, math.MinInt32, math.MaxInt32)
		if err != nil {
			return 0, fmt.Errorf("parse quorum state: %s: %w", name, err)
		}
		return int32(n), nil
	}
	leaderID, err := int32Field("leaderId")
	if err != nil {
		return QuorumStateData{}, err
	}
	if qs.LeaderEpoch, err = int32Field("leaderEpoch"); err != nil {
		return QuorumStateData{}, err
	}
	votedID, err := int32Field("votedId")
	if err != nil {
		return QuorumStateData{}, err
	}
	qs.LeaderID, qs.VotedID = kraft.NodeID(leaderID), kraft.NodeID(votedID)
	if qs.LeaderEpoch < 0 {
		return QuorumStateData{}, fmt.Errorf("parse quorum state: negative leaderEpoch %d", qs.LeaderEpoch)
	}
	if version == 1 {
		err = parseQuorumStateV1(raw, &qs)
	} else {
		err = parseQuorumStateV0(raw, &qs)
	}
	if err != nil {
		return QuorumStateData{}, err
	}
	return qs, nil
}

// parseQuorumStateV1 parses into qs the field data_version 1 adds to
// leaderId, leaderEpoch and votedId: votedDirectoryId.
func parseQuorumStateV1(raw map[string]json.RawMessage, qs *QuorumStateData) error {
	v, ok := raw["votedDirectoryId"]
	if !ok {
		return errors.New("parse quorum state: missing votedDirectoryId for data_version 1")
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return fmt.Errorf("parse quorum state: votedDirectoryId: %w", err)
	}
	var err error
	if qs.VotedDirectoryID, err = kraft.ParseUUID(s); err != nil {
		return fmt.Errorf("parse quorum state: votedDirectoryId: %w", err)
	}
	return nil
}

// parseQuorumStateV0 parses into qs the fields data_version 0 adds to
// leaderId, leaderEpoch and votedId: clusterId, appliedOffset and
// currentVoters.
func parseQuorumStateV0(raw map[string]json.RawMessage, qs *QuorumStateData) error {
	v, ok := raw["clusterId"]
	if !ok {
		return errors.New("parse quorum state: missing clusterId for data_version 0")
	}
	if err := json.Unmarshal(v, &qs.ClusterID); err != nil {
		return fmt.Errorf("parse quorum state: clusterId: %w", err)
	}
	v, ok = raw["appliedOffset"]
	if !ok {
		return errors.New("parse quorum state: missing appliedOffset for data_version 0")
	}
	var err error
	if qs.AppliedOffset, err = jsonInt(v, math.MinInt64, math.MaxInt64); err != nil {
		return fmt.Errorf("parse quorum state: appliedOffset: %w", err)
	}
	v, ok = raw["currentVoters"]
	if !ok {
		return errors.New("parse quorum state: missing currentVoters for data_version 0")
	}
	var voters []map[string]json.RawMessage
	if err := json.Unmarshal(v, &voters); err != nil {
		return fmt.Errorf("parse quorum state: currentVoters: %w", err)
	}
	if voters != nil {
		qs.CurrentVoters = make([]kraft.NodeID, 0, len(voters))
		for i, e := range voters {
			id, ok := e["voterId"]
			if !ok {
				return fmt.Errorf("parse quorum state: currentVoters[%d]: missing voterId", i)
			}
			n, err := jsonInt(id, math.MinInt32, math.MaxInt32)
			if err != nil {
				return fmt.Errorf("parse quorum state: currentVoters[%d].voterId: %w", i, err)
			}
			qs.CurrentVoters = append(qs.CurrentVoters, kraft.NodeID(n))
		}
	}
	return nil
}

// jsonInt parses a JSON integer within [lo, hi].
func jsonInt(v json.RawMessage, lo, hi int64) (int64, error) {
	s := string(bytes.TrimSpace(v))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %s", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d out of range [%d, %d]", n, lo, hi)
	}
	return n, nil
}
