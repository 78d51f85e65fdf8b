package logstore

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/krabka-go/krabka/internal/vfs"
)

// copyDir copies the regular files of src into a new directory under
// t.TempDir() and returns it; the shared samples are read-only.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(filepath.Join(dst, e.Name()), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestOpenKafkaSamples opens every __cluster_metadata-0 that Kafka 3.5-4.2
// wrote and checks that recovery keeps all of it, rebuilds the epoch cache
// Kafka had, and rebuilds the index files the samples lack.
func TestOpenKafkaSamples(t *testing.T) {
	for _, dir := range sampleDirs(t) {
		name := sampleName(dir)
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(dir, "__cluster_metadata-0")
			part := copyDir(t, src)
			kafkaEpochs, err := readLeaderEpochCheckpoint(vfs.OS(), part)
			if err != nil {
				t.Fatal(err)
			}
			var logSize int64
			var logs []string
			hadIndex := map[string]bool{}
			entries, _ := os.ReadDir(part)
			for _, e := range entries {
				if base, ok := parseSegmentName(e.Name(), logSuffix); ok {
					fi, _ := e.Info()
					logSize += fi.Size()
					logs = append(logs, e.Name())
					_, err := os.Stat(filepath.Join(part, segmentName(base, indexSuffix)))
					hadIndex[e.Name()] = err == nil
				}
			}
			opts := DefaultOptions()
			l, rep, err := Open(vfs.OS(), part, opts)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer l.Close()
			if rep.Truncation != nil {
				t.Fatalf("recovery cut a Kafka log: %+v", rep.Truncation)
			}
			if rep.RecoveryPoint != -1 {
				t.Fatalf("report recovery point = %d, want -1 for a Kafka directory", rep.RecoveryPoint)
			}
			var got int64
			for _, s := range l.Segments() {
				got += s.Bytes
			}
			if got != logSize {
				t.Fatalf("recovered %d bytes of %d", got, logSize)
			}
			// Kafka's checkpoint keeps epochs that started at the log end
			// (a leader's epoch assigned before its first batch, as in the
			// kafka41 sample, which lacks its segment); the batches cannot
			// show those, so compare the entries that start below the LEO.
			var wantEpochs []EpochEntry
			for _, e := range kafkaEpochs {
				if e.StartOffset < l.LogEndOffset() {
					wantEpochs = append(wantEpochs, e)
				}
			}
			if diff := cmp.Diff(wantEpochs, l.EpochEntries(), cmpEmpty); diff != "" {
				t.Errorf("rebuilt epoch cache differs from Kafka's leader-epoch-checkpoint (-kafka +ours):\n%s", diff)
			}
			switch name {
			case "kafka39-single-logstart":
				if l.LogStartOffset() != 128356 {
					t.Errorf("log start offset = %d, want 128356", l.LogStartOffset())
				}
				if l.LogEndOffset() != 149995 {
					t.Errorf("log end offset = %d, want 149995", l.LogEndOffset())
				}
			case "kafka37-single-static":
				if l.LogEndOffset() != 4929 {
					t.Errorf("log end offset = %d, want 4929", l.LogEndOffset())
				}
			case "kafka42-single-static":
				if l.LogEndOffset() != 16956 {
					t.Errorf("log end offset = %d, want 16956", l.LogEndOffset())
				}
			case "kafka41-dynamic-bootstrap-nolog":
				if l.LogEndOffset() != 0 || len(l.Segments()) != 1 {
					t.Errorf("empty log: LEO %d, %d segments", l.LogEndOffset(), len(l.Segments()))
				}
			}
			for _, lg := range logs {
				base, _ := parseSegmentName(lg, logSuffix)
				idx := segmentName(base, indexSuffix)
				rebuilt := slices.Contains(rep.RebuiltFiles, idx)
				if !hadIndex[lg] && !rebuilt {
					t.Errorf("missing index %s not reported as rebuilt: %v", idx, rep.RebuiltFiles)
				}
				if _, err := os.Stat(filepath.Join(part, idx)); err != nil {
					t.Errorf("index %s not rebuilt: %v", idx, err)
				}
				if hadIndex[lg] && rebuilt {
					// Kafka's append path resets its index spacing on every
					// restart, so its index depends on history; ours is a
					// function of the batches. Both are valid indexes.
					t.Logf("Kafka's index %s differs from the one rebuilt from the batches; rewritten", idx)
				}
			}
			// Every batch reads back, and a reopen finds nothing to do.
			n := 0
			for off := l.LogStartOffset(); off < l.LogEndOffset(); {
				r, err := l.Read(off, 64<<10)
				if err != nil {
					t.Fatalf("Read(%d): %v", off, err)
				}
				n++
				off = r.NextOffset
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, rep2, err := Open(vfs.OS(), part, opts)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer l2.Close()
			if rep2.Truncation != nil || len(rep2.RebuiltFiles) != 0 || rep2.RecoveryPoint != l.LogEndOffset() {
				t.Errorf("reopen report = %+v", rep2)
			}
		})
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []EpochEntry) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return slices.Equal(a, b)
})

// TestRewriteKafkaSamplesByteIdentical replays every batch of a Kafka
// sample through AppendAsFollower into an empty log: the segment and the
// leader-epoch-checkpoint we write are byte-identical to Kafka's.
func TestRewriteKafkaSamplesByteIdentical(t *testing.T) {
	for _, dir := range sampleDirs(t) {
		name := sampleName(dir)
		src := filepath.Join(dir, "__cluster_metadata-0")
		entries, _ := os.ReadDir(src)
		var segs []string
		for _, e := range entries {
			if _, ok := parseSegmentName(e.Name(), logSuffix); ok {
				segs = append(segs, e.Name())
			}
		}
		if len(segs) != 1 {
			continue // kafka41 has no segment
		}
		t.Run(name, func(t *testing.T) {
			kafkaLog := readFile(t, filepath.Join(src, segs[0]))
			base, _ := parseSegmentName(segs[0], logSuffix)
			mem := vfs.NewMem()
			l, _ := openLog(t, mem, DefaultOptions())
			defer l.Close()
			if base > 0 {
				if err := l.TruncateFullyAndStartAt(base); err != nil {
					t.Fatal(err)
				}
			}
			// Feed the follower path in Fetch-sized chunks cut at arbitrary
			// byte positions, as a leader's response would be.
			for pos := 0; pos < len(kafkaLog); {
				chunk := wholeBatches(kafkaLog[pos:min(len(kafkaLog), pos+100_000)])
				if len(chunk) == 0 {
					t.Fatalf("no whole batch at byte %d", pos)
				}
				if _, err := l.AppendAsFollower(chunk); err != nil {
					t.Fatalf("append at byte %d: %v", pos, err)
				}
				pos += len(chunk)
			}
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			// The open log's active segment is preallocated: its batches
			// are Kafka's bytes and zeros follow them. Close cuts the
			// zeros, leaving the file byte-identical.
			ours, err := mem.ReadDurable(filepath.Join(testDir, segs[0]))
			if err != nil {
				t.Fatal(err)
			}
			if len(ours) < len(kafkaLog) || !bytes.Equal(ours[:len(kafkaLog)], kafkaLog) || !bytes.Equal(ours[len(kafkaLog):], make([]byte, len(ours)-len(kafkaLog))) {
				t.Fatalf("our open %s (%d bytes) does not hold Kafka's (%d bytes) followed by zeros", segs[0], len(ours), len(kafkaLog))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			ours, err = mem.ReadDurable(filepath.Join(testDir, segs[0]))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours, kafkaLog) {
				t.Fatalf("our %s (%d bytes) differs from Kafka's (%d bytes)", segs[0], len(ours), len(kafkaLog))
			}
			ourCkpt, err := mem.ReadDurable(filepath.Join(testDir, LeaderEpochCheckpointFileName))
			if err != nil {
				t.Fatal(err)
			}
			if want := readFile(t, filepath.Join(src, LeaderEpochCheckpointFileName)); !bytes.Equal(ourCkpt, want) {
				t.Fatalf("leader-epoch-checkpoint = %q, Kafka's %q", ourCkpt, want)
			}
		})
	}
}
