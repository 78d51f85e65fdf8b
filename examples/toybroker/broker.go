package toybroker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// Broker is the broker side: a KRaft observer of the controllers'
// quorum that registers itself and creates topics through the controller
// listener.
type Broker struct {
	id       int32
	observer *raft.Observer
	admin    *kgo.Client
	// Epoch is the broker epoch its registration got.
	Epoch int64
}

// StartBroker starts broker id as an observer of voters, with its
// metadata log under dir, and a client of the controller listener of
// the first voter.
func StartBroker(ctx context.Context, id int32, dir string, voters []raft.QuorumVoter) (*Broker, error) {
	// An observer's configuration is a controller's whose node id is
	// outside the voter set; its listener serves nothing a client needs.
	cfg := raft.DefaultConfig()
	cfg.NodeID, cfg.MetadataLogDir, cfg.QuorumVoters = raft.NodeID(id), dir, voters
	cfg.ProcessRoles = []raft.ProcessRole{raft.ControllerRole}
	cfg.ControllerListenerNames = []string{"CONTROLLER"}
	cfg.Listeners = []raft.Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 0}}
	observer, err := raft.StartObserver(ctx, cfg)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(voters[0].Host, strconv.Itoa(int(voters[0].Port)))
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprint("toybroker-", id)))
	if err != nil {
		_ = observer.Shutdown(ctx)
		return nil, err
	}
	return &Broker{id: id, observer: observer, admin: admin}, nil
}

// request sends req to the controller listener and retries it while the
// answer says to (the quorum has no leader yet, say).
func (b *Broker) request(ctx context.Context, req kmsg.Request, retriable func(kmsg.Response) bool) (kmsg.Response, error) {
	for {
		resp, err := b.admin.SeedBrokers()[0].Request(ctx, req)
		if err == nil && !retriable(resp) {
			return resp, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("toybroker: %s: %w (last: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Register sends BrokerRegistration for this broker, with one PLAINTEXT
// listener at listener and every feature this release knows, and waits
// until the observer's own image holds the registration.
func (b *Broker) Register(ctx context.Context, listener string) error {
	host, port, err := net.SplitHostPort(listener)
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID = b.id
	_, _ = rand.Read(req.IncarnationID[:])
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: host, Port: uint16(p), SecurityProtocol: 0}}
	req.Features = append(req.Features, kmsg.BrokerRegistrationRequestFeature{
		Name: metadata.FeatureMetadataVersion, MinSupportedVersion: metadata.MinMetadataVersion, MaxSupportedVersion: metadata.MaxMetadataVersion})
	for _, f := range metadata.KnownFeatures().Features {
		req.Features = append(req.Features, kmsg.BrokerRegistrationRequestFeature{
			Name: f.Name, MinSupportedVersion: f.MinLevel(), MaxSupportedVersion: f.MaxLevel(false)})
	}
	resp, err := b.request(ctx, req, func(r kmsg.Response) bool {
		return r.(*kmsg.BrokerRegistrationResponse).ErrorCode == kerr.UnknownServerError.Code
	})
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.BrokerRegistrationResponse).ErrorCode); err != nil {
		return fmt.Errorf("toybroker: register: %w", err)
	}
	b.Epoch = resp.(*kmsg.BrokerRegistrationResponse).BrokerEpoch
	return b.await(ctx, func(img *metadata.Image) bool {
		reg, ok := img.Cluster().Broker(b.id)
		return ok && reg.Epoch == b.Epoch
	})
}

// CreateTopic sends CreateTopics for one topic and waits until the
// observer's own image holds it; it returns the topic.
func (b *Broker) CreateTopic(ctx context.Context, name string, partitions int32) (*metadata.Topic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, t)
	resp, err := b.request(ctx, req, func(r kmsg.Response) bool {
		code := r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		return code == kerr.RequestTimedOut.Code || code == kerr.UnknownServerError.Code
	})
	if err != nil {
		return nil, err
	}
	if rt := resp.(*kmsg.CreateTopicsResponse).Topics[0]; rt.ErrorCode != 0 && rt.ErrorCode != kerr.TopicAlreadyExists.Code {
		msg := ""
		if rt.ErrorMessage != nil {
			msg = ": " + *rt.ErrorMessage
		}
		return nil, fmt.Errorf("toybroker: create %s: %w%s", name, kerr.ErrorForCode(rt.ErrorCode), msg)
	}
	var topic *metadata.Topic
	err = b.await(ctx, func(img *metadata.Image) bool {
		topic, _ = img.Topics().ByName(name)
		return topic != nil
	})
	return topic, err
}

// await waits until the observer's image satisfies cond.
func (b *Broker) await(ctx context.Context, cond func(*metadata.Image) bool) error {
	sub, err := b.observer.Subscribe(ctx, 0)
	if err != nil {
		return err
	}
	defer sub.Close()
	for img := range sub.Images() {
		if cond(img) {
			return nil
		}
	}
	return sub.Err()
}

// Bootstrap sets metadata.version on a new cluster's controller c, once
// it leads: the first change of a cluster whose directories were not
// formatted with bootstrap records.
func Bootstrap(ctx context.Context, c *raft.Controller) error {
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.LatestProductionMetadataVersion
	for c.CurrentImage().Features().MetadataVersion() == 0 {
		_, err := c.SubmitChange(ctx, []metadata.Record{mv}, raft.IfUnchangedSince(-1))
		switch {
		case err == nil, errors.Is(err, raft.ErrImageChanged):
		case ctx.Err() != nil:
			return err
		default:
			time.Sleep(100 * time.Millisecond) // no leader yet
		}
	}
	return nil
}

// Image is the observer's current image.
func (b *Broker) Image() *metadata.Image { return b.observer.CurrentImage() }

// Close stops the broker.
func (b *Broker) Close(ctx context.Context) error {
	b.admin.Close()
	return b.observer.Shutdown(ctx)
}
