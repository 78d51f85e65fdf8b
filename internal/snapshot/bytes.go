package snapshot

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// BatchTimes are the timestamps (ms) of a snapshot file's batches. Kafka
// stamps each batch, and every record in it, with the wall-clock time at
// which it opened the batch: the header batch when the snapshot is
// created, a data batch when the first record goes into it, the footer
// batch when the snapshot is frozen.
type BatchTimes struct {
	// Header stamps the header control batch.
	Header int64
	// Data stamps the data batches. A reader reports the first data
	// batch's time (0 when there is none); an encoder stamps every data
	// batch with it, which is what Kafka writes for a snapshot of at most
	// 8 MiB of records (one data batch).
	Data int64
	// Footer stamps the footer control batch.
	Footer int64
}

// Encode returns the bytes of snapshot id with header h and the framed
// metadata record values: exactly what [Create], one [Writer.Append] and
// [Writer.Freeze] write into the snapshot's file, with the batches
// stamped by t. Only id's epoch reaches the bytes; the end offset is the
// file's name.
func Encode(id kraft.OffsetAndEpoch, h Header, t BatchTimes, values [][]byte, o WriterOptions) ([]byte, error) {
	m := vfs.NewMem()
	w, err := Create(m, "/", id, 0, h, t.Header, o)
	if err != nil {
		return nil, err
	}
	return encode(m, w, t, values)
}

// EncodeBootstrap returns the bytes of a bootstrap.checkpoint holding the
// framed metadata record values, as [CreateBootstrap], one
// [Writer.Append] and [Writer.Freeze] write it, with the batches stamped
// by t.
func EncodeBootstrap(t BatchTimes, values [][]byte) ([]byte, error) {
	m := vfs.NewMem()
	w, err := CreateBootstrap(m, "/", t.Header, WriterOptions{})
	if err != nil {
		return nil, err
	}
	return encode(m, w, t, values)
}

// encode completes w, created in m, with values and returns the file.
func encode(m *vfs.MemFS, w *Writer, t BatchTimes, values [][]byte) ([]byte, error) {
	if err := w.Append(t.Data, values...); err != nil {
		return nil, errors.Join(err, w.Abort())
	}
	if err := w.Freeze(t.Footer); err != nil {
		return nil, err
	}
	b, err := m.ReadDurable(w.Path())
	if err != nil {
		panic(fmt.Sprintf("snapshot: invariant: a frozen in-memory snapshot cannot be read: %v", err))
	}
	return b, nil
}
