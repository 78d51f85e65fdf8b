package vfs_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/krabka-go/krabka/internal/vfs"
)

// A process killed with pending writes leaves on disk exactly what it
// synced; until then every handle of the file, and Stat, see the pending
// writes.
func TestWriteBackKillLosesUnsynced(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "seg")
	w := vfs.WriteBack(vfs.OS())
	f := mustOpen(t, w, name, os.O_CREATE|os.O_RDWR)
	mustWrite(t, f, "synced|")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "pending")
	if _, err := f.WriteAt([]byte("S"), 0); err != nil {
		t.Fatal(err)
	}

	r := mustOpen(t, w, name, os.O_RDONLY)
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "Synced|pending" {
		t.Errorf("second handle reads %q, %v; want the pending writes too", got, err)
	}
	mustClose(t, r)
	if fi, err := w.Stat(name); err != nil || fi.Size() != int64(len("Synced|pending")) {
		t.Errorf("Stat = %v, %v; want the pending size", fi, err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "synced|" {
		t.Errorf("the disk holds %q, %v before Sync; want only the synced bytes", b, err)
	}

	// The kill: the process is gone without closing f, so a new process
	// (a new layer) reads the disk.
	w2 := vfs.WriteBack(vfs.OS())
	wantContent(t, w2, name, "synced|")

	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "Synced|pending" {
		t.Errorf("after Sync the disk holds %q, %v", b, err)
	}
	mustClose(t, f)
}

// Pending writes and truncates belong to the file: a rename keeps them,
// Close hands them to the operating system, a truncate hides what lay
// beyond it.
func TestWriteBackRenameTruncateClose(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tmp"), filepath.Join(dir, "a")
	w := vfs.WriteBack(vfs.OS())
	f := mustOpen(t, w, a, os.O_CREATE|os.O_RDWR)
	mustWrite(t, f, "abcdef")
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	wantContent(t, w, b, "ab\x00\x00")
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("old name still there: %v", err)
	}
	mustClose(t, f)
	if got, err := os.ReadFile(b); err != nil || string(got) != "ab\x00\x00" {
		t.Errorf("after Close the disk holds %q, %v", got, err)
	}
}
