package vfs_test

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestMemFSConcurrentUse runs writers, syncers, directory readers and
// lockers at once; run it with -race. Each writer owns one file, so the
// final contents are known.
func TestMemFSConcurrentUse(t *testing.T) {
	m := newDir(t)
	const writers, writes = 4, 200
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("/d/f%d", w)
			f, err := m.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for i := range writes {
				if _, err := f.Write([]byte{byte(w)}); err != nil {
					errs <- err
					return
				}
				if i%16 == 0 {
					if err := f.Sync(); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		for range writes {
			if _, err := m.ReadDir("/d"); err != nil {
				errs <- err
				return
			}
			if err := m.SyncDir("/d"); err != nil {
				errs <- err
				return
			}
			_ = m.Fingerprint()
			_ = m.List()
		}
	})
	wg.Go(func() {
		for range writes {
			l, err := m.Lock("/d/.lock")
			if err != nil {
				errs <- err
				return
			}
			if err := l.Close(); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		name := fmt.Sprintf("/d/f%d", w)
		if got := readFile(t, m, name); got != string(bytes.Repeat([]byte{byte(w)}, writes)) {
			t.Errorf("%s has %d bytes, want %d bytes of %d", name, len(got), writes, w)
		}
	}
}
