package raft

import (
	"errors"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/metadata"
)

// bareEngine is an engine with only what registration reads: node 1,
// following leader 2 (whom it cannot reach), with img applied up to
// applied of high watermark hw.
func bareEngine(img *metadata.Image, applied, hw kraft.Offset) *engine {
	e := &engine{
		rc:     runtimeConfig{id: 1, features: metadata.KnownFeatures(), core: kraft.Config{RequestTimeout: time.Second}},
		clock:  &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		logger: slog.New(slog.DiscardHandler),
		pub:    &publishedState{},
		peers:  map[kraft.NodeID]*peerLink{},
		reg:    registration{incarnation: newIncarnation(0)},
	}
	e.pub.image.Store(img)
	e.lastStatus = kraft.Status{ID: 1, Role: kraft.Follower, Leader: kraft.LeaderAndEpoch{LeaderID: 2, Epoch: 3}, HighWatermark: hw}
	e.applier = applier{applied: applied, hw: hw}
	return e
}

// TestRegistrationWaitsUntilDue: a controller sends its registration
// only once it has applied the log up to the leader's high watermark, at
// metadata.version 3.7-IV0 or later, while its image holds no
// registration of its incarnation, and never when it is off.
func TestRegistrationWaitsUntilDue(t *testing.T) {
	current := imageWith(t)
	e := bareEngine(current, 5, 10)
	e.maybeRegister()
	if e.reg.attempt != 0 || e.reg.caughtUp {
		t.Fatalf("a controller at 5 of 10 sent its registration (%+v)", e.reg)
	}
	e.applier.applied = 10
	e.maybeRegister()
	if e.reg.attempt != 1 || !e.reg.caughtUp {
		t.Fatalf("a caught-up controller did not send its registration (%+v)", e.reg)
	}
	// The leader was unreachable: caught up stays so, and the next attempt
	// waits for the backoff even when the node falls behind again.
	e.applier.hw = 20
	e.maybeRegister()
	if e.reg.attempt != 1 || e.reg.failures != 1 {
		t.Fatalf("a second attempt inside the backoff (%+v)", e.reg)
	}
	e.clock.(*manualClock).now = e.reg.due
	e.maybeRegister()
	if e.reg.attempt != 2 {
		t.Fatalf("no attempt once the backoff passed (%+v)", e.reg)
	}

	d := metadata.NewDelta(metadata.EmptyImage())
	old := metadata.NewFeatureLevelRecord()
	old.Name, old.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MetadataVersion3_7_IV0-1
	if err := d.Replay(old, 0, 1); err != nil {
		t.Fatal(err)
	}
	older := bareEngine(d.Apply(), 10, 10)
	older.maybeRegister()
	if older.reg.attempt != 0 {
		t.Errorf("a controller registered at metadata.version %d", old.FeatureLevel)
	}

	registered := bareEngine(nil, 10, 10)
	d = metadata.NewDelta(current)
	rec := metadata.NewRegisterControllerRecord()
	rec.ControllerId, rec.IncarnationId = 1, registered.reg.incarnation
	rec.Features = []metadata.RegisterControllerRecordControllerFeature{{
		Name: metadata.FeatureMetadataVersion, MinSupportedVersion: 7, MaxSupportedVersion: metadata.MaxMetadataVersion}}
	if err := d.Replay(rec, 1, 1); err != nil {
		t.Fatal(err)
	}
	registered.pub.image.Store(d.Apply())
	registered.maybeRegister()
	if registered.reg.attempt != 0 {
		t.Error("a controller whose incarnation is registered registered again")
	}
	other := bareEngine(registered.pub.image.Load(), 10, 10)
	other.maybeRegister()
	if other.reg.attempt != 1 {
		t.Error("a new incarnation did not replace the registration of the last")
	}

	off := bareEngine(current, 10, 10)
	off.reg.off = true
	off.maybeRegister()
	if off.reg.attempt != 0 {
		t.Error("a node with registration off registered")
	}
}

// TestRegistrationBackoff: failures space the attempts as Kafka's
// ControllerRegistrationManager does (100 ms, doubled, at most two
// minutes); a success resets them and waits for the image; an answer to
// an attempt that is no longer in flight changes nothing.
func TestRegistrationBackoff(t *testing.T) {
	e := bareEngine(imageWith(t), 10, 10)
	now := e.clock.Now()
	var got []time.Duration
	for attempt := uint64(1); attempt <= 13; attempt++ {
		e.reg.inFlight = attempt
		e.registrationFailed(attempt, errors.New("refused"))
		got = append(got, e.reg.due.Sub(now))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 12800 * time.Millisecond,
		25600 * time.Millisecond, 51200 * time.Millisecond, 102400 * time.Millisecond, 2 * time.Minute, 2 * time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("backoffs %v, want %v", got, want)
	}
	e.reg.inFlight = 20
	e.registrationAnswered(19, 0, "")
	if e.reg.acked || e.reg.inFlight != 20 {
		t.Errorf("a stale answer was taken (%+v)", e.reg)
	}
	e.registrationAnswered(20, kerr.NotController.Code, "not the leader")
	if e.reg.inFlight != 0 || e.reg.failures != 14 || e.reg.acked {
		t.Errorf("a refusal was not counted as a failure (%+v)", e.reg)
	}
	e.reg.inFlight = 21
	e.registrationAnswered(21, 0, "")
	if !e.reg.acked || e.reg.failures != 0 || e.reg.inFlight != 0 {
		t.Errorf("a success did not reset the failures (%+v)", e.reg)
	}
	e.reg.due = time.Time{}
	e.maybeRegister()
	if e.reg.attempt != 0 {
		t.Error("an acknowledged registration was sent again before the image showed it")
	}
}

// TestIncarnationAndHost: an incarnation id is a fresh version 4 UUID per
// start (one drawn from the seed for a simulated node, the same for the
// same seed); a wildcard listener host registers as this machine's name.
func TestIncarnationAndHost(t *testing.T) {
	a, b := newIncarnation(0), newIncarnation(0)
	if a == b || a[6]>>4 != 4 || a[8]>>6 != 2 {
		t.Errorf("random incarnations %x and %x", a, b)
	}
	seven, again, eight := newIncarnation(7), newIncarnation(7), newIncarnation(8)
	if seven != again || seven == eight {
		t.Error("seeded incarnations do not follow the seed")
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "localhost"
	}
	for host, want := range map[string]string{"": name, "0.0.0.0": name, "::": name, "10.0.0.1": "10.0.0.1", "controller-1.example": "controller-1.example"} {
		if got := registeredHost(host); got != want {
			t.Errorf("a listener on %q registers host %q, want %q", host, got, want)
		}
	}
}
