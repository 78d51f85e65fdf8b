package kraft_test

import (
	"errors"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/kraft/krafttest"
)

// newVoter builds node id of voters (1,2,3) over log with state st and
// drains its first Ready.
func newVoter(t *testing.T, id kraft.NodeID, st kraft.ElectionState, log *krafttest.MemLog) *kraft.Node {
	t.Helper()
	n, err := kraft.NewNode(0, config(id, keys(1, 2, 3), 1), st, log)
	if err != nil {
		t.Fatal(err)
	}
	if n.HasReady() {
		advance(n, n.Ready())
	}
	return n
}

// step delivers m, then runs the resulting Ready against log (which may be
// nil when the Ready touches no log).
func step(t *testing.T, n *kraft.Node, log *krafttest.MemLog, now kraft.Instant, m kraft.Message) kraft.Ready {
	t.Helper()
	if err := n.Step(now, m); err != nil {
		t.Fatalf("Step(%s) = %v", m, err)
	}
	rd := n.Ready()
	if log != nil {
		if err := log.ApplyReady(rd); err != nil {
			t.Fatal(err)
		}
	}
	advance(n, rd)
	return rd
}

func logWith(epochs ...kraft.Epoch) *krafttest.MemLog {
	l := &krafttest.MemLog{}
	for i, e := range epochs {
		_ = l.Append(kraft.BatchInfo{BaseOffset: kraft.Offset(i), LastOffset: kraft.Offset(i), Epoch: e, KRaftVersion: -1, LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}})
	}
	return l
}

func vote(from, to kraft.NodeID, epoch kraft.Epoch, last kraft.OffsetAndEpoch, pre bool) *kraft.VoteRequest {
	return &kraft.VoteRequest{
		Header:       kraft.Header{From: from, To: to, RequestID: 7},
		ReplicaEpoch: epoch, Replica: kraft.ReplicaKey{ID: from}, Voter: kraft.ReplicaKey{ID: to},
		LastOffsetEpoch: last.Epoch, LastOffset: last.Offset, PreVote: pre,
	}
}

func onlyVoteResponse(t *testing.T, rd kraft.Ready) *kraft.VoteResponse {
	t.Helper()
	rs := messagesOf[*kraft.VoteResponse](rd)
	if len(rs) != 1 {
		t.Fatalf("Ready has %d vote responses, want 1: %v", len(rs), rd.Messages)
	}
	return rs[0]
}

// KIP-595 (KafkaRaftClient.handleVoteRequest): a standard vote granted by
// an Unattached or Prospective replica that had not voted is persisted
// (a durable write of the voted key) before the response is sent, and a
// voter grants at most one candidate per epoch.
func TestVoterGrantsOneDurableVotePerEpoch(t *testing.T) {
	n := newVoter(t, 3, emptyState(), &krafttest.MemLog{})
	rd := step(t, n, nil, 10, vote(1, 3, 1, kraft.OffsetAndEpoch{}, false))
	if r := onlyVoteResponse(t, rd); !r.VoteGranted || r.Error != kraft.CodeNone {
		t.Fatalf("first vote: %s, want granted", r)
	}
	want := kraft.ElectionState{Epoch: 1, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 1}}
	if rd.State == nil || *rd.State != want {
		t.Fatalf("Ready.State = %v, want %v in the same Ready as the grant", rd.State, want)
	}
	rd = step(t, n, nil, 11, vote(2, 3, 1, kraft.OffsetAndEpoch{}, false))
	if r := onlyVoteResponse(t, rd); r.VoteGranted {
		t.Errorf("second candidate in the same epoch: %s, want rejected", r)
	}
	if rd.State != nil {
		t.Errorf("a rejection persisted %v", *rd.State)
	}
	rd = step(t, n, nil, 12, vote(1, 3, 1, kraft.OffsetAndEpoch{}, false))
	if r := onlyVoteResponse(t, rd); !r.VoteGranted {
		t.Errorf("repeated request from the voted candidate: %s, want granted", r)
	}
}

// KIP-595 (KafkaRaftClient.handleVoteRequest): the requester's log is up to
// date iff (LastOffsetEpoch, LastOffset) >= (local last epoch, local end
// offset), epoch first.
func TestVoteRequiresUpToDateLog(t *testing.T) {
	local := []kraft.Epoch{1, 1, 2} // end offset 3, last epoch 2
	tests := []struct {
		what string
		last kraft.OffsetAndEpoch
		want bool
	}{
		{"same log", kraft.OffsetAndEpoch{Offset: 3, Epoch: 2}, true},
		{"longer log same epoch", kraft.OffsetAndEpoch{Offset: 5, Epoch: 2}, true},
		{"shorter log same epoch", kraft.OffsetAndEpoch{Offset: 2, Epoch: 2}, false},
		{"higher last epoch shorter log", kraft.OffsetAndEpoch{Offset: 1, Epoch: 3}, true},
		{"lower last epoch longer log", kraft.OffsetAndEpoch{Offset: 9, Epoch: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			st := kraft.ElectionState{Epoch: 3, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
			n := newVoter(t, 3, st, logWith(local...))
			r := onlyVoteResponse(t, step(t, n, nil, 10, vote(1, 3, 4, tt.last, false)))
			if r.VoteGranted != tt.want {
				t.Errorf("vote with last %s against local 3@2: granted = %v, want %v", tt.last, r.VoteGranted, tt.want)
			}
		})
	}
}

// KafkaRaftClient.handleVoteRequest: field sanity fails with INVALID_REQUEST,
// a stale epoch with FENCED_LEADER_EPOCH, a request addressed to another
// voter with INVALID_VOTER_KEY; none of them is granted.
func TestVoteRequestErrors(t *testing.T) {
	tests := []struct {
		what string
		req  *kraft.VoteRequest
		want kraft.ErrorCode
	}{
		{"negative last offset", vote(1, 3, 5, kraft.OffsetAndEpoch{Offset: -1, Epoch: 0}, false), kraft.CodeInvalidRequest},
		{"last epoch not below the candidate epoch", vote(1, 3, 5, kraft.OffsetAndEpoch{Offset: 1, Epoch: 5}, false), kraft.CodeInvalidRequest},
		{"pre-vote last epoch above its epoch", vote(1, 3, 5, kraft.OffsetAndEpoch{Offset: 1, Epoch: 6}, true), kraft.CodeInvalidRequest},
		{"stale epoch", vote(1, 3, 3, kraft.OffsetAndEpoch{Offset: 9, Epoch: 2}, false), kraft.CodeFencedLeaderEpoch},
		{"addressed to another voter", func() *kraft.VoteRequest {
			r := vote(1, 3, 5, kraft.OffsetAndEpoch{Offset: 9, Epoch: 2}, false)
			r.Voter = kraft.ReplicaKey{ID: 2}
			return r
		}(), kraft.CodeInvalidVoterKey},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			st := kraft.ElectionState{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
			n := newVoter(t, 3, st, logWith(1, 2))
			r := onlyVoteResponse(t, step(t, n, nil, 10, tt.req))
			if r.Error != tt.want || r.VoteGranted {
				t.Errorf("%s: got %s, want %s and not granted", tt.req, r, tt.want)
			}
		})
	}
}

// QuorumState.initialize: startup picks the role from the stored quorum state
// and the log: a stored leader that is this node comes back Resigned (never
// lead an epoch twice); a stored self-vote resumes the candidacy; a stored
// leader is followed; a log epoch above the stored epoch wins.
func TestStartupRole(t *testing.T) {
	none := kraft.ReplicaKey{ID: kraft.NoNode}
	tests := []struct {
		what  string
		st    kraft.ElectionState
		log   []kraft.Epoch
		role  kraft.Role
		epoch kraft.Epoch
	}{
		{"empty", emptyState(), nil, kraft.Unattached, 0},
		{"was leader", kraft.ElectionState{Epoch: 2, LeaderID: 3, VotedKey: kraft.ReplicaKey{ID: 3}}, []kraft.Epoch{2}, kraft.Resigned, 2},
		{"voted for itself", kraft.ElectionState{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 3}}, []kraft.Epoch{1}, kraft.Candidate, 2},
		{"knew a leader", kraft.ElectionState{Epoch: 2, LeaderID: 1, VotedKey: none}, []kraft.Epoch{2}, kraft.Follower, 2},
		{"voted for another", kraft.ElectionState{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 1}}, nil, kraft.Unattached, 2},
		{"log ahead of the state", kraft.ElectionState{Epoch: 1, LeaderID: 1, VotedKey: none}, []kraft.Epoch{1, 4}, kraft.Unattached, 4},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			n := newVoter(t, 3, tt.st, logWith(tt.log...))
			if st := n.Status(); st.Role != tt.role || st.Epoch != tt.epoch {
				t.Errorf("started as %v in epoch %d, want %v in %d", st.Role, st.Epoch, tt.role, tt.epoch)
			}
		})
	}
}

// KafkaRaftClient.handleVoteRequest: a Vote request with a higher epoch moves
// the receiver, even a leader, to Unattached in that epoch before deciding;
// the leader's parked fetches complete with NOT_LEADER_OR_FOLLOWER.
func TestLeaderStepsDownOnHigherEpochVote(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	if got := leader.Status().Epoch; got != 1 {
		t.Fatalf("leader epoch %d, want 1", got)
	}
	// Node 2's and 3's fetches are parked on the leader after stabilize.
	if err := leader.Step(c.now[0], vote(2, 1, 2, kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, false)); err != nil {
		t.Fatal(err)
	}
	st := leader.Status()
	if st.Role != kraft.Unattached || st.Epoch != 2 {
		t.Fatalf("after a higher-epoch vote the leader is %v in %d, want Unattached in 2", st.Role, st.Epoch)
	}
	rd := c.ready(1)
	var notLeader int
	for _, r := range messagesOf[*kraft.FetchResponse](rd) {
		if r.Error == kraft.CodeNotLeaderOrFollower {
			notLeader++
		}
	}
	if notLeader != 2 {
		t.Errorf("%d parked fetches answered NOT_LEADER_OR_FOLLOWER, want 2: %v", notLeader, rd.Messages)
	}
	if r := messagesOf[*kraft.VoteResponse](rd); len(r) != 1 || !r[0].VoteGranted {
		t.Errorf("vote responses %v, want one grant", r)
	}
}

// KafkaRaftClient.handleFetchRequest: the leader validates CurrentLeaderEpoch
// and the fetch position before serving records.
func TestLeaderFetchValidation(t *testing.T) {
	fetch := func(epoch kraft.Epoch, offset kraft.Offset, last kraft.Epoch) *kraft.FetchRequest {
		return &kraft.FetchRequest{
			Header: kraft.Header{From: 2, To: 1, RequestID: 99}, Replica: kraft.ReplicaKey{ID: 2},
			CurrentLeaderEpoch: epoch, FetchOffset: offset, LastFetchedEpoch: last, MaxBytes: 1 << 20,
		}
	}
	tests := []struct {
		what      string
		req       *kraft.FetchRequest
		code      kraft.ErrorCode
		diverging kraft.OffsetAndEpoch
		read      bool
	}{
		{"stale epoch", fetch(2, 0, 0), kraft.CodeFencedLeaderEpoch, kraft.NoOffsetAndEpoch, false},
		{"future epoch", fetch(9, 0, 0), kraft.CodeUnknownLeaderEpoch, kraft.NoOffsetAndEpoch, false},
		{"last epoch above current", fetch(3, 1, 4), kraft.CodeInvalidRequest, kraft.NoOffsetAndEpoch, false},
		{"valid from zero", fetch(3, 0, 0), kraft.CodeNone, kraft.NoOffsetAndEpoch, true},
		{"valid mid-log", fetch(3, 2, 1), kraft.CodeNone, kraft.NoOffsetAndEpoch, true},
		// Epoch 1 ends at offset 2 on the leader; a follower claiming epoch 1
		// up to offset 3 diverges there.
		{"diverging inside an epoch", fetch(3, 3, 1), kraft.CodeNone, kraft.OffsetAndEpoch{Offset: 2, Epoch: 1}, false},
		// Epoch 2 never existed here: the answer is the last epoch below it.
		{"unknown epoch", fetch(3, 3, 2), kraft.CodeNone, kraft.OffsetAndEpoch{Offset: 2, Epoch: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			// Node 1 has log 1,1 and wins epoch 3 alone with node 3's vote.
			log := logWith(1, 1)
			st := kraft.ElectionState{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
			n := newVoter(t, 1, st, log)
			leaderOf(t, n, log)
			rd := step(t, n, log, 5000, tt.req)
			rs := messagesOf[*kraft.FetchResponse](rd)
			if len(rs) != 1 {
				t.Fatalf("%d fetch responses, want 1", len(rs))
			}
			r := rs[0]
			if r.Error != tt.code || r.DivergingEpoch != tt.diverging || r.Read.Empty() == tt.read {
				t.Errorf("%s: got %s (read %v), want %s diverging %s read %v", tt.req, r, r.Read, tt.code, tt.diverging, tt.read)
			}
		})
	}
}

// leaderOf drives n (a voter of (1,2,3) at epoch 2) to leadership of epoch
// 3 with node 3's grants, applying its Readys to log.
func leaderOf(t *testing.T, n *kraft.Node, log *krafttest.MemLog) {
	t.Helper()
	for n.Status().Role != kraft.Prospective {
		n.Tick(n.NextDeadline())
	}
	answer := func(epoch kraft.Epoch) {
		rd := n.Ready()
		if err := log.ApplyReady(rd); err != nil {
			t.Fatal(err)
		}
		advance(n, rd)
		for _, m := range messagesOf[*kraft.VoteRequest](rd) {
			if m.To == 3 {
				resp := &kraft.VoteResponse{Header: kraft.Header{From: 3, To: n.Status().ID, RequestID: m.RequestID},
					Leader: kraft.LeaderAndEpoch{LeaderID: kraft.NoNode, Epoch: epoch}, VoteGranted: true}
				if err := n.Step(n.NextDeadline()-1, resp); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	answer(2)
	answer(3)
	rd := n.Ready()
	if err := log.ApplyReady(rd); err != nil {
		t.Fatal(err)
	}
	advance(n, rd)
	if st := n.Status(); st.Role != kraft.Leader || st.Epoch != 3 {
		t.Fatalf("node is %v in %d, want Leader in 3", st.Role, st.Epoch)
	}
}

// KafkaRaftClient.handleFetchResponse: a follower truncates to the divergence
// point and then fetches again from there.
func TestFollowerTruncatesOnDivergingEpoch(t *testing.T) {
	st := kraft.ElectionState{Epoch: 3, LeaderID: 1, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	log := logWith(1, 1, 2, 2)
	n := newVoter(t, 2, st, log)
	// The follower's first fetch is in the startup Ready, already drained.
	n.Tick(0)
	if n.HasReady() {
		advance(n, n.Ready())
	}
	resp := &kraft.FetchResponse{
		Header: kraft.Header{From: 1, To: 2, RequestID: 1}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 3},
		HighWatermark: 1, DivergingEpoch: kraft.OffsetAndEpoch{Offset: 2, Epoch: 1}, SnapshotID: kraft.NoOffsetAndEpoch,
	}
	if err := n.Step(10, resp); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if rd.TruncateTo != 2 {
		t.Fatalf("TruncateTo = %d, want 2 (end of epoch 1)", rd.TruncateTo)
	}
	if fs := messagesOf[*kraft.FetchRequest](rd); len(fs) != 0 {
		t.Errorf("a fetch left with the truncation still pending: %v", fs)
	}
	if err := log.ApplyReady(rd); err != nil {
		t.Fatal(err)
	}
	advance(n, rd)
	rd = n.Ready()
	fs := messagesOf[*kraft.FetchRequest](rd)
	if len(fs) != 1 || fs[0].FetchOffset != 2 || fs[0].LastFetchedEpoch != 1 {
		t.Errorf("fetch after truncation = %v, want offset 2 last epoch 1", fs)
	}
}

// KafkaRaftClient.updateFollowerHighWatermark: follower HWM = min(leader's
// HighWatermark, local LEO).
func TestFollowerHighWatermarkCappedByLogEnd(t *testing.T) {
	st := kraft.ElectionState{Epoch: 1, LeaderID: 1, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}
	log := &krafttest.MemLog{}
	n := newVoter(t, 2, st, log)
	resp := &kraft.FetchResponse{
		Header: kraft.Header{From: 1, To: 2, RequestID: 1}, Leader: kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 1},
		HighWatermark: 10, DivergingEpoch: kraft.NoOffsetAndEpoch, SnapshotID: kraft.NoOffsetAndEpoch,
		Batches: []kraft.BatchInfo{{BaseOffset: 0, LastOffset: 3, Epoch: 1, KRaftVersion: -1, LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}}},
		Records: 42,
	}
	rd := step(t, n, log, 10, resp)
	if len(rd.Appends) != 1 || rd.Appends[0].Handle != 42 {
		t.Fatalf("Appends = %v, want the batch with handle 42", rd.Appends)
	}
	if rd.HighWatermark != 4 {
		t.Errorf("HighWatermark = %d, want 4 = min(10, end offset 4)", rd.HighWatermark)
	}
}

// LeaderState.timeUntilCheckQuorumExpires (KAFKA-15489): a leader that hears
// from no majority for 1.5 × fetch timeout resigns and sends EndQuorumEpoch.
func TestCheckQuorumResignsLeader(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	c.net = nil
	leader := c.node(1)
	c.now[0] += 2999
	leader.Tick(c.now[0])
	if r := leader.Status().Role; r != kraft.Leader {
		t.Fatalf("resigned early: %v", r)
	}
	c.now[0]++
	leader.Tick(c.now[0])
	if r := leader.Status().Role; r != kraft.Resigned {
		t.Fatalf("role %v after 3000ms without fetches, want Resigned", r)
	}
	if ends := messagesOf[*kraft.EndQuorumEpochRequest](c.ready(1)); len(ends) != 2 {
		t.Errorf("%d EndQuorumEpoch requests, want 2", len(ends))
	}
	if _, err := leader.Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 1}); !errors.Is(err, kraft.ErrNotLeader) {
		t.Errorf("Propose on a resigned leader = %v, want ErrNotLeader", err)
	}
}

// KafkaRaftClient.handleFetchRequest (its fetch purgatory): a fetch with
// nothing new is parked and answered on the next append, in the same Ready as
// the append (sent after it is durable).
func TestLongPollCompletesOnAppend(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	leader := c.node(1)
	if leader.HasReady() || len(c.net) != 0 {
		t.Fatal("cluster not quiet after election")
	}
	b, err := leader.Propose(c.now[0], kraft.Proposal{Records: 2, Handle: 5})
	if err != nil {
		t.Fatal(err)
	}
	rd := c.ready(1)
	if len(rd.Appends) != 1 || rd.Appends[0].Batch.String() != b.String() || rd.Appends[0].Handle != 5 {
		t.Fatalf("Appends = %v, want %v", rd.Appends, b)
	}
	rs := messagesOf[*kraft.FetchResponse](rd)
	if len(rs) != 2 {
		t.Fatalf("%d parked fetches completed, want 2", len(rs))
	}
	for _, r := range rs {
		if r.Read.From != b.BaseOffset || r.Read.Until != b.LastOffset+1 {
			t.Errorf("read %v, want [%d,%d)", r.Read, b.BaseOffset, b.LastOffset+1)
		}
	}
}

// Propose on a non-leader returns *NotLeaderError carrying the
// known leader, matching ErrNotLeader.
func TestProposeOnFollower(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	_, err := c.node(2).Propose(c.now[1], kraft.Proposal{Records: 1, Handle: 1})
	var nle *kraft.NotLeaderError
	if !errors.As(err, &nle) || !errors.Is(err, kraft.ErrNotLeader) {
		t.Fatalf("Propose on a follower = %v, want *NotLeaderError", err)
	}
	if nle.Leader != (kraft.LeaderAndEpoch{LeaderID: 1, Epoch: 1}) {
		t.Errorf("NotLeaderError.Leader = %v, want leader 1 epoch 1", nle.Leader)
	}
}

// KIP-630 (KafkaRaftClient.handleFetchSnapshotRequest): the leader answers
// FetchSnapshot for an unknown snapshot with SNAPSHOT_NOT_FOUND, for a
// position outside the file with POSITION_OUT_OF_RANGE, and otherwise names
// at most MaxBytes from the position.
func TestLeaderFetchSnapshotAnswers(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.elect(1)
	if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 1, Handle: 1}); err != nil {
		t.Fatal(err)
	}
	c.stabilize()
	id, err := c.logs[0].CreateSnapshot(2, 100)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		what     string
		id       kraft.OffsetAndEpoch
		position int64
		code     kraft.ErrorCode
		length   int64
	}{
		{"unknown snapshot", kraft.OffsetAndEpoch{Offset: 9, Epoch: 1}, 0, kraft.CodeSnapshotNotFound, 0},
		{"bootstrap snapshot", kraft.OffsetAndEpoch{}, 0, kraft.CodeSnapshotNotFound, 0},
		{"negative position", id, -1, kraft.CodePositionOutOfRange, 0},
		{"position at the end", id, 100, kraft.CodePositionOutOfRange, 0},
		{"first chunk", id, 0, kraft.CodeNone, 60},
		{"last chunk", id, 60, kraft.CodeNone, 40},
	}
	for i, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			req := &kraft.FetchSnapshotRequest{
				Header: kraft.Header{From: 2, To: 1, RequestID: uint64(100 + i)}, Replica: kraft.ReplicaKey{ID: 2},
				CurrentLeaderEpoch: 1, SnapshotID: tt.id, Position: tt.position, MaxBytes: 60,
			}
			if err := c.node(1).Step(c.now[0], req); err != nil {
				t.Fatal(err)
			}
			rs := messagesOf[*kraft.FetchSnapshotResponse](c.ready(1))
			if len(rs) != 1 || rs[0].Error != tt.code || rs[0].Length != tt.length {
				t.Errorf("answers %v, want one with %s length %d", rs, tt.code, tt.length)
			}
		})
	}
}

// LeaderState (observer states): observers are tracked on the leader, never
// counted toward the high watermark, and dropped after 5 minutes without a
// fetch.
func TestObserverTrackingAndExpiry(t *testing.T) {
	c := newCluster(t, 3, 1, 1)
	c.elect(1)
	c.stabilize()
	observers := func() int {
		n := 0
		for _, r := range c.node(1).Status().Replicas {
			if !r.Voter {
				n++
			}
		}
		return n
	}
	if got := observers(); got != 1 {
		t.Fatalf("leader tracks %d observers, want 1", got)
	}
	c.node(1).ExpireObservers(c.now[0] + 299_999)
	if got := observers(); got != 1 {
		t.Errorf("observer dropped before the session timeout")
	}
	c.node(1).ExpireObservers(c.now[0] + 300_000)
	if got := observers(); got != 0 {
		t.Errorf("observer kept after 5 minutes without a fetch")
	}
}

// RequestManager: a response whose correlation id is no longer expected
// is ignored. A duplicated grant counts once, and a grant answering an
// earlier round's request counts not at all: with 5 voters, one voter's
// grant delivered three times leaves the candidate short of a majority.
func TestDuplicateAndStaleVoteResponsesIgnored(t *testing.T) {
	voters := keys(1, 2, 3, 4, 5)
	log := &krafttest.MemLog{}
	n, err := kraft.NewNode(0, config(1, voters, 1), emptyState(), log)
	if err != nil {
		t.Fatal(err)
	}
	n.Tick(n.NextDeadline()) // Prospective
	rd := n.Ready()
	advance(n, rd)
	pre := messagesOf[*kraft.VoteRequest](rd)
	if len(pre) != 4 {
		t.Fatalf("%d pre-votes, want 4", len(pre))
	}
	grant := func(req *kraft.VoteRequest, epoch kraft.Epoch) {
		resp := &kraft.VoteResponse{Header: kraft.Header{From: req.To, To: 1, RequestID: req.RequestID},
			Leader: kraft.LeaderAndEpoch{LeaderID: kraft.NoNode, Epoch: epoch}, VoteGranted: true}
		if err := n.Step(n.NextDeadline()-1, resp); err != nil {
			t.Fatal(err)
		}
	}
	grant(pre[0], 0)
	grant(pre[0], 0)
	grant(pre[0], 0)
	if st := n.Status(); st.Role != kraft.Prospective {
		t.Fatalf("one voter's grant, delivered three times, made the node %v", st.Role)
	}
	grant(pre[1], 0) // 3 of 5 with its own
	if st := n.Status(); st.Role != kraft.Candidate {
		t.Fatalf("after two distinct pre-vote grants: %v, want Candidate", st.Role)
	}
	rd = n.Ready()
	advance(n, rd)
	// Late pre-vote answers from the finished round do not count as votes.
	grant(pre[2], 1)
	grant(pre[3], 1)
	if st := n.Status(); st.Role != kraft.Candidate {
		t.Errorf("pre-vote answers counted as votes: %v", st.Role)
	}
}

// KafkaRaftClient.pollCurrentState and maybeCompleteShutdown: a replica
// shutting down keeps its candidacy running, and if it wins it resigns at
// once rather than lead; its EndQuorumEpoch lets the first preferred
// successor take over without waiting for a timeout.
func TestCandidateElectedWhileShuttingDownResigns(t *testing.T) {
	c := newCluster(t, 3, 0, 1)
	c.campaign(1) // Prospective
	c.node(1).Resign(c.now[0])
	c.stabilize()
	st := c.node(1).Status()
	if st.Role == kraft.Leader {
		t.Fatal("a node shutting down stayed leader")
	}
	var leader kraft.NodeID = kraft.NoNode
	for _, n := range c.nodes {
		if s := n.Status(); s.Role == kraft.Leader {
			leader = s.ID
		}
	}
	if leader == kraft.NoNode || leader == 1 || st.Leader.LeaderID != leader || st.Epoch != 2 {
		t.Errorf("node 1 is %v in epoch %d following %d, leader is %d; want another node leading epoch 2", st.Role, st.Epoch, st.Leader.LeaderID, leader)
	}
}

// KIP-630 (KafkaRaftClient.handleFetchSnapshotResponse): a follower restarts
// its snapshot download from position 0 on any answer that does not continue
// it exactly (another snapshot, another position, a size that changed or
// exceeds MaxSnapshotBytes, a chunk longer than asked, empty or running past
// the size, POSITION_OUT_OF_RANGE); it writes nothing of such an answer, and
// the restarted download completes and installs.
func TestFollowerRestartsInconsistentSnapshotDownload(t *testing.T) {
	tests := []struct {
		what   string
		chunk  int // which answer to damage, from 1
		mutate func(r *kraft.FetchSnapshotResponse)
	}{
		{"other snapshot", 2, func(r *kraft.FetchSnapshotResponse) { r.SnapshotID.Offset++ }},
		{"wrong position", 2, func(r *kraft.FetchSnapshotResponse) { r.Position++ }},
		{"size changed", 2, func(r *kraft.FetchSnapshotResponse) { r.Size += 7 }},
		{"overshoot", 2, func(r *kraft.FetchSnapshotResponse) { r.Size = r.Position + r.Length - 1 }},
		{"longer than asked", 2, func(r *kraft.FetchSnapshotResponse) { r.Length = 31 }},
		{"empty chunk", 2, func(r *kraft.FetchSnapshotResponse) { r.Length = 0 }},
		{"position out of range", 2, func(r *kraft.FetchSnapshotResponse) { r.Error, r.Length, r.Size = kraft.CodePositionOutOfRange, 0, 0 }},
		{"size above the cap", 1, func(r *kraft.FetchSnapshotResponse) { r.Size = 1 << 40 }},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			c := newCluster(t, 3, 0, 1)
			c.elect(1)
			if _, err := c.node(1).Propose(c.now[0], kraft.Proposal{Records: 3, Handle: 1}); err != nil {
				t.Fatal(err)
			}
			c.stabilize()
			id, err := c.logs[0].CreateSnapshot(4, 100)
			if err != nil {
				t.Fatal(err)
			}
			// Node 3 comes back with an empty disk (its quorum state kept):
			// it must download the snapshot, in chunks of 30 bytes.
			c.logs[2] = &krafttest.MemLog{Catalog: c.logs[0].Catalog}
			c.cfgs[2].FetchSnapshotMaxBytes = 30
			c.cfgs[2].MaxSnapshotBytes = 1000
			c.restart(3)
			chunks, damaged := 0, false
			for range 1000 {
				if !c.readyAll() && len(c.net) == 0 {
					// Quiet: let time pass for every node (fetch waits,
					// backoffs).
					for i := range c.now {
						c.now[i] += 100
						c.node(kraft.NodeID(i + 1)).Tick(c.now[i])
					}
					continue
				}
				if len(c.net) == 0 {
					continue
				}
				i := 0
				if r, ok := c.net[0].(*kraft.FetchSnapshotResponse); ok && r.To == 3 && !damaged {
					if chunks++; chunks == tt.chunk {
						tt.mutate(r)
						damaged = true
						c.deliver(i)
						rd := c.ready(3)
						if len(rd.SnapshotWrites) != 0 || rd.InstallSnapshot.Valid() {
							t.Fatalf("damaged answer %s was written: %+v", r, rd.SnapshotWrites)
						}
						// The next request, after the retry backoff, asks from 0.
						c.now[2] += 100
						c.node(3).Tick(c.now[2])
						reqs := messagesOf[*kraft.FetchSnapshotRequest](c.ready(3))
						if len(reqs) != 1 || reqs[0].Position != 0 || reqs[0].SnapshotID != id {
							t.Fatalf("after %s: requests %v, want one for %s from position 0", r, reqs, id)
						}
						continue
					}
				}
				c.deliver(i)
				if c.logs[2].StartOffset() == 4 {
					break
				}
			}
			if !damaged {
				t.Fatalf("only %d FetchSnapshot answers reached node 3", chunks)
			}
			if start := c.logs[2].StartOffset(); start != 4 {
				t.Fatalf("node 3's log starts at %d after the download, want 4 (the snapshot installed)\n%s", start, c.logs[2])
			}
		})
	}
}
