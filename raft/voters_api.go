package raft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/wire"
)

// The voter changes of the public API: Controller.AddVoter, RemoveVoter
// and ChangeMembership run the KIP-853 voter RPCs on this node when it
// leads, or send them to the leader and turn its answer into an error.

// sendToLeader sends a voter RPC to the leader on the forwarding
// connection; done gets the answer's error ([voterAnswerError]; one
// matching [ErrLeaderUnknown] when the request failed) on the engine
// goroutine, or, if anyGoroutine, on the connection's when the engine's
// queue is full (else the answer is dropped). It reports whether the
// request was sent.
func (e *engine) sendToLeader(req kmsg.Request, anyGoroutine bool, done func(error)) bool {
	st := e.lastStatus
	if st.Leader.LeaderID == kraft.NoNode || st.Leader.LeaderID == st.ID {
		return false
	}
	l := e.link(st.Leader.LeaderID)
	if l == nil {
		return false
	}
	return l.forward.Send(req, func(resp kmsg.Response, err error) {
		if err != nil {
			err = fmt.Errorf("%w: the leader did not answer: %w", ErrLeaderUnknown, err)
		} else {
			err = voterAnswerError(resp)
		}
		select {
		case e.inbox <- event{call: func(*engine) { done(err) }}:
		default:
			if anyGoroutine {
				done(err)
			}
		}
	})
}

// voterConditions are the errors a leader answers a voter RPC with.
var voterConditions = []error{
	ErrNotLeader, ErrShuttingDown, ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch,
	ErrInconsistentClusterID, ErrInvalidVoter, ErrDuplicateVoter, ErrVoterNotFound,
	ErrStaticQuorum, ErrChangeUnavailable,
}

// voterAnswerError is the error of the leader's answer to a voter RPC:
// nil for NONE, one matching [ErrLeaderUnknown] when the node is not the
// leader or shuts down, else the condition of its error code (one of
// voterConditions, or a Kafka error this runtime does not answer with).
func voterAnswerError(resp kmsg.Response) error {
	var code int16
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		code = r.ErrorCode
	case *kmsg.RemoveRaftVoterResponse:
		code = r.ErrorCode
	case *kmsg.UpdateRaftVoterResponse:
		code = r.ErrorCode
	case *kmsg.ControllerRegistrationResponse:
		return kerr.ErrorForCode(r.ErrorCode)
	case *kmsg.UpdateFeaturesResponse:
		if err := wire.UpdateFeaturesError(r); err == nil || !errors.Is(err, ErrNotLeader) {
			return err
		}
		return fmt.Errorf("%w: the node asked is not the leader", ErrLeaderUnknown)
	default:
		return fmt.Errorf("raft: unexpected answer %T to a voter request", resp)
	}
	err := wire.ConditionForCode(code, voterConditions...)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotLeader):
		return fmt.Errorf("%w: the node asked is not the leader", ErrLeaderUnknown)
	case errors.Is(err, ErrShuttingDown):
		return fmt.Errorf("%w: the leader is shutting down", ErrLeaderUnknown)
	}
	return fmt.Errorf("the leader answered: %w", err)
}

// Voter names a controller to add to a dynamic voter set: its node id,
// the directory id of its metadata log directory (meta.properties) and
// the endpoints it advertises, one of them on the first controller
// listener.
type Voter struct {
	ID          NodeID
	DirectoryID [16]byte
	Endpoints   []Endpoint
}

// AddVoter adds v to the voter set of a dynamic quorum, as AddRaftVoter
// does (Kafka's AddVoterHandler): v must run as an observer that has caught up with
// the leader. On the leader it runs there; on another node it is sent to
// the leader. It returns once the new set is committed. Errors match
// (errors.Is) [ErrDuplicateVoter], [ErrInvalidVoter], [ErrStaticQuorum]
// on a static quorum, [ErrInconsistentClusterID], [ErrChangeUnavailable]
// when the change cannot be made now (on the leader, the condition of its
// own: [ErrChangeInFlight], [ErrVotersUncommitted], [ErrNoCommitInEpoch],
// [ErrVoterUnreachable], [ErrVoterNotCaughtUp], [ErrChangeTimedOut]),
// [ErrLeaderUnknown] when no leader is known or the leader changed or
// shut down meanwhile, [ErrShuttingDown] when this node shuts down, or
// ctx's error. A leader that does not follow this runtime may answer a
// Kafka error of another kind (a *kerr.Error).
func (c *Controller) AddVoter(ctx context.Context, v Voter) error {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.Version = 1
	req.ClusterID = clusterIDPtr(c.eng.clusterID)
	req.TimeoutMillis = int32(c.rc.core.RequestTimeout / time.Millisecond)
	req.VoterID, req.VoterDirectoryID, req.AckWhenCommitted = int32(v.ID), v.DirectoryID, true
	for _, ep := range v.Endpoints {
		req.Listeners = append(req.Listeners, kmsg.AddRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
	}
	return c.voterChange(ctx, req, fmt.Sprintf("add voter %d", v.ID))
}

// RemoveVoter removes the voter (id, directoryID) from the voter set of a
// dynamic quorum, as RemoveRaftVoter does (Kafka's RemoveVoterHandler), and returns
// once the new set is committed. A leader that removes itself resigns
// then. Errors as for [Controller.AddVoter] ([ErrVoterNotFound] for a
// replica that is not a voter, or the last voter).
func (c *Controller) RemoveVoter(ctx context.Context, id NodeID, directoryID [16]byte) error {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.ClusterID = clusterIDPtr(c.eng.clusterID)
	req.VoterID, req.VoterDirectoryID = int32(id), directoryID
	return c.voterChange(ctx, req, fmt.Sprintf("remove voter %d", id))
}

// voterChange runs a voter RPC on this node when it leads, else on the
// leader, and waits for the answer.
func (c *Controller) voterChange(ctx context.Context, req kmsg.Request, what string) error {
	done := make(chan error, 1)
	answer := func(err error) {
		select {
		case done <- err:
		default:
		}
	}
	err := c.enqueue(ctx, event{call: func(e *engine) {
		if e.lastStatus.Role == kraft.Leader {
			e.changeVoters(req, answer)
			return
		}
		if !e.sendToLeader(req, true, answer) {
			answer(ErrLeaderUnknown)
		}
	}})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return voterChangeError(what, err)
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrShuttingDown
	}
}

// changeVoters runs an AddRaftVoter, RemoveRaftVoter or UpdateFeatures
// request of this leader's own; done gets its outcome.
func (e *engine) changeVoters(req kmsg.Request, done func(error)) {
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		e.addVoter(r, done)
	case *kmsg.RemoveRaftVoterRequest:
		e.removeVoter(r, done)
	case *kmsg.UpdateFeaturesRequest:
		e.updateFeatures(r, done)
	default:
		done(fmt.Errorf("raft: %s is not a voter change", kmsg.NameForKey(req.Key())))
	}
}

// voterChangeError is the error [Controller.AddVoter],
// [Controller.RemoveVoter] and [Controller.UpgradeKRaftVersion] return for what's outcome err: one that
// also matches [ErrLeaderUnknown] when this node lost the leadership
// or shuts down.
func voterChangeError(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrShuttingDown):
		return fmt.Errorf("raft: %s: %w: %w", what, ErrLeaderUnknown, err)
	}
	return fmt.Errorf("raft: %s: %w", what, err)
}

// ChangeMembership makes the voter set of a dynamic quorum equal to
// voters, one voter at a time as KIP-853 requires: a target that adds one
// voter to the set in force is [Controller.AddVoter], one that drops one
// is [Controller.RemoveVoter], the set itself changes nothing. A target
// further away (two voters, or a voter's directory id replaced) is
// refused with [ErrInvalidChange]: make the changes one by one, each
// committed before the next. Voters are matched by node id and directory
// id; only an added voter's endpoints are used. The set in force is the
// one this node has seen, which on a follower may trail the leader's.
func (c *Controller) ChangeMembership(ctx context.Context, voters []Voter) error {
	current := c.eng.pub.voterList()
	in := func(id NodeID, dir [16]byte, set []voterInfo) bool {
		return slices.ContainsFunc(set, func(v voterInfo) bool { return v.id == id && v.dir == dir })
	}
	var added []Voter
	for _, v := range voters {
		if !in(v.ID, v.DirectoryID, current) {
			added = append(added, v)
		}
	}
	var removed []voterInfo
	for _, v := range current {
		if !slices.ContainsFunc(voters, func(w Voter) bool { return w.ID == v.id && w.DirectoryID == v.dir }) {
			removed = append(removed, v)
		}
	}
	switch {
	case len(added) == 0 && len(removed) == 0:
		return nil
	case len(added) == 1 && len(removed) == 0:
		return c.AddVoter(ctx, added[0])
	case len(added) == 0 && len(removed) == 1:
		return c.RemoveVoter(ctx, removed[0].id, removed[0].dir)
	}
	return fmt.Errorf("%w: the target adds %d voters and removes %d; change one voter at a time", ErrInvalidChange, len(added), len(removed))
}
