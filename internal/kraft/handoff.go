package kraft

import (
	"context"
	"log/slog"
	"time"
)

// Graceful handoff.
//
// Kafka's leader resigns the moment it shuts down, even if no follower has
// fetched its last records yet. Its successors are then less up to date
// than some other voter, whose refusal fails the first successor's
// pre-vote, and the next successor waits out its election backoff. Here a
// leader that shuts down ([Node.Resign]) first stops taking proposals,
// then waits until some other voter has fetched up to its log end offset,
// bounded by handoffBudget, and only then resigns. EndQuorumEpoch lists
// the successors by fetched offset, so the first one holds everything the
// leader held and wins its pre-vote at once.

// maxHandoffBudget caps the handoff wait; with a shorter request timeout,
// that applies instead.
const maxHandoffBudget = 500 * time.Millisecond

// HandoffBudget is the longest a leader that shuts down waits for a
// voter to hold its whole log before it resigns: min(RequestTimeout,
// 500 ms). A runtime waiting for the resignation allows for it.
func (c Config) HandoffBudget() time.Duration { return min(c.RequestTimeout, maxHandoffBudget) }

func (n *Node) handoffBudget() time.Duration { return n.cfg.HandoffBudget() }

// startHandoff begins the wait of a leader that shuts down; a single voter
// has no one to hand off to and resigns at once.
func (n *Node) startHandoff() {
	if n.voters().Len() < 2 {
		n.resign("shutdown")
		return
	}
	l := &n.s.leader
	l.HandingOff = true
	l.HandoffDeadline = n.s.now.Add(n.handoffBudget())
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "handing off leadership",
		slog.Int(keyEpoch, int(n.s.epoch)), slog.Int64(keyOffset, int64(n.s.leo)))
}

// handoffDone reports whether a shutting-down leader may resign now: it
// was not handing off (elected while shutting down), another voter has
// fetched up to the log end, or the budget ran out.
func (n *Node) handoffDone() bool {
	l := &n.s.leader
	if !l.HandingOff || n.s.now >= l.HandoffDeadline {
		return true
	}
	for _, v := range l.Voters {
		if v.Key.ID != n.me.ID && v.EndOffset >= n.s.leo {
			return true
		}
	}
	return false
}
