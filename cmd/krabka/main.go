// Command krabka runs and administers a Krabka KRaft metadata quorum. Its
// subcommands mirror Kafka's own tools, so that operators can keep their
// runbooks:
//
//	krabka storage random-uuid               kafka-storage random-uuid
//	krabka storage format -t ID -c FILE ...  kafka-storage format
//	krabka storage info -c FILE              kafka-storage info
//	krabka storage log-end -c FILE [--json]  a stopped node's log end, snapshot, election state and voters
//	krabka storage restore --snapshot FILE [--snapshot-id ID] -c FILE [--cluster-id ID]
//	                                         a new node's directories from a saved snapshot
//	krabka server-start FILE [--override K=V]...
//	                                         kafka-server-start (controllers)
//	krabka dump-log --files FILE,...         kafka-dump-log
//	krabka metadata-quorum --bootstrap-controller HOST:PORT describe --status|--replication
//	                                         kafka-metadata-quorum
//	krabka metadata-quorum --bootstrap-controller HOST:PORT snapshot save FILE [--force]
//	                                         a verified copy of the leader's newest snapshot
//	krabka dump-snapshot FILE                a checkpoint's header, voters and records
//	krabka dev [--nodes N] [--dir DIR | --keep] [-v]
//	                                         a live local quorum in one process
//
// Output meant for scripts goes to stdout in Kafka's layout; diagnostics go
// to stderr through log/slog (--log-format text or json). A failing command
// prints one line, "Error: <reason>", on stderr and exits with status 1, as
// Kafka's tools do.
//
// # storage format
//
// format prepares every directory of a node (metadata.log.dir and each of
// log.dirs) as Kafka's Formatter (kafka-storage format) does:
// bootstrap.checkpoint with the FeatureLevelRecords of the release
// (metadata.version first, the other features with a level above 0 sorted by
// name, never kraft.version), for a dynamic quorum with initial voters the
// 0-0 bootstrap snapshot in __cluster_metadata-0, and meta.properties last,
// so that a present meta.properties marks a complete format. The cluster id
// must be a Kafka Uuid: 22 base64url characters encoding 16 bytes (24 with
// "==" padding), neither the zero Uuid nor the metadata topic id; older Kafka
// releases accepted other strings, which this release refuses, as Kafka 4.x
// does. --release-version takes a release ("3.9", its newest level) or a
// level name ("3.9-IV0"), from 3.3-IV3 to 4.3-IV0 (the default).
//
// # storage info and storage log-end
//
// info checks the directories format writes to, as kafka-storage info does,
// and prints Kafka's "Found log directories:", "Found metadata:" and "Found
// problems:" blocks; it exits 1, with nothing on stderr, when it found a
// problem. log-end reads a stopped node's metadata log directory under its
// lock without changing it; docs/operations.md describes both.
//
// # metadata-quorum
//
// metadata-quorum describe connects to the controllers of
// --bootstrap-controller in turn (ApiVersions, then DescribeCluster v1 or
// v2 with the controller endpoint type), learns the quorum leader, and asks
// the leader DescribeQuorum (v2 when it speaks it). --status prints Kafka's
// eight lines with the values in column 25, --replication its table (cells
// padded to the column and each followed by a tab). While no leader is known,
// or the leader just moved, it asks again until --timeout (30s); when no
// controller answers at all it fails at once. Either error names each
// address tried once, with what it answered; --status first prints the
// own view (role, epoch, leader, log end) of each controller that gave one.
// Other error codes fail with the code's name and the controller's message.
//
// # Backup and restore
//
// metadata-quorum snapshot save copies the leader's newest snapshot in
// FetchSnapshot chunks into FILE (a temporary file fsynced, verified and
// renamed) and prints its id; storage restore verifies such a file and
// writes it, with bootstrap.checkpoint for its feature levels and a new
// meta.properties, into the unformatted directories of a node of a new
// quorum, which starts at the snapshot's end offset. docs/operations.md
// says what happens to the voter set.
//
// # dump-log and dump-snapshot
//
// dump-log prints segments and checkpoints batch by batch in the layout of
// kafka-dump-log (package internal/dumplog documents it); damage is printed
// (isvalid: false, the position of a batch whose records cannot be read,
// invalid bytes at the end) and logged as a warning, and the command still
// exits 0, as Kafka's does. dump-snapshot verifies a whole checkpoint first
// and fails with the position of any damage.
//
// # Profiling
//
// With KRABKA_PPROF=host:port in its environment, server-start also serves
// Go's runtime profiles (net/http/pprof) under http://host:port/debug/pprof/,
// for profiling a node under load; a loopback address keeps them private.
// It is off by default.
package main

import (
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError formats err as the single line a failing command prints.
// Joined errors (a configuration file with several problems) are listed
// on that line separated by "; ".
func exitError(err error) string {
	msg := strings.Join(strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' }), "; ")
	return "Error: " + msg
}
