package logstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// TestScenarios runs the scripts in testdata/scenarios/: append, sync,
// crash, corrupt and reopen a log on a MemFS, printing segments, epochs
// and recovery reports. Regenerate with -rewrite and read the diff.
//
// Commands:
//
//	open [segment-bytes=N] [preallocate=N]  open (recover) the log; prints the report
//	append epoch=E [n=K] [records=R]  K leader appends of R-record batches
//	follower-append offset=O epoch=E  one batch stamped with O and E
//	sync                              prints the synced offset
//	checkpoint                        checkpoint the recovery point; prints it
//	crash [mode=drop|keep|tear] [seed=S]  kill the process and lose power
//	corrupt segment=I pos=P           flip a byte of segment I (durably)
//	remove file=NAME                  delete a file of the partition directory
//	truncate offset=O | advance offset=O
//	segments | epochs | end-offset epoch=E | read offset=O max=M | close
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		sc := &scenario{mem: vfs.NewMem(), opts: testOptions()}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return sc.run(t, d)
		})
	})
}

type scenario struct {
	mem  *vfs.MemFS
	opts Options
	l    *Log
	seq  int
}

func (sc *scenario) run(t *testing.T, d *datadriven.TestData) string {
	intArg := func(key string, def int64) int64 {
		if !d.HasArg(key) {
			return def
		}
		var v int64
		d.ScanArgs(t, key, &v)
		return v
	}
	switch d.Cmd {
	case "open":
		if d.HasArg("segment-bytes") {
			sc.opts.InternalSegmentBytes = intArg("segment-bytes", 0)
		}
		if d.HasArg("preallocate") {
			sc.opts.PreallocateBytes = intArg("preallocate", 0)
		}
		var buf strings.Builder
		l, rep, err := Open(sc.mem, testDir, sc.opts)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		sc.l = l
		fmt.Fprintf(&buf, "log [%d, %d) recovery-point %d batches %d\n", rep.LogStartOffset, rep.LogEndOffset, rep.RecoveryPoint, rep.Batches)
		if tr := rep.Truncation; tr != nil {
			fmt.Fprintf(&buf, "cut %s at byte %d offset %d, %d bytes dropped: %s\n", filepath.Base(tr.Segment), tr.Position, tr.Offset, tr.BytesDropped, tr.Reason)
		}
		if rep.ZeroTailBytes > 0 {
			fmt.Fprintf(&buf, "cut a zero tail of %d bytes\n", rep.ZeroTailBytes)
		}
		if len(rep.RebuiltFiles) > 0 {
			fmt.Fprintf(&buf, "rebuilt %s\n", strings.Join(rep.RebuiltFiles, " "))
		}
		if len(rep.RemovedFiles) > 0 {
			fmt.Fprintf(&buf, "removed %s\n", strings.Join(rep.RemovedFiles, " "))
		}
		return buf.String()
	case "append":
		epoch := int32(intArg("epoch", 1))
		var buf strings.Builder
		for range intArg("n", 1) {
			sc.seq++
			b := makeBatch(t, int(intArg("records", 1)), 100, sc.seq, int64(sc.seq))
			res, err := sc.l.AppendAsLeader(b, epoch)
			if err != nil {
				fmt.Fprintf(&buf, "error: %v\n", err)
				continue
			}
			fmt.Fprintf(&buf, "[%d, %d)\n", res.FirstOffset, res.NextOffset)
		}
		return buf.String()
	case "follower-append":
		sc.seq++
		b := makeBatch(t, 1, 100, sc.seq, int64(sc.seq))
		if err := recordbatch.Stamp(b, intArg("offset", 0), int32(intArg("epoch", 1))); err != nil {
			t.Fatal(err)
		}
		res, err := sc.l.AppendAsFollower(b)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("[%d, %d)\n", res.FirstOffset, res.NextOffset)
	case "sync":
		off, err := sc.l.Sync()
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("synced %d\n", off)
	case "checkpoint":
		rp, err := sc.l.CheckpointRecoveryPoint()
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("recovery point %d\n", rp)
	case "crash":
		mode := vfs.CrashDropUnsynced
		if d.HasArg("mode") {
			var m string
			d.ScanArgs(t, "mode", &m)
			mode = map[string]vfs.CrashMode{"drop": vfs.CrashDropUnsynced, "keep": vfs.CrashKeepPrefix, "tear": vfs.CrashTearPrefix}[m]
		}
		if sc.l != nil && !sc.l.closed {
			abandon(sc.l)
		}
		sc.mem.Crash(rand.New(rand.NewPCG(uint64(intArg("seed", 1)), 0)), mode)
		return ""
	case "corrupt":
		segs := sc.l.Segments()
		i := intArg("segment", 0)
		flipByteFS(t, sc.mem, segs[i].Path, intArg("pos", 0))
		return ""
	case "remove":
		var name string
		d.ScanArgs(t, "file", &name)
		return errOrOK(sc.mem.Remove(filepath.Join(testDir, name)))
	case "truncate":
		return errOrOK(sc.l.Truncate(intArg("offset", 0)))
	case "advance":
		return errOrOK(sc.l.AdvanceLogStart(intArg("offset", 0)))
	case "segments":
		var buf strings.Builder
		for _, s := range sc.l.Segments() {
			fmt.Fprintf(&buf, "%s [%d, %d) %d bytes\n", filepath.Base(s.Path), s.BaseOffset, s.NextOffset, s.Bytes)
		}
		fmt.Fprintf(&buf, "start %d end %d synced %d recovery-point %d\n", sc.l.LogStartOffset(), sc.l.LogEndOffset(), sc.l.SyncedOffset(), sc.l.RecoveryPoint())
		return buf.String()
	case "epochs":
		return string(EncodeLeaderEpochCheckpoint(sc.l.EpochEntries()))
	case "end-offset":
		r := sc.l.EndOffsetForEpoch(int32(intArg("epoch", 0)))
		return fmt.Sprintf("offset %d epoch %d\n", r.Offset, r.Epoch)
	case "read":
		r, err := sc.l.Read(intArg("offset", 0), int(intArg("max", 1)))
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("[%d, %d) %d bytes\n", r.FirstOffset, r.NextOffset, len(r.Batches))
	case "close":
		return errOrOK(sc.l.Close())
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

func errOrOK(err error) string {
	if err != nil {
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return "corruption: " + ce.Error() + "\n"
		}
		return "error: " + err.Error() + "\n"
	}
	return "ok\n"
}

// flipByteFS flips a byte of a file and syncs it.
func flipByteFS(t *testing.T, fsys vfs.FS, path string, pos int64) {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
