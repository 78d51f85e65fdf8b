package logstore

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// fataler is the part of testing.TB (and of *rapid.T) the helpers use.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

const testDir = "/data/__cluster_metadata-0"

// testOptions returns options with tiny segments and index intervals, so
// that a few batches exercise rolls and index entries, and a fixed clock.
func testOptions() Options {
	o := DefaultOptions()
	o.InternalSegmentBytes = 2048
	o.IndexIntervalBytes = 256
	o.Now = func() time.Time { return time.UnixMilli(1_000_000) }
	return o
}

// makeBatch encodes one data batch of n records with values of valueSize
// bytes derived from seed, at timestamp ts, offset 0 and epoch 0 (the
// leader's append stamps both).
func makeBatch(t fataler, n, valueSize int, seed int, ts int64) []byte {
	t.Helper()
	var b recordbatch.Builder
	b.Reset(nil, recordbatch.DefaultParams())
	for i := range n {
		v := bytes.Repeat([]byte{byte(seed + i)}, valueSize)
		copy(v, fmt.Sprintf("%d/%d", seed, i))
		b.Append(ts, nil, v, nil)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// batchAt returns a copy of the batch bytes at offset from l.
func batchAt(t fataler, l *Log, offset int64) []byte {
	t.Helper()
	r, err := l.Read(offset, 1)
	if err != nil {
		t.Fatalf("Read(%d): %v", offset, err)
	}
	n, err := recordbatch.TotalSize(r.Batches)
	if err != nil {
		t.Fatalf("Read(%d): %v", offset, err)
	}
	return r.Batches[:n]
}

// allBatches reads the whole log batch by batch and returns each batch's
// bytes keyed by base offset.
func allBatches(t testing.TB, l *Log) map[int64][]byte {
	t.Helper()
	out := map[int64][]byte{}
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		b := r.Batches
		for len(b) > 0 {
			h, err := recordbatch.Validate(b)
			if err != nil {
				t.Fatalf("batch read at %d invalid: %v", off, err)
			}
			out[h.BaseOffset] = bytes.Clone(b[:h.Size()])
			b = b[h.Size():]
		}
		if r.NextOffset <= off {
			t.Fatalf("Read(%d) made no progress: %+v", off, r)
		}
		off = r.NextOffset
	}
	return out
}

func openLog(t testing.TB, fsys vfs.FS, opts Options) (*Log, *RecoveryReport) {
	t.Helper()
	l, rep, err := Open(fsys, testDir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l, rep
}

// logFilesFS hands every .log file it opens to wrap, for tests that watch
// what the log does to its segment files.
type logFilesFS struct {
	vfs.FS
	wrap func(vfs.File) vfs.File
}

func (w logFilesFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := w.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return w.wrap(f), nil
}

// readCountFS counts the ReadAt calls made on open .log files.
type readCountFS struct {
	logFilesFS
	reads atomic.Int64
}

func newReadCountFS(fsys vfs.FS) *readCountFS {
	c := &readCountFS{}
	c.logFilesFS = logFilesFS{FS: fsys, wrap: func(f vfs.File) vfs.File { return &readCountFile{File: f, c: c} }}
	return c
}

type readCountFile struct {
	vfs.File
	c *readCountFS
}

func (f *readCountFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.reads.Add(1)
	return f.File.ReadAt(p, off)
}
