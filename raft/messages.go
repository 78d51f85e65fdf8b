package raft

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
)

// Messages between the core and the network: a request the core sends goes
// to its peer's sender, a response to the reply slot of the request it
// answers; answers and failures of this node's requests come back to the
// inbox as events.

// peerSender sends requests to one peer over a connection of its own and
// hands each answer, or the failure, to the request's callback, on a
// goroutine that is not the engine's. [transport.Peer] is the production
// one; a host that owns the network gives its own.
type peerSender interface {
	// Send queues req; false means it was not queued (the sender is
	// closed or its queue is full) and cb will not be called.
	Send(req kmsg.Request, cb transport.Callback) bool
	Close()
}

// replySlot answers one inbound request. [transport.Reply] is the
// production one: the connection writes answers in request order.
type replySlot interface {
	// Send queues resp as the answer; false when the request was
	// answered already or its connection closed.
	Send(resp kmsg.Response) bool
	// Close answers by closing the request's connection.
	Close() bool
}

// inboundRequest is a peer's KRaft request waiting for the core's answer.
type inboundRequest struct {
	msg     kraft.Message
	reply   replySlot
	version int16
}

// pendingReply is the reply slot of an inbound request the core has not
// answered yet, keyed by the RequestID the engine gave it.
type pendingReply struct {
	reply   replySlot
	version int16
}

// peerResponse is a response delivered from a peer sender's callback.
// records holds the bytes of a Fetch or FetchSnapshot answer.
type peerResponse struct {
	msg     kraft.Message
	records []byte
	// endpoints are the node endpoints the answer named, in epBuf when
	// there is one (a leader names itself).
	endpoints []nodeEndpoint
	epBuf     [1]nodeEndpoint
	// connLost: the request failed because the connection to the peer was
	// refused or reset, not by a timeout (transport.ConnectionLost).
	connLost bool
}

// sendAll hands a Ready's messages to the network, in order. Fetch
// answers of one Ready that read the same records (the fetches parked at
// one offset, which an append or a commit answers together) share one
// read of the log: the bytes are never written to, and the log does not
// change while a Ready's messages go out.
func (e *engine) sendAll(msgs []kraft.Message) {
	e.sharedRead = sharedRead{}
	for _, m := range msgs {
		e.send(m)
	}
	e.sharedRead = sharedRead{}
}

// sharedRead is the last read of records for a Fetch answer of the Ready
// being sent (sendAll).
type sharedRead struct {
	read    kraft.RecordsRead
	records []byte
	ok      bool
}

// send hands one message to the network: a request to its peer's sender,
// a response to the reply slot of the request it answers. It never
// blocks.
func (e *engine) send(m kraft.Message) {
	if e.logger.Enabled(context.Background(), slog.LevelDebug) {
		e.logger.LogAttrs(context.Background(), slog.LevelDebug, "sending", slog.String(logKeyMessage, m.String()))
	}
	h := kraft.HeaderOf(m)
	if kraft.IsRequest(m) {
		l := e.link(h.To)
		req, err := wire.KmsgRequest(m, e.clusterID)
		if l == nil || err != nil {
			e.deferFailure(m)
			return
		}
		p := l.raft
		e.addLeaderEndpoints(req)
		req.SetVersion(transport.NegotiateVersion)
		if v, ok := m.(*kraft.VoteRequest); ok && v.PreVote {
			// PreVote exists from Vote v2 on; below it the flag would be
			// dropped and the pre-vote taken for a real vote. Pinning v2
			// makes the sender fail it locally with UNSUPPORTED_VERSION
			// for an older peer, and the core then runs a real election
			// (KIP-996).
			req.SetVersion(2)
		}
		if !p.Send(req, func(resp kmsg.Response, err error) { e.onPeerAnswer(m, resp, err) }) {
			e.deferFailure(m)
		}
		return
	}
	pr, ok := e.inbound[h.RequestID]
	if !ok {
		return
	}
	delete(e.inbound, h.RequestID)
	var records []byte
	if fr, ok := m.(*kraft.FetchResponse); ok && !fr.Read.Empty() {
		var err error
		if records, err = e.readShared(fr.Read); err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelWarn, "read records for a fetch",
				slog.Int(logKeyPeer, int(h.To)), slog.Int64(logKeyOffset, int64(fr.Read.From)), slog.String(logKeyError, err.Error()))
			records = nil
		}
	}
	if fs, ok := m.(*kraft.FetchSnapshotResponse); ok && fs.Length > 0 {
		var err error
		if records, err = e.readSnapshotChunk(fs); err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelWarn, "read snapshot chunk",
				slog.Int(logKeyPeer, int(h.To)), slog.String(logKeySnapshotID, fs.SnapshotID.String()), slog.String(logKeyError, err.Error()))
			pr.reply.Close()
			return
		}
	}
	resp, err := wire.KmsgResponse(m, pr.version, records)
	if err != nil {
		pr.reply.Close()
		return
	}
	e.addNodeEndpoints(resp)
	pr.reply.Send(resp)
}

// deferFailure arranges for the core to learn that request m failed
// locally, as BROKER_NOT_AVAILABLE, once the current Ready is done.
func (e *engine) deferFailure(m kraft.Message) {
	if f, err := wire.KRaftFailure(m, kraft.CodeBrokerNotAvailable); err == nil {
		e.deferred = append(e.deferred, f)
	}
}

// onPeerAnswer runs on a peer sender's goroutine: it turns the outcome of
// request req into a response event. It never blocks: when the inbox is
// full the answer is dropped and the core's request timeout frees the
// destination.
func (e *engine) onPeerAnswer(req kraft.Message, resp kmsg.Response, err error) {
	rh := kraft.HeaderOf(req)
	h := kraft.Header{From: rh.To, To: rh.From, RequestID: rh.RequestID}
	var pr peerResponse
	if err == nil {
		m, records, derr := wire.KRaftResponse(resp, h)
		if derr == nil {
			pr = peerResponse{msg: m, records: records}
			pr.endpoints = answerEndpoints(resp, pr.epBuf[:0])
		} else {
			err = derr
		}
	}
	if err != nil {
		code := kraft.CodeBrokerNotAvailable
		if c := wire.CodeForError(err); c == int16(kraft.CodeUnsupportedVersion) {
			code = kraft.CodeUnsupportedVersion
		}
		f, ferr := wire.KRaftFailure(req, code)
		if ferr != nil {
			return
		}
		pr = peerResponse{msg: f, connLost: transport.ConnectionLost(err)}
	}
	select {
	case e.inbox <- event{response: &pr}:
	default:
	}
}

// readShared is readRecords, answered from the Ready's last read when it
// asks for the same records.
func (e *engine) readShared(r kraft.RecordsRead) ([]byte, error) {
	if sr := &e.sharedRead; sr.ok && sr.read == r {
		return sr.records, nil
	}
	b, err := e.readRecords(r)
	if err == nil {
		e.sharedRead = sharedRead{read: r, records: b, ok: true}
	}
	return b, err
}

// readRecords reads the whole batches a leader's Fetch answer carries:
// from the batch holding r.From, within r.MaxBytes (at least one batch),
// none at or past r.Until.
func (e *engine) readRecords(r kraft.RecordsRead) ([]byte, error) {
	rr, err := e.log.Read(int64(r.From), int(max(r.MaxBytes, 1)))
	if err != nil {
		return nil, err
	}
	b, pos := rr.Batches, 0
	for pos < len(b) {
		h, err := recordbatch.PeekHeader(b[pos:])
		if err != nil || kraft.Offset(h.BaseOffset) >= r.Until {
			break
		}
		pos += h.Size()
	}
	return b[:pos], nil
}

// setRequestID sets the RequestID of an inbound request.
func setRequestID(m kraft.Message, id uint64) {
	switch m := m.(type) {
	case *kraft.VoteRequest:
		m.RequestID = id
	case *kraft.BeginQuorumEpochRequest:
		m.RequestID = id
	case *kraft.EndQuorumEpochRequest:
		m.RequestID = id
	case *kraft.FetchRequest:
		m.RequestID = id
	case *kraft.FetchSnapshotRequest:
		m.RequestID = id
	}
}
