package recordbatch_test

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/recordbatch"
)

// A leader builds a batch of framed metadata records (here NoOpRecord),
// stamps it with its offset and epoch when it appends, and a reader walks
// the bytes batch by batch.
func Example() {
	var b recordbatch.Builder
	b.Reset(nil, recordbatch.DefaultParams())
	for range 3 {
		b.Append(1700000000000, nil, []byte{0x01, 0x14, 0x00, 0x00}, nil)
	}
	segment, err := b.Finish()
	if err != nil {
		panic(err)
	}
	// A control batch with one record: key = version 0, type 2
	// (LeaderChange); the value would come from package control.
	segment, err = recordbatch.AppendControlBatch(segment, recordbatch.DefaultParams(), 1700000000001,
		recordbatch.KeyValue{Key: []byte{0, 0, 0, 2}, Value: []byte{0, 0}})
	if err != nil {
		panic(err)
	}
	next, err := recordbatch.StampAll(segment, 42, 7)
	if err != nil {
		panic(err)
	}
	fmt.Println("next offset", next)

	it := recordbatch.NewIterator(nil, segment[:len(segment)-1]) // a torn tail
	for it.Next() {
		batch := it.Batch()
		fmt.Println("batch at byte", it.Pos(), "offsets", batch.BaseOffset, "to", batch.LastOffset(),
			"epoch", batch.PartitionLeaderEpoch, "control", batch.IsControl(), "records", len(batch.Records))
	}
	if err := it.Err(); errors.Is(err, recordbatch.ReasonTruncated) {
		fmt.Println("torn tail: keep", it.Offset(), "bytes")
		fmt.Println(err)
	}
	// Output:
	// next offset 46
	// batch at byte 0 offsets 42 to 44 epoch 7 control false records 3
	// torn tail: keep 94 bytes
	// recordbatch: truncated at byte 167 (batch at byte 94, base offset 45): batch of 74 bytes, have 73
}
