package wire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFrame is a Fetch v18 request shaped like a KRaft follower's
// (KafkaRaftClient.buildFetchRequest), as a frame without its size prefix.
func fetchFrame(b *testing.B) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(18)
	req.MaxWaitMillis, req.MaxBytes = 500, 1<<20
	cluster := "MkU3OEVBNTcwNTJENDM2Qg"
	req.ClusterID = &cluster
	tp := kmsg.NewFetchRequestTopic()
	tp.TopicID[15] = 1
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = 7, 12345, 7
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	id := "raft-client-2"
	frame, err := AppendRequest(nil, 1, &id, req)
	if err != nil {
		b.Fatal(err)
	}
	return frame[4:]
}

func BenchmarkDecodeFetchRequest(b *testing.B) {
	frame := fetchFrame(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := DecodeRequest(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFrame(b *testing.B) {
	frame := fetchFrame(b)
	stream := sized(frame)
	var buf []byte
	r := bytes.NewReader(stream)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		r.Reset(stream)
		var err error
		if buf, err = ReadFrame(r, buf, DefaultMaxFrameSize); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFetchResponse(b *testing.B) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(18)
	t := kmsg.NewFetchResponseTopic()
	p := kmsg.NewFetchResponseTopicPartition()
	p.HighWatermark = 12345
	p.RecordBatches = make([]byte, 64<<10)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendResponse(buf[:0], 1, resp)
	}
	b.SetBytes(int64(len(buf)))
}
