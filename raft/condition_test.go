package raft

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// recordingProposer is a batchProposer that hands out consecutive offsets
// from next.
type recordingProposer struct {
	next    kraft.Offset
	batches int
}

func (p *recordingProposer) proposeBatch(_ []byte, records int) (kraft.BatchInfo, error) {
	info := kraft.BatchInfo{BaseOffset: p.next, Epoch: 3}
	p.next += kraft.Offset(records)
	p.batches++
	return info, nil
}

// condSubmission is a submission of recs under opts whose outcome lands
// in *err (nil once accepted and committed).
func condSubmission(t *testing.T, out *error, recs []metadata.Record, opts ...SubmitOption) *submission {
	t.Helper()
	s := &submission{records: recs, cond: mustCondition(t, opts...)}
	for _, r := range recs {
		b, err := metadata.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		s.encoded = append(s.encoded, b)
	}
	*out = errPending
	s.complete = func(_ SubmitResult, err error) { *out = err }
	return s
}

// mustCondition is the condition of opts.
func mustCondition(t *testing.T, opts ...SubmitOption) condition {
	t.Helper()
	c, err := conditionOf(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// errPending marks a submission not answered yet.
var errPending = errors.New("pending")

// committedImage is an image with metadata.version set at offset 0, a
// topic at offset 1 and NoOpRecords at offsets 2 and 3: changed at 1,
// applied up to 3.
func committedImage(t *testing.T) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	for i, r := range []metadata.Record{metadataVersionRecord(), topicRecord("orders"), metadata.NewNoOpRecord(), metadata.NewNoOpRecord()} {
		if err := d.Replay(r, int64(i), 2); err != nil {
			t.Fatal(err)
		}
	}
	img := d.Apply()
	if img.Offset() != 3 || img.ChangedAt() != 1 {
		t.Fatalf("image at %d changed at %d, want 3 and 1", img.Offset(), img.ChangedAt())
	}
	return img
}

// TestConditionsOnTheLeader: the leader checks a submission's condition
// against its committed image and the changes accepted ahead of it, in
// the order of its log; a refused condition appends nothing, and a
// record that changes nothing (a NoOp) is no change.
func TestConditionsOnTheLeader(t *testing.T) {
	img := committedImage(t)
	st := kraft.Status{Role: kraft.Leader, Epoch: 3, LogEndOffset: 4}
	cases := []struct {
		name string
		opts []SubmitOption
		want error
	}{
		{"none", nil, nil},
		{"no tail", []SubmitOption{IfNoUncommittedTail()}, nil},
		{"unchanged since the last change", []SubmitOption{IfUnchangedSince(1)}, nil},
		{"unchanged since a NoOp", []SubmitOption{IfUnchangedSince(3)}, nil},
		{"changed after the offset", []SubmitOption{IfUnchangedSince(0)}, ErrImageChanged},
		{"the empty image", []SubmitOption{IfUnchangedSince(-1)}, ErrImageChanged},
		{"an offset not applied yet", []SubmitOption{IfUnchangedSince(4)}, ErrUncommittedTail},
		{"the strictest option wins", []SubmitOption{IfUnchangedSince(3), IfNoUncommittedTail(), IfUnchangedSince(0)}, ErrImageChanged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q submitter
			p := &recordingProposer{next: 4}
			var got error
			q.propose([]*submission{condSubmission(t, &got, []metadata.Record{topicRecord("payments")}, tc.opts...)}, st, img, 0, 1<<20, p)
			switch {
			case tc.want == nil && got != errPending:
				t.Fatalf("refused: %v", got)
			case tc.want == nil && (p.batches != 1 || len(q.waiters) != 1):
				t.Fatalf("%d batches, %d waiters; want the submission proposed", p.batches, len(q.waiters))
			case tc.want != nil && !errors.Is(got, tc.want):
				t.Fatalf("err = %v, want %v", got, tc.want)
			case tc.want != nil && (p.batches != 0 || len(q.waiters) != 0):
				t.Fatalf("a refused submission was proposed (%d batches)", p.batches)
			}
		})
	}
}

// TestConditionsSeeTheUncommittedTail: a change accepted ahead of a
// conditional submission, in the same flush or an earlier one, refuses it
// with ErrUncommittedTail until the change is applied; a rejected change
// and a NoOp leave no tail.
func TestConditionsSeeTheUncommittedTail(t *testing.T) {
	img := committedImage(t)
	st := kraft.Status{Role: kraft.Leader, Epoch: 3, LogEndOffset: 4}
	var q submitter
	p := &recordingProposer{next: 4}

	var noop, rejected, cas1 error
	q.propose([]*submission{
		condSubmission(t, &noop, []metadata.Record{metadata.NewNoOpRecord()}),
		condSubmission(t, &rejected, []metadata.Record{topicRecord("payments"), topicRecord("orders")}),
		condSubmission(t, &cas1, []metadata.Record{topicRecord("audit")}, IfUnchangedSince(3)),
	}, st, img, 0, 1<<20, p)
	if noop != errPending || !errors.Is(rejected, ErrInvalidChange) || cas1 != errPending {
		t.Fatalf("NoOp %v, duplicate topic %v, conditional %v; want pending, ErrInvalidChange, pending", noop, rejected, cas1)
	}

	// audit is accepted and uncommitted: both conditions see it, in a
	// flush of their own as in the same one; a plain submission does not.
	st.LogEndOffset = 6
	var tail, cas2, plain error
	q.propose([]*submission{
		condSubmission(t, &tail, []metadata.Record{topicRecord("x")}, IfNoUncommittedTail()),
		condSubmission(t, &cas2, []metadata.Record{topicRecord("y")}, IfUnchangedSince(3)),
		condSubmission(t, &plain, []metadata.Record{topicRecord("z")}),
	}, st, img, 0, 1<<20, p)
	if !errors.Is(tail, ErrUncommittedTail) || !errors.Is(cas2, ErrUncommittedTail) || plain != errPending {
		t.Fatalf("no-tail %v, unchanged-since %v, plain %v; want ErrUncommittedTail twice, then pending", tail, cas2, plain)
	}

	// Once every accepted change is applied, the tail is gone: the image
	// changed at z's offset (6), so a condition made against 3 is stale
	// and one made against 6 is accepted.
	d := metadata.NewDelta(img)
	for i, r := range []metadata.Record{metadata.NewNoOpRecord(), topicRecord("audit"), topicRecord("z")} {
		if err := d.Replay(r, int64(4+i), 3); err != nil {
			t.Fatal(err)
		}
	}
	applied := d.Apply()
	q.completeApplied(kraft.Offset(applied.Offset() + 1))
	if q.waiting() {
		t.Fatalf("%d submissions still wait after the apply", len(q.waiters))
	}
	st.LogEndOffset = 7
	var stale, fresh error
	q.propose([]*submission{
		condSubmission(t, &stale, []metadata.Record{topicRecord("y")}, IfUnchangedSince(3)),
		condSubmission(t, &fresh, []metadata.Record{topicRecord("y")}, IfUnchangedSince(6)),
	}, st, applied, 0, 1<<20, p)
	if !errors.Is(stale, ErrImageChanged) || fresh != errPending {
		t.Fatalf("stale %v, fresh %v; want ErrImageChanged, pending", stale, fresh)
	}
}

// TestConditionOnTheWire: the condition travels as SubmitChange version
// 1, an unknown condition is an invalid change, and the leader's refusals
// come back as the same errors through a follower.
func TestConditionOnTheWire(t *testing.T) {
	tok := &metadata.DelegationToken{TokenID: "t1", Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"},
		IssueTimestamp: 1, MaxTimestamp: 9, ExpirationTimestamp: 5}
	for _, opts := range [][]SubmitOption{
		{{}}, {IfNoUncommittedTail()}, {IfUnchangedSince(42)},
		{IfDelegationToken("t1", tok)}, {IfDelegationToken("t2", nil), IfUnchangedSince(7)},
	} {
		c := mustCondition(t, opts...)
		req := wire.NewSubmitChangeRequest()
		if err := c.setWire(req); err != nil {
			t.Fatal(err)
		}
		again := wire.NewSubmitChangeRequest()
		again.SetVersion(req.Version)
		if err := again.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		got, err := conditionFromWire(again)
		if err != nil || got.kind != c.kind || got.since != c.since || (got.token == nil) != (c.token == nil) ||
			(c.token != nil && (got.token.id != c.token.id || !got.token.observed.Equal(c.token.observed))) {
			t.Errorf("%+v: from the wire %+v, %v", c, got, err)
		}
	}
	if _, err := conditionOf([]SubmitOption{IfDelegationToken("t1", nil), IfDelegationToken("t2", nil)}); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("two tokens: err = %v, want ErrInvalidChange", err)
	}
	other, _ := metadata.Encode(topicRecord("orders"))
	for name, req := range map[string]*wire.SubmitChangeRequest{
		"condition 3":       {Version: 1, Condition: 3},
		"token without id":  {Version: 1, Token: other},
		"token not a token": {Version: 1, TokenID: new("t1"), Token: other},
		"token of another":  {Version: 1, TokenID: new("t2"), Token: mustEncode(t, tok.Record())},
		"token undecodable": {Version: 1, TokenID: new("t1"), Token: []byte{0xff}},
	} {
		if _, err := conditionFromWire(req); !errors.Is(err, ErrInvalidChange) {
			t.Errorf("%s: err = %v, want ErrInvalidChange", name, err)
		}
	}
	for _, want := range []error{ErrImageChanged, ErrUncommittedTail} {
		req := wire.NewSubmitChangeRequest()
		resp := submitAnswer(req, SubmitResult{}, fmt.Errorf("%w: detail", want))
		if _, err := forwardOutcome(resp, nil, 1); !errors.Is(err, want) {
			t.Errorf("answer %d for %v: forwarded outcome %v", resp.ErrorCode, want, err)
		}
	}
	// A leader that serves only version 0: the peer sender refuses the
	// request before sending it, which is not an unknown outcome.
	refused := fmt.Errorf("transport: SubmitChange v1 not supported by the peer (range 0-0): %w", kerr.UnsupportedVersion)
	if _, err := forwardOutcome(nil, refused, 1); errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, kerr.UnsupportedVersion) {
		t.Errorf("unsupported version: %v, want UNSUPPORTED_VERSION and a known outcome", err)
	}
}

// mustEncode is metadata.Encode of r.
func mustEncode(t *testing.T, r metadata.Record) []byte {
	t.Helper()
	b, err := metadata.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClusterConditionalSubmissions: on a running quorum, a submission
// made against an image is appended only while nothing changed it, on the
// leader and forwarded by a follower; NoOpRecords in between do not count,
// and a refused one leaves the log and every image as they were.
func TestClusterConditionalSubmissions(t *testing.T) {
	c := newTestClusterWith(t, 3, "", func(cfg *Config) { cfg.MaxIdleInterval = 20 * time.Millisecond })
	leader := c.leader()
	f := c.follower(leader)
	submit(t, c.node(leader), metadataVersionRecord())
	seen := readImage(t, c.node(f))

	res, err := c.node(f).SubmitChange(t.Context(), []metadata.Record{topicRecord("orders")}, IfUnchangedSince(seen.Offset()))
	if err != nil {
		t.Fatalf("forwarded conditional submission on an unchanged image: %v", err)
	}
	// The same condition again: the image changed at res.Offset.
	before := c.node(leader).CurrentImage()
	for _, id := range []NodeID{leader, f} {
		_, err := c.node(id).SubmitChange(t.Context(), []metadata.Record{topicRecord("payments")}, IfUnchangedSince(seen.Offset()))
		if !errors.Is(err, ErrImageChanged) {
			t.Errorf("node %d: stale condition: err = %v, want ErrImageChanged", id, err)
		}
	}
	c.waitApplied(res.LastOffset + 1)
	for i, n := range c.nodes {
		if _, ok := n.CurrentImage().Topics().ByName("payments"); ok {
			t.Errorf("node %d: a refused submission's topic is in the image", i+1)
		}
	}
	if after := c.node(leader).CurrentImage(); after.ChangedAt() != before.ChangedAt() {
		t.Errorf("refused submissions changed the image at %d (was %d)", after.ChangedAt(), before.ChangedAt())
	}

	// The leader's NoOpRecords move the image's offset, not its change.
	latest := readImage(t, c.node(f))
	deadline := time.Now().Add(10 * time.Second)
	for c.node(leader).CurrentImage().Offset() <= latest.Offset() {
		if time.Now().After(deadline) {
			t.Fatal("no NoOpRecord was applied in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.node(f).SubmitChange(t.Context(), []metadata.Record{topicRecord("payments")}, IfUnchangedSince(latest.Offset())); err != nil {
		t.Fatalf("condition made before NoOpRecords only: %v", err)
	}
}

// tokenRecord is a DelegationTokenRecord of id expiring at expires.
func tokenRecord(id string, expires int64) *metadata.DelegationTokenRecord {
	r := metadata.NewDelegationTokenRecord()
	r.TokenId, r.Owner, r.Requester = id, "User:alice", "User:alice"
	r.IssueTimestamp, r.MaxTimestamp, r.ExpirationTimestamp = 1, 100, expires
	return r
}

// TestDelegationTokenBinding: a submission bound to a delegation token
// is appended only while the committed token is the one its caller read
// and no uncommitted change to that token is ahead; changes to other
// tokens and other records do not refuse it.
func TestDelegationTokenBinding(t *testing.T) {
	d := metadata.NewDelta(committedImage(t))
	for i, r := range []metadata.Record{tokenRecord("t1", 10), tokenRecord("t2", 10)} {
		if err := d.Replay(r, int64(4+i), 2); err != nil {
			t.Fatal(err)
		}
	}
	img := d.Apply()
	read, _ := img.DelegationTokens().Get("t1")
	st := kraft.Status{Role: kraft.Leader, Epoch: 3, LogEndOffset: 6}
	renew := func(id string, expires int64) []metadata.Record { return []metadata.Record{tokenRecord(id, expires)} }
	stale := *read
	stale.ExpirationTimestamp = 5

	var q submitter
	p := &recordingProposer{next: 6}
	var first, again, other, staleErr, absent, plain error
	q.propose([]*submission{
		condSubmission(t, &staleErr, renew("t1", 40), IfDelegationToken("t1", &stale)),
		condSubmission(t, &first, renew("t1", 20), IfDelegationToken("t1", read)),
		condSubmission(t, &again, renew("t1", 30), IfDelegationToken("t1", read)),
		condSubmission(t, &other, renew("t2", 20), IfDelegationToken("t2", read2(t, img))),
		condSubmission(t, &absent, renew("t3", 20), IfDelegationToken("t3", nil)),
		condSubmission(t, &plain, []metadata.Record{topicRecord("payments")}, IfDelegationToken("t9", nil)),
	}, st, img, 0, 1<<20, p)
	switch {
	case first != errPending:
		t.Errorf("renewal of the token read: %v", first)
	case !errors.Is(again, ErrUncommittedTail):
		t.Errorf("second renewal of the same read: %v, want ErrUncommittedTail", again)
	case other != errPending:
		t.Errorf("renewal of another token: %v", other)
	case !errors.Is(staleErr, ErrImageChanged):
		t.Errorf("renewal of a token read before a change: %v, want ErrImageChanged", staleErr)
	case absent != errPending || plain != errPending:
		t.Errorf("bound to an absent token: %v, %v", absent, plain)
	}

	// Once committed, the old read is stale: ErrImageChanged.
	d = metadata.NewDelta(img)
	if err := d.Replay(tokenRecord("t1", 20), 6, 3); err != nil {
		t.Fatal(err)
	}
	var q2 submitter
	var late error
	q2.propose([]*submission{condSubmission(t, &late, renew("t1", 30), IfDelegationToken("t1", read))}, kraft.Status{Role: kraft.Leader, Epoch: 3, LogEndOffset: 7}, d.Apply(), 0, 1<<20, &recordingProposer{next: 7})
	if !errors.Is(late, ErrImageChanged) {
		t.Errorf("renewal after another committed: %v, want ErrImageChanged", late)
	}
}

// read2 is img's token t2.
func read2(t *testing.T, img *metadata.Image) *metadata.DelegationToken {
	t.Helper()
	tok, ok := img.DelegationTokens().Get("t2")
	if !ok {
		t.Fatal("no token t2")
	}
	return tok
}
