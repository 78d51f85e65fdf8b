package vfs

import (
	"fmt"
	"syscall"
)

// Op is a set of MemFS operations that an injected [Fault] can fail.
type Op uint16

// The operations a [Fault] can fail. Combine them with |.
const (
	OpOpen     Op = 1 << iota // FS.OpenFile and FS.Lock
	OpRead                    // File.Read and File.ReadAt
	OpWrite                   // File.Write and File.WriteAt
	OpTruncate                // File.Truncate (not O_TRUNC, which is OpOpen)
	OpSync                    // File.Sync of a regular file; its unsynced writes are then never durable
	OpSyncDir                 // FS.SyncDir and File.Sync of a directory; its unsynced entry operations are then never durable
	OpRename                  // FS.Rename
	OpRemove                  // FS.Remove
	OpMkdir                   // FS.MkdirAll
)

// Forever as [Fault.Count] fails every matching call until
// [MemFS.ClearFaults].
const Forever = -1

// Fault describes failures to inject into a [MemFS] with
// [MemFS.InjectFault].
type Fault struct {
	// Ops selects the operations that fail. It must not be empty.
	Ops Op
	// Match selects the paths that fail, given the clean absolute slash
	// path ("/data/00000000000000000000.log"). For operations on an open
	// File it is the path the file was opened with; for Rename the fault
	// fires when either path matches. Nil matches every path. Match runs
	// with the MemFS locked, so it must not call the MemFS.
	Match func(path string) bool
	// Err is the error the call fails with, wrapped in *fs.PathError
	// (*os.LinkError for Rename): typically syscall.EIO or syscall.ENOSPC,
	// so that errors.Is(err, syscall.EIO) holds. It must not be nil.
	Err error
	// Count is how many matching calls fail: a positive number, or
	// [Forever].
	Count int
	// Off and Len, when Len is positive, narrow the fault to Read, ReadAt,
	// Write and WriteAt calls whose byte range [off, off+len(p)) overlaps
	// [Off, Off+Len): a latent sector error that fails only the reads of
	// the bad sectors. Other operations never match a fault with a range.
	Off, Len int64
	// ShortWrite is how many bytes of a failing Write or WriteAt are still
	// written (capped at the write's length) before it returns Err, as a
	// disk that fills up mid-write does with ENOSPC. The written prefix is
	// an ordinary pending write. Zero writes nothing.
	ShortWrite int
}

// faultRule is an injected Fault with its remaining count.
type faultRule struct {
	Fault
	left int // calls still to fail; Forever for no limit
}

// InjectFault makes the next f.Count calls of f.Ops on paths matching
// f.Match fail with f.Err. Faults are checked in the order they were
// injected; the first that matches a call fires and uses up one of its
// count. A fault is checked once the call's file handle or parent
// directory proved valid, and before the call changes anything (apart from
// the ShortWrite prefix). InjectFault panics if f is malformed, which is a
// bug in the test.
func (m *MemFS) InjectFault(f Fault) {
	switch {
	case f.Ops == 0:
		panic("vfs: Fault.Ops is empty")
	case f.Err == nil:
		panic("vfs: Fault.Err is nil")
	case f.Count <= 0 && f.Count != Forever:
		panic(fmt.Sprintf("vfs: Fault.Count %d is neither positive nor Forever", f.Count))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = append(m.faults, &faultRule{Fault: f, left: f.Count})
}

// ClearFaults removes every injected fault and every read corruption
// ([MemFS.CorruptReads]). Stored corruption ([MemFS.CorruptStored]) stays,
// as it changed the bytes themselves.
func (m *MemFS) ClearFaults() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = nil
	for _, n := range m.readFaulty {
		n.readFlips = nil
	}
	m.readFaulty = nil
}

// firing returns the first injected fault for op on any of paths, using up
// one of its count, or nil. For reads and writes, [off, off+n) is the byte
// range of the call; other operations pass n < 0. The caller holds m.mu.
func (m *MemFS) firing(op Op, off, n int64, paths ...string) *faultRule {
	for i, r := range m.faults {
		if r.Ops&op == 0 || !r.matches(paths) {
			continue
		}
		if r.Len > 0 && (n < 0 || off >= r.Off+r.Len || off+n <= r.Off) {
			continue
		}
		if r.left != Forever {
			r.left--
			if r.left == 0 {
				m.faults = append(m.faults[:i:i], m.faults[i+1:]...)
			}
		}
		return r
	}
	return nil
}

// fault returns the error of the fault firing for op on paths, or nil.
func (m *MemFS) fault(op Op, paths ...string) error {
	if r := m.firing(op, 0, -1, paths...); r != nil {
		return r.Err
	}
	return nil
}

func (r *faultRule) matches(paths []string) bool {
	if r.Match == nil {
		return true
	}
	for _, p := range paths {
		if r.Match(p) {
			return true
		}
	}
	return false
}

// CorruptReads makes every later read of file name return the bytes in
// [off, off+n) XORed with mask, without changing the stored bytes: a
// transient read fault, such as a flaky cable or controller. The corruption
// belongs to the file (it follows renames and survives crashes) until
// [MemFS.ClearFaults]. It panics if mask is 0 or the range is empty, since
// that would corrupt nothing.
func (m *MemFS) CorruptReads(name string, off, n int64, mask byte) error {
	checkCorruption(off, n, mask)
	m.mu.Lock()
	defer m.mu.Unlock()
	node, err := m.fileNode("corruptreads", name)
	if err != nil {
		return err
	}
	if len(node.readFlips) == 0 {
		m.readFaulty = append(m.readFaulty, node)
	}
	node.readFlips = append(node.readFlips, flip{off: off, n: n, mask: mask})
	return nil
}

// CorruptStored XORs mask into the stored bytes [off, off+n) of file name,
// both the durable content and the current content: latent corruption of
// the medium, seen by every later read and kept by every crash. The range
// must lie within the durable content. It panics if mask is 0 or the range
// is empty.
func (m *MemFS) CorruptStored(name string, off, n int64, mask byte) error {
	checkCorruption(off, n, mask)
	m.mu.Lock()
	defer m.mu.Unlock()
	node, err := m.fileNode("corruptstored", name)
	if err != nil {
		return err
	}
	if off+n > int64(len(node.durable)) {
		return pathErr("corruptstored", name, fmt.Errorf("range [%d, %d) beyond the durable size %d: %w", off, off+n, len(node.durable), syscall.EINVAL))
	}
	for i := off; i < off+n; i++ {
		node.durable[i] ^= mask
		if i < int64(len(node.data)) {
			node.data[i] ^= mask
		}
	}
	return nil
}

func checkCorruption(off, n int64, mask byte) {
	if mask == 0 || n <= 0 || off < 0 {
		panic(fmt.Sprintf("vfs: corruption of [%d, +%d) with mask %#x changes nothing", off, n, mask))
	}
}

// fileNode resolves name to a regular file. The caller holds m.mu.
func (m *MemFS) fileNode(op, name string) (*inode, error) {
	n, _, err := m.lookup(name)
	if err == nil && n.isDir() {
		err = syscall.EISDIR
	}
	if err != nil {
		return nil, pathErr(op, name, err)
	}
	return n, nil
}
