package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
)

// Nodes of two clusters: a node formatted with another cluster id than
// its peers (kafka-storage format -t with another id) is refused by
// every one of them with INCONSISTENT_CLUSTER_ID, and its elections and
// fetches loop forever. Both sides say so at ERROR, naming both ids, at
// most once per foreignReportEvery for each peer: the refused node
// asks the refusing peer for its id (DescribeCluster) to name it.

// foreignReportEvery is how often the ERROR about one peer of another
// cluster repeats while the peers keep trying.
const foreignReportEvery = time.Minute

// Log keys of the cluster-id diagnostics.
const (
	logKeyClusterID     = "cluster_id"
	logKeyPeerClusterID = "peer_cluster_id"
)

// foreignCodeOf returns whether m, a response, refuses this node's
// cluster id.
func foreignCodeOf(m kraft.Message) bool {
	var code kraft.ErrorCode
	switch r := m.(type) {
	case *kraft.VoteResponse:
		code = r.Error
	case *kraft.BeginQuorumEpochResponse:
		code = r.Error
	case *kraft.EndQuorumEpochResponse:
		code = r.Error
	case *kraft.FetchResponse:
		code = r.Error
	case *kraft.FetchSnapshotResponse:
		code = r.Error
	}
	return code == kraft.CodeInconsistentClusterID
}

// noteForeignPeer runs on the engine goroutine when peer refused this
// node's cluster id. Once per foreignReportEvery for that peer it asks
// the peer for its cluster id and logs the ERROR naming both (on the
// peer sender's goroutine, when the answer arrives).
func (e *engine) noteForeignPeer(peer kraft.NodeID) {
	now := e.clock.Now()
	if at, ok := e.foreignReported[peer]; ok && now.Sub(at) < foreignReportEvery {
		return
	}
	if e.foreignReported == nil {
		e.foreignReported = map[kraft.NodeID]time.Time{}
	}
	e.foreignReported[peer] = now
	logger, ours := e.logger, e.clusterID
	report := func(theirs string, err error) {
		attrs := []slog.Attr{slog.Int(logKeyPeer, int(peer)), slog.String(logKeyClusterID, ours), slog.String(logKeyPeerClusterID, theirs)}
		if err != nil {
			attrs = append(attrs, slog.String(logKeyError, "its cluster id is unknown: "+err.Error()))
		}
		logger.LogAttrs(context.Background(), slog.LevelError,
			"a peer refuses this node as one of another cluster: the two were formatted with different cluster ids (meta.properties); reformat the wrong one", attrs...)
	}
	l := e.link(peer)
	if l == nil {
		report("", errors.New("no connection to ask it"))
		return
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2 // controllers (KIP-919)
	req.SetVersion(transport.NegotiateVersion)
	sent := l.raft.Send(req, func(resp kmsg.Response, err error) {
		if err == nil {
			r, ok := resp.(*kmsg.DescribeClusterResponse)
			switch {
			case !ok:
				err = fmt.Errorf("DescribeCluster answered with %T", resp)
			case r.ErrorCode != 0:
				err = fmt.Errorf("DescribeCluster: %w", kerr.ErrorForCode(r.ErrorCode))
			default:
				report(r.ClusterID, nil)
				return
			}
		}
		report("", err)
	})
	if !sent {
		report("", errors.New("its queue is full"))
	}
}

// maxForeignSenders bounds how many senders of another cluster are
// remembered apart: the requests come from anyone who can connect, and
// the ones past the bound share one rate limit.
const maxForeignSenders = 64

// foreignRequests remembers, for the listener's goroutines, when each
// peer of another cluster was last reported (a key of its node id and
// cluster id, a value of Unix nanoseconds); n counts the keys.
type foreignRequests struct {
	at sync.Map
	n  atomic.Int64
}

// due reports whether the request of from in cluster theirs is to be
// logged at now, and if so notes it.
func (f *foreignRequests) due(from kraft.NodeID, theirs string, now time.Time) bool {
	key := fmt.Sprintf("%d/%s", from, theirs)
	if _, ok := f.at.Load(key); !ok && f.n.Load() >= maxForeignSenders {
		key = "others"
	}
	v, loaded := f.at.LoadOrStore(key, new(atomic.Int64))
	if !loaded {
		f.n.Add(1)
	}
	last := v.(*atomic.Int64)
	prev := last.Load()
	if loaded && prev != 0 && now.Sub(time.Unix(0, prev)) < foreignReportEvery {
		return false
	}
	return last.CompareAndSwap(prev, now.UnixNano())
}

// reportForeignRequest logs, at most once per foreignReportEvery for
// each sender and cluster id, a KRaft request refused because it names
// another cluster.
func (h *handler) reportForeignRequest(ctx context.Context, req kmsg.Request, theirs string, from kraft.NodeID, remote net.Addr) {
	e := h.c.eng
	if !h.foreign.due(from, theirs, e.clock.Now()) {
		return
	}
	e.logger.LogAttrs(ctx, slog.LevelError,
		"refused a request from a node of another cluster: the two were formatted with different cluster ids (meta.properties); reformat the wrong one",
		slog.Int(logKeyPeer, int(from)), slog.String(logKeyAddr, addrString(remote)), slog.Int(logKeyAPIKey, int(req.Key())),
		slog.String(logKeyClusterID, e.clusterID), slog.String(logKeyPeerClusterID, theirs))
}

// addrString is a's text, "" for none.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
