package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestForOtherPartitions(t *testing.T) {
	vote := func(parts ...struct {
		topic string
		p     int32
	}) kmsg.Request {
		r := kmsg.NewPtrVoteRequest()
		for _, x := range parts {
			tp := kmsg.NewVoteRequestTopic()
			tp.Topic = x.topic
			pp := kmsg.NewVoteRequestTopicPartition()
			pp.Partition = x.p
			tp.Partitions = append(tp.Partitions, pp)
			r.Topics = append(r.Topics, tp)
		}
		return r
	}
	type tp = struct {
		topic string
		p     int32
	}
	fetch := func(version int16, topic string, id [16]byte, p int32) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.Version = version
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = topic, id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = p
		ft.Partitions = append(ft.Partitions, fp)
		r.Topics = append(r.Topics, ft)
		return r
	}
	for _, c := range []struct {
		name string
		req  kmsg.Request
		want bool
	}{
		{"another group", vote(tp{"group-7", 0}), true},
		{"metadata partition", vote(tp{MetadataTopic, 0}), false},
		{"metadata topic, another partition", vote(tp{MetadataTopic, 1}), false},
		{"mixed", vote(tp{"group-7", 0}, tp{MetadataTopic, 0}), false},
		{"no partition", vote(), false},
		{"fetch v13 by id, metadata", fetch(13, "", MetadataTopicID, 0), false},
		{"fetch v13 by id, another", fetch(13, "", [16]byte{9}, 0), true},
		{"fetch v12 by name, metadata", fetch(12, MetadataTopic, [16]byte{}, 0), false},
		{"fetch v12 by name, another", fetch(12, "group-7", [16]byte{}, 0), true},
		{"not a KRaft RPC", kmsg.NewPtrApiVersionsRequest(), false},
	} {
		if got := ForOtherPartitions(c.req); got != c.want {
			t.Errorf("%s: ForOtherPartitions = %v, want %v", c.name, got, c.want)
		}
	}
}
