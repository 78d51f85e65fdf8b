package snapshot

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krabka-go/krabka/internal/kraft"
)

// TestEncodeAndOpenBytesAgreeWithFiles checks that the in-memory pair
// is the file pair: Encode writes what Create, Append and Freeze write,
// and OpenBytes reports what Open reports, for every Kafka sample.
func TestEncodeAndOpenBytesAgreeWithFiles(t *testing.T) {
	files := sampleFiles(t)
	for rel, data := range files {
		t.Run(rel, func(t *testing.T) {
			id := Bootstrap
			isBootstrap := filepath.Base(rel) == BootstrapFile
			if !isBootstrap {
				var err error
				if id, _, err = ParseFileName(filepath.Base(rel)); err != nil {
					t.Fatal(err)
				}
			}
			r, err := OpenBytes(rel, data, id, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var values [][]byte
			for r.Next() {
				for _, rec := range r.Batch().Records {
					values = append(values, bytes.Clone(rec.Value))
				}
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			var got []byte
			if isBootstrap {
				got, err = EncodeBootstrap(r.Times(), values)
			} else {
				got, err = Encode(id, r.Header(), r.Times(), values, WriterOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("Encode of what OpenBytes read differs from Kafka's file (%d vs %d bytes)", len(got), len(data))
			}
			if r.Size() != int64(len(data)) || r.ID() != id {
				t.Errorf("Size %d ID %v, want %d %v", r.Size(), r.ID(), len(data), id)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpenBytesRefuses(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 10, Epoch: 2}
	good, err := Encode(id, Header{LastContainedLogTimestamp: 5}, BatchTimes{Header: 1, Data: 2, Footer: 3}, testValues(4), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenBytes("x", good, id, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(BatchTimes{Header: 1, Data: 2, Footer: 3}, r.Times()); d != "" {
		t.Errorf("Times (-want +got):\n%s", d)
	}
	if _, err := OpenBytes("x", good, kraft.OffsetAndEpoch{Offset: 10, Epoch: 3}, ReadOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenBytes at another epoch = %v, want ErrCorrupt", err)
	}
	if _, err := OpenBytes("x", good[:len(good)-1], id, ReadOptions{}); !errors.Is(err, ErrTruncated) {
		t.Errorf("OpenBytes of a torn file = %v, want ErrTruncated", err)
	}
	if _, err := OpenBytes("x", good, kraft.OffsetAndEpoch{Offset: -1}, ReadOptions{}); err == nil {
		t.Error("OpenBytes with an invalid id succeeded")
	}
	if _, err := OpenBytes("x", good, id, ReadOptions{MaxBatchBytes: -1}); err == nil {
		t.Error("OpenBytes with a negative limit succeeded")
	}
}
