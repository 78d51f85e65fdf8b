package vfs

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
)

// CrashMode says how much unsynced state a [MemFS.Crash] keeps.
type CrashMode int

const (
	// CrashDropUnsynced keeps exactly the durable state: every unsynced
	// write, truncate and directory entry operation is lost.
	CrashDropUnsynced CrashMode = iota
	// CrashKeepPrefix keeps, for each file, a random in-order prefix of its
	// unsynced writes and truncates, and for each directory a random
	// in-order prefix of its unsynced entry operations, as if the kernel
	// had written some of its dirty state back before the power went.
	CrashKeepPrefix
	// CrashTearPrefix is CrashKeepPrefix where, in addition, the last kept
	// write of a file may be torn: only a random prefix of its bytes
	// (possibly none) lands. When the write extended the file, the size
	// may have landed without the data: the rest of the write's range then
	// reads as zeros, the zero-filled tail that ext4 and XFS can leave.
	CrashTearPrefix
	// CrashReorder keeps, for each file, a random subset of its unsynced
	// writes and truncates (each survives with probability 1/2), applied
	// in their original order: writeback does not follow write order, so
	// a later write can reach the disk while an earlier one does not,
	// leaving a hole of old bytes or zeros before valid data. Directories
	// keep an in-order prefix, as with CrashKeepPrefix.
	CrashReorder
)

// String returns the mode's name.
func (c CrashMode) String() string {
	switch c {
	case CrashDropUnsynced:
		return "CrashDropUnsynced"
	case CrashKeepPrefix:
		return "CrashKeepPrefix"
	case CrashTearPrefix:
		return "CrashTearPrefix"
	case CrashReorder:
		return "CrashReorder"
	}
	return fmt.Sprintf("CrashMode(%d)", int(c))
}

// Crash simulates a power loss followed by a fresh mount. Each file and
// directory keeps its durable state plus what mode allows of its unsynced
// changes, with every random choice drawn from rng (which may be nil for
// CrashDropUnsynced). Files and directories are visited in creation order,
// so the same state, mode and rng stream always give the same result.
//
// Afterwards the current state equals the durable state, nothing is
// pending, files opened before the crash fail with [ErrCrashed], and all
// locks are released. A file or directory that no surviving entry names is
// gone. Injected faults and read corruption stay.
func (m *MemFS) Crash(rng *rand.Rand, mode CrashMode) {
	switch mode {
	case CrashDropUnsynced:
	case CrashKeepPrefix, CrashTearPrefix, CrashReorder:
		if rng == nil {
			panic("vfs: Crash with " + mode.String() + " needs a rand.Rand")
		}
	default:
		panic("vfs: Crash with unknown " + mode.String())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.inodes() {
		if n.isDir() {
			n.crashDir(rng, mode)
		} else {
			n.crashFile(rng, mode)
		}
	}
	m.gen++
	clear(m.locks)
}

// keep returns how many of n pending changes survive.
func keep(rng *rand.Rand, mode CrashMode, n int) int {
	if mode == CrashDropUnsynced || n == 0 {
		return 0
	}
	return rng.IntN(n + 1)
}

func (d *inode) crashDir(rng *rand.Rand, mode CrashMode) {
	for _, op := range d.dpending[:keep(rng, mode, len(d.dpending))] {
		applyDirOp(d.dentries, op)
	}
	d.dpending = nil
	d.entries = maps.Clone(d.dentries)
}

func (n *inode) crashFile(rng *rand.Rand, mode CrashMode) {
	content := slices.Clone(n.durable)
	k := 0
	if mode == CrashReorder {
		for _, op := range n.pending {
			if rng.IntN(2) == 0 {
				content = applyFileOp(content, op)
			}
		}
	} else {
		k = keep(rng, mode, len(n.pending))
	}
	for i, op := range n.pending[:k] {
		if i == k-1 && mode == CrashTearPrefix && !op.truncate && len(op.data) > 0 && rng.IntN(2) == 0 {
			end := op.off + int64(len(op.data))
			op.data = op.data[:rng.IntN(len(op.data))]
			content = applyFileOp(content, op)
			if rng.IntN(2) == 0 {
				// Only extends: bytes that existed keep their old value.
				content = resize(content, max(end, int64(len(content))))
			}
			break
		}
		content = applyFileOp(content, op)
	}
	n.pending = nil
	n.data = content
	n.durable = slices.Clone(content)
}

// inodes returns every inode reachable from the root through current or
// durable entries or pending entry operations, ordered by id. The caller
// holds m.mu.
func (m *MemFS) inodes() []*inode {
	seen := map[*inode]bool{}
	var out []*inode
	var visit func(n *inode)
	visit = func(n *inode) {
		if seen[n] {
			return
		}
		seen[n] = true
		out = append(out, n)
		for _, c := range n.entries {
			visit(c)
		}
		for _, c := range n.dentries {
			visit(c)
		}
		for _, op := range n.dpending {
			if op.node != nil {
				visit(op.node)
			}
		}
	}
	visit(m.root)
	slices.SortFunc(out, func(a, b *inode) int { return cmpID(a.id, b.id) })
	return out
}

func cmpID(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Clone returns a deep copy of the stored state: current, durable and
// pending, so that a crash of the copy may keep what a crash of m may keep.
// Open files, locks, injected faults and read corruption are not copied.
// Tests use it to crash one state many ways, or to roll a disk back.
func (m *MemFS) Clone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemFS{nextID: m.nextID, locks: make(map[*inode]*memLock)}
	copies := map[*inode]*inode{}
	var cp func(n *inode) *inode
	cp = func(n *inode) *inode {
		if x, ok := copies[n]; ok {
			return x
		}
		x := &inode{
			id:      n.id,
			mode:    n.mode,
			data:    slices.Clone(n.data),
			durable: slices.Clone(n.durable),
			// fileOp.data is never modified, so the ops can share it.
			pending: slices.Clone(n.pending),
		}
		copies[n] = x
		if n.isDir() {
			x.entries = make(map[string]*inode, len(n.entries))
			x.dentries = make(map[string]*inode, len(n.dentries))
			for k, v := range n.entries {
				x.entries[k] = cp(v)
			}
			for k, v := range n.dentries {
				x.dentries[k] = cp(v)
			}
			for _, op := range n.dpending {
				if op.node != nil {
					op.node = cp(op.node)
				}
				x.dpending = append(x.dpending, op)
			}
		}
		return x
	}
	c.root = cp(m.root)
	return c
}

// Fingerprint returns a hash of the durable state: every path of the
// durable namespace with its kind and durable content. It is what a
// [CrashDropUnsynced] would leave, so two MemFS with equal fingerprints
// recover identically. It does not depend on map order or inode ids.
func (m *MemFS) Fingerprint() [sha256.Size]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	var num [8]byte
	writeBytes := func(b []byte) {
		binary.BigEndian.PutUint64(num[:], uint64(len(b)))
		h.Write(num[:])
		h.Write(b)
	}
	walkNamespace(m.root, "/", true, func(p string, n *inode) {
		writeBytes([]byte(p))
		if n.isDir() {
			h.Write([]byte{'d'})
		} else {
			h.Write([]byte{'f'})
			writeBytes(n.durable)
		}
	})
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// walkNamespace calls fn for every path under directory d, in sorted order,
// following durable entries when durable is set, else current ones.
func walkNamespace(d *inode, dir string, durable bool, fn func(p string, n *inode)) {
	ents := d.entries
	if durable {
		ents = d.dentries
	}
	names := make([]string, 0, len(ents))
	for k := range ents {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		p, n := path.Join(dir, k), ents[k]
		fn(p, n)
		if n.isDir() {
			walkNamespace(n, p, durable, fn)
		}
	}
}

// List returns every current path (files and directories, not the root),
// sorted, as clean absolute slash paths.
func (m *MemFS) List() []string {
	return m.list(false)
}

// ListDurable returns every path of the durable namespace, sorted: the
// names that a [CrashDropUnsynced] would leave.
func (m *MemFS) ListDurable() []string {
	return m.list(true)
}

func (m *MemFS) list(durable bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	walkNamespace(m.root, "/", durable, func(p string, _ *inode) { out = append(out, p) })
	return out
}

// FileState describes a file or directory of a [MemFS] for tests.
type FileState struct {
	// Dir reports a directory.
	Dir bool
	// Size is the current size, what reads see; 0 for directories.
	Size int64
	// DurableSize is the size as of the last successful Sync: what a
	// [CrashDropUnsynced] would leave; 0 for directories.
	DurableSize int64
	// Unsynced counts the pending writes and truncates of a file, or the
	// pending entry operations of a directory.
	Unsynced int
	// DurableEntry reports that the durable namespace names this same
	// file at this path, so the name survives any crash.
	DurableEntry bool
}

// Inspect describes the current file or directory name.
func (m *MemFS) Inspect(name string) (FileState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, clean, err := m.lookup(name)
	if err != nil {
		return FileState{}, pathErr("inspect", name, err)
	}
	st := FileState{
		Dir:         n.isDir(),
		Size:        int64(len(n.data)),
		DurableSize: int64(len(n.durable)),
		Unsynced:    len(n.pending) + len(n.dpending),
	}
	d := m.root
	for _, p := range split(clean) {
		if d == nil || !d.isDir() {
			d = nil
			break
		}
		d = d.dentries[p]
	}
	st.DurableEntry = d == n
	return st, nil
}

// ReadDurable returns a copy of the durable content of the current file
// name: what a [CrashDropUnsynced] would leave in it, if its entry is
// durable.
func (m *MemFS) ReadDurable(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.fileNode("readdurable", name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(n.durable), nil
}
