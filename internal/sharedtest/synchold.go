package sharedtest

import (
	"io/fs"
	"sync"

	"github.com/krabka-go/krabka/internal/vfs"
)

// SyncHold is a file system that, once armed, holds the next fsync of a
// file whose name match accepts until Release, so that a test can act
// while that fsync runs. It also records every such file closed while
// one of its fsyncs is running.
type SyncHold struct {
	vfs.FS
	match    func(name string) bool
	mu       sync.Mutex
	armed    bool
	entered  chan struct{}
	release  chan struct{}
	released bool
	inSync   map[string]int
	violated []string
}

// NewSyncHold wraps fsys.
func NewSyncHold(fsys vfs.FS, match func(name string) bool) *SyncHold {
	return &SyncHold{FS: fsys, match: match, entered: make(chan struct{}, 1), release: make(chan struct{}), inSync: map[string]int{}}
}

// Arm makes the next matching fsync wait for Release; Entered receives
// once it has begun.
func (h *SyncHold) Arm() {
	h.mu.Lock()
	h.armed = true
	h.mu.Unlock()
}

// Entered receives a value when the armed fsync has begun.
func (h *SyncHold) Entered() <-chan struct{} { return h.entered }

// Release lets the held fsync (and any later one) complete; calling it
// again does nothing.
func (h *SyncHold) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		h.released = true
		close(h.release)
	}
}

// ClosedDuringSync returns the names of files closed while an fsync of
// theirs ran.
func (h *SyncHold) ClosedDuringSync() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.violated...)
}

// OpenFile implements [vfs.FS].
func (h *SyncHold) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil || !h.match(name) {
		return f, err
	}
	return &heldFile{File: f, h: h}, nil
}

type heldFile struct {
	vfs.File
	h *SyncHold
}

func (f *heldFile) Sync() error {
	h := f.h
	h.mu.Lock()
	armed := h.armed
	h.armed = false
	h.inSync[f.Name()]++
	h.mu.Unlock()
	if armed {
		h.entered <- struct{}{}
		<-h.release
	}
	err := f.File.Sync()
	h.mu.Lock()
	h.inSync[f.Name()]--
	h.mu.Unlock()
	return err
}

func (f *heldFile) Close() error {
	h := f.h
	h.mu.Lock()
	if h.inSync[f.Name()] > 0 {
		h.violated = append(h.violated, f.Name())
	}
	h.mu.Unlock()
	return f.File.Close()
}
