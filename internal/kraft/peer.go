package kraft

import (
	"context"
	"log/slog"
	"slices"
)

// peer is the request slot for one destination (Kafka's RequestManager):
// at most one outstanding request, a timeout, and a retry backoff.
type peer struct {
	ID           NodeID
	InFlight     uint64 // request id awaited, 0 if none
	SentAt       Instant
	BackoffUntil Instant
}

func (n *Node) peerIndex(id NodeID) int {
	i, ok := slices.BinarySearchFunc(n.s.peers, id, func(p peer, id NodeID) int {
		switch {
		case p.ID < id:
			return -1
		case p.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		n.s.peers = slices.Insert(n.s.peers, i, peer{ID: id})
	}
	return i
}

// canSend reports whether a request may go to id now.
func (n *Node) canSend(id NodeID) bool {
	p := n.s.peers[n.peerIndex(id)]
	return p.InFlight == 0 && n.s.now >= p.BackoffUntil
}

// send queues a request to id and occupies its slot.
func (n *Node) send(to NodeID, m Message, h *Header) {
	n.s.nextRequestID++
	*h = Header{From: n.me.ID, To: to, RequestID: n.s.nextRequestID}
	p := &n.s.peers[n.peerIndex(to)]
	p.InFlight = h.RequestID
	p.SentAt = n.s.now
	n.noteMessage()
	n.s.out.msgs = append(n.s.out.msgs, m)
}

// reply queues a response to the request with header req.
func (n *Node) reply(req Header, m Message, h *Header) {
	*h = Header{From: n.me.ID, To: req.From, RequestID: req.RequestID}
	n.noteMessage()
	n.s.out.msgs = append(n.s.out.msgs, m)
}

// acceptResponse frees the slot if h answers the request awaited from its
// sender and reports whether it does; other responses are stale.
func (n *Node) acceptResponse(h Header) bool {
	p := &n.s.peers[n.peerIndex(h.From)]
	if p.InFlight == 0 || p.InFlight != h.RequestID {
		n.logger.LogAttrs(context.Background(), slog.LevelDebug, "ignoring stale response",
			slog.Int(keyPeer, int(h.From)), slog.Uint64(keyRequestID, h.RequestID))
		return false
	}
	p.InFlight = 0
	return true
}

// backoff delays the next request to id by the retry backoff.
func (n *Node) backoff(id NodeID) {
	p := &n.s.peers[n.peerIndex(id)]
	p.BackoffUntil = n.s.now.Add(n.cfg.RetryBackoff)
}

// expireRequests frees slots whose request outlived the request timeout.
func (n *Node) expireRequests() {
	for i := range n.s.peers {
		p := &n.s.peers[i]
		if p.InFlight != 0 && n.s.now >= p.SentAt.Add(n.cfg.RequestTimeout) {
			n.logger.LogAttrs(context.Background(), slog.LevelDebug, "request timed out", slog.Int(keyPeer, int(p.ID)))
			p.InFlight = 0
			p.BackoffUntil = n.s.now.Add(n.cfg.RetryBackoff)
		}
	}
}
