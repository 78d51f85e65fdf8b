package logstore

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// envChildDir names the environment variable that turns
// TestKillChildProcess into the child of TestKill9: it holds the log
// directory.
const envChildDir = "KRABKA_LOGSTORE_KILL_CHILD_DIR"

// childBatch is the batch the child appends at offset off: its content is
// a function of off, so the parent can rebuild it.
func childBatch(t testing.TB, off int64) []byte {
	b := makeBatch(t, 1+int(off%3), 50+int(off%200), int(off), off)
	if err := recordbatch.Stamp(b, off, 1); err != nil {
		t.Fatal(err)
	}
	return b
}

func childOptions() Options {
	o := DefaultOptions()
	o.InternalSegmentBytes = 64 << 10
	return o
}

// TestKillChildProcess is the child of TestKill9. It appends and syncs
// batches forever, printing "synced <offset>" after every successful sync,
// until it is killed.
func TestKillChildProcess(t *testing.T) {
	dir := os.Getenv(envChildDir)
	if dir == "" {
		t.Skip("child process of TestKill9 only")
	}
	l, _, err := Open(vfs.OS(), dir, childOptions())
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		off := l.LogEndOffset()
		if _, err := l.AppendAsLeader(childBatch(t, off), 1); err != nil {
			fmt.Fprintf(out, "error %v\n", err)
			out.Flush()
			os.Exit(3)
		}
		synced, err := l.Sync()
		if err != nil {
			fmt.Fprintf(out, "error %v\n", err)
			out.Flush()
			os.Exit(3)
		}
		fmt.Fprintf(out, "synced %d\n", synced)
		out.Flush()
	}
}

// TestKill9 runs the child above, kills it with SIGKILL at a random moment
// (after a random number of reported syncs), reopens the directory and
// checks that every offset the child reported as synced is there with the
// same bytes. 50 rounds share one directory.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes; skipped with -short")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KRABKA_KILL9_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with KRABKA_KILL9_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	var maxSynced int64
	for round := range 50 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChildDir+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		killAfter := rng.IntN(40)
		lines := 0
		var roundMax int64 = -1
		killed := false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "error") {
				t.Fatalf("round %d: child: %s", round, line)
			}
			if off, ok := strings.CutPrefix(line, "synced "); ok {
				n, err := strconv.ParseInt(off, 10, 64)
				if err != nil {
					t.Fatalf("round %d: bad line %q", round, line)
				}
				roundMax = max(roundMax, n)
				lines++
			}
			if lines >= killAfter && !killed {
				// Let the child run on for a random moment (up to
				// 0.5 ms), so the kill lands anywhere in append or sync.
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		_ = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child exited before being killed", round)
		}
		if roundMax >= 0 {
			maxSynced = max(maxSynced, roundMax)
		}
		// Everything ever reported synced must be there, byte for byte.
		l, rep, err := Open(vfs.OS(), dir, childOptions())
		if err != nil {
			t.Fatalf("round %d (seed %d): reopen: %v", round, seed, err)
		}
		if l.LogEndOffset() < maxSynced {
			t.Fatalf("round %d (seed %d): LEO %d below reported synced offset %d (report %+v)", round, seed, l.LogEndOffset(), maxSynced, rep)
		}
		for off := int64(0); off < maxSynced; {
			got := batchAt(t, l, off)
			if want := childBatch(t, off); !bytes.Equal(got, want) {
				t.Fatalf("round %d (seed %d): batch at %d differs from the one the child wrote", round, seed, off)
			}
			h, _ := recordbatch.PeekHeader(got)
			off = h.NextOffset()
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("50 rounds, %d offsets synced", maxSynced)
}
