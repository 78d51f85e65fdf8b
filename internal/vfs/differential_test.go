package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/vfs"
)

// errClass names the error the way callers tell errors apart, so that OS
// and MemFS results can be compared even though their messages differ.
func errClass(err error) string {
	if err == nil {
		return "nil"
	}
	if err == io.EOF {
		return "EOF"
	}
	for _, e := range []struct {
		name   string
		target error
	}{
		{"ErrNotExist", fs.ErrNotExist}, {"ErrExist", fs.ErrExist}, {"ErrClosed", fs.ErrClosed},
		{"ENOTDIR", syscall.ENOTDIR}, {"EISDIR", syscall.EISDIR}, {"ENOTEMPTY", syscall.ENOTEMPTY},
		{"EBADF", syscall.EBADF}, {"EINVAL", syscall.EINVAL}, {"EBUSY", syscall.EBUSY},
	} {
		if errors.Is(err, e.target) {
			return e.name
		}
	}
	return "other"
}

// filePair is one file opened the same way on both file systems.
type filePair struct{ os, mem vfs.File }

// TestMemFSMatchesOS applies the same random operations to the operating
// system (in a temporary directory) and to a MemFS, and requires the same
// results: error classes, byte counts, bytes read, offsets, and in the end
// the same tree. Durability is not compared, only what a running program
// sees.
func TestMemFSMatchesOS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("MemFS mirrors Linux; other kernels differ in details (O_TRUNC on directories, rename errors)")
	}
	base := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		osDir, err := os.MkdirTemp(base, "")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(osDir)
		const memDir = "/x"
		m := vfs.NewMem()
		if err := m.MkdirAll(memDir, 0o755); err != nil {
			rt.Fatal(err)
		}
		fss := []vfs.FS{vfs.OS(), m}
		dirs := []string{osDir, memDir}
		var files []filePair
		defer func() {
			for _, f := range files {
				f.os.Close()
			}
		}()
		names := rapid.SampledFrom([]string{"a", "b", "d", "d/a", "d/b", "d/e", "e"})
		both := func(what string, f func(fsys vfs.FS, dir string) string) {
			r0, r1 := f(fss[0], dirs[0]), f(fss[1], dirs[1])
			if r0 != r1 {
				rt.Fatalf("%s: OS %s, MemFS %s", what, r0, r1)
			}
		}
		onFile := func(what string, f func(f vfs.File) string) {
			if len(files) == 0 {
				return
			}
			p := files[rapid.IntRange(0, len(files)-1).Draw(rt, "file")]
			r0, r1 := f(p.os), f(p.mem)
			if r0 != r1 {
				rt.Fatalf("%s: OS %s, MemFS %s", what, r0, r1)
			}
		}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			switch op := rapid.SampledFrom([]string{
				"open", "open", "write", "writeat", "read", "readat", "seek",
				"truncate", "close", "stat", "fstat", "rename", "remove", "mkdir", "readdir",
			}).Draw(rt, "op"); op {
			case "open":
				n := names.Draw(rt, "name")
				flag := rapid.SampledFrom([]int{os.O_RDONLY, os.O_WRONLY, os.O_RDWR}).Draw(rt, "access")
				for _, f := range []int{os.O_CREATE, os.O_EXCL, os.O_TRUNC, os.O_APPEND} {
					if rapid.Bool().Draw(rt, "flag") {
						flag |= f
					}
				}
				var pair [2]vfs.File
				var errs [2]error
				for i := range fss {
					pair[i], errs[i] = fss[i].OpenFile(filepath.Join(dirs[i], n), flag, 0o644)
				}
				if errClass(errs[0]) != errClass(errs[1]) {
					rt.Fatalf("open %s flag %#x: OS %v, MemFS %v", n, flag, errs[0], errs[1])
				}
				if errs[0] != nil {
					break
				}
				if fi, err := pair[1].Stat(); err == nil && fi.IsDir() {
					// Offsets in directories are file-system specific
					// (ext4 hashes); keep to regular files.
					pair[0].Close()
					pair[1].Close()
					break
				}
				files = append(files, filePair{pair[0], pair[1]})
			case "write":
				b := rapid.SliceOfN(rapid.Byte(), 0, 5).Draw(rt, "data")
				onFile(op, func(f vfs.File) string {
					n, err := f.Write(b)
					off, _ := f.Seek(0, io.SeekCurrent)
					return result(n, err, off)
				})
			case "writeat":
				b := rapid.SliceOfN(rapid.Byte(), 0, 5).Draw(rt, "data")
				at := int64(rapid.IntRange(-1, 12).Draw(rt, "off"))
				onFile(op, func(f vfs.File) string {
					n, err := f.WriteAt(b, at)
					return result(n, err, 0)
				})
			case "read":
				size := rapid.IntRange(0, 8).Draw(rt, "size")
				onFile(op, func(f vfs.File) string {
					buf := make([]byte, size)
					n, err := f.Read(buf)
					off, _ := f.Seek(0, io.SeekCurrent)
					return result(n, err, off) + " " + string(buf[:n])
				})
			case "readat":
				size := rapid.IntRange(0, 8).Draw(rt, "size")
				at := int64(rapid.IntRange(-1, 12).Draw(rt, "off"))
				onFile(op, func(f vfs.File) string {
					buf := make([]byte, size)
					n, err := f.ReadAt(buf, at)
					return result(n, err, 0) + " " + string(buf[:n])
				})
			case "seek":
				off := int64(rapid.IntRange(-3, 12).Draw(rt, "off"))
				whence := rapid.IntRange(0, 2).Draw(rt, "whence")
				onFile(op, func(f vfs.File) string {
					got, err := f.Seek(off, whence)
					if err != nil {
						got = -1
					}
					return result(0, err, got)
				})
			case "truncate":
				size := int64(rapid.IntRange(-1, 12).Draw(rt, "size"))
				onFile(op, func(f vfs.File) string { return errClass(f.Truncate(size)) })
			case "close":
				onFile(op, func(f vfs.File) string { return errClass(f.Close()) })
			case "fstat":
				onFile(op, func(f vfs.File) string {
					fi, err := f.Stat()
					return statResult(fi, err)
				})
			case "stat":
				n := names.Draw(rt, "name")
				both(op+" "+n, func(fsys vfs.FS, dir string) string {
					fi, err := fsys.Stat(filepath.Join(dir, n))
					return statResult(fi, err)
				})
			case "rename":
				from, to := names.Draw(rt, "from"), names.Draw(rt, "to")
				if fi, err := m.Stat(filepath.Join(memDir, from)); err == nil && fi.IsDir() &&
					filepath.Dir(from) != filepath.Dir(to) {
					// MemFS does not move directories between parents.
					continue
				}
				both(op+" "+from+" "+to, func(fsys vfs.FS, dir string) string {
					return errClass(fsys.Rename(filepath.Join(dir, from), filepath.Join(dir, to)))
				})
			case "remove":
				n := names.Draw(rt, "name")
				both(op+" "+n, func(fsys vfs.FS, dir string) string {
					return errClass(fsys.Remove(filepath.Join(dir, n)))
				})
			case "mkdir":
				n := names.Draw(rt, "name")
				both(op+" "+n, func(fsys vfs.FS, dir string) string {
					return errClass(fsys.MkdirAll(filepath.Join(dir, n), 0o755))
				})
			case "readdir":
				n := rapid.SampledFrom([]string{".", "d", "a"}).Draw(rt, "dir")
				both(op+" "+n, func(fsys vfs.FS, dir string) string {
					ents, err := fsys.ReadDir(filepath.Join(dir, n))
					var s []string
					for _, e := range ents {
						if e.IsDir() {
							s = append(s, e.Name()+"/")
						} else {
							s = append(s, e.Name())
						}
					}
					return errClass(err) + " " + strings.Join(s, ",")
				})
			}
		}
		both("final tree", func(fsys vfs.FS, dir string) string { return tree(rt, fsys, dir) })
	})
}

func result(n int, err error, off int64) string {
	return fmt.Sprintf("%s n=%d off=%d", errClass(err), n, off)
}

func statResult(fi fs.FileInfo, err error) string {
	switch {
	case err != nil:
		return errClass(err)
	case fi.IsDir():
		return "dir " + fi.Name()
	}
	return fmt.Sprintf("file %s size=%d", fi.Name(), fi.Size())
}

// tree lists every path under dir with the content of files.
func tree(rt *rapid.T, fsys vfs.FS, dir string) string {
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		ents, err := fsys.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			rt.Fatalf("ReadDir %s: %v", rel, err)
		}
		for _, e := range ents {
			p := filepath.Join(rel, e.Name())
			if e.IsDir() {
				out = append(out, p+"/")
				walk(p)
				continue
			}
			f, err := fsys.OpenFile(filepath.Join(dir, p), os.O_RDONLY, 0)
			if err != nil {
				rt.Fatalf("open %s: %v", p, err)
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				rt.Fatalf("read %s: %v", p, err)
			}
			out = append(out, p+"="+string(b))
		}
	}
	walk(".")
	slices.Sort(out)
	return strings.Join(out, "\n")
}
