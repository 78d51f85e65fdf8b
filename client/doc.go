// Package client talks to a Krabka quorum from a process that runs no
// node of its own, such as a Go broker: it submits metadata records,
// reads committed record batches and reads the metadata image, over the
// private RPCs SubmitChange (API key 1003), MetadataFetch (1004) and
// ReadImage (1005) that docs/wire.md specifies.
//
// # Connecting
//
// [Dial] takes a [Config] whose Controllers list some controller
// listeners (Kafka's bootstrap.controllers). It asks them in turn for
// DescribeCluster with the controller endpoint type (KIP-919), which
// names every controller and the leader. Each controller gets one
// connection that negotiates versions with ApiVersions first, as Kafka's
// NetworkClient does, so a controller that does not serve a private RPC
// fails the call with kerr.UnsupportedVersion instead of closing the
// connection. Config.Dial, Config.TLS and Config.SASL plug in the
// connection, TLS (SSL listeners) and SASL PLAIN or SCRAM.
//
// # Following the leader
//
// Every request goes to the leader the Client knows. Every answer carries
// the answering controller's leader and epoch, and the Client adopts a
// newer one; a NOT_LEADER_OR_FOLLOWER answer names the leader to use
// next. A controller that cannot be reached, or a leader that goes away,
// sends the next request to the next controller of the list, which
// forwards SubmitChange and linearizable ReadImage to the leader itself.
//
// Reads ([Client.ReadImage], [Client.MetadataFetch]) are safe to repeat:
// they are retried, with backoff, until ctx ends. A submission is sent
// once: [Client.SubmitChange] retries only while no controller could be
// dialled, and otherwise returns the failure, since records that reached
// a controller may commit even when the answer is lost
// ([ErrOutcomeUnknown]) or says that leadership moved ([*NotLeaderError]).
//
// # Errors
//
// Answers' Kafka error codes become the conditions package raft uses,
// exported here under the same names and with the same values:
// [ErrNotLeader] (matched by [*NotLeaderError]), [ErrLeaderUnknown],
// [ErrShuttingDown], [ErrReadTimeout], [ErrInvalidChange] and
// [ErrOutcomeUnknown], so errors.Is works against either package. An
// answer that does not decode is [ErrMalformedResponse]; it never panics.
// A failed TLS handshake or SASL exchange is [ErrAuthentication], which
// Dial and reads do not retry; [ErrUnreachable] says that no controller
// could be reached before ctx ended, [ErrClosed] that the Client was
// closed.
//
// # Codecs
//
// The request and response types ([SubmitChangeRequest], ...) are the
// generated codecs the controllers use; they implement franz-go's
// kmsg.Request and kmsg.Response, so a program with its own connection
// handling can encode and decode them directly. [DecodeBatches] decodes
// the record batches of a MetadataFetch answer.
//
// A process that must hold the whole image and follow every change uses
// raft.StartObserver instead: a KRaft observer that fetches the log as a
// Kafka broker does (docs/architecture.md, "Following the quorum from another process").
package client
