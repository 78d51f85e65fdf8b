package raft

import (
	"context"
	"net"

	"github.com/krabka-go/krabka/metadata"
)

// Observer follows the metadata log as a KRaft observer, as a Kafka
// broker does: it fetches from the leader with its replica id and
// directory id (Fetch and FetchSnapshot, KIP-595 and KIP-630), keeps its
// own copy of the log and the metadata image, and never votes nor
// counts toward the high watermark. The leader lists it among the
// observers of DescribeQuorum.
//
// An Observer is the node [Start] runs when its id is outside the voter
// set, started under rules that keep it there (see [StartObserver]); it
// offers the reads and writes a broker needs and none of the voter
// operations.
type Observer struct {
	c *Controller
}

// StartObserver starts an observer with cfg, the Config a node would
// have for [Start], with these differences:
//
//   - NodeID must not be among QuorumVoters: the observer's id is the
//     replica id it fetches with (a broker's node.id), and an observer
//     of a static quorum stays one;
//   - AutoJoin (controller.quorum.auto.join.enable) must be false: an
//     observer never adds itself to a dynamic voter set.
//
// The directory cfg.MetadataLogDir holds the observer's copy of the log
// and its snapshots, so that a restart resumes where it stopped. An
// observer of a dynamic quorum (QuorumBootstrapServers) needs
// meta.properties to give its directory id, as for [Start] (krabka
// storage format --no-initial-controllers), and finds the leader through
// the bootstrap servers; the first of cfg.ControllerListenerNames names
// the listener of the voters' endpoints it connects to, as
// controller.listener.names does on a Kafka broker. The observer binds cfg's
// controller listeners, where it answers reads (ApiVersions,
// DescribeCluster, ReadImage, MetadataFetch) like any node; nothing in
// the quorum dials it. ctx bounds its life as for Start, and
// [Observer.Shutdown] must be called in any case.
func StartObserver(ctx context.Context, cfg Config) (*Observer, error) {
	c, err := start(ctx, cfg, startOptions{observer: true})
	if err != nil {
		return nil, err
	}
	return &Observer{c: c}, nil
}

// CurrentImage returns the newest image the observer has applied, at
// once; it may lag behind the leader. See [Controller.CurrentImage].
func (o *Observer) CurrentImage() *metadata.Image { return o.c.CurrentImage() }

// Subscribe returns every image the observer applies, in order, starting
// with the current one. See [Controller.Subscribe].
func (o *Observer) Subscribe(ctx context.Context, buffer int) (*Subscription, error) {
	return o.c.Subscribe(ctx, buffer)
}

// ReadImage returns an image that holds every change committed before
// the call started: the observer asks the leader for a read barrier and
// waits until it has applied it. Errors are those of
// [Controller.ReadImage].
func (o *Observer) ReadImage(ctx context.Context) (*metadata.Image, error) { return o.c.ReadImage(ctx) }

// SubmitChange forwards records to the leader and returns once they are
// committed and applied on the leader; the observer's own image holds
// them once it has fetched them (use [Observer.ReadImage] to wait for
// that). opts are [Controller.SubmitChange]'s conditions, checked on the
// leader. Errors are those of [Controller.SubmitChange] for a follower,
// [ErrOutcomeUnknown] included.
func (o *Observer) SubmitChange(ctx context.Context, records []metadata.Record, opts ...SubmitOption) (SubmitResult, error) {
	return o.c.SubmitChange(ctx, records, opts...)
}

// SubscribeLeadership reports the leader the observer follows, starting
// with the current one, and every change after it. See
// [Controller.SubscribeLeadership].
func (o *Observer) SubscribeLeadership(ctx context.Context, buffer int) (*LeadershipSubscription, error) {
	return o.c.SubscribeLeadership(ctx, buffer)
}

// QuorumState returns the observer's view of the quorum: its role is
// [RoleFollower] while it follows a leader and [RoleUnattached] while it
// looks for one; AppliedOffset says how far its image has come.
func (o *Observer) QuorumState() QuorumState { return o.c.QuorumState() }

// Addr returns the address of the observer's first controller listener.
func (o *Observer) Addr() net.Addr { return o.c.Addr() }

// Done is closed when the observer has stopped: after Shutdown, when its
// context ended, or on a fatal fault ([Observer.Err] says which).
func (o *Observer) Done() <-chan struct{} { return o.c.Done() }

// Err returns why the observer stopped, or nil while it runs. See
// [Controller.Err].
func (o *Observer) Err() error { return o.c.Err() }

// Shutdown stops the observer and releases its listener and directory.
// See [Controller.Shutdown].
func (o *Observer) Shutdown(ctx context.Context) error { return o.c.Shutdown(ctx) }
