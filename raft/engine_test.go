package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// TestControlBatchRoundTrip: a control batch the core makes, encoded by
// the leader and summarised by a follower, gives the core back the same
// BatchInfo.
func TestControlBatchRoundTrip(t *testing.T) {
	keys := func(ids ...kraft.NodeID) []kraft.ReplicaKey {
		var ks []kraft.ReplicaKey
		for _, id := range ids {
			ks = append(ks, kraft.ReplicaKey{ID: id})
		}
		return ks
	}
	for _, b := range []kraft.BatchInfo{
		{BaseOffset: 7, LastOffset: 7, Epoch: 3, Control: true, KRaftVersion: -1,
			LeaderChange: kraft.LeaderChange{LeaderID: 2, Voters: keys(1, 2, 3), Granting: keys(2, 3)}},
		{BaseOffset: 0, LastOffset: 2, Epoch: 1, Control: true, KRaftVersion: 1, Voters: keys(1, 2, 3),
			LeaderChange: kraft.LeaderChange{LeaderID: 1, Voters: keys(1, 2, 3), Granting: keys(1)}},
		{BaseOffset: 12, LastOffset: 12, Epoch: 4, Control: true, KRaftVersion: -1, Voters: keys(1, 2),
			LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}},
	} {
		t.Run(b.String(), func(t *testing.T) {
			raw, err := encodeControlBatch(b, 1700000000000)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := recordbatch.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			got, err := summarize(&parsed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(b, got); diff != "" {
				t.Errorf("summarize(encodeControlBatch(b)) (-want +got):\n%s", diff)
			}
		})
	}
	// A BatchInfo whose offsets do not match its records is refused.
	bad := kraft.BatchInfo{BaseOffset: 0, LastOffset: 1, Control: true, KRaftVersion: -1, LeaderChange: kraft.LeaderChange{LeaderID: 1}}
	if _, err := encodeControlBatch(bad, 0); err == nil {
		t.Error("encodeControlBatch with 2 offsets for 1 record: nil error")
	}
}

// TestReadRecordsStopsAtUntil: a leader's Fetch answer never carries a
// batch at or past the end offset the core decided on.
func TestReadRecordsStopsAtUntil(t *testing.T) {
	log, _, err := logstore.Open(vfs.OS(), t.TempDir(), logstore.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	var b recordbatch.Builder
	for i := range 4 {
		b.Reset(nil, recordbatch.DefaultParams())
		b.Append(0, nil, []byte{byte(i)}, nil)
		b.Append(0, nil, []byte{byte(i)}, nil)
		raw, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.AppendAsLeader(raw, 1); err != nil {
			t.Fatal(err)
		}
	}
	e := &engine{log: log}
	for _, tt := range []struct {
		read      kraft.RecordsRead
		wantFirst int64
		wantNext  int64
	}{
		{kraft.RecordsRead{From: 0, Until: 8, MaxBytes: 1 << 20}, 0, 8},
		{kraft.RecordsRead{From: 2, Until: 6, MaxBytes: 1 << 20}, 2, 6},
		{kraft.RecordsRead{From: 4, Until: 4, MaxBytes: 1 << 20}, -1, -1},
		{kraft.RecordsRead{From: 0, Until: 8, MaxBytes: 1}, 0, 2}, // at least one batch
	} {
		t.Run(fmt.Sprintf("[%d,%d)max%d", tt.read.From, tt.read.Until, tt.read.MaxBytes), func(t *testing.T) {
			got, err := e.readRecords(tt.read)
			if err != nil {
				t.Fatal(err)
			}
			first, next := int64(-1), int64(-1)
			it := recordbatch.NewIterator(nil, got)
			for it.Next() {
				if first < 0 {
					first = it.Batch().BaseOffset
				}
				next = it.Batch().NextOffset()
			}
			if it.Err() != nil || first != tt.wantFirst || next != tt.wantNext {
				t.Errorf("readRecords = batches [%d, %d) (err %v), want [%d, %d)", first, next, it.Err(), tt.wantFirst, tt.wantNext)
			}
		})
	}
}

// TestAppendBatchesJoinsWithoutCopyingOne: a Ready's run of one leader
// batch is written from where the engine holds it (the log stamps its
// offset into those very bytes), a run of several is joined in the
// engine's reused buffer, and the log holds every record in order.
func TestAppendBatchesJoinsWithoutCopyingOne(t *testing.T) {
	log, _, err := logstore.Open(vfs.OS(), t.TempDir(), logstore.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	e := &engine{log: log}
	next := kraft.Offset(0)
	hold := func(values ...byte) kraft.Append {
		var b recordbatch.Builder
		b.Reset(nil, recordbatch.DefaultParams())
		for _, v := range values {
			b.Append(0, nil, []byte{v}, nil)
		}
		raw, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		handle := e.handles.hold(&heldRecords{raw: raw})
		a := kraft.Append{Batch: kraft.BatchInfo{BaseOffset: next, LastOffset: next + kraft.Offset(len(values)) - 1, Epoch: 1}, Handle: handle}
		next += kraft.Offset(len(values))
		return a
	}
	// One batch, at offset 0, then one at offset 2: the held bytes carry
	// the offset the log stamped.
	for _, a := range []kraft.Append{hold(0, 1), hold(2, 3)} {
		if err := e.appendBatches([]kraft.Append{a}); err != nil {
			t.Fatal(err)
		}
		h, err := recordbatch.PeekHeader(e.handles.get(a.Handle).raw)
		if err != nil || h.BaseOffset != int64(a.Batch.BaseOffset) {
			t.Errorf("held batch after its append: base offset %d (%v), want %d: it was copied", h.BaseOffset, err, a.Batch.BaseOffset)
		}
	}
	// Two runs of several batches: the second reuses the join buffer.
	if err := e.appendBatches([]kraft.Append{hold(4), hold(5, 6), hold(7)}); err != nil {
		t.Fatal(err)
	}
	joined := cap(e.appendBuf)
	if err := e.appendBatches([]kraft.Append{hold(8), hold(9)}); err != nil {
		t.Fatal(err)
	}
	if cap(e.appendBuf) != joined {
		t.Errorf("join buffer reallocated for a smaller run: cap %d, was %d", cap(e.appendBuf), joined)
	}
	rr, err := log.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	it := recordbatch.NewIterator(nil, rr.Batches)
	for it.Next() {
		for _, r := range it.Batch().Records {
			got = append(got, r.Value...)
		}
	}
	if want := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; it.Err() != nil || !bytes.Equal(got, want) {
		t.Errorf("log holds %v (err %v), want %v", got, it.Err(), want)
	}
}

// TestSubmitErrorMapping: the leader's SubmitChange answer and the
// forwarding node's translation of it agree for every outcome.
func TestSubmitErrorMapping(t *testing.T) {
	req := wire.NewSubmitChangeRequest()
	for _, tt := range []struct {
		name     string
		err      error
		code     int16
		wantIs   error
		wantLead NodeID
	}{
		{"ok", nil, 0, nil, 0},
		{"not leader", &NotLeaderError{LeaderID: 3, Epoch: 9}, kerr.NotLeaderForPartition.Code, ErrNotLeader, 3},
		{"leader unknown", ErrLeaderUnknown, kerr.NotLeaderForPartition.Code, ErrLeaderUnknown, 0},
		{"shutting down", ErrShuttingDown, kerr.BrokerNotAvailable.Code, ErrLeaderUnknown, 0},
		{"invalid", fmt.Errorf("%w: topic exists", ErrInvalidChange), kerr.InvalidRequest.Code, ErrInvalidChange, 0},
		{"other", errors.New("disk on fire"), kerr.UnknownServerError.Code, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := submitAnswer(req, SubmitResult{Offset: 10, LastOffset: 11, Epoch: 2}, tt.err)
			if resp.ErrorCode != tt.code {
				t.Fatalf("submitAnswer code = %d, want %d", resp.ErrorCode, tt.code)
			}
			res, err := forwardOutcome(resp, nil, 2)
			switch {
			case tt.err == nil:
				if err != nil || res != (SubmitResult{Offset: 10, LastOffset: 11, Epoch: 2}) {
					t.Errorf("forwardOutcome = %+v, %v", res, err)
				}
			case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
				t.Errorf("forwardOutcome err = %v, want errors.Is %v", err, tt.wantIs)
			case err == nil:
				t.Error("forwardOutcome err = nil")
			}
			if nl, ok := errors.AsType[*NotLeaderError](err); ok && nl.LeaderID != tt.wantLead {
				t.Errorf("leader hint %d, want %d", nl.LeaderID, tt.wantLead)
			}
		})
	}
	if _, err := forwardOutcome(nil, transport.ErrDisconnected, 1); !errors.Is(err, ErrLeaderUnknown) || !errors.Is(err, transport.ErrDisconnected) {
		t.Errorf("forwardOutcome(network error) = %v, want ErrLeaderUnknown wrapping it", err)
	}
}

// TestStartRejects: Start refuses an invalid Config and a directory
// another node holds.
func TestStartRejects(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	bad := cfg
	bad.NodeID = -1
	if _, err := Start(t.Context(), bad); err == nil {
		t.Error("Start with node.id -1: nil error")
	}
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Shutdown(context.Background()) }()
	if _, err := Start(t.Context(), cfg); err == nil {
		t.Error("second Start on a locked directory: nil error")
	}
	if _, err := n.SubmitChange(t.Context(), nil); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("SubmitChange of nothing: err = %v, want ErrInvalidChange", err)
	}
	bad = cfg
	bad.MetadataLogDir = t.TempDir()
	bad.QuorumVoters = nil
	bad.QuorumBootstrapServers = []HostPort{{Host: "127.0.0.1", Port: 1}}
	if _, err := Start(t.Context(), bad); err == nil {
		t.Error("Start without static voters: nil error")
	}
	bad = ForTests(2, t.TempDir())
	mp := logstore.MetaProperties{Version: 1, ClusterID: "c", NodeID: 3}
	if err := logstore.WriteMetaProperties(vfs.OS(), bad.MetadataLogDir, mp, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(t.Context(), bad); err == nil {
		t.Error("Start on a directory formatted for node 3 as node 2: nil error")
	}
}

// TestRoleNames: every role of the core has a Role constant.
func TestRoleNames(t *testing.T) {
	known := map[Role]bool{RoleUnattached: true, RoleProspective: true, RoleCandidate: true, RoleLeader: true, RoleFollower: true, RoleResigned: true}
	for r := kraft.Unattached; r <= kraft.Resigned; r++ {
		if !known[Role(r.String())] {
			t.Errorf("core role %v has no Role constant", r)
		}
	}
}

// TestValidateRollsBackSubmission: a submission of several records that
// the speculative image rejects part-way leaves it as it was, although
// the speculative image changes the nodes of earlier submissions in
// place; single-record submissions before and after it stay applied.
func TestValidateRollsBackSubmission(t *testing.T) {
	q := &submitter{spec: metadata.NewDelta(metadata.EmptyImage())}
	sub := func(recs ...metadata.Record) *submission { return &submission{records: recs} }
	steps := []struct {
		s      *submission
		reject bool
	}{
		{sub(metadataVersionRecord()), false},
		{sub(topicRecord("a")), false},
		{sub(topicRecord("b"), topicRecord("c"), topicRecord("a")), true},
		{sub(topicRecord("d")), false},
		{sub(topicRecord("e"), topicRecord("e")), true},
		{sub(topicRecord("f"), topicRecord("g")), false},
		{sub(topicRecord("d")), true},
	}
	off := kraft.Offset(1)
	for i, st := range steps {
		err := q.validate(st.s, off, 1)
		if got := err != nil; got != st.reject || (err != nil && !errors.Is(err, ErrInvalidChange)) {
			t.Fatalf("step %d: validate = %v, want rejected %v", i, err, st.reject)
		}
		if err == nil {
			off += kraft.Offset(len(st.s.records))
		}
	}
	topics := q.spec.Apply().Topics()
	for name, want := range map[string]bool{"a": true, "b": false, "c": false, "d": true, "e": false, "f": true, "g": true} {
		if _, ok := topics.ByName(name); ok != want {
			t.Errorf("speculative image holds topic %s: %v, want %v", name, ok, want)
		}
	}
	if got := q.spec.Offset(); got != int64(off)-1 {
		t.Errorf("speculative image at offset %d, want %d", got, off-1)
	}
}

// TestDecodeSubmissionAllocations: decoding a forwarded one-record
// SubmitChange (every client write) allocates the decoded record and the
// submission, and no slice to hold the one record; several records and
// bad input decode as before.
func TestDecodeSubmissionAllocations(t *testing.T) {
	value := strings.Repeat("v", 256)
	r := metadata.NewConfigRecord()
	r.ResourceType, r.Name, r.Value = metadata.ConfigResourceBroker, "key-1", &value
	b, err := metadata.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	one := [][]byte{b}
	decode := testing.AllocsPerRun(100, func() { _, _ = metadata.Decode(b) })
	got := testing.AllocsPerRun(100, func() { _, _ = decodeSubmission(one) })
	if got > decode+1 {
		t.Errorf("decodeSubmission of one record allocates %v times, the record alone %v; want at most one more", got, decode)
	}
	s, err := decodeSubmission([][]byte{b, b})
	if err != nil || len(s.records) != 2 || !s.forwarded {
		t.Errorf("two records: %+v, %v", s, err)
	}
	if _, err := decodeSubmission(nil); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("no records: %v, want ErrInvalidChange", err)
	}
	if _, err := decodeSubmission([][]byte{b, {0xff}}); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("undecodable record: %v, want ErrInvalidChange", err)
	}
}

// TestPublishQuorumStateAllocations: publishQuorumState, which runs after
// every input and every Ready, allocates nothing on a leader whose state
// did not change, and keeps the published QuorumState.
func TestPublishQuorumStateAllocations(t *testing.T) {
	c := newTestCluster(t, 1)
	submit(t, c.node(c.leader()), metadataVersionRecord())
	onEngine(t, c.node(1), func(e *engine) {
		e.publishQuorumState()
		before := e.pub.quorum.Load()
		if a := testing.AllocsPerRun(100, e.publishQuorumState); a != 0 {
			t.Errorf("publishQuorumState allocates %v times with nothing changed, want 0", a)
		}
		if after := e.pub.quorum.Load(); after != before || after.Role != RoleLeader {
			t.Errorf("published quorum state %p %+v, want the unchanged %p %+v", after, *after, before, *before)
		}
	})
}
