// Package quorum holds the identity scalars of a KRaft replica and the pure
// arithmetic of a voter set: who counts as a voter, how large a majority
// is, how an election tally stands, and which offset a majority of voters
// has replicated (the high watermark rule of KIP-595).
//
// Everything here is a value or a pure function, so the consensus core
// ([github.com/krabka-go/krabka/internal/kraft]) can copy its state cheaply
// and tests can check each rule with a table. The identity types live here,
// not in the core, because a voter set is made of them; the core re-exports
// them under the same names.
//
// # Replica-key matching
//
// A stored key (a voter-set entry, a persisted vote) matches an incoming
// key when the node ids are equal and either the stored key has no
// directory id or both directory ids are equal. The rule is asymmetric on
// purpose: a voter registered with a directory id does not accept a
// replica that presents none (Kafka's VoterSet.VoterNode.isVoter,
// ReplicaKey, KIP-853).
//
// # High watermark
//
// [MajorityOffset] sorts the voters' durable end offsets in descending
// order and takes the one at index ⌊n/2⌋: the largest offset that a
// majority holds. [NextHighWatermark] adds the two KIP-595 guards: a leader
// only exposes a value strictly above its epoch start offset (an entry of
// its own epoch must be committed first, Raft §5.4.2, the "figure 8"
// hazard), and the value never moves backwards.
package quorum
