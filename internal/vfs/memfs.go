package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// ErrCrashed is the error inside the *fs.PathError that operations on a
// [MemFS] file return when the file was opened before the last
// [MemFS.Crash]: like a process that died, the handle is gone.
var ErrCrashed = errors.New("vfs: file opened before a crash")

// maxFileSize bounds a MemFS file so that a bug writing at an absurd offset
// fails with EFBIG instead of exhausting memory.
const maxFileSize = 1 << 32

// MemFS is an in-memory [FS] for tests and simulation that models Linux
// durability: per file it keeps the durable content and the pending
// (unsynced) writes, per directory the durable entries and the pending
// entry operations, and [MemFS.Crash] keeps only what a real crash may
// keep. It can also fail operations on command ([MemFS.InjectFault]) and
// corrupt bytes ([MemFS.CorruptReads], [MemFS.CorruptStored]). The package
// documentation states the model precisely.
//
// A MemFS is safe for concurrent use: one mutex serialises every operation,
// including those on its open files. The zero value is not usable; call
// [NewMem].
type MemFS struct {
	mu     sync.Mutex
	root   *inode
	nextID uint64              // id of the next inode; ids order Crash's choices
	gen    uint64              // mount generation; Crash increments it
	locks  map[*inode]*memLock // held locks, by locked file
	faults []*faultRule        // injected faults, in injection order

	readFaulty []*inode // files with read corruption, for ClearFaults
}

// NewMem returns an empty MemFS holding only its root directory "/", which
// is durable.
func NewMem() *MemFS {
	m := &MemFS{locks: make(map[*inode]*memLock)}
	m.root = m.newInode(fs.ModeDir | 0o755)
	return m
}

// inode is a file or a directory. Its fields are guarded by MemFS.mu.
type inode struct {
	id   uint64
	mode fs.FileMode // fs.ModeDir set for directories

	// Files.
	data      []byte   // current content: what reads see
	durable   []byte   // content as of the last successful Sync
	pending   []fileOp // writes and truncates since the last Sync attempt, oldest first
	readFlips []flip   // transient corruption applied to the bytes reads return

	// Directories.
	entries  map[string]*inode // current entries
	dentries map[string]*inode // durable entries, as of the last successful SyncDir
	dpending []dirOp           // entry operations since the last SyncDir attempt, oldest first
}

// fileOp is one unsynced change to a file's content.
type fileOp struct {
	truncate bool
	off      int64  // write offset, or the new size for a truncate
	data     []byte // bytes written; never modified once recorded
}

// dirOp is one unsynced change to a directory's entries. A rename within
// one directory is a single dirOp with both unlink and link set, so that a
// crash keeps it whole or not at all.
type dirOp struct {
	unlink string // name removed first, or ""
	link   string // name then set to node, or ""
	node   *inode
}

// flip XORs mask into the bytes [off, off+n) of a file.
type flip struct {
	off, n int64
	mask   byte
}

func (m *MemFS) newInode(mode fs.FileMode) *inode {
	n := &inode{id: m.nextID, mode: mode}
	m.nextID++
	if mode.IsDir() {
		n.entries = make(map[string]*inode)
		n.dentries = make(map[string]*inode)
	}
	return n
}

func (n *inode) isDir() bool { return n.mode.IsDir() }

// link sets name to c in directory d.
func (d *inode) link(name string, c *inode) {
	d.entries[name] = c
	d.dpending = append(d.dpending, dirOp{link: name, node: c})
}

// unlink removes name from directory d.
func (d *inode) unlink(name string) {
	delete(d.entries, name)
	d.dpending = append(d.dpending, dirOp{unlink: name})
}

// rename moves c from oldname to newname within directory d, atomically.
func (d *inode) rename(oldname, newname string, c *inode) {
	delete(d.entries, oldname)
	d.entries[newname] = c
	d.dpending = append(d.dpending, dirOp{unlink: oldname, link: newname, node: c})
}

func applyDirOp(entries map[string]*inode, op dirOp) {
	if op.unlink != "" {
		delete(entries, op.unlink)
	}
	if op.link != "" {
		entries[op.link] = op.node
	}
}

// syncDir makes d's pending entry operations durable.
func (d *inode) syncDir() {
	for _, op := range d.dpending {
		applyDirOp(d.dentries, op)
	}
	d.dpending = nil
}

// apply changes the file's current content and records the change as
// pending.
func (n *inode) apply(op fileOp) {
	n.data = applyFileOp(n.data, op)
	n.pending = append(n.pending, op)
}

// syncFile makes n's pending writes and truncates durable. Writes dropped by
// an earlier failed Sync are not among them and stay non-durable.
func (n *inode) syncFile() {
	for _, op := range n.pending {
		n.durable = applyFileOp(n.durable, op)
	}
	n.pending = nil
}

// applyFileOp applies op to b, which it may modify, and returns the result.
func applyFileOp(b []byte, op fileOp) []byte {
	if op.truncate {
		return resize(b, op.off)
	}
	if len(op.data) == 0 {
		// Like write(2) of nothing, a write torn down to no bytes does
		// not extend the file.
		return b
	}
	if end := op.off + int64(len(op.data)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[op.off:], op.data)
	return b
}

// resize returns b cut or zero-extended to size n.
func resize(b []byte, n int64) []byte {
	if n <= int64(len(b)) {
		return b[:n]
	}
	// append writes zeros over whatever an earlier shrink left in the
	// backing array, so no stale bytes come back.
	return append(b, make([]byte, n-int64(len(b)))...)
}

// cleanPath returns name as a clean absolute slash path. MemFS has no
// working directory: a relative name is taken from the root.
func cleanPath(name string) string {
	return path.Clean("/" + filepath.ToSlash(name))
}

// split returns the components of the clean absolute path p; none for "/".
func split(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walk resolves the components in the current namespace.
func (m *MemFS) walk(parts []string) (*inode, error) {
	n := m.root
	for _, p := range parts {
		if !n.isDir() {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.entries[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

// lookup resolves name, returning its clean path too.
func (m *MemFS) lookup(name string) (*inode, string, error) {
	p := cleanPath(name)
	n, err := m.walk(split(p))
	return n, p, err
}

// parent resolves the directory holding name and returns it with name's
// last component, which is "" when name is the root.
func (m *MemFS) parent(name string) (dir *inode, base, clean string, err error) {
	clean = cleanPath(name)
	parts := split(clean)
	if len(parts) == 0 {
		return m.root, "", clean, nil
	}
	dir, err = m.walk(parts[:len(parts)-1])
	if err == nil && !dir.isDir() {
		err = syscall.ENOTDIR
	}
	return dir, parts[len(parts)-1], clean, err
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// OpenFile opens name like os.OpenFile. O_CREATE adds an entry to the
// parent directory that is durable only after SyncDir of the parent;
// O_TRUNC is a pending truncate. Fault injection: [OpOpen].
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, clean, err := m.parent(name)
	if err == nil {
		err = m.fault(OpOpen, clean)
	}
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	n := dir
	if base != "" {
		n = dir.entries[base]
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	switch {
	case n == nil:
		if flag&os.O_CREATE == 0 {
			return nil, pathErr("open", name, syscall.ENOENT)
		}
		n = m.newInode(perm.Perm())
		dir.link(base, n)
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, pathErr("open", name, syscall.EEXIST)
	case n.isDir():
		// Linux counts O_TRUNC as a request to write.
		if writable || flag&(os.O_CREATE|os.O_TRUNC) != 0 {
			return nil, pathErr("open", name, syscall.EISDIR)
		}
	case flag&os.O_TRUNC != 0:
		// Even with O_RDONLY, as Linux does.
		n.apply(fileOp{truncate: true, off: 0})
	}
	return &memFile{m: m, node: n, name: name, clean: clean, flag: flag, gen: m.gen}, nil
}

// Remove deletes a file or an empty directory like os.Remove; the removal
// is durable only after SyncDir of the parent. Open files of a removed file
// keep working. Fault injection: [OpRemove].
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, clean, err := m.parent(name)
	if err == nil {
		err = m.fault(OpRemove, clean)
	}
	if err != nil {
		return pathErr("remove", name, err)
	}
	if base == "" {
		return pathErr("remove", name, syscall.EBUSY)
	}
	n, ok := dir.entries[base]
	switch {
	case !ok:
		return pathErr("remove", name, syscall.ENOENT)
	case n.isDir() && len(n.entries) > 0:
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	dir.unlink(base)
	return nil
}

// Rename replaces newname by oldname like os.Rename (errors are
// *os.LinkError; an existing directory as newname is refused with EEXIST,
// as os.Rename does). Within one directory the rename is one atomic entry
// operation, durable after SyncDir of that directory. Between two
// directories it is an unlink in the old one and a link in the new one,
// each durable only after SyncDir of its own directory; moving a directory
// to another parent is not supported (errors.ErrUnsupported), because
// Krabka never does it and it could make the durable namespace cyclic.
// Fault injection: [OpRename], matched against both paths.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	odir, obase, oclean, err := m.parent(oldname)
	if err != nil {
		return fail(err)
	}
	ndir, nbase, nclean, err := m.parent(newname)
	if err != nil {
		return fail(err)
	}
	if err := m.fault(OpRename, oclean, nclean); err != nil {
		return fail(err)
	}
	if obase == "" || nbase == "" {
		return fail(syscall.EBUSY)
	}
	src, ok := odir.entries[obase]
	if !ok {
		return fail(syscall.ENOENT)
	}
	dst, exists := ndir.entries[nbase]
	switch {
	case exists && dst.isDir():
		// os.Rename refuses any existing directory as the target, empty
		// or not and even the source itself, before asking the kernel.
		return fail(syscall.EEXIST)
	case exists && dst == src:
		// POSIX: renaming a file onto another link of itself does nothing.
		return nil
	case exists && src.isDir():
		return fail(syscall.ENOTDIR)
	case src.isDir() && strings.HasPrefix(nclean, oclean+"/"):
		return fail(syscall.EINVAL)
	case src.isDir() && odir != ndir:
		return fail(errors.ErrUnsupported)
	}
	if odir == ndir {
		odir.rename(obase, nbase, src)
		return nil
	}
	odir.unlink(obase)
	ndir.link(nbase, src)
	return nil
}

// MkdirAll creates name and any missing parents like os.MkdirAll; each new
// directory's entry is durable only after SyncDir of its parent. Fault
// injection: [OpMkdir].
func (m *MemFS) MkdirAll(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	clean := cleanPath(name)
	if err := m.fault(OpMkdir, clean); err != nil {
		return pathErr("mkdir", name, err)
	}
	d := m.root
	for _, p := range split(clean) {
		c, ok := d.entries[p]
		if !ok {
			c = m.newInode(fs.ModeDir | perm.Perm())
			d.link(p, c)
		} else if !c.isDir() {
			return pathErr("mkdir", name, syscall.ENOTDIR)
		}
		d = c
	}
	return nil
}

// ReadDir lists the current entries of directory name, sorted by name.
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, _, err := m.lookup(name)
	if err == nil && !n.isDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	names := make([]string, 0, len(n.entries))
	for k := range n.entries {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]fs.DirEntry, len(names))
	for i, k := range names {
		out[i] = fs.FileInfoToDirEntry(statOf(k, n.entries[k]))
	}
	return out, nil
}

// Stat describes name. Sizes are current sizes; ModTime is always the zero
// time, because a deterministic simulation has no wall clock.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, clean, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return statOf(path.Base(clean), n), nil
}

// SyncDir makes the pending entry operations of directory name durable. If
// an injected fault fails it ([OpSyncDir]), those operations are dropped
// from the pending list: they stay visible until a crash but never become
// durable, mirroring what a failed fsync does to file data.
func (m *MemFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, clean, err := m.lookup(name)
	if err == nil && !n.isDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return pathErr("syncdir", name, err)
	}
	if err := m.fault(OpSyncDir, clean); err != nil {
		n.dpending = nil
		return pathErr("syncdir", name, err)
	}
	n.syncDir()
	return nil
}

// Lock takes the exclusive lock of file name, creating the file when
// missing (a pending entry, like OpenFile with O_CREATE). The lock belongs
// to the file, not the name, as flock(2) does: it follows renames. A second
// Lock fails with [ErrLocked] until the first is closed or the MemFS
// crashes. Fault injection: [OpOpen].
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, clean, err := m.parent(name)
	if err == nil {
		err = m.fault(OpOpen, clean)
	}
	if err != nil {
		return nil, pathErr("lock", name, err)
	}
	n := dir
	if base != "" {
		n = dir.entries[base]
	}
	switch {
	case n == nil:
		n = m.newInode(0o644)
		dir.link(base, n)
	case n.isDir():
		return nil, pathErr("lock", name, syscall.EISDIR)
	case m.locks[n] != nil:
		return nil, pathErr("lock", name, ErrLocked)
	}
	l := &memLock{m: m, node: n, name: name, gen: m.gen}
	m.locks[n] = l
	return l, nil
}

// memLock is a lock held on a MemFS file.
type memLock struct {
	m      *MemFS
	node   *inode
	name   string
	gen    uint64
	closed bool
}

// Close releases the lock. A lock from before a crash was released by the
// crash; closing it then reports [ErrCrashed] and touches nothing.
func (l *memLock) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	switch {
	case l.closed:
		return pathErr("close", l.name, fs.ErrClosed)
	case l.gen != l.m.gen:
		l.closed = true
		return pathErr("close", l.name, ErrCrashed)
	}
	l.closed = true
	delete(l.m.locks, l.node)
	return nil
}
