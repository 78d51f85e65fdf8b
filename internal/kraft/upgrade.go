package kraft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// The kraft.version 0→1 upgrade (KIP-853; Kafka's
// KafkaRaftClient.upgradeKRaftVersion and
// LeaderState.maybeAppendUpgradedKRaftVersion).
//
// A static quorum (controller.quorum.voters, kraft.version 0) has voter
// keys without directory ids and no endpoints in its log. To turn it
// into a dynamic one the leader writes one control batch, a KRaftVersion
// record of level 1 and a Voters record naming every static voter with
// its directory id, endpoints and supported kraft.version range. The
// leader learns each voter's directory id from its Fetch requests
// (ReplicaDirectoryId, Fetch v17+) and its supported range and endpoints
// from the UpdateRaftVoter request a voter sends once after it starts
// following a leader; what it learned belongs to its epoch, as Kafka's
// LeaderState holds it. The core keeps the directory ids and ranges; the
// runtime keeps the endpoints and encodes the records.

// MaxKRaftVersion is the highest kraft.version the core implements:
// level 1, dynamic voter sets (KIP-853).
const MaxKRaftVersion int16 = 1

// ErrKRaftUpgrade is matched (with [errors.Is]) by every
// [*KRaftUpgradeError].
var ErrKRaftUpgrade = errors.New("kraft: invalid kraft.version upgrade")

// KRaftUpgradeError is the refusal of a kraft.version upgrade. Its
// message begins with the sentence Kafka's LeaderState uses for the same
// refusal (an InvalidUpdateVersionException) and then names the voters
// concerned.
type KRaftUpgradeError struct {
	From, To int16
	// Unsupported lists the voters that have not reported, in this
	// leader's epoch, a kraft.version range that includes To (no
	// UpdateRaftVoter yet, or one whose range leaves To out).
	Unsupported []NodeID
	// NoDirectory lists the voters whose directory id is unknown.
	NoDirectory []NodeID
}

// Error describes the refusal.
func (e *KRaftUpgradeError) Error() string {
	switch {
	case e.To < e.From:
		return fmt.Sprintf("Invalid upgrade of kraft.version from version %d to %d because the new version is a downgrade", e.From, e.To)
	case e.To > MaxKRaftVersion:
		return fmt.Sprintf("Invalid upgrade of kraft.version from version %d to %d", e.From, e.To)
	case len(e.Unsupported) > 0:
		return fmt.Sprintf("Invalid upgrade of kraft.version to %d because not all of the voters support it: voters %s have not reported a kraft.version range including %d to this leader (UpdateRaftVoter)",
			e.To, idList(e.Unsupported), e.To)
	default:
		return fmt.Sprintf("Invalid upgrade of kraft.version to %d because the directory id is not known for all of the voters: voters %s", e.To, idList(e.NoDirectory))
	}
}

// Is reports whether target is [ErrKRaftUpgrade].
func (e *KRaftUpgradeError) Is(target error) bool { return target == ErrKRaftUpgrade }

func idList(ids []NodeID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	return strings.Join(parts, ", ")
}

// KRaftVersion returns the kraft.version in force: 1 once a Voters record
// is part of the voter-set history (appended, committed or not, or read
// from a snapshot), 0 while only the static configuration applies.
func (n *Node) KRaftVersion() int16 {
	if len(n.s.voterSets) > 1 {
		return 1
	}
	return 0
}

// noteFetchedDirectory records the directory id a voter of a static
// quorum sent in a Fetch (ReplicaDirectoryId). A directory id other than
// the one it reported before means a new disk, whose software has yet to
// report its kraft.version range.
func (n *Node) noteFetchedDirectory(r *replicaState, dir UUID) {
	if dir.IsZero() || r.ReportedDir == dir || n.KRaftVersion() > 0 {
		return
	}
	r.ReportedDir = dir
	r.KRaftKnown = false
}

// NoteVoterUpdate records, on the leader of a static quorum, what a
// voter's UpdateRaftVoter reported: its directory id (key) and the
// kraft.version range [minVersion, maxVersion] its software supports. The
// runtime calls it after it accepted the request (Kafka's
// UpdateVoterHandler at kraft.version 0 updates only the leader's
// in-memory upgrade state). It fails with a [*NotLeaderError] on a
// replica that is not the leader, and with an error for a key that is
// not a voter or a quorum that is already dynamic.
func (n *Node) NoteVoterUpdate(now Instant, key ReplicaKey, minVersion, maxVersion int16) error {
	n.advanceClock(now)
	if n.s.role != Leader {
		return &NotLeaderError{Leader: n.leaderAndEpoch()}
	}
	switch {
	case n.KRaftVersion() > 0:
		return errors.New("kraft: note voter update: the voter set is dynamic already (kraft.version 1)")
	case key.DirectoryID.IsZero():
		return fmt.Errorf("kraft: note voter update: voter %d without a directory id", key.ID)
	case minVersion < 0 || maxVersion < minVersion:
		return fmt.Errorf("kraft: note voter update: invalid kraft.version range [%d, %d]", minVersion, maxVersion)
	}
	r := n.leaderVoter(key.ID)
	if r == nil || key.ID == n.me.ID {
		return fmt.Errorf("kraft: note voter update: node %d is not a remote voter", key.ID)
	}
	r.ReportedDir = key.DirectoryID
	r.KRaftMin, r.KRaftMax, r.KRaftKnown = minVersion, maxVersion, true
	return nil
}

// PlanKRaftUpgrade checks, on the leader, that kraft.version can move to
// level now and returns the voter set the upgrade's Voters record names:
// every voter of the static configuration with the directory id it
// reported, sorted by node id. It returns (nil, nil) when the quorum is
// at level already, as Kafka treats that upgrade as done. It fails with a
// [*NotLeaderError] on a replica that is not the active leader and with a
// [*KRaftUpgradeError] when the level is not an upgrade this core
// performs, or when a voter's directory id or support for the level is
// unknown. It changes nothing: [Node.Propose] with the returned voters
// and KRaftVersion level performs the upgrade.
func (n *Node) PlanKRaftUpgrade(level int16) ([]ReplicaKey, error) {
	if n.s.role != Leader || n.s.shuttingDown {
		return nil, &NotLeaderError{Leader: n.leaderAndEpoch()}
	}
	from := n.KRaftVersion()
	switch {
	case level == from:
		return nil, nil
	case level < from || level > MaxKRaftVersion:
		return nil, &KRaftUpgradeError{From: from, To: level}
	}
	refusal := &KRaftUpgradeError{From: from, To: level}
	keys := make([]ReplicaKey, 0, len(n.s.leader.Voters))
	for _, r := range n.s.leader.Voters {
		k := ReplicaKey{ID: r.Key.ID, DirectoryID: r.ReportedDir}
		supports := r.KRaftKnown && r.KRaftMin <= level && level <= r.KRaftMax
		if r.Key.ID == n.me.ID {
			// The leader is this core, which implements the level.
			k.DirectoryID, supports = n.me.DirectoryID, true
		}
		if !supports {
			refusal.Unsupported = append(refusal.Unsupported, r.Key.ID)
		}
		if k.DirectoryID.IsZero() {
			refusal.NoDirectory = append(refusal.NoDirectory, r.Key.ID)
		}
		keys = append(keys, k)
	}
	if len(refusal.Unsupported) > 0 || len(refusal.NoDirectory) > 0 {
		return nil, refusal
	}
	return keys, nil
}

// checkUpgradeProposal validates a Proposal that carries a KRaftVersion
// record on a static quorum: it must be the upgrade PlanKRaftUpgrade
// admits now, with exactly the voters it names.
func (n *Node) checkUpgradeProposal(p Proposal) error {
	if n.KRaftVersion() > 0 {
		return nil
	}
	want, err := n.PlanKRaftUpgrade(p.KRaftVersion)
	if err != nil {
		return fmt.Errorf("kraft: propose kraft.version %d: %w", p.KRaftVersion, err)
	}
	got := slices.Clone(p.Voters)
	sortKeys(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("kraft: propose kraft.version %d: voters %v are not the static voters with their directory ids %v", p.KRaftVersion, got, want)
	}
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "upgrading kraft.version",
		slog.Int(keyEpoch, int(n.s.epoch)), slog.Int(keyKRaftVersion, int(p.KRaftVersion)), slog.String(keyVoters, keyList(want)))
	return nil
}

// keyKRaftVersion is the log attribute of a kraft.version level.
const keyKRaftVersion = "kraft_version"
