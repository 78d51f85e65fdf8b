package logstore

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

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
// that a few batches exercise rolls and index entries.
func testOptions() Options {
	o := DefaultOptions()
	o.InternalSegmentBytes = 2048
	o.IndexIntervalBytes = 256
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

// parseLeaderEpochCheckpoint parses Kafka's leader-epoch-checkpoint text.
// The version must be 0 and the number of entries must match the count, as
// Kafka's CheckpointFile reader requires.
func parseLeaderEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("parse leader epoch checkpoint: %d lines, want at least 2", len(lines))
	}
	if lines[0] != "0" {
		return nil, fmt.Errorf("parse leader epoch checkpoint: unknown version %q", lines[0])
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count < 0 {
		return nil, fmt.Errorf("parse leader epoch checkpoint: bad entry count %q", lines[1])
	}
	if count != len(lines)-2 {
		return nil, fmt.Errorf("parse leader epoch checkpoint: expected %d entries, found %d", count, len(lines)-2)
	}
	entries := make([]EpochEntry, 0, count)
	for i, line := range lines[2:] {
		f := strings.Split(line, " ")
		if len(f) != 2 {
			return nil, fmt.Errorf("parse leader epoch checkpoint: line %d: %q is not \"<epoch> <offset>\"", i+3, line)
		}
		ep, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || ep < 0 || off < 0 {
			return nil, fmt.Errorf("parse leader epoch checkpoint: line %d: %q is not \"<epoch> <offset>\"", i+3, line)
		}
		entries = append(entries, EpochEntry{Epoch: int32(ep), StartOffset: off})
	}
	return entries, nil
}

// readLeaderEpochCheckpoint reads dir/leader-epoch-checkpoint. Open does
// not read it (it rebuilds the cache from the batches); tests compare it
// with Kafka's and with the rebuilt cache.
func readLeaderEpochCheckpoint(fsys vfs.FS, dir string) ([]EpochEntry, error) {
	path := filepath.Join(dir, LeaderEpochCheckpointFileName)
	data, err := readSmallFile(fsys, path, maxEpochCheckpointBytes)
	if err != nil {
		return nil, fmt.Errorf("logstore: read leader epoch checkpoint %s: %w", path, err)
	}
	entries, err := parseLeaderEpochCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("logstore: read leader epoch checkpoint %s: %w", path, err)
	}
	return entries, nil
}

// wholeBatches returns the longest prefix of b made of whole batches (by
// their length fields; nothing else is checked), as a follower keeps of a
// Fetch response that ends in a partial batch.
func wholeBatches(b []byte) []byte {
	pos := 0
	for pos < len(b) {
		n, err := recordbatch.TotalSize(b[pos:])
		if err != nil || n > len(b)-pos {
			break
		}
		pos += n
	}
	return b[:pos]
}
