package checkpoint_test

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/checkpoint"
	"github.com/krabka-go/krabka/metadata"
)

// A snapshot of a dynamic quorum: the metadata records, and the
// kraft.version and voter set in its header.
func ExampleEncodeSnapshot() {
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	tr := metadata.NewTopicRecord()
	tr.Name = "orders"

	s := &checkpoint.Snapshot{
		Epoch: 3,
		Control: checkpoint.Control{
			LastContainedLogTimestamp: 1700000000000,
			KRaftVersion:              1,
			Voters: []checkpoint.Voter{{ID: 1, MaxKRaftVersion: 1,
				Endpoints: []checkpoint.Endpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}}}},
		},
		Records: []metadata.Record{mv, tr},
		Times:   checkpoint.BatchTimes{Header: 1700000000100, Records: 1700000000100, Footer: 1700000000101},
	}
	data, err := checkpoint.EncodeSnapshot(s)
	if err != nil {
		panic(err)
	}
	name, err := checkpoint.FileName(12666, s.Epoch)
	if err != nil {
		panic(err)
	}
	fmt.Println(name, len(data), "bytes")
	// Output: 00000000000000012666-0000000003.checkpoint 366 bytes
}

// Decoding verifies the whole file first: a damaged file is an error,
// never a partial snapshot.
func ExampleDecodeSnapshot() {
	tr := metadata.NewTopicRecord()
	tr.Name = "orders"
	data, err := checkpoint.EncodeSnapshot(&checkpoint.Snapshot{Epoch: 3, Records: []metadata.Record{tr, metadata.NewNoOpRecord()}})
	if err != nil {
		panic(err)
	}

	s, err := checkpoint.DecodeSnapshot(data)
	if err != nil {
		panic(err)
	}
	for _, r := range s.Records {
		if checkpoint.IsNoOpRecord(r) {
			continue
		}
		fmt.Println(s.Epoch, r.APIKey(), r.(*metadata.TopicRecord).Name)
	}

	_, err = checkpoint.DecodeSnapshot(data[:len(data)-1])
	var ce *checkpoint.CorruptError
	fmt.Println(errors.As(err, &ce), errors.Is(err, checkpoint.ErrTruncated), ce.Pos)
	// Output:
	// 3 TopicRecord orders
	// true true 189
}

// The bootstrap.checkpoint of kafka-storage format: metadata.version
// first, then the other features by name.
func ExampleEncodeBootstrap() {
	var recs []metadata.Record
	for _, f := range []struct {
		name  string
		level int16
	}{{metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion}, {"group.version", 1}, {"transaction.version", 2}} {
		r := metadata.NewFeatureLevelRecord()
		r.Name, r.FeatureLevel = f.name, f.level
		recs = append(recs, r)
	}
	data, err := checkpoint.EncodeBootstrap(&checkpoint.Bootstrap{Records: recs})
	if err != nil {
		panic(err)
	}
	b, err := checkpoint.DecodeBootstrap(data)
	if err != nil {
		panic(err)
	}
	for _, r := range b.Records {
		fl := r.(*metadata.FeatureLevelRecord)
		fmt.Println(fl.Name, fl.FeatureLevel)
	}
	// Output:
	// metadata.version 30
	// group.version 1
	// transaction.version 2
}

// IsNoOp reads only the frame of other records.
func ExampleIsNoOp() {
	noop, _ := metadata.Encode(metadata.NewNoOpRecord())
	tr, _ := metadata.Encode(metadata.NewTopicRecord())
	fmt.Println(checkpoint.IsNoOp(noop), checkpoint.IsNoOp(tr))
	// Output: true false
}
