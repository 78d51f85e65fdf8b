package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"
)

// errAppendWriteAt and errNegativeOffset match the os package's refusals.
var (
	errAppendWriteAt  = errors.New("vfs: invalid use of WriteAt on file opened with O_APPEND")
	errNegativeOffset = errors.New("vfs: negative offset")
)

// memFile is an open MemFS file. Every method takes MemFS.mu.
type memFile struct {
	m      *MemFS
	node   *inode
	name   string // as opened
	clean  string // cleaned path as opened, what fault predicates see
	flag   int
	gen    uint64 // MemFS.gen at open; a crash invalidates the file
	off    int64
	closed bool
}

var _ File = (*memFile)(nil)

// check reports why f cannot be used, or nil. The caller holds m.mu.
func (f *memFile) check(op string) error {
	switch {
	case f.closed:
		return pathErr(op, f.name, fs.ErrClosed)
	case f.gen != f.m.gen:
		return pathErr(op, f.name, ErrCrashed)
	}
	return nil
}

func (f *memFile) readable() bool { return f.flag&os.O_WRONLY == 0 }

func (f *memFile) writable() bool { return f.flag&(os.O_WRONLY|os.O_RDWR) != 0 }

// Name returns the name the file was opened with.
func (f *memFile) Name() string { return f.name }

func (f *memFile) Read(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	n, err := f.readAt("read", p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	// The order of the checks is the os package's: it notices neither a
	// closed file nor a bad mode when there is nothing to read.
	switch {
	case off < 0:
		return 0, pathErr("readat", f.name, errNegativeOffset)
	case len(p) == 0:
		return 0, nil
	}
	return f.readAt("read", p, off)
}

// readAt copies the current content at off into p, applies any read
// corruption, and returns io.EOF when p is not filled. The caller holds m.mu.
func (f *memFile) readAt(op string, p []byte, off int64) (int, error) {
	if err := f.check(op); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		// os returns at once, before the kernel could object.
		return 0, nil
	}
	switch {
	case !f.readable():
		return 0, pathErr(op, f.name, syscall.EBADF)
	case f.node.isDir():
		return 0, pathErr(op, f.name, syscall.EISDIR)
	}
	if r := f.m.firing(OpRead, off, int64(len(p)), f.clean); r != nil {
		return 0, pathErr(op, f.name, r.Err)
	}
	data := f.node.data
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(p, data[off:])
	for _, fl := range f.node.readFlips {
		lo, hi := max(fl.off, off), min(fl.off+fl.n, off+int64(n))
		for i := lo; i < hi; i++ {
			p[i-off] ^= fl.mask
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	off := f.off
	if f.flag&os.O_APPEND != 0 && f.check("write") == nil {
		off = int64(len(f.node.data))
	}
	n, err := f.writeAt("write", p, off)
	if n > 0 {
		// As in Linux, a write that wrote nothing leaves the offset alone,
		// even in append mode.
		f.off = off + int64(n)
	}
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	// The order of the checks is the os package's: it notices neither a
	// closed file nor a bad mode when there is nothing to write.
	switch {
	case f.flag&os.O_APPEND != 0:
		return 0, pathErr("writeat", f.name, errAppendWriteAt)
	case off < 0:
		return 0, pathErr("writeat", f.name, errNegativeOffset)
	case len(p) == 0:
		return 0, nil
	}
	return f.writeAt("write", p, off)
}

// writeAt writes p at off as one pending write. An injected [OpWrite] fault
// writes only its ShortWrite prefix of p, then fails. The caller holds m.mu.
func (f *memFile) writeAt(op string, p []byte, off int64) (int, error) {
	if err := f.check(op); err != nil {
		return 0, err
	}
	if !f.writable() || f.node.isDir() {
		return 0, pathErr(op, f.name, syscall.EBADF)
	}
	if off+int64(len(p)) > maxFileSize {
		return 0, pathErr(op, f.name, syscall.EFBIG)
	}
	n := len(p)
	rule := f.m.firing(OpWrite, off, int64(len(p)), f.clean)
	if rule != nil {
		n = min(max(rule.ShortWrite, 0), len(p))
	}
	if n > 0 {
		f.node.apply(fileOp{off: off, data: append([]byte(nil), p[:n]...)})
	}
	if rule != nil {
		return n, pathErr(op, f.name, rule.Err)
	}
	return n, nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("seek"); err != nil {
		return 0, err
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.node.data))
	default:
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	if offset < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.off = offset
	return offset, nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	err := f.check("close")
	f.closed = true
	return err
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("stat"); err != nil {
		return nil, err
	}
	return statOf(path.Base(f.clean), f.node), nil
}

// Sync makes the file's pending writes and truncates durable; on a
// directory it is SyncDir, as fsync(2) of a directory is. If an injected
// [OpSync] fault fails it, the pending writes are dropped from the pending
// list: reads still see them, but neither a crash nor a later successful
// Sync will make them durable (see the package documentation).
func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	op := OpSync
	if f.node.isDir() {
		op = OpSyncDir
	}
	if err := f.m.fault(op, f.clean); err != nil {
		f.node.pending = nil
		f.node.dpending = nil
		return pathErr("sync", f.name, err)
	}
	if f.node.isDir() {
		f.node.syncDir()
	} else {
		f.node.syncFile()
	}
	return nil
}

// Truncate records a pending truncate to size. Fault injection:
// [OpTruncate].
func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	switch {
	case !f.writable() || f.node.isDir() || size < 0:
		return pathErr("truncate", f.name, syscall.EINVAL)
	case size > maxFileSize:
		return pathErr("truncate", f.name, syscall.EFBIG)
	}
	if err := f.m.fault(OpTruncate, f.clean); err != nil {
		return pathErr("truncate", f.name, err)
	}
	f.node.apply(fileOp{truncate: true, off: size})
	return nil
}

// memInfo is a snapshot of an inode's metadata, taken under m.mu.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func statOf(name string, n *inode) memInfo {
	return memInfo{name: name, size: int64(len(n.data)), mode: n.mode}
}

// Name returns the base name.
func (i memInfo) Name() string { return i.name }

// Size returns the current size in bytes; 0 for a directory.
func (i memInfo) Size() int64 { return i.size }

// Mode returns the permission bits given at creation, with fs.ModeDir for
// directories.
func (i memInfo) Mode() fs.FileMode { return i.mode }

// ModTime returns the zero time: MemFS keeps no clock.
func (i memInfo) ModTime() time.Time { return time.Time{} }

// IsDir reports whether the entry is a directory.
func (i memInfo) IsDir() bool { return i.mode.IsDir() }

// Sys returns nil.
func (i memInfo) Sys() any { return nil }
