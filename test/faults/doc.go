// Package faults runs real krabka controller processes, each on a host of
// its own with its own IP address, under a nemesis, and checks what
// clients observed. It has no code outside its tests, except the program
// of its embedded hosts (internal/embedhost).
//
// # Hosts
//
// Two back ends give every node its own network stack, and the same test
// code drives both:
//
//   - Docker: the test builds a FROM scratch image of the static
//     (CGO_ENABLED=0) binary from deploy/Dockerfile, creates a private
//     bridge network with a subnet of its own and runs one container per
//     node. Kill is docker kill -s KILL, pause is docker pause (the cgroup
//     freezer, as SIGSTOP), restart is docker start of the same container.
//   - Network namespaces: when Docker is unusable and the test runs as
//     root, each node runs in its own namespace (ip netns), joined to a
//     private bridge by a veth pair. Signals go straight to the process.
//
// Every resource carries the test process id in its name (namespaces and
// links) or in a label (containers, networks, images), and a sweep at start
// removes those whose process is gone, so a crashed run cannot poison the
// next one. The back end used is logged; the suite skips when neither is
// available, except under CI=true, where it fails.
//
// # Peer traffic and partitions
//
// A scratch image has no iptables, and netem is missing from the kernel the
// suite runs on, so network faults are made in user space: every node's
// controller.quorum.voters names its peers by the address of a proxy in the
// test process (on the bridge's gateway address, which every host reaches),
// one proxy per directed link. A proxy forwards whole Kafka frames (it
// parses the 4-byte size) and can drop them silently in one direction
// (a one-way partition; both directions for a full one), delay them, lose
// them at random, and, because each link has its own delay, reorder
// messages across links. Dropping frames rather than closing connections
// is what a real partition does: requests time out instead of failing
// fast. Clients talk to the nodes' own addresses directly, so a
// partitioned node is still reachable by clients, as it would be in a
// real network partition between data-centre racks.
//
// # SASL_SSL
//
// -faults.security=SASL_SSL (and TestKillRestartSecure and
// TestSecureStrangersRefused, always) puts every controller listener, the
// embedded host's among them, on SASL_SSL: TLS with certificates the test
// issues from a CA of its own (each valid for its host's address and the
// gateway's, where its peers reach it through the proxies), client
// certificates required, and SCRAM-SHA-512 with a credential that krabka
// storage format --add-scram bootstraps on every voter. The voters and the
// embedded host authenticate to each other with it; the test's clients
// make the TLS handshake and the SCRAM exchange on each of their
// connections, and its krabka commands read the same client settings
// (--command-config).
//
// The proxies then forward whole TLS records (the 5-byte record header
// gives the length) instead of Kafka frames, so TLS stays end to end
// between the nodes. A dropped record breaks the TLS stream it belonged
// to: the receiver fails the next record it gets on that connection and
// closes it, and the sender reconnects through a new handshake, which a
// partition stalls until it heals. Delays and reordering across links are
// the same as on PLAINTEXT. TestSecureStrangersRefused has clients with
// a wrong password, with another CA's certificate and without SASL write
// while the quorum serves, and the log checker finds none of their
// values committed.
//
// # Checking
//
// Clients submit ConfigRecords through the private SubmitChange RPC (1003)
// and read keys with the linearizable ReadImage RPC (1005); each operation
// has a deadline, and one that times out is indeterminate, not failed.
//
// A SubmitChange over the wire is never forwarded: a follower answers
// NOT_LEADER_OR_FOLLOWER. Only the embedded API, Controller.SubmitChange,
// forwards from a follower or an observer to the leader. So the campaign
// also runs embedded hosts (-faults.embedded): internal/embedhost, built
// statically with the binary's tags and run in the same image or
// namespace scheme, embeds raft.Start as an observer (a node id outside
// the static voter set, controller.quorum.bootstrap.servers naming the
// voters' proxies) and serves Controller.SubmitChange over HTTP on its
// host. Embedded clients (-faults.embedclients) write through it; their
// writes join the same history and checks. Its traffic to the voters goes
// through proxies of its own: a voter names itself in its voter list by
// the embedded host's proxy to it, and the leader endpoint in a voter's
// answers comes from that list. So isolate-leader and partition cut it off
// like a voter, and embedded-link drops the leader's answers to it, the
// writes it forwards committing while their forwarding times out. The
// history, with real-time bounds, is checked by porcupine against a
// key-value register model. After the faults are healed every node's
// committed log is read over MetadataFetch (1004) and compared byte for
// byte up to the common high watermark, and every acknowledged submit
// must appear exactly once at the offset it was acknowledged at. A
// failing run keeps porcupine's visualisation, each node's output and its
// data directory under a directory the test prints.
//
// # Power loss and the bug zoo
//
// A SIGKILL loses nothing of what a process wrote, since the kernel keeps
// its page cache. The binary built with -tags writeback keeps unsynced
// writes in process memory (vfs.WriteBack), so that killing it, or every
// node at once, is a power failure. -faults.tags builds the binary with
// other tags too, and the embedded hosts' program with the same tags.
// -faults.bugzoo=z<n> builds both with the tag bugzoo and that bug-zoo
// entry selected (package bugzoo): scripts/bugzoo-faults.sh re-injects the
// runtime's entries that list a campaign in the catalogue and requires
// the campaign to catch each; Z21, a forwarded submission resent, only
// through the embedded hosts.
//
// The binary is never race-built (it is static, CGO_ENABLED=0, and runs
// for minutes on a small machine); its packages run their own tests under
// -race.
package faults
