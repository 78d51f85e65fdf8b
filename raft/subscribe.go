package raft

import (
	"context"
	"errors"
	"sync"

	"github.com/krabka-go/krabka/metadata"
)

// DefaultSubscriptionBuffer is the number of images a [Subscription]
// holds for its reader when [Controller.Subscribe] is given no buffer
// size.
const DefaultSubscriptionBuffer = 64

// ErrSlowSubscriber ends a [Subscription] whose reader fell behind by more
// images than its buffer holds. The images it did receive are still every
// image up to the last one, in order; the ones after it were never queued.
// Subscribe again and start from the image the new subscription delivers
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
	hub *subscribers
	c   chan *metadata.Image
	// err is set, and c closed, by end (under hub.mu).
	err  error
	stop func() bool // releases the context watch
}

// Images returns the channel that carries the images. It is closed when
// the subscription ends; [Subscription.Err] then says why.
func (s *Subscription) Images() <-chan *metadata.Image { return s.c }

// Err returns why the subscription ended: [ErrSlowSubscriber], the error
// of the context given to Subscribe, [ErrShuttingDown] when the
// controller stopped (or the error that stopped its engine), or
// [context.Canceled] after [Subscription.Close]. It returns nil while the
// subscription is running. Images queued before it ended are still
// received from [Subscription.Images] before the channel reports closed.
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends the subscription and releases it. It is safe to call more
// than once and at any time.
func (s *Subscription) Close() {
	s.hub.end(s, context.Canceled)
}

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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if buffer <= 0 {
		buffer = DefaultSubscriptionBuffer
	}
	s := &Subscription{hub: &c.eng.pub.subs, c: make(chan *metadata.Image, buffer)}
	if err := s.hub.add(s, c.eng.pub.image.Load); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { s.hub.end(s, ctx.Err()) })
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if _, open := s.hub.set[s]; open {
		s.stop = stop
	} else {
		stop()
	}
	return s, nil
}

// subscribers is the set of open subscriptions. The engine publishes
// under mu, and a subscription is added under mu with the image current
// at that moment, so that no image is missed or delivered twice.
type subscribers struct {
	mu     sync.Mutex
	set    map[*Subscription]struct{}
	closed error // set once the controller has stopped
}

// add registers s and queues the current image (read with current under
// mu) as its first.
func (h *subscribers) add(s *Subscription, current func() *metadata.Image) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed != nil {
		return h.closed
	}
	if h.set == nil {
		h.set = map[*Subscription]struct{}{}
	}
	h.set[s] = struct{}{}
	s.c <- current()
	return nil
}

// publish stores img with store and hands it to every subscription,
// without ever blocking: a subscription whose buffer is full ends with
// ErrSlowSubscriber.
func (h *subscribers) publish(img *metadata.Image, store func(*metadata.Image)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	store(img)
	for s := range h.set {
		select {
		case s.c <- img:
		default:
			h.endLocked(s, ErrSlowSubscriber)
		}
	}
}

// end ends s with err unless it has ended already.
func (h *subscribers) end(s *Subscription, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endLocked(s, err)
}

func (h *subscribers) endLocked(s *Subscription, err error) {
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
func (h *subscribers) closeAll(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = err
	for s := range h.set {
		h.endLocked(s, err)
	}
}
