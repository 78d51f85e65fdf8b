package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// WriteBack returns an FS over base that keeps every write and truncate of
// a file in process memory until File.Sync, which then applies them to
// base in order (pwrite, ftruncate) and fsyncs. Reads, through any handle
// of the same file, and Stat see the pending changes, as they would see
// the page cache.
//
// It exists for power-loss tests of the real binary (test/faults, the krabka
// binary built with -tags writeback): a SIGKILL of the process then loses
// exactly what was written but not synced, as a power failure loses the page
// cache, while a test of the plain binary's kill -9 loses nothing, since the
// kernel keeps the page cache of a dead process. Code that treats a write as
// durable (bug-zoo entry Z2 in docs/reliability.md) loses acknowledged
// records under this layer.
//
// Two simplifications, both on the side of keeping data: closing the last
// handle of a file writes its pending changes to base without an fsync
// (they reach the page cache and survive the process; only open files'
// unsynced data is at risk), and directory operations (create, rename, remove) go to base at
// once. Pending changes belong to the file, not to its name: a rename
// keeps them, a remove drops them.
func WriteBack(base FS) FS {
	return &wbFS{base: base, files: map[string]*wbState{}}
}

// wbFS is the write-back layer; files maps a cleaned path to the state of
// the file that has pending changes or open handles.
type wbFS struct {
	base  FS
	mu    sync.Mutex
	files map[string]*wbState
}

// wbState is one file's pending changes, shared by all its handles.
type wbState struct {
	mu      sync.Mutex
	size    int64 // the size reads see
	pending []wbOp
	opens   int
}

// wbOp is a pending write (data at off) or truncate (to size, data nil).
type wbOp struct {
	off      int64
	data     []byte
	truncate bool
}

// state returns the shared state of path, creating it from base's size.
func (w *wbFS) state(path string, size int64) *wbState {
	s := w.files[path]
	if s == nil {
		s = &wbState{size: size}
		w.files[path] = s
	}
	return s
}

func (w *wbFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := w.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	path := filepath.Clean(name)
	w.mu.Lock()
	s := w.files[path]
	if s != nil && flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		s.mu.Lock()
		s.pending = append(s.pending, wbOp{truncate: true})
		s.size = 0
		s.mu.Unlock()
	}
	s = w.state(path, fi.Size())
	s.mu.Lock()
	s.opens++
	s.mu.Unlock()
	w.mu.Unlock()
	return &wbFile{fs: w, path: path, f: f, s: s, flag: flag}, nil
}

// release forgets path's state when no handle is open and nothing is
// pending.
func (w *wbFS) release(path string, s *wbState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opens == 0 && len(s.pending) == 0 && w.files[path] == s {
		delete(w.files, path)
	}
}

func (w *wbFS) Remove(name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.base.Remove(name); err != nil {
		return err
	}
	if s := w.files[filepath.Clean(name)]; s != nil {
		s.mu.Lock()
		s.pending, s.size = nil, 0
		s.mu.Unlock()
		delete(w.files, filepath.Clean(name))
	}
	return nil
}

func (w *wbFS) Rename(oldname, newname string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.base.Rename(oldname, newname); err != nil {
		return err
	}
	oldp, newp := filepath.Clean(oldname), filepath.Clean(newname)
	if oldp == newp {
		return nil
	}
	s, ok := w.files[oldp]
	delete(w.files, oldp)
	delete(w.files, newp)
	if ok {
		w.files[newp] = s
	}
	return nil
}

func (w *wbFS) MkdirAll(name string, perm fs.FileMode) error { return w.base.MkdirAll(name, perm) }

func (w *wbFS) ReadDir(name string) ([]fs.DirEntry, error) { return w.base.ReadDir(name) }

func (w *wbFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := w.base.Stat(name)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	s := w.files[filepath.Clean(name)]
	w.mu.Unlock()
	if s == nil || fi.IsDir() {
		return fi, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return wbInfo{fi, s.size}, nil
}

func (w *wbFS) SyncDir(name string) error { return w.base.SyncDir(name) }

func (w *wbFS) Lock(name string) (io.Closer, error) { return w.base.Lock(name) }

// wbInfo is a FileInfo with the size reads see.
type wbInfo struct {
	fs.FileInfo
	size int64
}

func (i wbInfo) Size() int64 { return i.size }

// wbFile is a handle of the write-back layer.
type wbFile struct {
	fs     *wbFS
	path   string
	f      File
	s      *wbState
	flag   int
	pos    int64
	closed bool
}

func (f *wbFile) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.f.Name(), Err: err}
}

// check returns the error of an operation the handle may not do.
func (f *wbFile) check(op string, write bool) error {
	switch {
	case f.closed:
		return f.pathErr(op, fs.ErrClosed)
	case write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0:
		return f.pathErr(op, syscall.EBADF)
	case !write && f.flag&os.O_WRONLY != 0:
		return f.pathErr(op, syscall.EBADF)
	}
	return nil
}

func (f *wbFile) Name() string { return f.f.Name() }

func (f *wbFile) Read(p []byte) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	n, err := f.readAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *wbFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.pathErr("readat", errors.New("negative offset"))
	}
	return f.readAt(p, off)
}

// readAt reads base's bytes and lays the pending changes over them in
// order.
func (f *wbFile) readAt(p []byte, off int64) (int, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if off >= f.s.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), f.s.size-off))
	buf := p[:n]
	got, err := f.f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	clear(buf[got:])
	end := off + int64(n)
	for _, o := range f.s.pending {
		if o.truncate {
			if o.off < end {
				clear(buf[max(o.off-off, 0):])
			}
			continue
		}
		lo, hi := max(o.off, off), min(o.off+int64(len(o.data)), end)
		if lo < hi {
			copy(buf[lo-off:hi-off], o.data[lo-o.off:hi-o.off])
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *wbFile) Write(p []byte) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		f.s.mu.Lock()
		f.pos = f.s.size
		f.s.mu.Unlock()
	}
	f.writeAt(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *wbFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		return 0, errors.New("vfs: invalid use of WriteAt on file opened with O_APPEND")
	}
	if off < 0 {
		return 0, f.pathErr("writeat", errors.New("negative offset"))
	}
	f.writeAt(p, off)
	return len(p), nil
}

func (f *wbFile) writeAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.s.pending = append(f.s.pending, wbOp{off: off, data: append([]byte(nil), p...)})
	f.s.size = max(f.s.size, off+int64(len(p)))
}

func (f *wbFile) Seek(offset int64, whence int) (int64, error) {
	if f.closed {
		return 0, f.pathErr("seek", fs.ErrClosed)
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.pos
	case io.SeekEnd:
		f.s.mu.Lock()
		base = f.s.size
		f.s.mu.Unlock()
	default:
		return 0, f.pathErr("seek", syscall.EINVAL)
	}
	if base+offset < 0 {
		return 0, f.pathErr("seek", syscall.EINVAL)
	}
	f.pos = base + offset
	return f.pos, nil
}

func (f *wbFile) Stat() (fs.FileInfo, error) {
	if f.closed {
		return nil, f.pathErr("stat", fs.ErrClosed)
	}
	fi, err := f.f.Stat()
	if err != nil {
		return nil, err
	}
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return wbInfo{fi, f.s.size}, nil
}

func (f *wbFile) Truncate(size int64) error {
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return f.pathErr("truncate", syscall.EINVAL)
	}
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.s.pending = append(f.s.pending, wbOp{off: size, truncate: true})
	f.s.size = size
	return nil
}

// flush applies the pending changes of the file (made through any handle,
// as fsync flushes every dirty page of a file) to base, in order. A
// handle that cannot WriteAt (read-only or O_APPEND) applies them through
// a second base handle.
func (f *wbFile) flush() error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if len(f.s.pending) == 0 {
		return nil
	}
	dst := f.f
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 || f.flag&os.O_APPEND != 0 {
		g, err := f.fs.base.OpenFile(f.f.Name(), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer g.Close()
		dst = g
	}
	for i, o := range f.s.pending {
		var err error
		if o.truncate {
			err = dst.Truncate(o.off)
		} else {
			_, err = dst.WriteAt(o.data, o.off)
		}
		if err != nil {
			// What was not applied stays pending; a failed Sync is final
			// for the caller anyway (vfs rule 4).
			f.s.pending = f.s.pending[i:]
			return err
		}
	}
	f.s.pending = nil
	return nil
}

func (f *wbFile) Sync() error {
	if f.closed {
		return f.pathErr("sync", fs.ErrClosed)
	}
	if err := f.flush(); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *wbFile) Close() error {
	if f.closed {
		return f.pathErr("close", fs.ErrClosed)
	}
	f.closed = true
	f.s.mu.Lock()
	f.s.opens--
	last := f.s.opens == 0
	f.s.mu.Unlock()
	var err error
	if last {
		err = f.flush()
	}
	f.fs.release(f.path, f.s)
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	return err
}
