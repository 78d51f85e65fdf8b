package client_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/client"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// TestConditionalSubmitChange: a submission made against an image the
// client read is appended while nothing changed it and refused with
// ErrImageChanged once something did; the refusal appends nothing.
func TestConditionalSubmitChange(t *testing.T) {
	q := startQuorum(t)
	cfg := client.DefaultConfig()
	cfg.Controllers = q.addrs
	cl, err := client.Dial(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.SubmitChange(t.Context(), []metadata.Record{metadataVersion()}); err != nil {
		t.Fatal(err)
	}
	read := func() int64 {
		req := client.NewReadImageRequest()
		req.Linearizable = true
		resp, err := cl.ReadImage(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Offset
	}
	seen := read()
	if _, err := cl.SubmitChange(t.Context(), []metadata.Record{topic("orders")}, client.IfUnchangedSince(seen)); err != nil {
		t.Fatalf("conditional submission on an unchanged image: %v", err)
	}
	_, err = cl.SubmitChange(t.Context(), []metadata.Record{topic("payments")}, client.IfUnchangedSince(seen))
	if !errors.Is(err, client.ErrImageChanged) {
		t.Fatalf("stale condition: err = %v, want ErrImageChanged", err)
	}
	if _, err := cl.SubmitChange(t.Context(), []metadata.Record{topic("payments")}, client.IfNoUncommittedTail()); err != nil {
		t.Fatalf("no uncommitted tail on an idle leader: %v", err)
	}

	// A token renewal bound to the token read: the first of two made
	// from one read wins.
	token := func(expires int64) metadata.Record {
		r := metadata.NewDelegationTokenRecord()
		r.TokenId, r.Owner, r.Requester = "t1", "User:alice", "User:alice"
		r.IssueTimestamp, r.MaxTimestamp, r.ExpirationTimestamp = 1, 100, expires
		return r
	}
	if _, err := cl.SubmitChange(t.Context(), []metadata.Record{token(10)}, client.IfDelegationToken("t1", nil)); err != nil {
		t.Fatalf("token creation bound to no token: %v", err)
	}
	poll(t, "the token on the leader", func() bool {
		_, ok := q.nodes[q.leader()-1].CurrentImage().DelegationTokens().Get("t1")
		return ok
	})
	readToken, _ := q.nodes[q.leader()-1].CurrentImage().DelegationTokens().Get("t1")
	if _, err := cl.SubmitChange(t.Context(), []metadata.Record{token(20)}, client.IfDelegationToken("t1", readToken)); err != nil {
		t.Fatalf("renewal of the token read: %v", err)
	}
	if _, err := cl.SubmitChange(t.Context(), []metadata.Record{token(30)}, client.IfDelegationToken("t1", readToken)); !errors.Is(err, client.ErrImageChanged) {
		t.Fatalf("second renewal from the same read: err = %v, want ErrImageChanged", err)
	}
	for i, n := range q.nodes {
		if n == nil {
			continue
		}
		poll(t, "the topic on every node", func() bool {
			_, ok := n.CurrentImage().Topics().ByName("payments")
			return ok
		})
		if got := n.CurrentImage().Topics().Len(); got != 2 {
			t.Errorf("node %d: %d topics, want orders and payments", i+1, got)
		}
	}
}

// TestConditionNeedsVersionOne: a controller that serves SubmitChange
// version 0 only is never sent a conditional submission (it would append
// it unconditionally); the call fails with UNSUPPORTED_VERSION, and the
// outcome is known: nothing was sent.
func TestConditionNeedsVersionOne(t *testing.T) {
	f := newFakeController(t, func(req kmsg.Request) (kmsg.Response, []byte) {
		return req.ResponseKind(), nil
	})
	f.versions = func(resp *kmsg.ApiVersionsResponse) {
		for i := range resp.ApiKeys {
			if resp.ApiKeys[i].ApiKey == wire.KeySubmitChange {
				resp.ApiKeys[i].MaxVersion = 0
			}
		}
	}
	cl := dialFake(t, f)
	_, err := cl.SubmitChange(t.Context(), []metadata.Record{topic("orders")}, client.IfUnchangedSince(3))
	if !errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("conditional submission to a version-0 controller: err = %v, want UNSUPPORTED_VERSION with a known outcome", err)
	}
	if slices.Contains(f.requests(), wire.KeySubmitChange) {
		t.Fatal("the controller was sent the conditional submission")
	}
}

// TestConditionBindsOneToken: two bindings to different tokens, or to one
// token read twice differently, are refused before anything is sent.
func TestConditionBindsOneToken(t *testing.T) {
	f := newFakeController(t, func(req kmsg.Request) (kmsg.Response, []byte) { return req.ResponseKind(), nil })
	cl := dialFake(t, f)
	a := &metadata.DelegationToken{TokenID: "t1", Owner: "User:alice", Requester: "User:alice", MaxTimestamp: 9, ExpirationTimestamp: 5}
	b := *a
	b.ExpirationTimestamp = 6
	for name, opts := range map[string][]client.SubmitOption{
		"two tokens":           {client.IfDelegationToken("t1", a), client.IfDelegationToken("t2", nil)},
		"one token, two reads": {client.IfDelegationToken("t1", a), client.IfDelegationToken("t1", &b)},
	} {
		if _, err := cl.SubmitChange(t.Context(), []metadata.Record{topic("orders")}, opts...); !errors.Is(err, client.ErrInvalidChange) {
			t.Errorf("%s: err = %v, want ErrInvalidChange", name, err)
		}
	}
	if slices.Contains(f.requests(), wire.KeySubmitChange) {
		t.Fatal("a refused submission was sent")
	}
}
