package snapshot

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// allOps are the operations a crash test stops at.
const allOps = vfs.OpOpen | vfs.OpWrite | vfs.OpTruncate | vfs.OpSync | vfs.OpSyncDir | vfs.OpRename | vfs.OpRemove | vfs.OpMkdir

// stopAfter makes every file-system operation after the first k fail
// with EIO, as if the machine had stopped there: what the program did up
// to that point is exactly what a crash then sees. It returns a function
// reporting whether the stop was reached.
func stopAfter(m *vfs.MemFS, k int) func() bool {
	calls := 0
	m.InjectFault(vfs.Fault{Ops: allOps, Err: syscall.EIO, Count: vfs.Forever, Match: func(string) bool {
		calls++
		return calls > k
	}})
	return func() bool { return calls > k }
}

// checkAfterCrash crashes m in every mode with several seeds and checks
// invariant S5 in docs/reliability.md: a file under the final name is the
// complete snapshot (it opens and holds exactly vals), and it is there
// whenever the write had been acknowledged.
func checkAfterCrash(t *testing.T, m *vfs.MemFS, dir string, id kraft.OffsetAndEpoch, vals [][]byte, acked bool, step int) {
	t.Helper()
	for _, mode := range []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashTearPrefix, vfs.CrashReorder} {
		for seed := range uint64(4) {
			c := m.Clone()
			c.ClearFaults()
			c.Crash(rand.New(rand.NewPCG(seed, uint64(step))), mode)
			l, err := Recover(c, dir)
			if err != nil {
				t.Fatalf("step %d %v seed %d: Recover: %v", step, mode, seed, err)
			}
			if len(l.Snapshots) == 0 {
				if acked {
					t.Fatalf("step %d %v seed %d: acknowledged snapshot lost", step, mode, seed)
				}
				continue
			}
			if len(l.Snapshots) != 1 || l.Snapshots[0].ID != id {
				t.Fatalf("step %d %v seed %d: snapshots %+v", step, mode, seed, l.Snapshots)
			}
			_, got, err := readAll(c, dir+"/"+FileName(id))
			if err != nil {
				t.Fatalf("step %d %v seed %d: torn snapshot under the final name: %v", step, mode, seed, err)
			}
			if !slices.EqualFunc(got, vals, bytes.Equal) {
				t.Fatalf("step %d %v seed %d: snapshot holds %d records, want %d", step, mode, seed, len(got), len(vals))
			}
		}
	}
}

// TestWriterCrashAtEveryStep stops the machine after each file-system
// operation of writing a snapshot (open, each batch write, sync, close,
// rename, directory sync) and crashes it every way MemFS can: the
// directory then holds no snapshot or the complete one, never a torn
// .checkpoint, and a snapshot whose Freeze returned nil is always there.
func TestWriterCrashAtEveryStep(t *testing.T) {
	const dir = "/logs/__cluster_metadata-0"
	id := kraft.OffsetAndEpoch{Offset: 500, Epoch: 4}
	vals := testValues(40)
	h := Header{LastContainedLogTimestamp: 77, KRaftVersion: 1, Voters: testVoters()}
	for k := 0; ; k++ {
		m := vfs.NewMem()
		mkdirDurable(t, m, dir)
		stopped := stopAfter(m, k)
		acked := func() bool {
			w, err := Create(m, dir, id, uint64(k), h, 1, WriterOptions{MaxBatchRecords: 8})
			if err != nil {
				return false
			}
			for i := 0; i < len(vals); i += 10 {
				if err := w.Append(2, vals[i:i+10]...); err != nil {
					_ = w.Abort()
					return false
				}
			}
			return w.Freeze(3) == nil
		}()
		checkAfterCrash(t, m, dir, id, vals, acked, k)
		if !stopped() {
			if !acked {
				t.Fatal("write failed without an injected fault")
			}
			t.Logf("checked a stop after each of %d operations", k)
			return
		}
	}
}

// TestDownloadCrashAtEveryStep does the same for a follower's download:
// chunks written, fsync, verification, rename, directory sync.
func TestDownloadCrashAtEveryStep(t *testing.T) {
	const dir = "/logs/__cluster_metadata-0"
	id := kraft.OffsetAndEpoch{Offset: 500, Epoch: 4}
	vals := testValues(40)
	src := vfs.NewMem()
	data := writeSnapshot(t, src, "/leader", id, Header{LastContainedLogTimestamp: 9}, vals, 1024, WriterOptions{})
	for k := 0; ; k++ {
		m := vfs.NewMem()
		mkdirDurable(t, m, dir)
		stopped := stopAfter(m, k)
		acked := func() bool {
			d, err := NewDownload(m, dir, id, 1, DownloadOptions{})
			if err != nil {
				return false
			}
			for pos := 0; pos < len(data); pos += 300 {
				if err := d.Write(int64(pos), int64(len(data)), data[pos:min(pos+300, len(data))]); err != nil {
					_ = d.Abort()
					return false
				}
			}
			return d.Install() == nil
		}()
		checkAfterCrash(t, m, dir, id, vals, acked, k)
		if !stopped() {
			if !acked {
				t.Fatal("download failed without an injected fault")
			}
			return
		}
	}
}

// TestStopAfterCountsOperations makes sure the crash tests above really
// stop inside the write and not only before or after it.
func TestStopAfterCountsOperations(t *testing.T) {
	m := vfs.NewMem()
	mkdirDurable(t, m, "/d")
	stopped := stopAfter(m, 1)
	w, err := Create(m, "/d", kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, 1, Header{}, 0, WriterOptions{})
	if !errors.Is(err, syscall.EIO) || w != nil || !stopped() {
		t.Fatalf("Create after one operation: %v", err)
	}
}

// TestDeleteCrashAtEveryStep stops the machine after each operation of
// Store.Delete (rename to .deleted, directory sync, removal): after a
// crash and Recover the snapshot is either complete or gone, and gone
// whenever Delete had returned.
func TestDeleteCrashAtEveryStep(t *testing.T) {
	const dir = "/d"
	id := kraft.OffsetAndEpoch{Offset: 500, Epoch: 4}
	vals := testValues(10)
	for k := 0; ; k++ {
		m := vfs.NewMem()
		writeSnapshot(t, m, dir, id, Header{}, vals, 10, WriterOptions{})
		stopped := stopAfter(m, k)
		_, err := NewStore(m, dir).Delete(id)
		for _, mode := range []vfs.CrashMode{vfs.CrashDropUnsynced, vfs.CrashKeepPrefix, vfs.CrashReorder} {
			c := m.Clone()
			c.ClearFaults()
			c.Crash(rand.New(rand.NewPCG(uint64(k), 9)), mode)
			l, rerr := Recover(c, dir)
			if rerr != nil {
				t.Fatal(rerr)
			}
			switch {
			case len(l.Snapshots) == 0:
			case err == nil:
				t.Fatalf("step %d %v: deleted snapshot came back", k, mode)
			default:
				if _, got, rerr := readAll(c, dir+"/"+FileName(id)); rerr != nil || len(got) != len(vals) {
					t.Fatalf("step %d %v: snapshot damaged: %v", k, mode, rerr)
				}
			}
		}
		if !stopped() {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}
