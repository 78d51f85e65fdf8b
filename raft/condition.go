package raft

import (
	"fmt"

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

// conditionKind is what a condition checks, in the values of the private
// SubmitChange request's Condition field (docs/wire.md).
type conditionKind int8

const (
	condNone              conditionKind = 0
	condNoUncommittedTail conditionKind = 1
	condUnchangedSince    conditionKind = 2
)

// condition is the condition of one submission: the strictest of its
// options (an unchanged-since check with the lowest offset).
type condition struct {
	kind  conditionKind
	since int64
}

// conditionOf combines opts into one condition.
func conditionOf(opts []SubmitOption) condition {
	var c condition
	for _, o := range opts {
		switch {
		case o.cond.kind == condUnchangedSince && (c.kind != condUnchangedSince || o.cond.since < c.since):
			c = o.cond
		case o.cond.kind > c.kind:
			c = o.cond
		}
	}
	return c
}

// conditionFromWire is the condition of a private SubmitChange request's
// Condition and UnchangedSince fields.
func conditionFromWire(kind int8, since int64) (condition, error) {
	switch c := conditionKind(kind); c {
	case condNone, condNoUncommittedTail:
		return condition{kind: c}, nil
	case condUnchangedSince:
		return condition{kind: c, since: since}, nil
	}
	return condition{}, fmt.Errorf("%w: unknown submission condition %d", ErrInvalidChange, kind)
}

// check reports whether records may be appended under c after the
// leader's log, given applied, the image applied from its committed log,
// and pending, the Delta of applied plus every uncommitted change the
// leader accepted (the submitter's speculative image).
func (c condition) check(applied *metadata.Image, pending *metadata.Delta) error {
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
