// Package raft is Krabka's public runtime package: the node's [Config],
// with Kafka's property names and defaults, read from a server.properties
// file by [LoadConfig] or built in Go from [DefaultConfig] or [ForTests].
//
// Krabka runs KRaft controllers only (process.roles=controller).
// [Config.Validate] reports every problem with a configuration at once,
// each naming the Kafka property it concerns.
package raft
