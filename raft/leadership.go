package raft

import "context"

// Leadership is who leads the quorum in an epoch, as this node knows it:
// LeaderID is -1 while it knows no leader of Epoch (an election runs, or
// the leader has not reached it yet). This node leads when LeaderID is
// its own id; it takes submissions once it has also applied the log up to
// its epoch's start (SubmitChange waits for that).
type Leadership struct {
	Epoch    int32
	LeaderID NodeID
}

// LeadershipSubscription delivers every change of [Leadership] this node
// sees, in order, starting with the leadership current when it was
// created. It never drops a change silently: one that does not fit in its
// buffer ends the subscription with [ErrSlowSubscriber]. Epochs never go
// back from one value to the next, and each value differs from the one
// before it.
type LeadershipSubscription struct {
	s *stream[Leadership]
}

// Changes returns the channel that carries the leadership values. It is
// closed when the subscription ends; [LeadershipSubscription.Err] then
// says why.
func (s *LeadershipSubscription) Changes() <-chan Leadership { return s.s.c }

// Err returns why the subscription ended, as [Subscription.Err] does; nil
// while it runs.
func (s *LeadershipSubscription) Err() error { return s.s.Err() }

// Close ends the subscription and releases it. It is safe to call more
// than once and at any time.
func (s *LeadershipSubscription) Close() { s.s.Close() }

// SubscribeLeadership returns a [LeadershipSubscription]: the current
// leadership first, then each change this node sees, whether it learns
// of a new leader, of a new epoch without one, or becomes the leader
// itself. The engine publishes the leadership after every input it
// handles, so a state the consensus core passed through within one input
// (an epoch bump followed at once by the leader of that epoch) shows as
// its end state. buffer bounds how many changes wait for the reader
// ([DefaultSubscriptionBuffer] if buffer <= 0). It ends when ctx ends,
// when Close is called or when the controller stops; no goroutine is left
// behind.
func (c *Controller) SubscribeLeadership(ctx context.Context, buffer int) (*LeadershipSubscription, error) {
	s, err := c.eng.pub.leaders.open(ctx, buffer, c.eng.pub.leadership)
	if err != nil {
		return nil, err
	}
	return &LeadershipSubscription{s: s}, nil
}

// leadership returns the leadership last published.
func (p *publishedState) leadership() Leadership {
	if l := p.leader.Load(); l != nil {
		return *l
	}
	return Leadership{LeaderID: -1}
}

// publishLeadership publishes l when it differs from the leadership last
// published.
func (p *publishedState) publishLeadership(l Leadership) {
	if old := p.leader.Load(); old != nil && *old == l {
		return
	}
	p.leaders.publish(l, func(l Leadership) { p.leader.Store(&l) })
}
