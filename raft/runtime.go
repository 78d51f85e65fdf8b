package raft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// PartitionDirName is the name of the metadata partition's directory under
// the metadata log directory (Kafka's UnifiedLog.logDirName of
// __cluster_metadata-0).
const PartitionDirName = "__cluster_metadata-0"

// inboxCapacity bounds the engine's input queue (Kafka's raft event queue
// is unbounded; ours pushes back on connections and callers instead).
const inboxCapacity = 1024

// runtimeConfig is everything the runtime derives from a [Config]: the
// core's configuration, the peers' addresses, the listeners, the log store
// options and the few settings Config has no property for.
type runtimeConfig struct {
	// admission is Config.RegistrationAdmission.
	admission RegistrationAdmission

	id     kraft.NodeID
	logDir string // metadata.log.dir
	dir    string // the partition directory
	// listeners are the controller listeners to bind, in
	// controller.listener.names order; listenerTLS holds the TLS server
	// handshake of each that is mapped to SSL or SASL_SSL (nil for the
	// others).
	listeners   []Endpoint
	listenerTLS []*transport.TLS
	// listenerSASL holds the SASL handshake of each SASL_PLAINTEXT and
	// SASL_SSL listener (nil for the others), in the same order; a
	// SASL_SSL listener's TLS configuration is in listenerTLS.
	listenerSASL []*transport.SASL
	// listenerRates holds the connection creation rate quotas of each
	// listener, in the same order: the node's, shared, and its own.
	listenerRates [][]*transport.CreationRate
	// voters is controller.quorum.voters; listenerName names their
	// endpoints (the first controller listener).
	voters       []QuorumVoter
	listenerName string
	// dynamic is set when controller.quorum.voters is empty: the voter
	// set comes from VotersRecords (kraft.version 1, KIP-853), and
	// bootstrapServers (controller.quorum.bootstrap.servers, host:port)
	// are where an observer looks for the leader.
	dynamic          bool
	bootstrapServers []string
	// advertised are this node's controller endpoints as it publishes
	// them (advertised.listeners, else listeners), the first one on
	// listenerName; autoJoin is controller.quorum.auto.join.enable.
	advertised []Endpoint
	autoJoin   bool
	// advertisedProtocols are the security protocols of advertised, in
	// its order; registers is whether the node registers itself as a
	// controller (not an observer, not DisableControllerRegistration).
	advertisedProtocols []SecurityProtocol
	registers           bool

	core    kraft.Config
	peer    transport.PeerConfig
	forward transport.PeerConfig
	server  transport.ServerConfig
	logOpts logstore.Options

	// maxBatchBytes bounds one batch of submitted records
	// (internal.metadata.max.batch.size.in.bytes).
	maxBatchBytes int
	// maxIdle is metadata.max.idle.interval.ms: how often an active
	// leader appends a NoOpRecord (KIP-835); 0 disables it.
	maxIdle time.Duration
	// features are the feature rows this node supports, and
	// unstableFeatures is unstable.feature.versions.enable, which
	// decides whether their unstable levels count; unstableAPI is
	// unstable.api.versions.enable (the listeners' decoders read it from
	// server).
	features         metadata.FeatureRegistry
	unstableFeatures bool
	unstableAPI      bool
	// claimed are the rows of Config.AdminRouter's claims, which every
	// ApiVersions answer lists (the listeners' decoders read them from
	// server).
	claimed []wire.APIVersion
	// snapshotBytes, snapshotInterval, retentionBytes and retentionTime
	// are metadata.log.max.record.bytes.between.snapshots,
	// metadata.log.max.snapshot.interval.ms, metadata.max.retention.bytes
	// and metadata.max.retention.ms.
	snapshotBytes    int64
	snapshotInterval time.Duration
	retentionBytes   int64
	retentionTime    time.Duration
	// resignTimeout bounds how long a resigning leader waits for a
	// successor during Shutdown: the core's handoff budget (it resigns
	// once a follower holds its whole log, or when that passes), then two
	// election timeouts, so that a successor's election can complete.
	resignTimeout time.Duration

	logger  *slog.Logger
	metrics Metrics
}

// newRuntimeConfig validates cfg and derives the runtime's settings.
func newRuntimeConfig(cfg Config) (runtimeConfig, error) { return newRuntimeConfigAs(cfg, false) }

// newRuntimeConfigAs is newRuntimeConfig for a voter-capable node
// (observer false) or an observer ([StartObserver]).
func newRuntimeConfigAs(cfg Config, observer bool) (runtimeConfig, error) {
	if err := errors.Join(cfg.problemsAs(observer)...); err != nil {
		return runtimeConfig{}, err
	}
	base := cfg.Logger
	if base == nil {
		base = slog.New(slog.DiscardHandler)
	}
	if cfg.LogLevel != "" {
		// Validate has checked it.
		lv, _ := ParseLogLevel(cfg.LogLevel)
		base = slog.New(levelHandler{min: lv, Handler: base.Handler()})
	}
	logger := base.With(slog.Int(logKeyNodeID, int(cfg.NodeID)))

	rc := runtimeConfig{
		id:            kraft.NodeID(cfg.NodeID),
		logDir:        cfg.MetadataLogDir,
		dir:           filepath.Join(cfg.MetadataLogDir, PartitionDirName),
		maxBatchBytes: int(cfg.InternalMaxBatchBytes),
		maxIdle:       cfg.MaxIdleInterval,

		features:         metadata.KnownFeatures(),
		unstableFeatures: cfg.UnstableFeatureVersions,
		unstableAPI:      cfg.UnstableAPIVersions,

		snapshotBytes:    cfg.MaxRecordBytesBetweenSnapshots,
		snapshotInterval: cfg.MaxSnapshotInterval,
		retentionBytes:   cfg.MaxRetentionBytes,
		retentionTime:    cfg.MaxRetentionTime,
		logger:           logger,
		metrics:          cmp.Or[Metrics](cfg.Metrics, NopMetrics{}),
		admission:        cfg.RegistrationAdmission,
	}
	nodeRate, err := creationRate(cfg, keyMaxConnectionCreationRate, cfg.MaxConnectionCreationRate)
	if err != nil {
		return runtimeConfig{}, err
	}
	for _, name := range cfg.ControllerListenerNames {
		listener, ok := findEndpoint(cfg.Listeners, strings.ToUpper(name))
		if !ok {
			return runtimeConfig{}, fmt.Errorf("raft: no listener named %s (controller.listener.names)", name)
		}
		rc.listeners = append(rc.listeners, listener)
		rc.listenerTLS = append(rc.listenerTLS, nil)
		rc.listenerSASL = append(rc.listenerSASL, nil)
		var rates []*transport.CreationRate
		if nodeRate != nil {
			rates = append(rates, nodeRate)
		}
		if n, ok := cfg.ListenerMaxConnectionCreationRate[strings.ToUpper(name)]; ok {
			own, err := creationRate(cfg, listenerRateProperty(name), n)
			if err != nil {
				return runtimeConfig{}, err
			}
			if own != nil {
				rates = append(rates, own)
			}
		}
		rc.listenerRates = append(rc.listenerRates, rates)
	}
	rc.listenerName = rc.listeners[0].Name
	rc.voters = cfg.QuorumVoters
	rc.dynamic = len(cfg.QuorumVoters) == 0
	rc.advertised = cfg.AdvertisedControllerEndpoints()
	for _, ep := range rc.advertised {
		p, _ := cfg.ListenerSecurityProtocol(ep.Name) // validated
		rc.advertisedProtocols = append(rc.advertisedProtocols, p)
	}
	rc.registers = !observer && !cfg.DisableControllerRegistration
	rc.autoJoin = cfg.AutoJoin

	core := kraft.DefaultConfig()
	core.ID = rc.id
	for _, v := range cfg.QuorumVoters {
		core.Voters = append(core.Voters, kraft.ReplicaKey{ID: kraft.NodeID(v.ID)})
	}
	if rc.dynamic {
		for i, s := range cfg.QuorumBootstrapServers {
			rc.bootstrapServers = append(rc.bootstrapServers, s.Address())
			core.BootstrapServers = append(core.BootstrapServers, bootstrapID(i))
		}
	}
	core.ElectionTimeout = cfg.ElectionTimeout
	core.FetchTimeout = cfg.FetchTimeout
	core.ElectionBackoffMax = cfg.ElectionBackoffMax
	core.CampaignJitter = cfg.ElectionTimeout / 4
	core.RequestTimeout = cfg.RequestTimeout
	core.RetryBackoff = cfg.RetryBackoff
	core.FetchMaxWait = min(core.FetchMaxWait, cfg.FetchTimeout/2)
	core.FetchMaxBytes = cfg.FetchMaxBytes
	core.FetchSnapshotMaxBytes = cfg.FetchSnapshotMaxBytes
	// The download's own cap: the core restarts a download announcing
	// more rather than hand the runtime a write it refuses.
	core.MaxSnapshotBytes = snapshot.DefaultMaxDownloadSize
	core.Seed = uint64(time.Now().UnixNano())
	core.Logger = base // the core adds node_id itself
	if err := core.Validate(); err != nil {
		return runtimeConfig{}, fmt.Errorf("raft: consensus configuration: %w", err)
	}
	rc.core = core
	rc.resignTimeout = core.HandoffBudget() + 2*cfg.ElectionTimeout

	peer := transport.DefaultPeerConfig()
	peer.ClientID = fmt.Sprintf("raft-client-%d", cfg.NodeID)
	peer.RequestTimeout = cfg.RequestTimeout
	peer.RetryBackoff = cfg.RetryBackoff
	peer.MaxFrameSize = cfg.SocketRequestMaxBytes
	peer.UnstableAPIVersions = cfg.UnstableAPIVersions
	peer.Logger = logger
	// This node reaches the other controllers on the first controller
	// listener, with that listener's security protocol and settings, as
	// Kafka's KafkaRaftManager builds its client channel.
	for i, ep := range rc.listeners {
		p, _ := cfg.ListenerSecurityProtocol(ep.Name)
		if isSASL(p) {
			h, client, err := cfg.listenerSASL(ep.Name)
			if err != nil {
				return runtimeConfig{}, err
			}
			rc.listenerSASL[i] = &h
			if i == 0 {
				peer.SASL = client
			}
		}
		if p != SecuritySSL && p != SecuritySASLSSL {
			continue
		}
		lt, err := newListenerTLS(ep.Name, cfg.listenerSSL(ep.Name), logger)
		if err != nil {
			return runtimeConfig{}, err
		}
		rc.listenerTLS[i] = &transport.TLS{Config: lt.server}
		if p == SecuritySSL {
			// On SASL_SSL the principal is the SASL user (Kafka's
			// DefaultKafkaPrincipalBuilder).
			rc.listenerTLS[i].MapName = lt.mapName
		}
		if i == 0 {
			peer.TLS = lt.client
		}
	}
	peer.Meter = channelMeter{rc.metrics}
	rc.peer = peer
	// A forwarded submission waits for its commit on the leader, which
	// can take a fetch round and an fsync on each side, so it gets the
	// fetch timeout on top of the request timeout, and its own
	// connection: answers on a Kafka connection come back in request
	// order, and a Fetch queued behind a waiting submission would hold up
	// the very replication the submission waits for.
	forward := peer
	forward.ClientID = fmt.Sprintf("%s%d", forwardClientPrefix, cfg.NodeID)
	forward.RequestTimeout = cfg.RequestTimeout + cfg.FetchTimeout
	rc.forward = forward

	srv := transport.DefaultServerConfig()
	srv.MaxFrameSize = cfg.SocketRequestMaxBytes
	quotas, err := connectionQuotas(cfg)
	if err != nil {
		return runtimeConfig{}, err
	}
	srv.Quotas = quotas
	if cfg.ConnectionsMaxIdle > 0 {
		srv.IdleTimeout = cfg.ConnectionsMaxIdle
	} else {
		srv.IdleTimeout = 0
	}
	srv.Logger = logger
	srv.Meter = listenerMeter{rc.metrics}
	srv.UnstableAPIVersions = cfg.UnstableAPIVersions
	if rc.claimed, err = claimedAPIs(cfg.AdminRouter); err != nil {
		return runtimeConfig{}, err
	}
	srv.ClaimedAPIs = rc.claimed
	rc.server = srv

	opts := logstore.DefaultOptions()
	opts.SegmentBytes = int64(cfg.SegmentBytes)
	opts.InternalSegmentBytes = int64(cfg.InternalSegmentBytes)
	opts.SegmentTime = cfg.SegmentTime
	opts.MaxBatchBytes = int(cfg.InternalMaxBatchBytes)
	opts.Logger = logger
	rc.logOpts = opts
	return rc, nil
}

// creationRate returns the connection creation rate quota of key at n
// connections a second, measured over cfg's quota window, or nil for
// Kafka's default 2147483647, which is no limit.
func creationRate(cfg Config, key string, n int32) (*transport.CreationRate, error) {
	if n == math.MaxInt32 {
		return nil, nil
	}
	r, err := transport.NewCreationRate(int(n), int(cfg.QuotaWindowNum), cfg.QuotaWindowSize)
	if err != nil {
		return nil, fmt.Errorf("raft: %s: %w", key, err)
	}
	return r, nil
}

// connectionQuotas returns the quotas every controller listener shares:
// max.connections, max.connections.per.ip and its overrides, with Kafka's
// meaning of 0. Validate has checked that each override is an IP address.
func connectionQuotas(cfg Config) (*transport.ConnectionQuotas, error) {
	qc := transport.QuotaConfig{
		MaxConnections:      int(cfg.MaxConnections),
		MaxConnectionsPerIP: int(cfg.MaxConnectionsPerIP),
	}
	for host, n := range cfg.MaxConnectionsPerIPOverrides {
		ip, err := overrideAddr(host)
		if err != nil {
			return nil, fmt.Errorf("raft: %s: %w", keyMaxConnectionsPerIPOverrides, err)
		}
		if qc.MaxConnectionsPerIPOverrides == nil {
			qc.MaxConnectionsPerIPOverrides = map[netip.Addr]int{}
		}
		qc.MaxConnectionsPerIPOverrides[ip] = int(n)
	}
	q, err := transport.NewConnectionQuotas(qc)
	if err != nil {
		return nil, fmt.Errorf("raft: %w", err)
	}
	return q, nil
}

// Log keys used by the runtime: one spelling each, across every package.
const (
	logKeyNodeID        = "node_id"
	logKeyRole          = "role"
	logKeyEpoch         = "epoch"
	logKeyLeaderID      = "leader_id"
	logKeyOffset        = "offset"
	logKeyHighWatermark = "high_watermark"
	logKeyPeer          = "peer"
	logKeyError         = "error"
	logKeyAPIKey        = "api_key"
	logKeyAddr          = "addr"
	logKeyMessage       = "message"
	logKeySnapshotID    = "snapshot_id"
	logKeyChange        = "change"
	logKeyListener      = "listener"
	logKeyFile          = "file"
	logKeyProperty      = "property"
	logKeyPrincipal     = "principal"
	logKeyHost          = "host"
	logKeyOperation     = "operation"
	logKeyKRaftVersion  = "kraft_version"
	logKeyStaticAddr    = "static_addr"
)

// levelHandler hands its Handler only the lines at min and above
// (krabka.log.level).
type levelHandler struct {
	min slog.Level
	slog.Handler
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return levelHandler{h.min, h.Handler.WithAttrs(as)}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{h.min, h.Handler.WithGroup(name)}
}
