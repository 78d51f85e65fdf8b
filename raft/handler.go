package raft

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// handler serves the controller listener. It runs on the connections'
// reader goroutines: it answers what needs no consensus state
// (ApiVersions, malformed KRaft requests) itself and hands the rest to the
// engine's queue, waiting while the queue is full (back-pressure on that
// connection only).
type handler struct {
	c *Controller
	// authz checks every request but ApiVersions before it is served; a
	// refused one is answered with CLUSTER_AUTHORIZATION_FAILED and
	// reaches neither the engine nor the node's state.
	authz *requestAuthz
	// foreign rate-limits the ERROR about requests of another cluster.
	foreign foreignRequests
	// shards serves KRaft RPCs for other partitions (Config.ShardRouter),
	// nil for none.
	shards ShardRouter
	// admin serves the claimed admin APIs (Config.AdminRouter), nil for
	// none.
	admin AdminRouter
}

// Serve implements [transport.Handler].
func (h *handler) Serve(ctx context.Context, req *transport.Request, reply *transport.Reply) {
	c := h.c
	e := c.eng
	if !h.authz.allows(ctx, req) {
		reply.Send(refusalAnswer(req.Body))
		return
	}
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		reply.Send(wire.AnswerAPIVersions(body, c.rc.featureState(e.pub.image.Load(), e.pub.finalizedKRaftVersion())))
	case *kmsg.VoteRequest, *kmsg.BeginQuorumEpochRequest, *kmsg.EndQuorumEpochRequest, *kmsg.FetchRequest, *kmsg.FetchSnapshotRequest:
		if h.shards != nil && wire.ForOtherPartitions(body) {
			h.serveShard(ctx, h.shards, req, reply)
			return
		}
		msg, answer, err := wire.KRaftRequest(body, e.clusterID, c.rc.id)
		switch {
		case err != nil:
			reply.Close()
		case answer != nil:
			if theirs, from, ok := wire.ForeignCluster(body, e.clusterID); ok {
				h.reportForeignRequest(ctx, body, theirs, from, req.Conn.RemoteAddr)
			}
			reply.Send(answer)
		default:
			ev := event{request: &inboundRequest{msg: msg, reply: reply, version: body.GetVersion()}}
			if c.enqueue(ctx, ev) != nil {
				reply.Close()
			}
		}
	case *wire.SubmitChangeRequest:
		h.submit(ctx, body, reply)
	case *wire.ReadImageRequest:
		h.serveReadImage(ctx, body, req.Header.ClientID, reply)
	case *wire.MetadataFetchRequest:
		if h.c.enqueue(ctx, event{call: func(e *engine) { reply.Send(e.metadataFetch(body)) }}) != nil {
			reply.Close()
		}
	case *kmsg.DescribeQuorumRequest:
		h.describeQuorum(ctx, body, reply)
	case *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest, *kmsg.UpdateRaftVoterRequest:
		h.serveVoterRPC(ctx, body, reply)
	case *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest:
		reply.Send(saslOutOfPlace(body))
	case *kmsg.UpdateFeaturesRequest:
		h.serveUpdateFeatures(ctx, body, reply)
	case *kmsg.ControllerRegistrationRequest:
		h.serveControllerRegistration(ctx, body, reply)
	case *kmsg.DescribeClusterRequest:
		resp := h.describeCluster(body, req.Conn.LocalAddr, req.Conn.Listener)
		if h.authz != nil && h.authz.grants != nil && body.IncludeClusterAuthorizedOperations {
			resp.ClusterAuthorizedOperations = clusterAuthorizedOperations(h.authz.grants, req.Conn.Principal.String(), clientHost(req.Conn.RemoteAddr))
		}
		reply.Send(resp)
	default:
		if h.admin != nil {
			// The decoder hands over no other API than the version
			// table's, which have their cases above, and the claimed ones.
			h.serveAdmin(ctx, req, reply)
			return
		}
		e.logger.LogAttrs(ctx, slog.LevelDebug, "request not served by this controller; closing the connection",
			slog.Int(logKeyAPIKey, int(req.Body.Key())))
		reply.Close()
	}
}

// serveControllerRegistration answers a ControllerRegistration request
// (registration.go).
func (h *handler) serveControllerRegistration(ctx context.Context, req *kmsg.ControllerRegistrationRequest, reply *transport.Reply) {
	ev := event{call: func(e *engine) {
		e.registerController(req, func(code int16, msg string) {
			resp := req.ResponseKind().(*kmsg.ControllerRegistrationResponse)
			resp.ErrorCode = code
			if code != 0 {
				resp.ErrorMessage = &msg
			}
			reply.Send(resp)
		})
	}}
	if h.c.enqueue(ctx, ev) != nil {
		reply.Send(wire.ErrorAnswer(req, kerr.NotController.Code, kerr.NotController.Description))
	}
}

// saslOutOfPlace answers a SaslHandshake or SaslAuthenticate that reaches
// the handler: one on a listener without SASL, or on an authenticated
// connection outside a re-authentication (the SASL listener answers
// those itself). ILLEGAL_SASL_STATE, with no mechanisms, as Kafka's
// ControllerApis.handleSaslHandshakeRequest and
// handleSaslAuthenticateRequest answer them; the connection stays open.
func saslOutOfPlace(req kmsg.Request) kmsg.Response {
	return wire.ErrorAnswer(req, kerr.IllegalSaslState.Code, "SaslAuthenticate request received after successful authentication")
}

// submit runs a forwarded SubmitChange through the engine like a local
// one, under the condition it carries (version 1), but never forwards it
// again.
func (h *handler) submit(ctx context.Context, req *wire.SubmitChangeRequest, reply *transport.Reply) {
	s := receivedSubmission(req, reply.Send)
	if s == nil {
		return
	}
	if err := h.c.enqueue(ctx, event{submit: s}); err != nil {
		reply.Send(submitAnswer(req, SubmitResult{}, ErrShuttingDown))
	}
}

// receivedSubmission is the submission of a SubmitChange request another
// node or a client sent, under the condition the request carries, whose
// outcome send answers. It is nil when the request is malformed (its
// records do not decode, its condition is unknown): send has answered it.
func receivedSubmission(req *wire.SubmitChangeRequest, send func(kmsg.Response) bool) *submission {
	s, err := decodeSubmission(req.Records)
	if err == nil {
		s.cond, err = conditionFromWire(req)
	}
	if err != nil {
		send(submitAnswer(req, SubmitResult{}, err))
		return nil
	}
	s.complete = func(res SubmitResult, err error) { send(submitAnswer(req, res, err)) }
	return s
}

// decodeSubmission decodes the records of a forwarded SubmitChange into
// a submission. Besides the records' own values it allocates only the
// submission, and for more than one record the slice that holds them.
func decodeSubmission(encoded [][]byte) (*submission, error) {
	if len(encoded) == 0 {
		return nil, fmt.Errorf("%w: no records", ErrInvalidChange)
	}
	s := &submission{forwarded: true, encoded: encoded}
	if len(encoded) == 1 {
		s.records = s.one[:0]
	} else {
		s.records = make([]metadata.Record, 0, len(encoded))
	}
	for i, b := range encoded {
		r, err := metadata.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %w", ErrInvalidChange, i, err)
		}
		s.records = append(s.records, r)
	}
	return s, nil
}

// metadataFetch answers the private MetadataFetch RPC (1004) from the
// local log: the whole batches from the one holding FetchOffset, within
// MaxBytes (at least one batch), and only batches entirely below this
// node's high watermark, so an observer never sees an uncommitted record.
// Negative offsets and sizes count as 0. It runs on the engine goroutine.
func (e *engine) metadataFetch(req *wire.MetadataFetchRequest) *wire.MetadataFetchResponse {
	resp := req.ResponseKind().(*wire.MetadataFetchResponse)
	st := e.lastStatus
	resp.LeaderID, resp.LeaderEpoch = int32(st.Leader.LeaderID), int32(st.Leader.Epoch)
	resp.LogStartOffset = e.log.LogStartOffset()
	resp.HighWatermark = int64(e.applier.hw)
	offset, maxBytes := max(req.FetchOffset, 0), max(req.MaxBytes, 0)
	if offset < resp.LogStartOffset && e.snap.hasLatest {
		// Below the log start the fetcher must load the snapshot first.
		resp.SnapshotID = wire.MetadataFetchResponseSnapshotID{EndOffset: int64(e.snap.latest.Offset), Epoch: int32(e.snap.latest.Epoch)}
		return resp
	}
	if e.applier.hw < 0 || offset >= int64(e.applier.hw) {
		return resp
	}
	rr, err := e.log.Read(offset, int(max(maxBytes, 1)))
	if err != nil {
		msg := err.Error()
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "metadata fetch read", slog.Int64(logKeyOffset, offset), slog.String(logKeyError, msg))
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	b, pos := rr.Batches, 0
	for pos < len(b) {
		h, err := recordbatch.PeekHeader(b[pos:])
		if err != nil || h.NextOffset() > int64(e.applier.hw) {
			break
		}
		pos += h.Size()
	}
	if pos > 0 {
		resp.Records = b[:pos]
	}
	return resp
}

// describeQuorum answers DescribeQuorum (KafkaRaftClient.handleDescribeQuorumRequest) from the
// engine's status.
func (h *handler) describeQuorum(ctx context.Context, req *kmsg.DescribeQuorumRequest, reply *transport.Reply) {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = wire.MetadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 ||
		req.Topics[0].Topic != wire.MetadataTopic || req.Topics[0].Partitions[0].Partition != wire.MetadataPartition {
		// Kafka's getPartitionLevelErrorResponse: every partition asked
		// for, each with UNKNOWN_TOPIC_OR_PARTITION.
		for _, rt := range req.Topics {
			et := kmsg.NewDescribeQuorumResponseTopic()
			et.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				ep := kmsg.NewDescribeQuorumResponseTopicPartition()
				ep.Partition = rp.Partition
				ep.ErrorCode = kerr.UnknownTopicOrPartition.Code
				ep.ErrorMessage = defaultMessage(ep.ErrorCode)
				et.Partitions = append(et.Partitions, ep)
			}
			resp.Topics = append(resp.Topics, et)
		}
		reply.Send(resp)
		return
	}
	d, err := h.c.DescribeQuorum(ctx)
	if err != nil {
		p.ErrorCode = kerr.NotLeaderForPartition.Code
		p.ErrorMessage = defaultMessage(p.ErrorCode)
		st := h.c.QuorumState()
		p.LeaderID, p.LeaderEpoch, p.HighWatermark = int32(st.LeaderID), st.Epoch, -1
		// This node's own view, for an operator whose tool finds no
		// leader (krabka metadata-quorum describe); Kafka's clients skip
		// the tag.
		view := wire.NodeView{NodeID: int32(st.NodeID), Role: string(st.Role), Epoch: st.Epoch,
			LeaderID: int32(st.LeaderID), LogEndOffset: st.LogEndOffset, HighWatermark: st.HighWatermark}
		if err := wire.SetNodeView(&p, view); err != nil {
			h.c.eng.logger.LogAttrs(ctx, slog.LevelWarn, "cannot describe this node's view", slog.String(logKeyError, err.Error()))
		}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		reply.Send(resp)
		return
	}
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = int32(d.LeaderID), d.LeaderEpoch, d.HighWatermark
	conv := func(rs []ReplicaState) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		var out []kmsg.DescribeQuorumResponseTopicPartitionReplicaState
		for _, r := range rs {
			s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			s.ReplicaID, s.ReplicaDirectoryID, s.LogEndOffset = int32(r.ReplicaID), r.DirectoryID, r.LogEndOffset
			s.LastFetchTimestamp, s.LastCaughtUpTimestamp = r.LastFetchTimestamp, r.LastCaughtUpTimestamp
			out = append(out, s)
		}
		return out
	}
	p.CurrentVoters, p.Observers = conv(d.Voters), conv(d.Observers)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	if req.Version >= 2 {
		for _, v := range h.c.eng.pub.voterList() {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = int32(v.id)
			for _, ep := range v.endpoints {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = ep.Name, ep.Host, ep.Port
				n.Listeners = append(n.Listeners, l)
			}
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	reply.Send(resp)
}

// featureState is what ApiVersions reports: whether unstable API
// versions are served, the feature ranges this node supports (every
// feature of rc.features, capped as unstable.feature.versions.enable
// caps them: Kafka's QuorumFeatures.defaultSupportedFeatureMap), the
// finalized levels of the image, and kraft.version at kraftVersion when
// it is above 0 (a dynamic quorum; the level lives in the log's control
// records, not in the image).
func (rc *runtimeConfig) featureState(img *metadata.Image, kraftVersion int16) wire.FeatureState {
	lo, hi := rc.features.MetadataVersions(rc.unstableFeatures)
	fs := wire.FeatureState{
		MetadataVersion:     wire.SupportedFeature{Min: lo, Max: hi},
		FinalizedEpoch:      img.Offset(),
		UnstableAPIVersions: rc.unstableAPI,
		Claimed:             rc.claimed,
	}
	for _, f := range rc.features.Supported(rc.unstableFeatures) {
		// wire adds both itself.
		if f.Name != metadata.FeatureMetadataVersion && f.Name != metadata.FeatureKRaftVersion {
			fs.Other = append(fs.Other, wire.SupportedFeature{Name: f.Name, Min: f.Min, Max: f.Max})
		}
	}
	if mv := img.Features().MetadataVersion(); mv > 0 {
		fs.Finalized = append(fs.Finalized, wire.FinalizedFeature{Name: metadata.FeatureMetadataVersion, Level: mv})
	}
	for name, level := range img.Features().Levels() {
		if name == wire.FeatureKRaftVersion {
			continue
		}
		fs.Finalized = append(fs.Finalized, wire.FinalizedFeature{Name: name, Level: level})
	}
	if kraftVersion > 0 {
		fs.Finalized = append(fs.Finalized, wire.FinalizedFeature{Name: wire.FeatureKRaftVersion, Level: kraftVersion})
	}
	return fs
}

// describeCluster answers DescribeCluster (KIP-919) for an admin client
// bootstrapping to the controllers, as Kafka's
// ControllerApis.handleDescribeCluster does: the cluster id, the
// controllers registered in the image (RegisterControllerRecord) with
// their endpoint on the listener the request arrived on (a registration
// without one is left out, as ControllerRegistrationsPublisher leaves it
// out), and the leader this node knows as the controller id. While no
// controller has registered (metadata.version below 3.7-IV0, or
// registration off), the voters of the set in force stand in for the
// registrations, with their endpoints on the first controller listener.
// Without an authorizer every cluster operation is reported as
// authorized.
func (h *handler) describeCluster(req *kmsg.DescribeClusterRequest, local net.Addr, listener string) *kmsg.DescribeClusterResponse {
	c := h.c
	nodes, ok := registeredControllers(c.eng.pub.image.Load(), listener)
	if !ok {
		nodes = h.voterNodes(local)
	}
	leader := kraft.NoNode
	if q := c.eng.pub.quorum.Load(); q != nil { // nil before the engine's first publication
		leader = kraft.NodeID(q.LeaderID)
	}
	return wire.AnswerDescribeCluster(req, c.eng.clusterID, leader, nodes)
}

// registeredControllers are the controllers img registers with an
// endpoint named listener; ok is false when no controller is registered.
func registeredControllers(img *metadata.Image, listener string) (nodes []wire.ClusterNode, ok bool) {
	cluster := img.Cluster()
	if cluster.NumControllers() == 0 {
		return nil, false
	}
	for r := range cluster.Controllers() {
		for _, ep := range r.Endpoints {
			if ep.Name == listener {
				nodes = append(nodes, wire.ClusterNode{ID: kraft.NodeID(r.ID), Host: ep.Host, Port: int32(ep.Port)})
				break
			}
		}
	}
	return nodes, true
}

// voterNodes are the voters of the set in force with their endpoints on
// the first controller listener. A node started with port 0 (ForTests)
// names the port the request reached, at local, the only one a client
// can use.
func (h *handler) voterNodes(local net.Addr) []wire.ClusterNode {
	c := h.c
	voters := c.eng.pub.voterList()
	nodes := make([]wire.ClusterNode, 0, len(voters))
	for _, vi := range voters {
		v, ok := vi.endpoint(c.rc.listenerName)
		if !ok {
			continue
		}
		n := wire.ClusterNode{ID: kraft.NodeID(vi.id), Host: v.Host, Port: int32(v.Port)}
		if vi.id == NodeID(c.rc.id) && v.Port == 0 {
			if a, ok := local.(*net.TCPAddr); ok {
				n.Port = int32(a.Port)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}
