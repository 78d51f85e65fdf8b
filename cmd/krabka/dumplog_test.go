package main

import (
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
)

// samplesDir returns the kafka-samples directory.
func samplesDir(t *testing.T) string {
	t.Helper()
	return sharedtest.Dir(t, "kafka-samples")
}

// relative replaces the samples directory in out so that golden files do
// not depend on where the samples live.
func relative(out, dir string) string {
	return strings.ReplaceAll(out, dir, "SAMPLES")
}

func TestDumpLogGolden(t *testing.T) {
	dir := samplesDir(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"dump-log-kafka37-head.txt", []string{"--cluster-metadata-decoder", "--max-bytes", "1400", "--files",
			filepath.Join(dir, "kafka37-single-static/__cluster_metadata-0/00000000000000000000.log")}},
		{"dump-log-kafka37-batches.txt", []string{"--max-bytes", "700", "--files",
			filepath.Join(dir, "kafka37-single-static/__cluster_metadata-0/00000000000000000000.log")}},
		{"dump-log-kafka41-bootstrap-snapshot.txt", []string{"--cluster-metadata-decoder", "--files",
			filepath.Join(dir, "kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint")}},
		{"dump-log-kafka42-bootstrap-checkpoint.txt", []string{"--cluster-metadata-decoder", "--skip-record-metadata", "--files",
			filepath.Join(dir, "kafka42-single-static/bootstrap.checkpoint")}},
		{"dump-log-kafka39-deep.txt", []string{"--deep-iteration", "--max-bytes", "400", "--files",
			filepath.Join(dir, "kafka39-single-logstart/__cluster_metadata-0/00000000000000128356.log") + "," +
				filepath.Join(dir, "kafka39-single-logstart/bootstrap.checkpoint")}},
		{"dump-log-kafka35-snapshot.txt", []string{"--cluster-metadata-decoder", "--files",
			filepath.Join(dir, "kafka35-3node-static/kafka1/__cluster_metadata-0/00000000000000028869-0000000189.checkpoint")}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := mustSucceed(t, append([]string{"dump-log"}, tc.args...)...)
			if r.stderr != "" {
				t.Errorf("stderr %q", r.stderr)
			}
			checkGolden(t, tc.golden, relative(r.stdout, dir))
		})
	}
}

func TestDumpSnapshotGolden(t *testing.T) {
	dir := samplesDir(t)
	for _, tc := range []struct{ golden, file string }{
		{"dump-snapshot-kafka41-7206.txt", "kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint"},
		{"dump-snapshot-kafka41-bootstrap.txt", "kafka41-dynamic-bootstrap-nolog/bootstrap.checkpoint"},
		{"dump-snapshot-kafka42-12666.txt", "kafka42-single-static/__cluster_metadata-0/00000000000000012666-0000000003.checkpoint"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := mustSucceed(t, "dump-snapshot", filepath.Join(dir, tc.file))
			checkGolden(t, tc.golden, relative(r.stdout, dir))
		})
	}
}

// sampleFiles returns every segment and checkpoint of the samples.
func sampleFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(samplesDir(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".log") || strings.HasSuffix(path, ".checkpoint")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d sample files", len(files))
	}
	return files
}

func TestDumpEverySample(t *testing.T) {
	for _, f := range sampleFiles(t) {
		t.Run(strings.TrimPrefix(f, samplesDir(t)), func(t *testing.T) {
			r := mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--files", f)
			if r.stderr != "" {
				t.Errorf("stderr %q", r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if lines[0] != "Dumping "+f {
				t.Errorf("first line %q", lines[0])
			}
			batches, records := 0, 0
			for _, l := range lines[2:] {
				switch {
				case strings.HasPrefix(l, "baseOffset: "):
					batches++
					if !strings.HasSuffix(l, " isvalid: true") {
						t.Errorf("invalid batch: %s", l)
					}
				case strings.HasPrefix(l, "| offset: "):
					records++
					if strings.Contains(l, "Error at") || strings.Contains(l, "error:") || strings.Contains(l, "controlType:") {
						t.Errorf("undecoded record: %s", l)
					}
					if !strings.Contains(l, " payload: {\"type\":\"") && !strings.Contains(l, " SnapshotHeader {") &&
						!strings.Contains(l, " SnapshotFooter {") && !strings.Contains(l, " KRaftVersion {") &&
						!strings.Contains(l, " KRaftVoters {") && !strings.Contains(l, " LeaderChange: {") {
						t.Errorf("record line without a decoded record: %s", l)
					}
				default:
					t.Errorf("unexpected line: %s", l)
				}
			}
			if batches == 0 || records < batches {
				t.Errorf("%d batches, %d records", batches, records)
			}
			if strings.HasSuffix(f, ".checkpoint") {
				mustSucceed(t, "dump-snapshot", f)
			}
		})
	}
}

// copySample copies a sample file into a temporary directory under the
// same name and returns the copy's path and content.
func copySample(t *testing.T, rel string) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(samplesDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(rel))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// batchStarts returns the byte positions of the first n batches of data.
func batchStarts(data []byte, n int) []int {
	var out []int
	for pos := 0; len(out) < n && pos+12 <= len(data); {
		out = append(out, pos)
		pos += 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
	}
	return out
}

const kafka37Segment = "kafka37-single-static/__cluster_metadata-0/00000000000000000000.log"

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDumpLogCorruptFiles(t *testing.T) {
	t.Run("bad checksum", func(t *testing.T) {
		path, data := copySample(t, kafka37Segment)
		i := strings.Index(string(data), "Bootstrap records")
		data[i] = 'b' // inside batch 1 (the bootstrap transaction)
		writeFile(t, path, data)
		r := mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--max-bytes", "700", "--files", path)
		lines := strings.Split(r.stdout, "\n")
		invalid := 0
		for _, l := range lines {
			if strings.HasSuffix(l, "isvalid: false") {
				invalid++
				if !strings.Contains(l, "position: 91 ") {
					t.Errorf("invalid batch line %q, want the batch at position 91", l)
				}
			}
		}
		if invalid != 1 {
			t.Errorf("%d invalid batches, want 1:\n%s", invalid, r.stdout)
		}
		// The records of the damaged batch are still printed.
		if !strings.Contains(r.stdout, `payload: {"type":"BEGIN_TRANSACTION_RECORD","version":0,"data":{"name":"bootstrap records"}}`) ||
			!strings.Contains(r.stdout, "| offset: 6 ") {
			t.Errorf("records around the damaged batch are missing:\n%s", r.stdout)
		}
		if !strings.Contains(r.stderr, "damaged file") {
			t.Errorf("stderr %q, want a warning", r.stderr)
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		path, data := copySample(t, kafka37Segment)
		starts := batchStarts(data, 4)
		writeFile(t, path, data[:starts[3]+20])
		r := mustSucceed(t, "dump-log", "--files", path)
		want := "Found 20 invalid bytes at the end of 00000000000000000000.log\n"
		if !strings.HasSuffix(r.stdout, want) || strings.Count(r.stdout, "baseOffset:") != 3 {
			t.Errorf("stdout:\n%s\nwant 3 batches and %q", r.stdout, want)
		}
	})
	t.Run("bad length", func(t *testing.T) {
		path, data := copySample(t, kafka37Segment)
		starts := batchStarts(data, 2)
		binary.BigEndian.PutUint32(data[starts[1]+8:], 3)
		writeFile(t, path, data)
		r := mustSucceed(t, "dump-log", "--files", path)
		want := "Invalid batch at position 91: length out of bounds: batch length 3 below minimum 49\n" +
			"Found " + itoa(len(data)-91) + " invalid bytes at the end of 00000000000000000000.log\n"
		if !strings.HasSuffix(r.stdout, want) {
			t.Errorf("stdout ends:\n%s\nwant:\n%s", tail(r.stdout, 3), want)
		}
	})
	t.Run("undecodable records", func(t *testing.T) {
		path, data := copySample(t, kafka37Segment)
		starts := batchStarts(data, 2)
		data[starts[1]+61] = 0x7f // first record's length varint: far past the batch
		writeFile(t, path, data)
		r := mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--max-bytes", "400", "--files", path)
		if !strings.Contains(r.stdout, "isvalid: false\nCould not read the records of the batch at position 91: bad record") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "| offset: 5 ") {
			t.Errorf("the dump did not continue after the damaged batch:\n%s", r.stdout)
		}
	})
	t.Run("undecodable metadata record", func(t *testing.T) {
		path, data := copySample(t, "kafka42-single-static/bootstrap.checkpoint")
		// Rewrite the frame version of the first metadata record (value
		// byte 0) from 1 to 0 and fix the checksum, so that only the
		// metadata decoder objects.
		i := strings.Index(string(data), "\x01\x0c\x00\x11metadata.version")
		if i < 0 {
			t.Fatal("record not found")
		}
		data[i] = 0
		fixCRC(data, batchStarts(data, 2)[1])
		writeFile(t, path, data)
		r := mustSucceed(t, "dump-log", "--cluster-metadata-decoder", "--files", path)
		if !strings.Contains(r.stdout, "| offset: 1 CreateTime: 1775300160711 keySize: -1 valueSize: 23 sequence: -1 headerKeys: [] payload: Error at 1, skipping. ") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		mustFail(t, "record at offset 1", "dump-snapshot", path)
	})
	t.Run("dump-snapshot names the damage", func(t *testing.T) {
		path, data := copySample(t, "kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint")
		data[len(data)-1] ^= 1
		writeFile(t, path, data)
		mustFail(t, "crc mismatch", "dump-snapshot", path)
		r := mustSucceed(t, "dump-log", "--files", path)
		if strings.Count(r.stdout, "isvalid: false") != 1 {
			t.Errorf("stdout:\n%s", r.stdout)
		}
	})
}

func TestDumpBadInputs(t *testing.T) {
	dir := samplesDir(t)
	seg := filepath.Join(dir, kafka37Segment)
	mustFail(t, `required flag(s) "files" not set`, "dump-log")
	mustFail(t, "--files names no file", "dump-log", "--files", ",")
	mustFail(t, "--max-bytes -1: must not be negative", "dump-log", "--max-bytes", "-1", "--files", seg)
	mustFail(t, "not a metadata log file", "dump-log", "--files", seg+","+filepath.Join(dir, "kafka35-3node-static/kafka1/__cluster_metadata-0/00000000000000000000.index"))
	mustFail(t, "a log segment is named <20-digit base offset>.log", "dump-log", "--files", "foo.log")
	mustFail(t, "a snapshot is named <20-digit end offset>-<10-digit epoch>.checkpoint", "dump-log", "--files", "foo.checkpoint")
	mustFail(t, "no such file or directory", "dump-log", "--files", filepath.Join(t.TempDir(), "00000000000000000000.log"))
	mustFail(t, "accepts 1 arg(s), received 0", "dump-snapshot")
	mustFail(t, "not a snapshot", "dump-snapshot", seg)
	mustFail(t, "no such file or directory", "dump-snapshot", filepath.Join(t.TempDir(), "bootstrap.checkpoint"))
	r := mustSucceed(t, "dump-log", "--files", seg+","+seg, "--max-bytes", "100")
	if strings.Count(r.stdout, "Dumping "+seg) != 2 {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestDumpLogPrintDataLog(t *testing.T) {
	path := filepath.Join(samplesDir(t), "kafka42-single-static/bootstrap.checkpoint")
	r := mustSucceed(t, "dump-log", "--print-data-log", "--files", path)
	// Without a decoder the value is printed as text, as Kafka's default
	// decoder does; control records are still decoded.
	if !strings.Contains(r.stdout, "headerKeys: [] payload: \x01\x0c\x00\x11metadata.version\x00\x1d\x00\n") {
		t.Errorf("stdout:\n%q", r.stdout)
	}
	if !strings.Contains(r.stdout, `headerKeys: [] SnapshotFooter {"version":0}`) {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}
