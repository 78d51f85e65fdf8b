package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// TestForeignCluster: each KRaft request naming another cluster id is
// foreign, with that id and its sender; one naming ours or none is not,
// nor is a request of another API.
func TestForeignCluster(t *testing.T) {
	other := "other"
	vote := kmsg.NewPtrVoteRequest()
	vote.ClusterID = &other
	vp := kmsg.NewVoteRequestTopicPartition()
	vp.CandidateID = 3
	vt := kmsg.NewVoteRequestTopic()
	vt.Partitions = []kmsg.VoteRequestTopicPartition{vp}
	vote.Topics = []kmsg.VoteRequestTopic{vt}

	begin := kmsg.NewPtrBeginQuorumEpochRequest()
	begin.ClusterID = &other
	bp := kmsg.NewBeginQuorumEpochRequestTopicPartition()
	bp.LeaderID = 4
	bt := kmsg.NewBeginQuorumEpochRequestTopic()
	bt.Partitions = []kmsg.BeginQuorumEpochRequestTopicPartition{bp}
	begin.Topics = []kmsg.BeginQuorumEpochRequestTopic{bt}

	end := kmsg.NewPtrEndQuorumEpochRequest()
	end.ClusterID = &other
	ep := kmsg.NewEndQuorumEpochRequestTopicPartition()
	ep.LeaderID = 5
	et := kmsg.NewEndQuorumEpochRequestTopic()
	et.Partitions = []kmsg.EndQuorumEpochRequestTopicPartition{ep}
	end.Topics = []kmsg.EndQuorumEpochRequestTopic{et}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	fetch.ClusterID = &other
	fetch.ReplicaState.ID = 6
	oldFetch := kmsg.NewPtrFetchRequest()
	oldFetch.SetVersion(13)
	oldFetch.ClusterID = &other
	oldFetch.ReplicaID = 7

	snap := kmsg.NewPtrFetchSnapshotRequest()
	snap.ClusterID = &other
	snap.ReplicaID = 8

	for _, tc := range []struct {
		name string
		req  kmsg.Request
		from kraft.NodeID
	}{
		{"Vote", vote, 3}, {"BeginQuorumEpoch", begin, 4}, {"EndQuorumEpoch", end, 5},
		{"Fetch v17", fetch, 6}, {"Fetch v13", oldFetch, 7}, {"FetchSnapshot", snap, 8},
	} {
		theirs, from, foreign := ForeignCluster(tc.req, "ours")
		if !foreign || theirs != other || from != tc.from {
			t.Errorf("%s: ForeignCluster = %q, %d, %v; want %q, %d, true", tc.name, theirs, from, foreign, other, tc.from)
		}
		if _, _, foreign := ForeignCluster(tc.req, other); foreign {
			t.Errorf("%s naming our own cluster id is foreign", tc.name)
		}
		if _, _, foreign := ForeignCluster(tc.req, ""); foreign {
			t.Errorf("%s to a node without a cluster id is foreign", tc.name)
		}
	}
	fetch.ClusterID = nil
	if _, _, foreign := ForeignCluster(fetch, "ours"); foreign {
		t.Error("a Fetch naming no cluster id is foreign")
	}
	if _, _, foreign := ForeignCluster(kmsg.NewPtrApiVersionsRequest(), "ours"); foreign {
		t.Error("an ApiVersions request is foreign")
	}
}
