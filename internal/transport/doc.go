// Package transport moves Kafka-framed requests and responses between
// Krabka nodes and their clients. It owns sockets and goroutines; what the
// bytes mean is package wire's business, and what to do with a request is
// the runtime's ([Handler]).
//
// # The listener
//
// [Serve] runs an accept loop on a net.Listener. Each accepted connection
// is first recorded in the listener's [CreationRate] quotas
// (max.connection.creation.rate, KIP-612), which may hold it, and every
// later accept, for up to one quota window; it then reserves a slot against the
// [ConnectionQuotas] its servers share
// (max.connections, max.connections.per.ip and its overrides: at
// max.connections the acceptor waits for a slot, holding the connection;
// one over its address's limit is closed at once, without a byte), then
// gets two
// goroutines:
//
//   - the reader runs the [Handshake] ([Plaintext] by default, [TLS] on
//     an SSL listener, [SASL] on a SASL_PLAINTEXT or SASL_SSL one), then loops: take an in-flight slot, read one
//     frame (through a 16 KiB buffer, so that pipelined frames arriving
//     together take one system call) with the idle deadline
//     (connections.max.idle.ms) and the size
//     limit (socket.request.max.bytes), decode it with wire.DecodeRequest
//     and hand it to [Handler.Serve] with a [Reply]. A frame Kafka would
//     refuse (bad size, unknown API key, unsupported version, malformed
//     header or body) closes this connection and no other. An ApiVersions
//     request at an unsupported version is answered by the reader itself
//     at version 0, as KIP-511 requires.
//   - the writer receives answers from any goroutine, in any order, and
//     writes them strictly in request order (by sequence number), because
//     Kafka clients expect it: Kafka's NetworkClient takes every response
//     as the answer to its oldest request in flight and fails if the
//     correlation id differs. Each answer written frees an in-flight slot; when a
//     connection has MaxInFlight unanswered requests its reader stops
//     reading, which pushes back on the client. Answers that are ready
//     together (a group commit completes many writes at once) are framed
//     into one buffer and leave in one write, up to 64 KiB: one system
//     call instead of one per answer.
//
// A handler may answer at once or hold the Reply and answer later (a
// long-poll Fetch parked until new records arrive). [Server.Close] closes
// the listener and every connection through their deadlines (net.Conn
// ignores contexts) and returns once every goroutine has exited.
//
// # Peers
//
// A [Peer] is one node's sender to another: one connection, requests
// pipelined with correlation ids, each with a deadline of
// controller.quorum.request.timeout.ms from the moment it was queued, and
// reconnection with a backoff starting at controller.quorum.retry.backoff.ms.
// Its queue is bounded and [Peer.Send] never blocks: when the queue is full
// the request is dropped and counted, and the protocol's own retries cover
// it (fetches and votes are idempotent). The single goroutine that owns the
// raft state must never wait on the network; it hands requests to Send and
// receives outcomes through a callback that must not block either.
//
// With PeerConfig.NegotiateVersions (on by default, as in Kafka's
// NetworkClient) each new connection starts with ApiVersions; requests
// queued meanwhile wait, in order, for the answer. A request whose version
// is [NegotiateVersion] then goes out at the highest version both ends
// support, and one at a version the peer does not support fails locally
// with UNSUPPORTED_VERSION, which is how KRaft learns, for example, that a
// pre-4.0 voter cannot take a pre-vote (Vote v2, KIP-996).
//
// With PeerConfig.TLS each connection runs a TLS client handshake right
// after the dial, within the same deadline, before its first request; with
// PeerConfig.SASL it then authenticates (SaslHandshake, SaslAuthenticate)
// before that request too. When the server gives the session a lifetime
// (KIP-368), the Peer renews it on the same connection at 85–95% of it,
// between requests; a listener serves such renewals and closes a
// connection that sends anything else after its session expired ([SASL]).
//
// A request that times out closes the connection, as Kafka's NetworkClient
// does: its answer might still arrive, and closing is the only way to be
// sure nothing is matched to the wrong request. Every other request in
// flight on that connection then fails with [ErrDisconnected].
//
// # Tests
//
// [MemNetwork] is an in-memory network of net.Pipe connections with real
// addresses, so listener and peer tests, here and in the runtime, can run
// under testing/synctest with fake time.
package transport
