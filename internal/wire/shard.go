package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// ForOtherPartitions reports whether req, a KRaft RPC (Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch or FetchSnapshot), names at
// least one partition and never the metadata topic (__cluster_metadata,
// which Fetch v13+ names by [MetadataTopicID]): a request for Raft
// groups other than the node's own. It is false for every other request.
func ForOtherPartitions(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.VoteRequest:
		return otherTopics(r.Topics, func(t *kmsg.VoteRequestTopic) (string, int) { return t.Topic, len(t.Partitions) })
	case *kmsg.BeginQuorumEpochRequest:
		return otherTopics(r.Topics, func(t *kmsg.BeginQuorumEpochRequestTopic) (string, int) { return t.Topic, len(t.Partitions) })
	case *kmsg.EndQuorumEpochRequest:
		return otherTopics(r.Topics, func(t *kmsg.EndQuorumEpochRequestTopic) (string, int) { return t.Topic, len(t.Partitions) })
	case *kmsg.FetchSnapshotRequest:
		return otherTopics(r.Topics, func(t *kmsg.FetchSnapshotRequestTopic) (string, int) { return t.Topic, len(t.Partitions) })
	case *kmsg.FetchRequest:
		return otherTopics(r.Topics, func(t *kmsg.FetchRequestTopic) (string, int) {
			if r.Version >= 13 {
				// Named by id: the metadata topic's id stands for its name.
				if t.TopicID == MetadataTopicID {
					return MetadataTopic, len(t.Partitions)
				}
				return "", len(t.Partitions)
			}
			return t.Topic, len(t.Partitions)
		})
	}
	return false
}

// otherTopics reports whether topics hold at least one partition and no
// topic is the metadata topic; name returns a topic's name and its
// number of partitions.
func otherTopics[T any](topics []T, name func(*T) (string, int)) bool {
	partitions := 0
	for i := range topics {
		n, ps := name(&topics[i])
		if n == MetadataTopic {
			return false
		}
		partitions += ps
	}
	return partitions > 0
}
