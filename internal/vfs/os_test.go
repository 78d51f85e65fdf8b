package vfs_test

import (
	"testing"

	"github.com/krabka-go/krabka/internal/vfs"
)

// TestOSLockMessageNamesFile checks the message an operator sees when a
// second process starts on the same data directory. (Within one process
// the second Lock fails too, because a flock belongs to the open file
// description.)
func TestOSLockMessageNamesFile(t *testing.T) {
	name := t.TempDir() + "/.lock"
	l, err := vfs.OS().Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = vfs.OS().Lock(name)
	if want := "lock " + name + ": vfs: file is locked by another process"; err == nil || err.Error() != want {
		t.Errorf("second Lock = %v, want %q", err, want)
	}
}
