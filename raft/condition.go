package raft

import (
	"fmt"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// A SubmitOption is a condition [Controller.SubmitChange] appends the
// records under: the leader checks it when it validates the submission,
// in the order of its log, and a refused condition appends nothing. A
// follower or observer forwards the condition with the records (private
// SubmitChange version 1), so it is checked on the leader wherever the
// call was made. The zero SubmitOption sets no condition.
type SubmitOption struct{ cond condition }

// IfUnchangedSince appends the records only if no record after offset
// changed the image: offset is the [metadata.Image.Offset] of the image
// the records were made against, so the leader appends them to exactly
// the image the caller read (compare-and-set). Records that change
// nothing (NoOpRecords) do not count.
//
// Refusals: [ErrImageChanged] when a committed record after offset changed
// the image (read the image again and decide anew);
// [ErrUncommittedTail] while an uncommitted change is ahead of the records
// or the leader has not applied up to offset yet (retry). The check is
// conservative: a leader whose image was loaded from a snapshot counts
// the snapshot's records as changes at the snapshot's offset
// ([metadata.Image.ChangedAt]).
//
// It implies [IfNoUncommittedTail].
func IfUnchangedSince(offset int64) SubmitOption {
	return SubmitOption{cond: condition{kind: condUnchangedSince, since: offset}}
}

// IfNoUncommittedTail appends the records only if no uncommitted record
// ahead of them changes the image: the records are validated against the
// committed image alone, never against changes that may still be lost
// with the leader. Otherwise the submission is refused with
// [ErrUncommittedTail], which is retriable.
func IfNoUncommittedTail() SubmitOption {
	return SubmitOption{cond: condition{kind: condNoUncommittedTail}}
}

// IfDelegationToken appends the records only if the leader's committed
// image holds the delegation token id as observed describes it (nil: the
// image holds no token of that id) and no uncommitted change to the token
// is ahead of the records: a token mutation (a renewal, an expiry, a
// removal) bound to the token its caller read, so that two callers that
// read the same token cannot both change it.
//
// Refusals: [ErrImageChanged] when the committed token differs from
// observed; [ErrUncommittedTail] while an uncommitted change to it is
// ahead. The comparison is of the token's fields, which every node holds
// alike, whether it loaded a snapshot or replayed the log. A submission
// binds at most one token; combined with [IfUnchangedSince] or
// [IfNoUncommittedTail], both conditions must hold.
func IfDelegationToken(id string, observed *metadata.DelegationToken) SubmitOption {
	return SubmitOption{cond: condition{token: &tokenBinding{id: id, observed: observed}}}
}

// tokenBinding is the delegation token a submission is bound to.
type tokenBinding struct {
	id       string
	observed *metadata.DelegationToken // nil: no such token
}

// conditionKind is what a condition checks, in the values of the private
// SubmitChange request's Condition field (docs/wire.md).
type conditionKind int8

const (
	condNone              = conditionKind(wire.ConditionNone)
	condNoUncommittedTail = conditionKind(wire.ConditionNoUncommittedTail)
	condUnchangedSince    = conditionKind(wire.ConditionUnchangedSince)
)

// condition is the condition of one submission: the strictest of its
// options (an unchanged-since check with the lowest offset), and the
// delegation token it is bound to, if any.
type condition struct {
	kind  conditionKind
	since int64
	token *tokenBinding
}

// none reports whether c sets no condition.
func (c condition) none() bool { return c.kind == condNone && c.token == nil }

// conditionOf combines opts into one condition. Binding two tokens is an
// invalid change.
func conditionOf(opts []SubmitOption) (condition, error) {
	var c condition
	for _, o := range opts {
		kind, since := wire.StricterCondition(int8(c.kind), c.since, int8(o.cond.kind), o.cond.since)
		c.kind, c.since = conditionKind(kind), since
		if t := o.cond.token; t != nil {
			if c.token != nil && (c.token.id != t.id || !c.token.observed.Equal(t.observed)) {
				return condition{}, fmt.Errorf("%w: a submission is bound to one delegation token, not to %s and %s", ErrInvalidChange, c.token.id, t.id)
			}
			c.token = t
		}
	}
	return c, nil
}

// setWire sets c on req, which it turns into a version 1 request.
func (c condition) setWire(req *wire.SubmitChangeRequest) error {
	req.Version, req.Condition, req.UnchangedSince = 1, int8(c.kind), c.since
	if c.token == nil {
		return nil
	}
	req.TokenID = &c.token.id
	if c.token.observed != nil {
		b, err := metadata.Encode(c.token.observed.Record())
		if err != nil {
			return fmt.Errorf("%w: encode the delegation token %s: %w", ErrInvalidChange, c.token.id, err)
		}
		req.Token = b
	}
	return nil
}

// conditionFromWire is the condition of a private SubmitChange request:
// its Condition, UnchangedSince, TokenId and Token fields.
func conditionFromWire(req *wire.SubmitChangeRequest) (condition, error) {
	var c condition
	switch k := conditionKind(req.Condition); k {
	case condNone, condNoUncommittedTail:
		c.kind = k
	case condUnchangedSince:
		c.kind, c.since = k, req.UnchangedSince
	default:
		return condition{}, fmt.Errorf("%w: unknown submission condition %d", ErrInvalidChange, req.Condition)
	}
	switch {
	case req.TokenID == nil && req.Token != nil:
		return condition{}, fmt.Errorf("%w: a delegation token without its id", ErrInvalidChange)
	case req.TokenID == nil:
		return c, nil
	}
	c.token = &tokenBinding{id: *req.TokenID}
	if req.Token == nil {
		return c, nil
	}
	rec, err := metadata.Decode(req.Token)
	if err != nil {
		return condition{}, fmt.Errorf("%w: the delegation token of the condition: %w", ErrInvalidChange, err)
	}
	r, ok := rec.(*metadata.DelegationTokenRecord)
	if !ok || r.TokenId != *req.TokenID {
		return condition{}, fmt.Errorf("%w: the condition's token is a %s, not the DelegationTokenRecord of %s", ErrInvalidChange, rec.APIKey(), *req.TokenID)
	}
	c.token.observed = metadata.DelegationTokenOf(r)
	return c, nil
}

// check reports whether records may be appended under c after the
// leader's log, given applied, the image applied from its committed log,
// and pending, the Delta of applied plus every uncommitted change the
// leader accepted (the submitter's speculative image).
func (c condition) check(applied *metadata.Image, pending *metadata.Delta) error {
	if t := c.token; t != nil {
		committed, _ := applied.DelegationTokens().Get(t.id)
		ahead, _ := pending.DelegationToken(t.id)
		switch {
		case !committed.Equal(ahead):
			return fmt.Errorf("%w: a change to the delegation token %s is not committed yet", ErrUncommittedTail, t.id)
		case !committed.Equal(t.observed):
			return fmt.Errorf("%w: the delegation token %s is not as the submission read it", ErrImageChanged, t.id)
		}
	}
	if c.kind == condNone {
		return nil
	}
	if at := pending.ChangedAt(); at > applied.ChangedAt() {
		return fmt.Errorf("%w: a change at offset %d is not committed yet", ErrUncommittedTail, at)
	}
	if c.kind != condUnchangedSince {
		return nil
	}
	switch {
	case c.since > applied.Offset():
		return fmt.Errorf("%w: the leader has applied up to offset %d, the submission was made against %d",
			ErrUncommittedTail, applied.Offset(), c.since)
	case applied.ChangedAt() > c.since:
		return fmt.Errorf("%w: changed at offset %d, the submission was made against offset %d",
			ErrImageChanged, applied.ChangedAt(), c.since)
	}
	return nil
}
