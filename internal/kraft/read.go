package kraft

import (
	"fmt"
	"slices"
)

// Linearizable reads (Raft thesis §6.4 "read-only queries", done the KRaft
// way).
//
// A read registered with [Node.ReadIndex] on the leader is confirmed, and
// handed back in [Ready.Reads] with an offset, once two things hold:
//
//  1. The leader has committed an entry of its own epoch (its high
//     watermark passed the LeaderChange batch at the epoch start). Before
//     that its high watermark may lag entries an earlier leader
//     committed. The read's offset is the high watermark when the read
//     was registered, or, for a read registered before that first commit,
//     the high watermark the first commit produced.
//  2. A majority of the voters, this leader included, have shown that
//     they still follow it in its epoch AFTER the read was registered.
//     KRaft is pull-based, so the leader cannot send heartbeats and count
//     acknowledgements; it counts Fetch requests instead. A Fetch proves
//     something about the moment it was SENT, not the moment it arrives: a
//     Fetch that was in flight when the read was registered may have been
//     sent before the voter moved to a later epoch and helped another
//     leader commit. So a Fetch counts only if its voter sent it after
//     receiving an answer the leader sent after the read was registered.
//     The leader records, per voter, the newest read registered when it
//     last answered that voter's Fetch (readAnswered); the voter's next
//     Fetch confirms every read up to that one (readConfirmed). To keep a
//     round short, registering a read answers the voters' parked fetches
//     at once, and a voter's Fetch is not parked while a read waits for
//     that voter's next round trip.
//
// The runtime answers a confirmed read once its state machine has applied
// every entry below the offset. If the node stops leading first
// (resignation, check-quorum expiry, a higher epoch), every pending read
// fails in [Ready.Reads] with the leader the node then knows. A leader cut
// off from a majority therefore never confirms a read: the fetches it
// needs cannot arrive, and check-quorum ends its leadership.
//
// Assumption: a voter sends its next Fetch only after the answer to the
// previous one, or after abandoning that one at its request timeout. Only
// the second case leaves a gap: if the voter gave up on a fetch the
// leader still held (parked), sent another one before the read, and that
// one was delayed in the network until after the leader answered the
// abandoned fetch, the late one would count although it was sent before
// the read. For that to return a stale read, the voter would also have had
// to help elect and commit under a new leader in the same window, while
// its fetch was in flight for longer than a request timeout. The runtime
// narrows the window further: its transport closes a connection on a
// request timeout, so the abandoned fetch's answer is never delivered.

// ReadID names a read registered with [Node.ReadIndex]; the runtime
// chooses it and finds it again in [Ready.Reads].
type ReadID uint64

// ReadResult is the outcome of a registered read; see [Ready.Reads].
type ReadResult struct {
	// ID is the read's id.
	ID ReadID
	// Offset, when ≥ 0, confirms the read: answer it once the state
	// machine has applied every entry below Offset. -1 means the read
	// failed (see Leader).
	Offset Offset
	// Leader is, for a failed read, the leader this node knows (NoNode if
	// none) so that the caller can redirect; for a confirmed read, this
	// leader and its epoch.
	Leader LeaderAndEpoch
}

// Err returns nil for a confirmed read, and a [*NotLeaderError] carrying
// the leader hint for a failed one.
func (r ReadResult) Err() error {
	if r.Offset >= 0 {
		return nil
	}
	return &NotLeaderError{Leader: r.Leader}
}

// String formats the result for transcripts and logs.
func (r ReadResult) String() string {
	if r.Offset >= 0 {
		return fmt.Sprintf("read %d confirmed offset=%d", r.ID, r.Offset)
	}
	return fmt.Sprintf("read %d failed leader=%d epoch=%d", r.ID, r.Leader.LeaderID, r.Leader.Epoch)
}

// pendingRead is a read the leader registered and has not confirmed.
type pendingRead struct {
	ID  ReadID
	Seq uint64 // registration order, from 1
	// Offset is the read's barrier; -1 until the leader has committed in
	// its epoch.
	Offset Offset
}

// ReadIndex registers a linearizable read on the leader. Its outcome comes
// out of [Node.Ready] in [Ready.Reads]: an offset once the read is
// confirmed, or a failure when this node stops leading first. On a replica
// that is not the active leader (or is shutting down) it returns a
// [*NotLeaderError] with the leader it knows. It fails with
// [ErrReadyOutstanding] between Ready and Advance.
func (n *Node) ReadIndex(now Instant, id ReadID) error {
	if n.s.outstanding {
		return ErrReadyOutstanding
	}
	n.advanceClock(now)
	if n.s.role != Leader || n.s.shuttingDown {
		return &NotLeaderError{Leader: n.leaderAndEpoch()}
	}
	l := &n.s.leader
	l.ReadSeq++
	r := pendingRead{ID: id, Seq: l.ReadSeq, Offset: -1}
	if n.committedInEpoch() {
		r.Offset = n.s.hw
	}
	l.Reads = append(l.Reads, r)
	// Start the round: every voter whose fetch is parked gets its answer
	// now, so that its next fetch can confirm the read.
	if len(l.Parked) > 0 {
		var keep []parkedFetch
		for _, p := range l.Parked {
			if n.trackedVoter(p.Req.Replica) != nil {
				n.answerFetch(&p.Req)
			} else {
				keep = append(keep, p)
			}
		}
		l.Parked = keep
	}
	n.confirmReads()
	n.poll()
	return nil
}

// committedInEpoch reports whether the leader's high watermark has passed
// its epoch start offset (Raft §5.4.2; LeaderState.maybeUpdateHighWatermark).
func (n *Node) committedInEpoch() bool { return n.s.hw > n.s.leader.EpochStart }

// trackedVoter returns the leader's entry for the voter k, other than this
// node, or nil.
func (n *Node) trackedVoter(k ReplicaKey) *replicaState {
	l := &n.s.leader
	for i := range l.Voters {
		if l.Voters[i].Key.Matches(k) && k.ID != n.me.ID && k.ID >= 0 {
			return &l.Voters[i]
		}
	}
	return nil
}

// noteReadFetch runs for every Fetch that passed the leader's epoch check,
// before it is answered: the voter sent it after receiving the answer that
// carried readAnswered, so every read up to that one is confirmed for it.
func (n *Node) noteReadFetch(k ReplicaKey) {
	v := n.trackedVoter(k)
	if v == nil || v.ReadAnswered <= v.ReadConfirmed {
		return
	}
	v.ReadConfirmed = v.ReadAnswered
	n.confirmReads()
}

// noteReadAnswer runs when the leader answers a voter's Fetch in its
// epoch: the answer leaves after every read registered so far.
func (n *Node) noteReadAnswer(k ReplicaKey) {
	if v := n.trackedVoter(k); v != nil {
		v.ReadAnswered = n.s.leader.ReadSeq
	}
}

// readRoundDue reports whether a pending read waits for the voter k's next
// round trip, which parking its fetch would delay.
func (n *Node) readRoundDue(k ReplicaKey) bool {
	l := &n.s.leader
	if len(l.Reads) == 0 {
		return false
	}
	v := n.trackedVoter(k)
	return v != nil && v.ReadAnswered < l.Reads[len(l.Reads)-1].Seq
}

// onReadsCommitted runs when the leader's high watermark moved: reads
// registered before the first commit of the epoch take that high
// watermark as their offset.
func (n *Node) onReadsCommitted() {
	l := &n.s.leader
	if len(l.Reads) == 0 || !n.committedInEpoch() {
		return
	}
	if l.Reads[0].Offset < 0 {
		l.Reads = slices.Clone(l.Reads)
		for i := range l.Reads {
			if l.Reads[i].Offset < 0 {
				l.Reads[i].Offset = n.s.hw
			}
		}
	}
	n.confirmReads()
}

// confirmReads hands out, in registration order, every pending read that
// has its offset and a majority of voters confirming it.
func (n *Node) confirmReads() {
	l := &n.s.leader
	need := n.voters().Majority()
	done := 0
	for _, r := range l.Reads {
		if r.Offset < 0 {
			break
		}
		count := 0
		for _, v := range l.Voters {
			if v.Key.ID == n.me.ID || v.ReadConfirmed >= r.Seq {
				count++
			}
		}
		if count < need {
			break
		}
		n.s.out.reads = append(n.s.out.reads, ReadResult{ID: r.ID, Offset: r.Offset, Leader: n.leaderAndEpoch()})
		done++
	}
	if done > 0 {
		l.Reads = slices.Delete(slices.Clone(l.Reads), 0, done)
	}
}

// failReads fails every pending read of a leadership that is ending,
// naming the leader the node now knows (none while it is still itself).
func (n *Node) failReads() {
	hint := n.leaderAndEpoch()
	if hint.LeaderID == n.me.ID {
		hint.LeaderID = NoNode
	}
	for _, r := range n.s.leader.Reads {
		n.s.out.reads = append(n.s.out.reads, ReadResult{ID: r.ID, Offset: -1, Leader: hint})
	}
}
