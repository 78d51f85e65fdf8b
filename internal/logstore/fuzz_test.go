package logstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// FuzzSegmentRecover opens a log whose only segment holds arbitrary bytes.
// Open must never panic and never allocate from an unchecked length (the
// batch limit is 64 KiB here, far below what random length fields claim);
// it either fails with a *CorruptionError (never, for the only segment of a
// directory without a recovery point) or keeps a valid prefix. Reopening
// keeps exactly that prefix, and every batch in it reads back.
func FuzzSegmentRecover(f *testing.F) {
	var valid []byte
	for i := range 4 {
		valid = append(valid, makeBatch(f, 1+i, 20, i, 7)...)
	}
	if _, err := recordbatch.StampAll(valid, 0, 1); err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add(append(bytes.Clone(valid), make([]byte, 100)...))
	flipped := bytes.Clone(valid)
	flipped[80] ^= 1
	f.Add(flipped)
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := vfs.NewMem()
		if err := mem.MkdirAll(testDir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(testDir, segmentName(0, logSuffix))
		fl, err := mem.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fl.Write(data); err != nil {
			t.Fatal(err)
		}
		fl.Close()
		opts := testOptions()
		opts.MaxBatchBytes = 64 << 10
		l, rep, err := Open(mem, testDir, opts)
		if err != nil {
			var ce *CorruptionError
			if errors.As(err, &ce) {
				t.Fatalf("the only segment of a Kafka-style directory reported as corrupt: %v", err)
			}
			t.Fatalf("Open: %v", err)
		}
		leo := l.LogEndOffset()
		size := l.Segments()[0].Bytes
		if size > int64(len(data)) || !bytes.Equal(data[:size], mustRead(t, mem, path)) {
			t.Fatalf("kept %d bytes that are not a prefix of the input", size)
		}
		if (rep.Truncation == nil && rep.ZeroTailBytes == 0) != (size == int64(len(data))) {
			t.Fatalf("truncation %+v, zero tail %d, but kept %d of %d bytes", rep.Truncation, rep.ZeroTailBytes, size, len(data))
		}
		if rep.ZeroTailBytes > 0 && (rep.Truncation != nil || size+rep.ZeroTailBytes != int64(len(data)) || !bytes.Equal(data[size:], make([]byte, rep.ZeroTailBytes))) {
			t.Fatalf("zero tail of %d bytes after %d of %d bytes (truncation %+v)", rep.ZeroTailBytes, size, len(data), rep.Truncation)
		}
		got := allBatches(t, l)
		l.Close()
		l2, rep2, err := Open(mem, testDir, opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l2.Close()
		if l2.LogEndOffset() != leo || rep2.Truncation != nil {
			t.Fatalf("reopen: LEO %d (was %d), truncation %+v", l2.LogEndOffset(), leo, rep2.Truncation)
		}
		got2 := allBatches(t, l2)
		if len(got) != len(got2) {
			t.Fatalf("reopen read %d batches, first open %d", len(got2), len(got))
		}
		for off, b := range got {
			if !bytes.Equal(b, got2[off]) {
				t.Fatalf("batch %d differs after reopen", off)
			}
		}
	})
}

func mustRead(t *testing.T, fsys vfs.FS, path string) []byte {
	t.Helper()
	b, err := readSmallFile(fsys, path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
