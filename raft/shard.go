package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
)

// ShardRouter serves the KRaft RPCs a controller listener receives for
// partitions other than __cluster_metadata-0, so that an embedder can host
// more Raft groups on the controller's port (docs/architecture.md, "More
// groups on one listener"). [Config.ShardRouter] installs one; without
// it such a request is answered as Kafka's KafkaRaftClient answers a
// partition it does not host.
//
// The RPCs routed are Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and
// FetchSnapshot whose topics name at least one partition and never the
// metadata topic (Fetch v13+ names it by its topic id). A request that
// names the metadata topic, alone or among others, stays with the node,
// which refuses any shape but partition 0 alone as Kafka does. Routed requests were authenticated
// and authorized like every other request first.
type ShardRouter interface {
	// ServeShard answers req. It runs on a goroutine of its own, one per
	// request; ctx ends when the connection closes, the node stops, or
	// controller.quorum.request.timeout.ms has passed, and the answer is
	// then REQUEST_TIMED_OUT whatever ServeShard returns later. It must
	// return a response of req.Request's kind (req.Request.ResponseKind()),
	// which is sent at the request's version, or an error, answered as
	// UNKNOWN_SERVER_ERROR (a panic is contained the same way, and logged).
	ServeShard(ctx context.Context, req ShardRequest) (kmsg.Response, error)
}

// ShardRequest is a KRaft RPC for a partition the node does not host.
type ShardRequest struct {
	// Request is the decoded request, at the version it was sent in.
	Request kmsg.Request
	// Principal is who the listener's handshake says the sender is, as
	// Kafka prints a KafkaPrincipal ("User:ANONYMOUS" on PLAINTEXT).
	Principal string
	// ClientID is the request header's client id.
	ClientID string
	// Listener is the local address the request arrived on, RemoteAddr
	// the sender's.
	Listener, RemoteAddr net.Addr
}

// serveShard hands a KRaft RPC for another partition to the router and
// sends its answer, contained as [handler.serveRouted] contains it.
func (h *handler) serveShard(ctx context.Context, router ShardRouter, req *transport.Request, reply *transport.Reply) {
	sr := ShardRequest{
		Request: req.Body, Principal: req.Conn.Principal.String(), ClientID: req.Header.ClientID,
		Listener: req.Conn.LocalAddr, RemoteAddr: req.Conn.RemoteAddr,
	}
	h.serveRouted(ctx, req, reply, "shard", func(ctx context.Context) (kmsg.Response, error) {
		return router.ServeShard(ctx, sr)
	}, func(code int16, msg string) (kmsg.Response, bool) {
		return wire.ErrorAnswer(req.Body, code, msg), true
	})
}

// errRouteTimedOut answers a routed request the router did not answer
// within the request timeout.
var errRouteTimedOut = errors.New("did not answer within controller.quorum.request.timeout.ms")

// serveRouted runs serve, a router's handling of req, and sends its
// answer: the router runs off the connection's reader goroutine, bounded
// by the request timeout, with panics contained, so that a router that
// blocks or fails costs only its own request. A failure is answered with
// errorAnswer's response for its code (REQUEST_TIMED_OUT for a timeout,
// UNKNOWN_SERVER_ERROR otherwise), or closes the connection when
// errorAnswer has none. kind names the router in errors and logs.
func (h *handler) serveRouted(ctx context.Context, req *transport.Request, reply *transport.Reply, kind string,
	serve func(context.Context) (kmsg.Response, error), errorAnswer func(code int16, msg string) (kmsg.Response, bool)) {
	e := h.c.eng
	rctx, cancel := context.WithTimeout(ctx, h.c.rc.core.RequestTimeout)
	done := make(chan routedAnswer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- routedAnswer{err: fmt.Errorf("panicked: %v", p), panicked: true}
			}
		}()
		resp, err := serve(rctx)
		done <- routedAnswer{resp: resp, err: err}
	}()
	go func() {
		defer cancel()
		var a routedAnswer
		select {
		case a = <-done:
		case <-rctx.Done():
			a = routedAnswer{err: errRouteTimedOut}
		}
		resp, code, err := routedResponse(req.Body, a)
		if err == nil {
			reply.Send(resp)
			return
		}
		err = fmt.Errorf("raft: the %s router: %w", kind, err)
		level := slog.LevelWarn
		if a.panicked {
			level = slog.LevelError
		}
		e.logger.LogAttrs(ctx, level, "a routed request failed",
			slog.Int(logKeyAPIKey, int(req.Body.Key())), slog.String(logKeyError, err.Error()))
		if resp, ok := errorAnswer(code, err.Error()); ok {
			reply.Send(resp)
			return
		}
		reply.Close()
	}()
}

// routedAnswer is what a router's goroutine returned.
type routedAnswer struct {
	resp     kmsg.Response
	err      error
	panicked bool
}

// routedResponse checks a router's answer to req: the response to send,
// or nil, the error code to answer with and the error to log.
func routedResponse(req kmsg.Request, a routedAnswer) (kmsg.Response, int16, error) {
	switch {
	case errors.Is(a.err, errRouteTimedOut):
		return nil, kerr.RequestTimedOut.Code, a.err
	case a.err != nil:
		return nil, kerr.UnknownServerError.Code, a.err
	case a.resp == nil:
		return nil, kerr.UnknownServerError.Code, errors.New("returned no response")
	case a.resp.Key() != req.Key():
		return nil, kerr.UnknownServerError.Code, fmt.Errorf("answered api key %d with api key %d", req.Key(), a.resp.Key())
	}
	a.resp.SetVersion(req.GetVersion())
	return a.resp, 0, nil
}
