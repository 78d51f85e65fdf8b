// Package raft is Krabka's public runtime: [Start] runs a KRaft controller
// node from a [Config] and returns its [Controller].
//
// A Config mirrors Kafka's properties, with Kafka's names and defaults.
// Build one with [DefaultConfig] or [ForTests], or read a
// server.properties file with [LoadConfig]. [Config.Validate] reports
// every problem at once, each naming the Kafka property it concerns.
// Krabka runs controllers only (process.roles=controller).
package raft
