package dumplog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// TestDumpRunningSegmentStopsAtZeroTail dumps the active segment of an
// open log, whose file is preallocated beyond its batches: the dump shows
// the batches and ends there, as for the closed file, without reporting
// the zeros as invalid bytes. Zeros after a torn batch are still damage.
func TestDumpRunningSegmentStopsAtZeroTail(t *testing.T) {
	mem := vfs.NewMem()
	opts := logstore.DefaultOptions()
	l, _, err := logstore.Open(mem, "/data/__cluster_metadata-0", opts)
	if err != nil {
		t.Fatal(err)
	}
	var b recordbatch.Builder
	for i := range 5 {
		b.Reset(nil, recordbatch.DefaultParams())
		b.Append(int64(1000+i), []byte("k"), []byte("value"), nil)
		batch, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	seg := l.Segments()[0]
	running, err := mem.ReadDurable(seg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(running)) <= seg.Bytes {
		t.Fatalf("active segment file of %d bytes for %d of batches: not preallocated", len(running), seg.Bytes)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	closed, err := mem.ReadDurable(seg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(closed)) != seg.Bytes {
		t.Fatalf("closed segment file of %d bytes, want %d", len(closed), seg.Bytes)
	}

	var got, want bytes.Buffer
	o := Options{DeepIteration: true, PrintDataLog: true}
	sum, err := Dump(&got, seg.Path, running, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Dump(&want, seg.Path, closed, o); err != nil {
		t.Fatal(err)
	}
	if sum.Batches != 5 || sum.InvalidTrailingBytes != 0 || sum.InvalidBatches != 0 || sum.ZeroTailBytes != len(running)-len(closed) {
		t.Errorf("summary %+v; want 5 batches and a zero tail of %d bytes", sum, len(running)-len(closed))
	}
	if got.String() != want.String() {
		t.Errorf("running segment dump:\n%s\nclosed segment dump:\n%s", got.String(), want.String())
	}

	// A torn batch before the zeros is still damage: its length covers
	// zeros, so it prints as an invalid batch, then the zeros end the log.
	torn := bytes.Clone(running)
	copy(torn[len(closed):], closed[:30])
	var out bytes.Buffer
	sum, err = Dump(&out, seg.Path, torn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Batches != 6 || sum.InvalidBatches != 1 || !strings.HasSuffix(out.String(), "isvalid: false\n") {
		t.Errorf("torn batch before zeros: summary %+v, output:\n%s", sum, out.String())
	}
	// Zeros at the end of a snapshot are damage: snapshots are written whole.
	if sum, err := Dump(&out, "/data/00000000000000000005-0000000001.checkpoint", running, Options{}); err != nil || sum.InvalidTrailingBytes == 0 {
		t.Errorf("snapshot ending in zeros: %+v, %v; want invalid trailing bytes", sum, err)
	}
}
