package snapshot

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// TestReadIOErrors checks D22 of docs/reliability.md: an I/O error while
// reading is reported as such, with the path, and never as corruption or as a
// clean end.
func TestReadIOErrors(t *testing.T) {
	data, id := smallSnapshot(t)
	path := "/d/" + FileName(id)
	m := vfs.NewMem()
	writeFile(t, m, path, data)

	m.InjectFault(vfs.Fault{Ops: vfs.OpRead, Err: syscall.EIO, Count: 1, Off: 100, Len: 1})
	_, err := Open(m, path, ReadOptions{})
	if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("Open with a read error: %v, want EIO naming the file", err)
	}

	r, err := Open(m, path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Path() != path {
		t.Errorf("Path() = %q", r.Path())
	}
	if !r.Next() || r.Pos() == 0 {
		t.Fatalf("first Next: %v at %d", r.Err(), r.Pos())
	}
	m.InjectFault(vfs.Fault{Ops: vfs.OpRead, Err: syscall.EIO, Count: vfs.Forever})
	if r.Next() {
		t.Fatal("Next succeeded despite the read error")
	}
	if !errors.Is(r.Err(), syscall.EIO) || r.Next() {
		t.Errorf("Err() = %v, want EIO, and Next stays false", r.Err())
	}
	m.ClearFaults()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if r.Next() {
		t.Error("Next after Close")
	}

	// A file that shrinks after Open is corruption found while iterating.
	r, err = Open(m, path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := m.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(150); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	if !errors.Is(r.Err(), ErrTruncated) {
		t.Errorf("iterating a file that shrank: %v, want ErrTruncated", r.Err())
	}
}

func TestRecoverIOErrors(t *testing.T) {
	m := vfs.NewMem()
	writeFile(t, m, "/d/"+PartFileName(kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, 1), []byte{1})
	m.InjectFault(vfs.Fault{Ops: vfs.OpRemove, Err: syscall.EIO, Count: 1})
	if _, err := Recover(m, "/d"); !errors.Is(err, syscall.EIO) {
		t.Errorf("Recover with a failing remove: %v", err)
	}
	m.InjectFault(vfs.Fault{Ops: vfs.OpSyncDir, Err: syscall.EIO, Count: 1})
	if _, err := Recover(m, "/d"); !errors.Is(err, syscall.EIO) {
		t.Errorf("Recover with a failing directory sync: %v", err)
	}
	writeFile(t, m, "/d/"+FileName(kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}), []byte{1})
	m.InjectFault(vfs.Fault{Ops: vfs.OpSyncDir, Err: syscall.EIO, Count: 1})
	if err := MarkDeleted(m, "/d", kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}); !errors.Is(err, syscall.EIO) {
		t.Errorf("MarkDeleted with a failing directory sync: %v", err)
	}
	m.InjectFault(vfs.Fault{Ops: vfs.OpRemove, Err: syscall.EIO, Count: 1})
	if err := RemoveDeleted(m, "/d", kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}); !errors.Is(err, syscall.EIO) {
		t.Errorf("RemoveDeleted with a failing remove: %v", err)
	}
	if err := RemoveDeleted(m, "/d", kraft.OffsetAndEpoch{Offset: -1, Epoch: 1}); err == nil {
		t.Error("RemoveDeleted of a negative id succeeded")
	}
}

func TestErrorTexts(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&PositionError{ID: kraft.OffsetAndEpoch{Offset: 10, Epoch: 2}, Position: 12, Size: 12}, "snapshot: read 10-2 at position 12: out of range [0, 12)"},
		{&ChunkError{ID: kraft.OffsetAndEpoch{Offset: 10, Epoch: 2}, Kind: ErrWrongPosition, Position: 5, Len: 3, Size: 12, Have: 4, Limit: 12},
			"snapshot: download 10-2: snapshot: chunk at wrong position (chunk at 5, 3 bytes, size 12; have 4 bytes, limit 12)"},
		{&NameError{Name: "x.checkpoint", Reason: "short"}, `snapshot: invalid snapshot file name "x.checkpoint": short`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	for k, want := range map[Kind]string{KindSnapshot: "snapshot", KindPart: "part", KindDeleted: "deleted", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}
