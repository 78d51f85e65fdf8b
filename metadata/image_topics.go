package metadata

import (
	"cmp"
	"iter"
)

// Leader values of partitions and PartitionChangeRecord.
const (
	// NoLeader (-1) means the partition has no leader.
	NoLeader int32 = -1
	// NoLeaderChange (-2) in a PartitionChangeRecord means the leader did
	// not change.
	NoLeaderChange int32 = -2
)

// Leader recovery states (KIP-704).
const (
	// LeaderRecovered: the leader was elected from the ISR or has
	// recovered from an unclean election.
	LeaderRecovered int8 = 0
	// LeaderRecovering: the leader was elected uncleanly and is still
	// recovering.
	LeaderRecovering int8 = 1
)

// DirectoryMigrating returns the reserved directory id of a replica
// created before directory assignment (metadata.version < 3.7-IV2), the
// UUID 0:2 of Kafka's DirectoryId.MIGRATING.
func DirectoryMigrating() [16]byte { return [16]byte{15: 2} }

// MetadataTopicID returns the reserved topic id of __cluster_metadata
// (the UUID 0:1); no TopicRecord may use it.
func MetadataTopicID() [16]byte { return [16]byte{15: 1} }

// Topic is a topic with its partitions (Kafka's TopicImage).
type Topic struct {
	// Name is the topic name.
	Name string
	// ID is the topic id.
	ID [16]byte

	partitions pmap[int32, *Partition]
	// edit is the token of the delta that made this copy; see
	// Image.setPartition.
	edit *editToken
}

// Partition returns partition id of the topic.
func (t *Topic) Partition(id int32) (*Partition, bool) { return t.partitions.Get(id) }

// Partitions iterates over the partitions by ascending id.
func (t *Topic) Partitions() iter.Seq2[int32, *Partition] { return t.partitions.All() }

// NumPartitions returns the number of partitions.
func (t *Topic) NumPartitions() int { return t.partitions.Len() }

// TopicsImage holds the topics by id and by name (Kafka's TopicsImage).
type TopicsImage struct {
	byID   pmap[[16]byte, *Topic]
	byName pmap[string, [16]byte]
	// byLegal maps the collision form of every topic name that holds a
	// '.' or '_' (both turned into '_') to the name, to reject names
	// that collide in metric names as Kafka does.
	byLegal pmap[string, string]
}

// ByID returns the topic with the given id.
func (t TopicsImage) ByID(id [16]byte) (*Topic, bool) { return t.byID.Get(id) }

// ByName returns the topic with the given name.
func (t TopicsImage) ByName(name string) (*Topic, bool) {
	id, ok := t.byName.Get(name)
	if !ok {
		return nil, false
	}
	return t.byID.Get(id)
}

// Len returns the number of topics.
func (t TopicsImage) Len() int { return t.byID.Len() }

// All iterates over the topics by ascending id bytes.
func (t TopicsImage) All() iter.Seq[*Topic] { return t.byID.Values() }

// Names iterates over the topic names in ascending order with their ids.
func (t TopicsImage) Names() iter.Seq2[string, [16]byte] { return t.byName.All() }

// NumPartitions returns the number of partitions of all topics; it takes
// time proportional to the number of topics.
func (t TopicsImage) NumPartitions() int {
	n := 0
	for tp := range t.byID.Values() {
		n += tp.partitions.Len()
	}
	return n
}

func newPartitionMap() pmap[int32, *Partition] {
	return newPMap[int32, *Partition](cmp.Compare[int32])
}
