package snapshot

import (
	"errors"
	"os"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// TestOpenAs: a snapshot copied under another name opens as the id it is
// given; an id with another epoch than its batches' is refused, and so is
// an invalid id.
func TestOpenAs(t *testing.T) {
	m := vfs.NewMem()
	id := kraft.OffsetAndEpoch{Offset: 500, Epoch: 3}
	h := Header{LastContainedLogTimestamp: 1234}
	vals := testValues(40)
	data := writeSnapshot(t, m, "/d", id, h, vals, 16, WriterOptions{})
	f, err := m.OpenFile("/d/backup", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(m, "/d/backup", ReadOptions{}); err == nil {
		t.Fatal("Open accepted a file whose name is not a snapshot name")
	}
	r, err := OpenAs(m, "/d/backup", id, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != id || r.Records() != int64(len(vals)) || r.Header().LastContainedLogTimestamp != 1234 || r.Size() != int64(len(data)) {
		t.Errorf("OpenAs: id %s, %d records, header %+v, size %d", r.ID(), r.Records(), r.Header(), r.Size())
	}
	_ = r.Close()
	var ce *CorruptError
	if _, err := OpenAs(m, "/d/backup", kraft.OffsetAndEpoch{Offset: 500, Epoch: 4}, ReadOptions{}); !errors.As(err, &ce) {
		t.Errorf("OpenAs with another epoch = %v, want a *CorruptError", err)
	}
	if _, err := OpenAs(m, "/d/backup", kraft.OffsetAndEpoch{Offset: -1, Epoch: 3}, ReadOptions{}); err == nil {
		t.Error("OpenAs accepted a negative offset")
	}
}
