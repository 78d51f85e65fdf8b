package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/krabka-go/krabka/internal/vfs"
)

// conformanceCases run against both OS and MemFS, so MemFS cannot drift
// from what the kernel does. Each case gets an empty, durable directory.
var conformanceCases = []struct {
	name string
	run  func(t *testing.T, fsys vfs.FS, dir string)
}{
	{"create write seek read stat", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		f := mustOpen(t, fsys, name, os.O_CREATE|os.O_RDWR)
		if f.Name() != name {
			t.Errorf("Name() = %q, want %q", f.Name(), name)
		}
		mustWrite(t, f, "hello world")
		if off, err := f.Seek(0, io.SeekStart); off != 0 || err != nil {
			t.Fatalf("Seek(0, start) = %d, %v", off, err)
		}
		got, err := io.ReadAll(f)
		if string(got) != "hello world" || err != nil {
			t.Errorf("ReadAll = %q, %v; want hello world", got, err)
		}
		if n, err := f.Read(make([]byte, 4)); n != 0 || err != io.EOF {
			t.Errorf("Read at end = %d, %v; want 0, io.EOF", n, err)
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() != 11 || fi.Name() != "a" || fi.IsDir() {
			t.Errorf("File.Stat = %v, %v; want a regular file a of 11 bytes", fi, err)
		}
		fi, err = fsys.Stat(name)
		if err != nil || fi.Size() != 11 || fi.IsDir() {
			t.Errorf("FS.Stat = %v, %v; want 11 bytes", fi, err)
		}
		mustClose(t, f)
	}},
	{"open missing without O_CREATE", func(t *testing.T, fsys vfs.FS, dir string) {
		_, err := fsys.OpenFile(filepath.Join(dir, "missing"), os.O_RDONLY, 0)
		wantPathErr(t, err, fs.ErrNotExist)
		_, err = fsys.OpenFile(filepath.Join(dir, "nodir", "x"), os.O_CREATE|os.O_RDWR, 0o644)
		wantPathErr(t, err, fs.ErrNotExist)
	}},
	{"O_EXCL on an existing file", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		mustClose(t, mustOpen(t, fsys, name, os.O_CREATE|os.O_EXCL|os.O_WRONLY))
		_, err := fsys.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		wantPathErr(t, err, fs.ErrExist)
	}},
	{"O_TRUNC empties the file", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fsys, name, "0123456789")
		f := mustOpen(t, fsys, name, os.O_RDWR|os.O_TRUNC)
		mustWrite(t, f, "ab")
		mustClose(t, f)
		wantContent(t, fsys, name, "ab")
	}},
	{"O_APPEND writes at the end and refuses WriteAt", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fsys, name, "abc")
		f := mustOpen(t, fsys, name, os.O_RDWR|os.O_APPEND)
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, f, "def")
		if _, err := f.WriteAt([]byte("x"), 0); err == nil {
			t.Error("WriteAt on an O_APPEND file succeeded, want an error")
		}
		mustClose(t, f)
		wantContent(t, fsys, name, "abcdef")
	}},
	{"ReadAt at and past the end", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fsys, name, "abcdef")
		f := mustOpen(t, fsys, name, os.O_RDONLY)
		defer f.Close()
		buf := make([]byte, 4)
		if n, err := f.ReadAt(buf, 4); n != 2 || err != io.EOF || string(buf[:n]) != "ef" {
			t.Errorf("ReadAt(4, 4 bytes) = %d %q, %v; want 2 \"ef\", io.EOF", n, buf[:n], err)
		}
		if n, err := f.ReadAt(buf, 100); n != 0 || err != io.EOF {
			t.Errorf("ReadAt(100) = %d, %v; want 0, io.EOF", n, err)
		}
		if n, err := f.ReadAt(buf, 1); n != 4 || err != nil || string(buf) != "bcde" {
			t.Errorf("ReadAt(1) = %d %q, %v; want 4 \"bcde\", nil", n, buf, err)
		}
		if _, err := f.ReadAt(buf, -1); err == nil {
			t.Error("ReadAt(-1) succeeded, want an error")
		}
	}},
	{"WriteAt past the end zero-fills the gap", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		f := mustOpen(t, fsys, name, os.O_CREATE|os.O_RDWR)
		if n, err := f.WriteAt([]byte("xy"), 3); n != 2 || err != nil {
			t.Fatalf("WriteAt = %d, %v", n, err)
		}
		mustClose(t, f)
		wantContent(t, fsys, name, "\x00\x00\x00xy")
	}},
	{"Seek whence and bounds", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fsys, name, "abcdef")
		f := mustOpen(t, fsys, name, os.O_RDWR)
		defer f.Close()
		for _, c := range []struct {
			off    int64
			whence int
			want   int64
		}{{-2, io.SeekEnd, 4}, {1, io.SeekCurrent, 5}, {2, io.SeekStart, 2}, {10, io.SeekStart, 10}} {
			if got, err := f.Seek(c.off, c.whence); got != c.want || err != nil {
				t.Errorf("Seek(%d, %d) = %d, %v; want %d", c.off, c.whence, got, err, c.want)
			}
		}
		if _, err := f.Seek(-1, io.SeekStart); err == nil {
			t.Error("Seek(-1, start) succeeded, want an error")
		}
		if _, err := f.Seek(2, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2)
		if _, err := io.ReadFull(f, buf); err != nil || string(buf) != "cd" {
			t.Errorf("read after Seek(2) = %q, %v; want cd", buf, err)
		}
	}},
	{"Truncate shrinks and zero-extends", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fsys, name, "abcdef")
		f := mustOpen(t, fsys, name, os.O_RDWR)
		if err := f.Truncate(2); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(4); err != nil {
			t.Fatal(err)
		}
		mustClose(t, f)
		wantContent(t, fsys, name, "ab\x00\x00")
	}},
	{"Rename over an existing file", func(t *testing.T, fsys vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		writeFile(t, fsys, a, "new")
		writeFile(t, fsys, b, "old")
		if err := fsys.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		wantContent(t, fsys, b, "new")
		_, err := fsys.Stat(a)
		wantPathErr(t, err, fs.ErrNotExist)
	}},
	{"Rename errors", func(t *testing.T, fsys vfs.FS, dir string) {
		err := fsys.Rename(filepath.Join(dir, "missing"), filepath.Join(dir, "b"))
		var le *os.LinkError
		if !errors.As(err, &le) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Rename(missing) = %v, want *os.LinkError with fs.ErrNotExist", err)
		}
		writeFile(t, fsys, filepath.Join(dir, "f"), "x")
		mkdir(t, fsys, filepath.Join(dir, "d", "sub"))
		err = fsys.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "d"))
		if !errors.As(err, &le) || !errors.Is(err, fs.ErrExist) {
			t.Errorf("Rename(file, dir) = %v, want *os.LinkError with fs.ErrExist", err)
		}
		mkdir(t, fsys, filepath.Join(dir, "e"))
		err = fsys.Rename(filepath.Join(dir, "e"), filepath.Join(dir, "d", "sub"))
		if !errors.As(err, &le) || !errors.Is(err, fs.ErrExist) {
			t.Errorf("Rename(dir, empty dir) = %v, want *os.LinkError with fs.ErrExist", err)
		}
		err = fsys.Rename(filepath.Join(dir, "e"), filepath.Join(dir, "f"))
		if !errors.As(err, &le) || !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("Rename(dir, file) = %v, want ENOTDIR", err)
		}
		if err := fsys.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "f")); err != nil {
			t.Errorf("Rename(f, f) = %v, want nil", err)
		}
	}},
	{"Remove files and directories", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fsys, name, "x")
		if err := fsys.Remove(name); err != nil {
			t.Fatal(err)
		}
		wantPathErr(t, fsys.Remove(name), fs.ErrNotExist)
		mkdir(t, fsys, filepath.Join(dir, "d", "sub"))
		wantPathErr(t, fsys.Remove(filepath.Join(dir, "d")), syscall.ENOTEMPTY)
		if err := fsys.Remove(filepath.Join(dir, "d", "sub")); err != nil {
			t.Errorf("Remove(empty dir) = %v", err)
		}
		if err := fsys.Remove(filepath.Join(dir, "d")); err != nil {
			t.Errorf("Remove(emptied dir) = %v", err)
		}
	}},
	{"ReadDir is sorted", func(t *testing.T, fsys vfs.FS, dir string) {
		for _, n := range []string{"c", "a", "b10", "b2"} {
			writeFile(t, fsys, filepath.Join(dir, n), n)
		}
		mkdir(t, fsys, filepath.Join(dir, "d"))
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			s := e.Name()
			if e.IsDir() {
				s += "/"
			}
			got = append(got, s)
		}
		want := []string{"a", "b10", "b2", "c", "d/"}
		if !equalStrings(got, want) {
			t.Errorf("ReadDir = %q, want %q", got, want)
		}
		_, err = fsys.ReadDir(filepath.Join(dir, "missing"))
		wantPathErr(t, err, fs.ErrNotExist)
		_, err = fsys.ReadDir(filepath.Join(dir, "a"))
		wantPathErr(t, err, syscall.ENOTDIR)
	}},
	{"Stat and MkdirAll", func(t *testing.T, fsys vfs.FS, dir string) {
		d := filepath.Join(dir, "x", "y")
		mkdir(t, fsys, d)
		mkdir(t, fsys, d) // existing: no error
		fi, err := fsys.Stat(d)
		if err != nil || !fi.IsDir() || fi.Name() != "y" {
			t.Errorf("Stat(dir) = %v, %v; want directory y", fi, err)
		}
		_, err = fsys.Stat(filepath.Join(dir, "missing"))
		wantPathErr(t, err, fs.ErrNotExist)
		writeFile(t, fsys, filepath.Join(dir, "f"), "x")
		wantPathErr(t, fsys.MkdirAll(filepath.Join(dir, "f"), 0o755), syscall.ENOTDIR)
	}},
	{"access modes", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		writeFile(t, fsys, name, "abc")
		r := mustOpen(t, fsys, name, os.O_RDONLY)
		if _, err := r.Write([]byte("x")); err == nil {
			t.Error("Write on an O_RDONLY file succeeded")
		}
		mustClose(t, r)
		w := mustOpen(t, fsys, name, os.O_WRONLY)
		if _, err := w.Read(make([]byte, 1)); err == nil {
			t.Error("Read on an O_WRONLY file succeeded")
		}
		mustClose(t, w)
	}},
	{"closed file", func(t *testing.T, fsys vfs.FS, dir string) {
		f := mustOpen(t, fsys, filepath.Join(dir, "a"), os.O_CREATE|os.O_RDWR)
		mustClose(t, f)
		_, err := f.Write([]byte("x"))
		wantPathErr(t, err, fs.ErrClosed)
		wantPathErr(t, f.Sync(), fs.ErrClosed)
		wantPathErr(t, f.Close(), fs.ErrClosed)
	}},
	{"Sync and SyncDir", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a")
		f := mustOpen(t, fsys, name, os.O_CREATE|os.O_RDWR)
		mustWrite(t, f, "x")
		if err := f.Sync(); err != nil {
			t.Errorf("Sync = %v", err)
		}
		mustClose(t, f)
		if err := fsys.SyncDir(dir); err != nil {
			t.Errorf("SyncDir = %v", err)
		}
		wantPathErr(t, fsys.SyncDir(name), syscall.ENOTDIR)
		wantPathErr(t, fsys.SyncDir(filepath.Join(dir, "missing")), fs.ErrNotExist)
	}},
	{"Lock is exclusive until closed", func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, ".lock")
		l, err := fsys.Lock(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Stat(name); err != nil {
			t.Errorf("Lock did not create the file: %v", err)
		}
		_, err = fsys.Lock(name)
		wantPathErr(t, err, vfs.ErrLocked)
		if err != nil && !bytes.Contains([]byte(err.Error()), []byte(name)) {
			t.Errorf("lock error %q does not name the file", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, err := fsys.Lock(name)
		if err != nil {
			t.Fatalf("Lock after release = %v", err)
		}
		mustCloser(t, l2)
	}},
}

func TestConformance(t *testing.T) {
	for _, c := range conformanceCases {
		t.Run("OS/"+c.name, func(t *testing.T) {
			c.run(t, vfs.OS(), t.TempDir())
		})
		t.Run("MemFS/"+c.name, func(t *testing.T) {
			m := vfs.NewMem()
			mkdir(t, m, "/tmp/test")
			c.run(t, m, "/tmp/test")
		})
		t.Run("WriteBack/"+c.name, func(t *testing.T) {
			c.run(t, vfs.WriteBack(vfs.OS()), t.TempDir())
		})
	}
}

func mustOpen(t *testing.T, fsys vfs.FS, name string, flag int) vfs.File {
	t.Helper()
	f, err := fsys.OpenFile(name, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustWrite(t *testing.T, f vfs.File, s string) {
	t.Helper()
	if n, err := f.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func mustClose(t *testing.T, f vfs.File) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustCloser(t *testing.T, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, fsys vfs.FS, name string) {
	t.Helper()
	if err := fsys.MkdirAll(name, 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeFile creates or replaces name with s, without syncing.
func writeFile(t *testing.T, fsys vfs.FS, name, s string) {
	t.Helper()
	f := mustOpen(t, fsys, name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	mustWrite(t, f, s)
	mustClose(t, f)
}

func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f := mustOpen(t, fsys, name, os.O_RDONLY)
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantContent(t *testing.T, fsys vfs.FS, name, want string) {
	t.Helper()
	if got := readFile(t, fsys, name); got != want {
		t.Errorf("content of %s = %q, want %q", name, got, want)
	}
}

// wantPathErr checks that err is a *fs.PathError that matches target.
func wantPathErr(t *testing.T, err, target error) {
	t.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, target) {
		t.Errorf("error = %v (%T), want a *fs.PathError matching %v", err, err, target)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
