package kraft

import (
	"context"
	"log/slog"

	"github.com/krabka-go/krabka/internal/bugzoo"
)

// followerState is the per-role state of Follower (FollowerState).
type followerState struct {
	// TimerStart is when the fetch timer (FollowerState's, of
	// controller.quorum.fetch.timeout.ms) last restarted: on entry and on
	// every successful Fetch or FetchSnapshot answer.
	TimerStart Instant
	// FetchDeadline: a voter starts a pre-vote then. It is the fetch
	// timer's expiry plus a random campaign delay, or earlier once the
	// leader is lost (leaderlost.go).
	FetchDeadline Instant
	// HasFetched: a successful answer came from the leader in this epoch;
	// from then on pre-votes are refused while the leader is heard
	// (KIP-996, hearsLeader).
	HasFetched bool
	// LeaderLost: the leader is taken as gone before the fetch timer
	// expired (its connection was lost, or it resigned): pre-votes are
	// granted (leaderlost.go).
	LeaderLost bool
	Snapshot   snapshotDownload
}

// snapshotDownload tracks a FetchSnapshot download (KIP-630): while
// Active, the follower sends FetchSnapshot instead of Fetch.
type snapshotDownload struct {
	Active   bool
	ID       OffsetAndEpoch
	Position int64
	Size     int64 // the total size the first chunk announced; 0 before it
}

// pollFollower: a voter whose fetch timer expired starts a pre-vote;
// otherwise fetch from the leader when the slot is free.
func (n *Node) pollFollower() {
	if n.s.shuttingDown {
		return
	}
	if n.isVoter() && n.s.now >= n.s.follower.FetchDeadline {
		n.transitionToProspective()
		return
	}
	if n.s.tailStale {
		return
	}
	if !n.canSend(n.s.leaderID) {
		if n.s.peers[n.peerIndex(n.s.leaderID)].InFlight == 0 && !(n.isVoter() && n.s.follower.LeaderLost) {
			// The leader's slot is backing off after a failure or a timeout:
			// ask a bootstrap server instead, in case a new leader exists
			// (KafkaRaftClient.pollFollowerAsVoter and
			// pollFollowerAsObserver). A voter that lost its leader
			// pre-votes shortly instead, and keeps its slots free for that:
			// the answers name any leader the others know.
			n.fetchFromBootstrap(n.s.leaderID)
		}
		return
	}
	if d := n.s.follower.Snapshot; d.Active {
		r := &FetchSnapshotRequest{
			Replica: n.me, CurrentLeaderEpoch: n.s.epoch, SnapshotID: d.ID,
			Position: d.Position, MaxBytes: n.cfg.FetchSnapshotMaxBytes,
		}
		n.send(n.s.leaderID, r, &r.Header)
		return
	}
	n.sendFetch(n.s.leaderID)
}

// sendFetch sends a Fetch built from the log tail
// (KafkaRaftClient.buildFetchRequest). The offset it reports is durable by
// the time the request leaves: the Ready contract puts appends before
// messages.
func (n *Node) sendFetch(to NodeID) {
	r := &FetchRequest{
		Replica: n.me, CurrentLeaderEpoch: n.s.epoch, FetchOffset: n.s.leo, LastFetchedEpoch: n.s.lastEpoch,
		MaxWait: n.cfg.FetchMaxWait, MaxBytes: n.cfg.FetchMaxBytes, HighWatermark: n.s.hw,
	}
	n.send(to, r, &r.Header)
}

// handleFetchResponse applies the leader's answer
// (KafkaRaftClient.handleFetchResponse).
func (n *Node) handleFetchResponse(m *FetchResponse) {
	if !n.acceptResponse(m.Header) || n.handleCommonResponse(m.From, m.Error, m.Leader) {
		return
	}
	if m.Error != CodeNone {
		n.backoff(m.From)
		return
	}
	if n.s.role != Follower || n.s.leaderID != m.From {
		return
	}
	n.heardFromLeader()
	switch {
	case m.DivergingEpoch.Epoch >= 0:
		n.truncateDiverging(m.DivergingEpoch)
	case m.SnapshotID.Epoch >= 0 && m.SnapshotID.Offset >= 0:
		n.startSnapshotDownload(m.SnapshotID)
	case m.SnapshotID.Epoch >= 0 || m.SnapshotID.Offset >= 0:
		n.logger.LogAttrs(context.Background(), slog.LevelWarn, "ignoring half-valid snapshot id", slog.String(keySnapshotID, m.SnapshotID.String()))
	default:
		n.appendFetched(m)
		if m.HighWatermark >= 0 {
			if hw := min(m.HighWatermark, n.s.leo); hw > n.s.hw {
				n.setHighWatermark(hw)
			}
		}
	}
}

// appendFetched appends the whole batches of a response that continue the
// log exactly. A batch from an epoch above ours is never appended
// (KAFKA-18723: a slow response must not write a later leader's data under
// our epoch's view).
func (n *Node) appendFetched(m *FetchResponse) {
	next := n.s.leo
	for _, b := range m.Batches {
		if b.BaseOffset < next && b.LastOffset < next {
			continue // already held
		}
		if b.BaseOffset != next || b.LastOffset < b.BaseOffset ||
			(!bugzoo.Active(bugzoo.Z10) && (b.Epoch > n.s.epoch || b.Epoch < n.s.lastEpoch)) {
			n.logger.LogAttrs(context.Background(), slog.LevelWarn, "dropping fetched batches that do not continue the log",
				slog.Int64(keyOffset, int64(b.BaseOffset)), slog.Int(keyEpoch, int(b.Epoch)))
			return
		}
		n.appendLocal(b, m.Records)
		next = b.LastOffset + 1
	}
}

// truncateDiverging truncates the log to the divergence point the leader
// reported (KafkaRaftClient.handleFetchResponse and
// RaftLog.truncateToEndOffset).
func (n *Node) truncateDiverging(div OffsetAndEpoch) {
	var t Offset
	if div.Epoch == 0 {
		t = min(div.Offset, n.s.leo)
	} else if local := n.endOffsetForEpoch(div.Epoch); local.Epoch == div.Epoch {
		t = min(local.Offset, div.Offset)
	} else {
		t = local.Offset
	}
	if (t < n.s.hw && !bugzoo.Active(bugzoo.Z8)) || t < 0 {
		// KAFKA-12460: committed entries are never truncated. A correct
		// leader never asks for this; refuse and keep fetching.
		n.logger.LogAttrs(context.Background(), slog.LevelError, "refusing to truncate below the high watermark",
			slog.Int64(keyOffset, int64(t)), slog.Int64(keyHW, int64(n.s.hw)))
		return
	}
	if len(n.s.out.appends) > 0 {
		panic("kraft: invariant: truncation queued after appends in one Ready")
	}
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "truncating diverging log",
		slog.Int64(keyOffset, int64(t)), slog.String(keyDiverging, div.String()))
	if n.s.out.truncateTo < 0 || t < n.s.out.truncateTo {
		n.s.out.truncateTo = t
	}
	n.s.leo = t
	n.s.tailStale = true
	n.truncateVoters(t)
}

func (n *Node) startSnapshotDownload(id OffsetAndEpoch) {
	if latest, ok := n.log.LatestSnapshot(); ok && latest == id {
		n.s.out.install = id
		n.s.tailStale = true
		return
	}
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "fetching snapshot", slog.String(keySnapshotID, id.String()))
	n.s.follower.Snapshot = snapshotDownload{Active: true, ID: id}
}

// handleFetchSnapshotResponse writes a snapshot chunk and installs the
// snapshot once complete (KafkaRaftClient.handleFetchSnapshotResponse,
// KIP-630).
func (n *Node) handleFetchSnapshotResponse(m *FetchSnapshotResponse) {
	if !n.acceptResponse(m.Header) || n.handleCommonResponse(m.From, m.Error, m.Leader) && m.Error != CodeSnapshotNotFound && m.Error != CodePositionOutOfRange {
		return
	}
	f := &n.s.follower
	if n.s.role != Follower || !f.Snapshot.Active || m.From != n.s.leaderID {
		return
	}
	if m.Error == CodeSnapshotNotFound || m.SnapshotID.Offset < 0 || m.SnapshotID.Epoch < 0 {
		n.logger.LogAttrs(context.Background(), slog.LevelWarn, "abandoning snapshot download", slog.String(keySnapshotID, f.Snapshot.ID.String()))
		f.Snapshot = snapshotDownload{}
		return
	}
	if m.Error != CodeNone && m.Error != CodePositionOutOfRange {
		n.backoff(m.From)
		return
	}
	if m.Error == CodePositionOutOfRange || !n.continuesDownload(m) {
		// Kafka treats this as fatal; here the download starts over from
		// position 0 (the runtime discards its partial file on a write at
		// 0), so a leader whose snapshot changed under the download, or a
		// damaged answer, costs a restart and never a failed write.
		n.logger.LogAttrs(context.Background(), slog.LevelError, "snapshot chunk does not continue the download; restarting it",
			slog.String(keySnapshotID, m.SnapshotID.String()), slog.Int64(keyPosition, m.Position),
			slog.Int64("length", m.Length), slog.Int64("size", m.Size), slog.String(keyError, m.Error.String()))
		f.Snapshot = snapshotDownload{Active: true, ID: f.Snapshot.ID}
		n.backoff(m.From)
		return
	}
	n.heardFromLeader()
	n.s.out.snapWrites = append(n.s.out.snapWrites, SnapshotWrite{SnapshotID: m.SnapshotID, Position: m.Position, Length: m.Length, Handle: m.Chunk})
	f.Snapshot.Size = m.Size
	f.Snapshot.Position += m.Length
	if f.Snapshot.Position == m.Size {
		n.logger.LogAttrs(context.Background(), slog.LevelInfo, "snapshot downloaded", slog.String(keySnapshotID, m.SnapshotID.String()))
		n.s.out.install = m.SnapshotID
		n.s.tailStale = true
		f.Snapshot = snapshotDownload{}
	}
}

// continuesDownload reports whether chunk m continues the download
// exactly: the same snapshot, at the position reached, at least one and at
// most FetchSnapshotMaxBytes bytes that stay within the announced size,
// which is positive, equal to the size earlier chunks announced and within
// MaxSnapshotBytes.
func (n *Node) continuesDownload(m *FetchSnapshotResponse) bool {
	d := n.s.follower.Snapshot
	switch {
	case (m.SnapshotID != d.ID || m.Position != d.Position) && !bugzoo.Active(bugzoo.Z23):
		// Z23 takes any chunk for the download: no generation check.
		return false
	case m.Length <= 0, m.Length > int64(n.cfg.FetchSnapshotMaxBytes), m.Size <= 0, m.Position+m.Length > m.Size:
		return false
	case d.Size > 0 && m.Size != d.Size:
		return false
	case n.cfg.MaxSnapshotBytes > 0 && m.Size > n.cfg.MaxSnapshotBytes:
		return false
	}
	return true
}

// onSnapshotInstalled runs at Advance after the runtime reset the log to
// start at the snapshot: everything below its end offset is committed.
func (n *Node) onSnapshotInstalled(id OffsetAndEpoch) {
	// The log was replaced: reload the voter-set history from the snapshot
	// and what remains of the log.
	if sets, err := loadVoterSets(n.cfg.Voters, n.log); err != nil {
		n.logger.LogAttrs(context.Background(), slog.LevelError, "ignoring malformed voter sets after snapshot install",
			slog.String(keyError, err.Error()))
	} else {
		before := n.voters()
		n.s.voterSets = sets
		if !n.voters().Equal(before) {
			n.onVotersChanged()
		}
	}
	if id.Offset > n.s.hw {
		n.setHighWatermark(id.Offset)
	}
}
