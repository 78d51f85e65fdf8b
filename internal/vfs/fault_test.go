package vfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/krabka-go/krabka/internal/vfs"
)

func TestSyncEIOLosesTheDataForGood(t *testing.T) {
	// Linux after a writeback error: the failed fsync's data may be gone
	// from the disk while reads still see it, and a later fsync that
	// returns nil does not bring it back. Only writes after the failure
	// are made durable by that later fsync.
	m := newDir(t)
	f := mustOpen(t, m, "/d/f", os.O_CREATE|os.O_RDWR)
	mustWrite(t, f, "aa")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	syncDir(t, m, "/d")
	mustWrite(t, f, "bb")
	m.InjectFault(vfs.Fault{Ops: vfs.OpSync, Err: syscall.EIO, Count: 1})
	err := f.Sync()
	wantPathErr(t, err, syscall.EIO)
	wantContent(t, m, "/d/f", "aabb") // still visible
	if err := f.Sync(); err != nil {
		t.Fatalf("second Sync = %v, want nil (and no durability)", err)
	}
	if b, _ := m.ReadDurable("/d/f"); string(b) != "aa" {
		t.Errorf("durable after the retried Sync = %q, want aa", b)
	}
	mustWrite(t, f, "cc")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustClose(t, f)
	m.Crash(nil, vfs.CrashDropUnsynced)
	// The lost bytes read back as zeros: size came with the later write.
	wantContent(t, m, "/d/f", "aa\x00\x00cc")
}

func TestSyncDirEIOLosesTheEntries(t *testing.T) {
	m := newDir(t)
	writeFile(t, m, "/d/f", "x")
	syncFile(t, m, "/d/f")
	m.InjectFault(vfs.Fault{Ops: vfs.OpSyncDir, Err: syscall.EIO, Count: 1})
	wantPathErr(t, m.SyncDir("/d"), syscall.EIO)
	syncDir(t, m, "/d")
	m.Crash(nil, vfs.CrashDropUnsynced)
	wantMissing(t, m, "/d/f")
}

func TestWriteENOSPCShortWrite(t *testing.T) {
	m := newDir(t)
	m.InjectFault(vfs.Fault{Ops: vfs.OpWrite, Err: syscall.ENOSPC, Count: 1, ShortWrite: 3})
	f := mustOpen(t, m, "/d/f", os.O_CREATE|os.O_RDWR)
	defer f.Close()
	n, err := f.Write([]byte("abcdef"))
	if n != 3 {
		t.Errorf("short Write wrote %d bytes, want 3", n)
	}
	wantPathErr(t, err, syscall.ENOSPC)
	if off, _ := f.Seek(0, io.SeekCurrent); off != 3 {
		t.Errorf("offset after the short write = %d, want 3", off)
	}
	mustWrite(t, f, "gh") // the fault was used up
	wantContent(t, m, "/d/f", "abcgh")

	m.InjectFault(vfs.Fault{Ops: vfs.OpWrite, Err: syscall.ENOSPC, Count: 1, ShortWrite: 100})
	if n, err := f.WriteAt([]byte("xy"), 0); n != 2 || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("WriteAt with ShortWrite beyond its length = %d, %v; want 2, ENOSPC", n, err)
	}
}

func TestFaultCountAndMatch(t *testing.T) {
	m := newDir(t)
	writeFile(t, m, "/d/log", "x")
	writeFile(t, m, "/d/other", "x")
	m.InjectFault(vfs.Fault{
		Ops:   vfs.OpOpen | vfs.OpRename,
		Match: func(p string) bool { return strings.HasSuffix(p, "/log") },
		Err:   syscall.EIO,
		Count: 2,
	})
	if _, err := m.OpenFile("/d/other", os.O_RDONLY, 0); err != nil {
		t.Errorf("open of a non-matching path = %v", err)
	}
	_, err := m.OpenFile("d/./log", os.O_RDONLY, 0) // cleaned before matching
	wantPathErr(t, err, syscall.EIO)
	err = m.Rename("/d/other", "/d/log") // the new name matches
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(err, syscall.EIO) {
		t.Errorf("Rename onto a matching path = %v, want *os.LinkError with EIO", err)
	}
	if _, err := m.OpenFile("/d/log", os.O_RDONLY, 0); err != nil {
		t.Errorf("open after the count ran out = %v", err)
	}

	m.InjectFault(vfs.Fault{Ops: vfs.OpRemove | vfs.OpMkdir | vfs.OpTruncate | vfs.OpRead, Err: syscall.EIO, Count: vfs.Forever})
	for range 3 {
		wantPathErr(t, m.Remove("/d/other"), syscall.EIO)
	}
	wantPathErr(t, m.MkdirAll("/d/x", 0o755), syscall.EIO)
	f := mustOpen(t, m, "/d/log", os.O_RDWR)
	defer f.Close()
	wantPathErr(t, f.Truncate(0), syscall.EIO)
	_, err = f.Read(make([]byte, 1))
	wantPathErr(t, err, syscall.EIO)
	m.ClearFaults()
	if err := m.Remove("/d/other"); err != nil {
		t.Errorf("Remove after ClearFaults = %v", err)
	}
}

func TestInjectFaultRejectsMalformedFaults(t *testing.T) {
	for name, f := range map[string]vfs.Fault{
		"no ops":   {Err: syscall.EIO, Count: 1},
		"no error": {Ops: vfs.OpSync, Count: 1},
		"no count": {Ops: vfs.OpSync, Err: syscall.EIO},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("InjectFault did not panic")
				}
			}()
			vfs.NewMem().InjectFault(f)
		})
	}
}

func TestCorruptReads(t *testing.T) {
	m := newDir(t)
	writeFile(t, m, "/d/f", "abcdef")
	if err := m.CorruptReads("/d/f", 2, 2, 0x20); err != nil {
		t.Fatal(err)
	}
	wantContent(t, m, "/d/f", "abCDef")
	f := mustOpen(t, m, "/d/f", os.O_RDONLY)
	defer f.Close()
	buf := make([]byte, 2)
	if _, err := f.ReadAt(buf, 3); err != nil || string(buf) != "De" {
		t.Errorf("ReadAt overlapping the range = %q, %v; want De", buf, err)
	}
	// The stored bytes are intact, and the corruption follows the file.
	syncFile(t, m, "/d/f")
	if b, _ := m.ReadDurable("/d/f"); string(b) != "abcdef" {
		t.Errorf("durable content = %q, want it untouched", b)
	}
	if err := m.Rename("/d/f", "/d/g"); err != nil {
		t.Fatal(err)
	}
	wantContent(t, m, "/d/g", "abCDef")
	m.ClearFaults()
	wantContent(t, m, "/d/g", "abcdef")

	err := m.CorruptReads("/d/missing", 0, 1, 1)
	wantPathErr(t, err, fs.ErrNotExist)
}

func TestCorruptStored(t *testing.T) {
	m := newDir(t)
	writeFile(t, m, "/d/f", "abcdef")
	if err := m.CorruptStored("/d/f", 0, 1, 0x01); err == nil {
		t.Error("CorruptStored of bytes that are not durable succeeded")
	}
	syncFile(t, m, "/d/f")
	syncDir(t, m, "/d")
	if err := m.CorruptStored("/d/f", 5, 1, 0x20); err != nil {
		t.Fatal(err)
	}
	wantContent(t, m, "/d/f", "abcdeF")
	m.ClearFaults() // stored corruption is not a fault to clear
	m.Crash(nil, vfs.CrashDropUnsynced)
	wantContent(t, m, "/d/f", "abcdeF")
}

func TestCorruptionRejectsNoOps(t *testing.T) {
	m := newDir(t)
	writeFile(t, m, "/d/f", "abc")
	defer func() {
		if recover() == nil {
			t.Error("CorruptReads with mask 0 did not panic")
		}
	}()
	_ = m.CorruptReads("/d/f", 0, 1, 0)
}

func TestReadFaultOnByteRange(t *testing.T) {
	// A latent sector error: only reads touching bytes [4, 6) fail.
	m := newDir(t)
	writeFile(t, m, "/d/f", "0123456789")
	m.InjectFault(vfs.Fault{Ops: vfs.OpRead | vfs.OpRemove, Err: syscall.EIO, Count: vfs.Forever, Off: 4, Len: 2})
	f := mustOpen(t, m, "/d/f", os.O_RDONLY)
	defer f.Close()
	for _, c := range []struct {
		off, n int64
		fail   bool
	}{{0, 4, false}, {6, 4, false}, {3, 2, true}, {5, 1, true}, {0, 10, true}} {
		_, err := f.ReadAt(make([]byte, c.n), c.off)
		if failed := errors.Is(err, syscall.EIO); failed != c.fail {
			t.Errorf("ReadAt(off %d, %d bytes) = %v, want failure %v", c.off, c.n, err, c.fail)
		}
	}
	if err := m.Remove("/d/f"); err != nil {
		t.Errorf("a ranged fault matched Remove: %v", err)
	}
}

func TestClearFaultsReachesRemovedFiles(t *testing.T) {
	// A handle can outlive its name; ClearFaults must still clean it.
	m := newDir(t)
	writeFile(t, m, "/d/f", "abc")
	f := mustOpen(t, m, "/d/f", os.O_RDONLY)
	defer f.Close()
	if err := m.CorruptReads("/d/f", 0, 1, 0x20); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("/d/f"); err != nil {
		t.Fatal(err)
	}
	m.ClearFaults()
	buf := make([]byte, 3)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "abc" {
		t.Errorf("ReadAt after ClearFaults = %q, %v; want abc", buf, err)
	}
}
