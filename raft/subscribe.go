package raft

import (
	"context"
	"errors"
	"sync"

	"github.com/krabka-go/krabka/metadata"
)

// DefaultSubscriptionBuffer is the number of values a [Subscription] or
// [LeadershipSubscription] holds for its reader when it is given no
// buffer size.
const DefaultSubscriptionBuffer = 64

// ErrSlowSubscriber ends a subscription whose reader fell behind by more
// values than its buffer holds. The values it did receive are still every
// value up to the last one, in order; the ones after it were never queued.
// Subscribe again and start from the value the new subscription delivers
// first.
var ErrSlowSubscriber = errors.New("raft: subscriber too slow")

// Subscription delivers every metadata image a [Controller] publishes, in
// the order it publishes them (ascending [metadata.Image.Offset]), starting
// with the image that was current when it was created. It never skips an
// image silently: an image that does not fit in its buffer ends the
// subscription with [ErrSlowSubscriber] instead, so that the engine never
// waits for a reader.
//
// Images are immutable and may be kept.
type Subscription struct {
	s *stream[*metadata.Image]
}

// Images returns the channel that carries the images. It is closed when
// the subscription ends; [Subscription.Err] then says why.
func (s *Subscription) Images() <-chan *metadata.Image { return s.s.c }

// Err returns why the subscription ended: [ErrSlowSubscriber], the error
// of the context given to Subscribe, [ErrShuttingDown] when the
// controller stopped (or the error that stopped its engine), or
// [context.Canceled] after [Subscription.Close]. It returns nil while the
// subscription is running. Images queued before it ended are still
// received from [Subscription.Images] before the channel reports closed.
func (s *Subscription) Err() error { return s.s.Err() }

// Close ends the subscription and releases it. It is safe to call more
// than once and at any time.
func (s *Subscription) Close() { s.s.Close() }

// Subscribe returns a [Subscription] to the metadata images this node
// applies: the current image first, then each image the engine publishes
// after it (one per run of committed metadata records it applies at
// once, and one per snapshot it loads; control records such as
// LeaderChange change no image, so they publish none). buffer bounds how
// many images wait for the reader ([DefaultSubscriptionBuffer] if buffer
// <= 0); a reader that lets more accumulate is cut off with
// [ErrSlowSubscriber].
//
// The subscription ends when ctx ends, when [Subscription.Close] is
// called or when the controller stops; no goroutine is left behind.
func (c *Controller) Subscribe(ctx context.Context, buffer int) (*Subscription, error) {
	s, err := c.eng.pub.subs.open(ctx, buffer, c.eng.pub.image.Load)
	if err != nil {
		return nil, err
	}
	return &Subscription{s: s}, nil
}

// feed is the set of open subscriptions to one sequence of values. The
// engine publishes under mu, and a subscription is added under mu with
// the value current at that moment, so that no value is missed or
// delivered twice.
type feed[T any] struct {
	mu     sync.Mutex
	set    map[*stream[T]]struct{}
	closed error // set once the controller has stopped
}

// stream is one subscription of a feed.
type stream[T any] struct {
	hub *feed[T]
	c   chan T
	// err is set, and c closed, by end (under hub.mu).
	err  error
	stop func() bool // releases the context watch
}

// Err returns why s ended, nil while it runs.
func (s *stream[T]) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends s with context.Canceled.
func (s *stream[T]) Close() { s.hub.end(s, context.Canceled) }

// open adds a subscription with room for buffer values (or
// DefaultSubscriptionBuffer) whose first value is current() read under
// mu; it ends when ctx does.
func (h *feed[T]) open(ctx context.Context, buffer int, current func() T) (*stream[T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if buffer <= 0 {
		buffer = DefaultSubscriptionBuffer
	}
	s := &stream[T]{hub: h, c: make(chan T, buffer)}
	if err := h.add(s, current); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { h.end(s, ctx.Err()) })
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, open := h.set[s]; open {
		s.stop = stop
	} else {
		stop()
	}
	return s, nil
}

// add registers s and queues the current value (read with current under
// mu) as its first.
func (h *feed[T]) add(s *stream[T], current func() T) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed != nil {
		return h.closed
	}
	if h.set == nil {
		h.set = map[*stream[T]]struct{}{}
	}
	h.set[s] = struct{}{}
	s.c <- current()
	return nil
}

// publish stores v with store and hands it to every subscription,
// without ever blocking: a subscription whose buffer is full ends with
// ErrSlowSubscriber.
func (h *feed[T]) publish(v T, store func(T)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	store(v)
	for s := range h.set {
		select {
		case s.c <- v:
		default:
			h.endLocked(s, ErrSlowSubscriber)
		}
	}
}

// end ends s with err unless it has ended already.
func (h *feed[T]) end(s *stream[T], err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endLocked(s, err)
}

func (h *feed[T]) endLocked(s *stream[T], err error) {
	if _, ok := h.set[s]; !ok {
		return
	}
	delete(h.set, s)
	s.err = err
	close(s.c)
	if s.stop != nil {
		s.stop()
	}
}

// closeAll ends every subscription with err and refuses new ones.
func (h *feed[T]) closeAll(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = err
	for s := range h.set {
		h.endLocked(s, err)
	}
}
