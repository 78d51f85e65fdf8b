package client

import (
	"fmt"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/metadata"
)

// Batch is one record batch of the metadata log, as [DecodeBatches]
// returns it.
type Batch struct {
	// BaseOffset is the offset of the first record.
	BaseOffset int64
	// Epoch is the leader epoch of the leader that wrote the batch.
	Epoch int32
	// Control reports a control batch (LeaderChange, SnapshotHeader,
	// KRaftVersion, Voters, ...), whose records change no metadata image.
	Control bool
	// Records are the batch's records in offset order.
	Records []Record
}

// Record is one record of a [Batch].
type Record struct {
	// Offset is the record's offset in the log.
	Offset int64
	// Key and Value are the record's bytes: a metadata record's value is
	// its metadata-record framing (metadata.Decode reads it), and its key
	// is null; a control record's key names its type.
	Key, Value []byte
	// Metadata is the decoded metadata record, nil in a control batch.
	Metadata metadata.Record
}

// DecodeBatches decodes the record batches of a MetadataFetch answer's
// Records (Kafka's record batch format v2: magic 2, CRC-32C checked,
// compressed batches decompressed) and the metadata records they hold.
// It returns an error, never a panic, for bytes that are not whole valid
// batches or hold a record that does not decode; the batches before the
// bad one are returned with it. The records do not alias b.
func DecodeBatches(b []byte) ([]Batch, error) {
	var out []Batch
	var d recordbatch.Decoder
	for pos := 0; pos < len(b); {
		rb, err := d.Decode(b[pos:])
		if err != nil {
			return out, fmt.Errorf("client: record batch at byte %d: %w", pos, err)
		}
		batch := Batch{BaseOffset: rb.BaseOffset, Epoch: rb.PartitionLeaderEpoch, Control: rb.Attributes.Control()}
		for _, r := range rb.Records {
			rec := Record{Offset: rb.BaseOffset + int64(r.OffsetDelta), Key: clone(r.Key), Value: clone(r.Value)}
			if !batch.Control {
				m, err := metadata.Decode(rec.Value)
				if err != nil {
					return out, fmt.Errorf("client: record at offset %d: %w", rec.Offset, err)
				}
				rec.Metadata = m
			}
			batch.Records = append(batch.Records, rec)
		}
		out = append(out, batch)
		pos += rb.Size()
	}
	return out, nil
}

// clone copies b, keeping nil as nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
