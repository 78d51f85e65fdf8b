package vfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/vfs"
)

// newDir returns a MemFS holding the durable, empty directory /d.
func newDir(t *testing.T) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	mkdir(t, m, "/d")
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return m
}

// syncFile opens name, syncs it and closes it.
func syncFile(t *testing.T, fsys vfs.FS, name string) {
	t.Helper()
	f := mustOpen(t, fsys, name, os.O_RDONLY)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustClose(t, f)
}

func syncDir(t *testing.T, fsys vfs.FS, name string) {
	t.Helper()
	if err := fsys.SyncDir(name); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, fsys vfs.FS, name, s string) {
	t.Helper()
	f := mustOpen(t, fsys, name, os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	mustWrite(t, f, s)
	mustClose(t, f)
}

func wantMissing(t *testing.T, fsys vfs.FS, name string) {
	t.Helper()
	if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(%s) = %v, want fs.ErrNotExist", name, err)
	}
}

func TestCrashDropsUnsyncedWrites(t *testing.T) {
	m := newDir(t)
	appendFile(t, m, "/d/f", "synced")
	syncFile(t, m, "/d/f")
	syncDir(t, m, "/d")
	appendFile(t, m, "/d/f", "+unsynced")
	m.Crash(nil, vfs.CrashDropUnsynced)
	wantContent(t, m, "/d/f", "synced")
}

func TestCrashLosesFileWhoseDirectoryWasNotSynced(t *testing.T) {
	// fsync of a file does not make its name durable.
	m := newDir(t)
	appendFile(t, m, "/d/f", "data")
	syncFile(t, m, "/d/f")
	if got := m.ListDurable(); !slices.Equal(got, []string{"/d"}) {
		t.Errorf("ListDurable() = %q, want only /d", got)
	}
	m.Crash(nil, vfs.CrashDropUnsynced)
	wantMissing(t, m, "/d/f")
}

func TestCrashLosesSubtreeOfUnsyncedDirectory(t *testing.T) {
	m := newDir(t)
	mkdir(t, m, "/d/sub")
	appendFile(t, m, "/d/sub/f", "data")
	syncFile(t, m, "/d/sub/f")
	syncDir(t, m, "/d/sub") // the file is durable in sub, but sub is not durable in /d
	m.Crash(nil, vfs.CrashDropUnsynced)
	wantMissing(t, m, "/d/sub")
}

func TestCrashAtomicReplace(t *testing.T) {
	// The atomic-replace recipe: write tmp, Sync, Rename, SyncDir. Without
	// the final SyncDir a crash may bring the old file back; with it, never.
	for _, dirSynced := range []bool{false, true} {
		t.Run(fmt.Sprintf("dir synced %v", dirSynced), func(t *testing.T) {
			m := newDir(t)
			writeFile(t, m, "/d/state", "old")
			syncFile(t, m, "/d/state")
			syncDir(t, m, "/d")
			writeFile(t, m, "/d/state.tmp", "new")
			syncFile(t, m, "/d/state.tmp")
			if err := m.Rename("/d/state.tmp", "/d/state"); err != nil {
				t.Fatal(err)
			}
			want := "old"
			if dirSynced {
				syncDir(t, m, "/d")
				want = "new"
			}
			m.Crash(nil, vfs.CrashDropUnsynced)
			wantContent(t, m, "/d/state", want)
			wantMissing(t, m, "/d/state.tmp")
		})
	}
}

func TestCrashRenameIsAtomicWithinDirectory(t *testing.T) {
	// Whatever prefix survives, exactly one of the two names exists.
	seen := map[string]bool{}
	for seed := range uint64(64) {
		m := newDir(t)
		writeFile(t, m, "/d/a", "x")
		syncFile(t, m, "/d/a")
		syncDir(t, m, "/d")
		if err := m.Rename("/d/a", "/d/b"); err != nil {
			t.Fatal(err)
		}
		appendFile(t, m, "/d/c", "y") // a later entry operation, so prefixes vary
		m.Crash(rand.New(rand.NewPCG(seed, 0)), vfs.CrashKeepPrefix)
		got := fmt.Sprint(m.List())
		seen[got] = true
		if got != "[/d /d/a]" && got != "[/d /d/b]" && got != "[/d /d/b /d/c]" {
			t.Fatalf("seed %d: List() = %s, want a prefix of rename a→b, create c", seed, got)
		}
	}
	if len(seen) != 3 {
		t.Errorf("outcomes %v, want all three prefixes over 64 seeds", seen)
	}
}

func TestCrashRenameBetweenDirectoriesNeedsBothSynced(t *testing.T) {
	m := vfs.NewMem()
	mkdir(t, m, "/x")
	mkdir(t, m, "/y")
	syncDir(t, m, "/")
	writeFile(t, m, "/x/f", "data")
	syncFile(t, m, "/x/f")
	syncDir(t, m, "/x")
	if err := m.Rename("/x/f", "/y/f"); err != nil {
		t.Fatal(err)
	}
	syncDir(t, m, "/x") // the unlink is durable, the link in /y is not
	c := m.Clone()
	c.Crash(nil, vfs.CrashDropUnsynced)
	if got := c.List(); !slices.Equal(got, []string{"/x", "/y"}) {
		t.Errorf("after syncing only the old directory: List() = %q, want the file gone", got)
	}
	syncDir(t, m, "/y")
	m.Crash(nil, vfs.CrashDropUnsynced)
	wantContent(t, m, "/y/f", "data")
	wantMissing(t, m, "/x/f")

	if err := m.MkdirAll("/x/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Rename("/x/sub", "/y/sub"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("moving a directory to another parent = %v, want errors.ErrUnsupported", err)
	}
}

func TestCrashKeepPrefixOutcomes(t *testing.T) {
	// Three unsynced appends after a synced one: exactly the four in-order
	// prefixes may survive, and over enough seeds all of them do.
	want := []string{"0", "01", "012", "0123"}
	seen := map[string]bool{}
	for seed := range uint64(100) {
		m := newDir(t)
		appendFile(t, m, "/d/f", "0")
		syncFile(t, m, "/d/f")
		syncDir(t, m, "/d")
		for _, s := range []string{"1", "2", "3"} {
			appendFile(t, m, "/d/f", s)
		}
		m.Crash(rand.New(rand.NewPCG(seed, 0)), vfs.CrashKeepPrefix)
		got := readFile(t, m, "/d/f")
		if !slices.Contains(want, got) {
			t.Fatalf("seed %d: content %q, want one of %q", seed, got, want)
		}
		seen[got] = true
	}
	if len(seen) != len(want) {
		t.Errorf("outcomes %v, want all of %q over 100 seeds", seen, want)
	}
}

func TestCrashTearPrefixOutcomes(t *testing.T) {
	// One unsynced 4-byte append: the file keeps "s", or "s" plus a prefix
	// of "abcd", possibly zero-filled to the append's end. Over enough
	// seeds every outcome shows up.
	want := []string{
		"s", "sa", "sab", "sabc", "sabcd",
		"s\x00\x00\x00\x00", "sa\x00\x00\x00", "sab\x00\x00", "sabc\x00",
	}
	seen := map[string]bool{}
	for seed := range uint64(400) {
		m := newDir(t)
		appendFile(t, m, "/d/f", "s")
		syncFile(t, m, "/d/f")
		syncDir(t, m, "/d")
		appendFile(t, m, "/d/f", "abcd")
		m.Crash(rand.New(rand.NewPCG(seed, 0)), vfs.CrashTearPrefix)
		got := readFile(t, m, "/d/f")
		if !slices.Contains(want, got) {
			t.Fatalf("seed %d: content %q, want one of %q", seed, got, want)
		}
		seen[got] = true
	}
	if len(seen) != len(want) {
		t.Errorf("outcomes %q, want all of %q over 400 seeds", slices.Sorted(maps.Keys(seen)), want)
	}
}

func TestCrashReorderOutcomes(t *testing.T) {
	// Three unsynced appends after a synced "0": any subset may land, in
	// place, with zeros where a lost append extended the file under a
	// surviving later one. Over enough seeds all eight subsets show up.
	want := []string{
		"0", "01", "0\x002", "0\x00\x003", "012", "01\x003", "0\x0023", "0123",
	}
	seen := map[string]bool{}
	for seed := range uint64(200) {
		m := newDir(t)
		appendFile(t, m, "/d/f", "0")
		syncFile(t, m, "/d/f")
		syncDir(t, m, "/d")
		for _, s := range []string{"1", "2", "3"} {
			appendFile(t, m, "/d/f", s)
		}
		m.Crash(rand.New(rand.NewPCG(seed, 0)), vfs.CrashReorder)
		got := readFile(t, m, "/d/f")
		if !slices.Contains(want, got) {
			t.Fatalf("seed %d: content %q, want one of %q", seed, got, want)
		}
		seen[got] = true
	}
	if len(seen) != len(want) {
		t.Errorf("outcomes %q, want all of %q over 200 seeds", slices.Sorted(maps.Keys(seen)), want)
	}
}

func TestCrashTearKeepsOverwrittenBytes(t *testing.T) {
	// A torn overwrite inside the file never zeroes old bytes: each byte
	// is old or new.
	for seed := range uint64(100) {
		m := newDir(t)
		writeFile(t, m, "/d/f", "0123456789")
		syncFile(t, m, "/d/f")
		syncDir(t, m, "/d")
		f := mustOpen(t, m, "/d/f", os.O_RDWR)
		if _, err := f.WriteAt([]byte("abcd"), 3); err != nil {
			t.Fatal(err)
		}
		mustClose(t, f)
		m.Crash(rand.New(rand.NewPCG(seed, 0)), vfs.CrashTearPrefix)
		got := readFile(t, m, "/d/f")
		ok := len(got) == 10
		for i := 0; ok && i < 10; i++ {
			ok = got[i] == "0123456789"[i] || got[i] == "012abcd789"[i]
		}
		if !ok {
			t.Fatalf("seed %d: content %q, want each byte old or new", seed, got)
		}
	}
}

func TestCrashInvalidatesOpenFilesAndLocks(t *testing.T) {
	m := newDir(t)
	f := mustOpen(t, m, "/d/f", os.O_CREATE|os.O_RDWR)
	mustWrite(t, f, "x")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	syncDir(t, m, "/d")
	l, err := m.Lock("/d/.lock")
	if err != nil {
		t.Fatal(err)
	}
	m.Crash(nil, vfs.CrashDropUnsynced)

	_, err = f.Write([]byte("y"))
	wantPathErr(t, err, vfs.ErrCrashed)
	_, err = f.ReadAt(make([]byte, 1), 0)
	wantPathErr(t, err, vfs.ErrCrashed)
	wantPathErr(t, f.Sync(), vfs.ErrCrashed)

	// The lock file's name was never synced, so it is gone; the lock is
	// released either way, and closing the old lock must not release the
	// new one.
	l2, err := m.Lock("/d/.lock")
	if err != nil {
		t.Fatalf("Lock after crash = %v, want the crash to release it", err)
	}
	wantPathErr(t, l.Close(), vfs.ErrCrashed)
	_, err = m.Lock("/d/.lock")
	wantPathErr(t, err, vfs.ErrLocked)
	mustCloser(t, l2)
	wantContent(t, m, "/d/f", "x")
}

func TestCrashAfterCrashChangesNothing(t *testing.T) {
	m := randomWorkload(t, 7)
	m.Crash(rand.New(rand.NewPCG(7, 1)), vfs.CrashTearPrefix)
	before, list := m.Fingerprint(), m.List()
	m.Crash(rand.New(rand.NewPCG(8, 1)), vfs.CrashTearPrefix)
	if m.Fingerprint() != before || !slices.Equal(m.List(), list) {
		t.Error("a second crash with nothing pending changed the disk")
	}
}

// randomWorkload builds a MemFS with a seeded mix of synced and unsynced
// files, writes, truncates, renames and removals over two directories.
func randomWorkload(t *testing.T, seed uint64) *vfs.MemFS {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	m := vfs.NewMem()
	dirs := []string{"/a", "/b"}
	for _, d := range dirs {
		mkdir(t, m, d)
	}
	syncDir(t, m, "/")
	for range 200 {
		d := dirs[rng.IntN(len(dirs))]
		name := fmt.Sprintf("%s/f%d", d, rng.IntN(5))
		switch rng.IntN(7) {
		case 0, 1:
			f := mustOpen(t, m, name, os.O_CREATE|os.O_RDWR)
			b := make([]byte, 1+rng.IntN(100))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if _, err := f.WriteAt(b, int64(rng.IntN(300))); err != nil {
				t.Fatal(err)
			}
			mustClose(t, f)
		case 2:
			if _, err := m.Stat(name); err == nil {
				syncFile(t, m, name)
			}
		case 3:
			syncDir(t, m, d)
		case 4:
			if _, err := m.Stat(name); err == nil {
				f := mustOpen(t, m, name, os.O_RDWR)
				if err := f.Truncate(int64(rng.IntN(200))); err != nil {
					t.Fatal(err)
				}
				mustClose(t, f)
			}
		case 5:
			to := fmt.Sprintf("%s/f%d", dirs[rng.IntN(len(dirs))], rng.IntN(5))
			if _, err := m.Stat(name); err == nil {
				if err := m.Rename(name, to); err != nil {
					t.Fatal(err)
				}
			}
		case 6:
			if _, err := m.Stat(name); err == nil {
				if err := m.Remove(name); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return m
}

func TestCrashIsDeterministic(t *testing.T) {
	// Same state, same mode, same seed: same disk. Different seeds must
	// give different disks at least sometimes, or the check is vacuous.
	distinct := map[[32]byte]bool{}
	for seed := range uint64(8) {
		base := randomWorkload(t, 42)
		a, b := base.Clone(), base.Clone()
		a.Crash(rand.New(rand.NewPCG(seed, 9)), vfs.CrashTearPrefix)
		b.Crash(rand.New(rand.NewPCG(seed, 9)), vfs.CrashTearPrefix)
		if a.Fingerprint() != b.Fingerprint() {
			t.Fatalf("seed %d: two crashes of equal states differ", seed)
		}
		base.Crash(rand.New(rand.NewPCG(seed, 9)), vfs.CrashTearPrefix)
		if base.Fingerprint() != a.Fingerprint() {
			t.Fatalf("seed %d: crash of a clone differs from crash of the original", seed)
		}
		distinct[a.Fingerprint()] = true
	}
	if len(distinct) < 2 {
		t.Errorf("8 seeds gave %d distinct disks, want the seed to matter", len(distinct))
	}
}

func TestCloneIsIndependent(t *testing.T) {
	m := newDir(t)
	writeFile(t, m, "/d/f", "abc")
	c := m.Clone()
	appendFile(t, c, "/d/f", "def")
	writeFile(t, c, "/d/g", "new")
	wantContent(t, m, "/d/f", "abc")
	wantMissing(t, m, "/d/g")
	if err := c.CorruptStored("/d/f", 0, 1, 0xff); err == nil {
		t.Error("CorruptStored beyond the durable size succeeded")
	}
	// Pending state is copied: the clone can lose it too.
	c.Crash(nil, vfs.CrashDropUnsynced)
	wantMissing(t, c, "/d/f")
	wantContent(t, m, "/d/f", "abc")
}

func TestFingerprintCoversDurableStateOnly(t *testing.T) {
	m := newDir(t)
	fp := m.Fingerprint()
	writeFile(t, m, "/d/f", "abc")
	if m.Fingerprint() != fp {
		t.Error("an unsynced file changed the fingerprint")
	}
	syncFile(t, m, "/d/f")
	syncDir(t, m, "/d")
	fp2 := m.Fingerprint()
	if fp2 == fp {
		t.Error("a durable file did not change the fingerprint")
	}
	other := newDir(t)
	writeFile(t, other, "/d/f", "abc")
	syncFile(t, other, "/d/f")
	syncDir(t, other, "/d")
	if other.Fingerprint() != fp2 {
		t.Error("equal durable states, built apart, have different fingerprints")
	}
	if err := other.CorruptStored("/d/f", 1, 1, 0x01); err != nil {
		t.Fatal(err)
	}
	if other.Fingerprint() == fp2 {
		t.Error("a stored bit flip did not change the fingerprint")
	}
}

func TestInspect(t *testing.T) {
	m := newDir(t)
	appendFile(t, m, "/d/f", "abc")
	syncFile(t, m, "/d/f")
	appendFile(t, m, "/d/f", "de")
	st, err := m.Inspect("/d/f")
	want := vfs.FileState{Size: 5, DurableSize: 3, Unsynced: 1, DurableEntry: false}
	if err != nil || st != want {
		t.Errorf("Inspect = %+v, %v; want %+v", st, err, want)
	}
	syncDir(t, m, "/d")
	if st, _ := m.Inspect("/d/f"); !st.DurableEntry {
		t.Error("after SyncDir the entry is not durable")
	}
	if b, err := m.ReadDurable("/d/f"); string(b) != "abc" || err != nil {
		t.Errorf("ReadDurable = %q, %v; want abc", b, err)
	}
	if st, err := m.Inspect("/d"); err != nil || !st.Dir || !st.DurableEntry || st.Unsynced != 0 {
		t.Errorf("Inspect(/d) = %+v, %v", st, err)
	}
	_, err = m.Inspect("/d/missing")
	wantPathErr(t, err, fs.ErrNotExist)
	if got := m.List(); !slices.Equal(got, []string{"/d", "/d/f"}) {
		t.Errorf("List() = %q", got)
	}
}
