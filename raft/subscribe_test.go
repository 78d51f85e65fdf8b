package raft

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/krabka-go/krabka/metadata"
)

// nextImage reads the next image of s, failing the test if none comes
// within the deadline or the subscription ends.
func nextImage(t *testing.T, s *Subscription) *metadata.Image {
	t.Helper()
	return receive(t, s.Images(), s.Err, "an image")
}

// receive reads the next value of a subscription's channel ch, failing
// the test if none comes within the deadline or the subscription ends
// (err says why).
func receive[T any](t *testing.T, ch <-chan T, err func() error, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("subscription ended: %v", err())
		}
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// TestSubscribeDeliversEveryImageInOrder: a subscription on the leader and
// one on a follower each receive the current image first, then every
// image the node publishes, in ascending offset order, up to the last
// commit; the topics appear in the order they were created and each
// image holds exactly the topics committed below its offset.
func TestSubscribeDeliversEveryImageInOrder(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)

	subs := map[string]*Subscription{}
	for name, id := range map[string]NodeID{"leader": leader, "follower": c.follower(leader)} {
		s, err := c.node(id).Subscribe(t.Context(), 1024)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs[name] = s
	}
	const n = 20
	created := map[string]int64{} // topic name → offset of its record
	var last int64
	for i := range n {
		name := fmt.Sprintf("topic-%02d", i)
		r := submit(t, c.node(leader), topicRecord(name))
		created[name], last = r.Offset, r.LastOffset
	}
	for name, s := range subs {
		first := nextImage(t, s)
		if first.Offset() < res.LastOffset {
			t.Errorf("%s: first image at offset %d, want at least %d (the image current at Subscribe)", name, first.Offset(), res.LastOffset)
		}
		prev := first
		for prev.Offset() < last {
			img := nextImage(t, s)
			if img.Offset() <= prev.Offset() {
				t.Fatalf("%s: image at offset %d after one at %d", name, img.Offset(), prev.Offset())
			}
			for topic, off := range created {
				_, ok := img.Topics().ByName(topic)
				if want := off <= img.Offset(); ok != want {
					t.Errorf("%s: image at offset %d holds %s = %v, want %v", name, img.Offset(), topic, ok, want)
				}
			}
			prev = img
		}
		if prev.Topics().Len() != n {
			t.Errorf("%s: last image holds %d topics, want %d", name, prev.Topics().Len(), n)
		}
		if err := s.Err(); err != nil {
			t.Errorf("%s: Err() = %v while running", name, err)
		}
	}
}

// TestSubscribeCutsOffSlowReader: a subscriber that reads nothing while
// its buffer overflows is ended with ErrSlowSubscriber; the engine keeps
// committing meanwhile, and the images it did queue come out in order
// before the channel closes. A fresh subscription starts at the current
// image.
func TestSubscribeCutsOffSlowReader(t *testing.T) {
	c := newTestCluster(t, 1)
	leader := c.leader()
	node := c.node(leader)
	submit(t, node, metadataVersionRecord())

	const buffer = 2
	slow, err := node.Subscribe(t.Context(), buffer)
	if err != nil {
		t.Fatal(err)
	}
	var last SubmitResult
	for i := range 5 {
		last = submit(t, node, topicRecord(fmt.Sprintf("t%d", i)))
	}
	waitFor(t, "the slow subscriber to be cut off", func() bool { return slow.Err() != nil })
	if err := slow.Err(); !errors.Is(err, ErrSlowSubscriber) {
		t.Fatalf("Err() = %v, want ErrSlowSubscriber", err)
	}
	var got []int64
	for img := range slow.Images() {
		got = append(got, img.Offset())
	}
	if len(got) != buffer || got[0] >= got[1] {
		t.Errorf("buffered image offsets = %v, want %d ascending", got, buffer)
	}
	slow.Close() // no effect once ended
	if err := slow.Err(); !errors.Is(err, ErrSlowSubscriber) {
		t.Errorf("Err() after Close = %v, want ErrSlowSubscriber", err)
	}

	fresh, err := node.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if img := nextImage(t, fresh); img.Offset() != last.LastOffset || img.Topics().Len() != 5 {
		t.Errorf("fresh subscription starts at offset %d with %d topics, want %d with 5", img.Offset(), img.Topics().Len(), last.LastOffset)
	}
}

// TestSubscribeEnds: a subscription ends with its context's error when the
// context ends, with context.Canceled on Close, and with ErrShuttingDown
// when the controller stops; Subscribe on a stopped controller fails.
// goleak (TestMain) checks that nothing is left running.
func TestSubscribeEnds(t *testing.T) {
	c := newTestCluster(t, 1)
	node := c.node(c.leader())

	ctx, cancel := context.WithCancel(t.Context())
	byCtx, err := node.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := node.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	byStop, err := node.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	drained := func(s *Subscription) bool {
		for {
			select {
			case _, ok := <-s.Images():
				if !ok {
					return true
				}
			default:
				return false
			}
		}
	}

	cancel()
	waitFor(t, "the cancelled subscription to end", func() bool { return drained(byCtx) })
	if err := byCtx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: Err() = %v, want context.Canceled", err)
	}
	closed.Close()
	if !drained(closed) || !errors.Is(closed.Err(), context.Canceled) {
		t.Errorf("closed: Err() = %v, want context.Canceled and a closed channel", closed.Err())
	}
	if byStop.Err() != nil {
		t.Errorf("untouched subscription ended: %v", byStop.Err())
	}

	c.stop(1)
	if !drained(byStop) || !errors.Is(byStop.Err(), ErrShuttingDown) {
		t.Errorf("after Shutdown: Err() = %v, want ErrShuttingDown and a closed channel", byStop.Err())
	}
	if _, err := node.Subscribe(t.Context(), 0); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Subscribe after Shutdown = %v, want ErrShuttingDown", err)
	}
	done, stop := context.WithCancel(t.Context())
	stop()
	if _, err := node.Subscribe(done, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Subscribe with an ended context = %v, want context.Canceled", err)
	}
}

// TestSubscribeSkipsControlBatches: a leader change commits a
// LeaderChange control batch, which changes no image, so a subscriber on
// a surviving node receives nothing for it; the next change arrives as
// the next image.
func TestSubscribeSkipsControlBatches(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	watcher := c.follower(leader)
	s, err := c.node(watcher).Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if img := nextImage(t, s); img.Offset() != res.LastOffset {
		t.Fatalf("first image at offset %d, want %d", img.Offset(), res.LastOffset)
	}

	c.stop(leader)
	next := c.leader()
	epoch := c.node(next).QuorumState().Epoch
	waitFor(t, "the new epoch's LeaderChange to be applied", func() bool {
		return c.node(watcher).QuorumState().AppliedOffset > res.LastOffset+1
	})
	select {
	case img := <-s.Images():
		t.Fatalf("image at offset %d published for the LeaderChange of epoch %d", img.Offset(), epoch)
	default:
	}
	after := c.submitRetrying(topicRecord("after-election"))
	img := nextImage(t, s)
	if img.Offset() != after.LastOffset || img.Epoch() != after.Epoch {
		t.Errorf("next image at offset %d epoch %d, want %d epoch %d", img.Offset(), img.Epoch(), after.LastOffset, after.Epoch)
	}
}
