package snapshot

import (
	"bytes"
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// leaderSnapshot writes a snapshot on a "leader" MemFS and returns the
// Store serving it and its bytes.
func leaderSnapshot(t *testing.T, id kraft.OffsetAndEpoch, n int) (*Store, []byte) {
	t.Helper()
	m := vfs.NewMem()
	data := writeSnapshot(t, m, "/leader", id, Header{LastContainedLogTimestamp: 5}, testValues(n), kafkaAppendGroup, WriterOptions{})
	return NewStore(m, "/leader"), data
}

// TestDownloadFromStore runs the FetchSnapshot loop of KIP-630:
// the follower asks at its position, the leader answers with a chunk of
// at most maxBytes and the total size, until the follower has it all and
// installs it. The installed file equals the leader's.
func TestDownloadFromStore(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	leader, data := leaderSnapshot(t, id, 200)
	for _, maxBytes := range []int{1, 7, 100, 4096, len(data), 1 << 20} {
		m := vfs.NewMem()
		mkdirDurable(t, m, "/f")
		d, err := NewDownload(m, "/f", id, 1, DownloadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for !d.Done() {
			chunk, size, err := leader.ReadRange(id, d.Position(), maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunk) > maxBytes || size != int64(len(data)) {
				t.Fatalf("chunk of %d bytes (max %d), size %d", len(chunk), maxBytes, size)
			}
			if err := d.Write(d.Position(), size, chunk); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Install(); err != nil {
			t.Fatal(err)
		}
		m.Crash(nil, vfs.CrashDropUnsynced) // installed means durable
		got, err := m.ReadDurable("/f/" + FileName(id))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("maxBytes %d: installed file differs (%v)", maxBytes, err)
		}
		if l, _ := List(m, "/f"); len(l.Parts) != 0 {
			t.Errorf("leftover parts %v", l.Parts)
		}
	}
}

// TestDownloadRejectsBadChunks sends duplicated, reordered, skipped,
// overshooting and resized chunks: each is refused with the right
// *ChunkError and changes nothing, and the download then completes with
// the right chunks.
func TestDownloadRejectsBadChunks(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	_, data := leaderSnapshot(t, id, 50)
	size := int64(len(data))
	m := vfs.NewMem()
	mkdirDurable(t, m, "/f")
	d, err := NewDownload(m, "/f", id, 1, DownloadOptions{MaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if d.Size() != -1 || d.Done() || d.ID() != id {
		t.Fatalf("fresh download: size %d done %v id %v", d.Size(), d.Done(), d.ID())
	}
	if err := d.Install(); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Install of nothing: %v, want ErrIncomplete", err)
	}
	expect := func(err, kind error, what string) {
		t.Helper()
		var ce *ChunkError
		if !errors.As(err, &ce) || !errors.Is(err, kind) {
			t.Fatalf("%s: %v, want a *ChunkError matching %v", what, err, kind)
		}
	}
	expect(d.Write(100, size, data[100:200]), ErrWrongPosition, "chunk ahead of the position")
	expect(d.Write(0, 0, nil), ErrTooLarge, "size 0")
	expect(d.Write(0, 2<<20, data[:100]), ErrTooLarge, "size above the cap")
	expect(d.Write(0, size, make([]byte, size+1)), ErrOvershoot, "chunk past the size")
	if err := d.Write(0, size, data[:100]); err != nil {
		t.Fatal(err)
	}
	expect(d.Write(0, size, data[:100]), ErrWrongPosition, "duplicate chunk")
	expect(d.Write(50, size, data[50:150]), ErrWrongPosition, "overlapping chunk")
	expect(d.Write(200, size, data[200:300]), ErrWrongPosition, "skipped chunk")
	expect(d.Write(100, size+1, data[100:200]), ErrSizeMismatch, "size changed")
	if err := d.Write(100, size, data[100:]); err != nil {
		t.Fatal(err)
	}
	// The last accepted write was the rest of the file.
	if !d.Done() || d.Position() != size {
		t.Fatalf("position %d of %d, done %v", d.Position(), size, d.Done())
	}
	expect(d.Write(size, size, []byte{1}), ErrOvershoot, "byte after the end")
	if err := d.Install(); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(size, size, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Install: %v, want ErrClosed", err)
	}
	if err := d.Abort(); err != nil {
		t.Errorf("Abort after Install: %v", err)
	}
	if _, err := NewDownload(m, "/f", id, 2, DownloadOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("download of an installed snapshot: %v, want ErrExists", err)
	}
}

// TestDownloadRestart abandons a half-done download (the leader said
// SNAPSHOT_NOT_FOUND, or the follower restarted) and starts again.
func TestDownloadRestart(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	_, data := leaderSnapshot(t, id, 50)
	size := int64(len(data))
	m := vfs.NewMem()
	mkdirDurable(t, m, "/f")
	d, err := NewDownload(m, "/f", id, 1, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(0, size, data[:100]); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDownload(m, "/f", id, 1, DownloadOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("second download with the same unique: %v, want ErrExists", err)
	}
	if err := d.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(100, size, data[100:]); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Abort: %v", err)
	}
	if l, _ := List(m, "/f"); len(l.Parts) != 0 {
		t.Fatalf("Abort left %v", l.Parts)
	}
	d, err = NewDownload(m, "/f", id, 1, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(0, size, data); err != nil {
		t.Fatal(err)
	}
	if err := d.Install(); err != nil {
		t.Fatal(err)
	}
}

// TestDownloadInstallVerifies sends a complete but corrupt snapshot: it
// must not be installed (invariant S5 in docs/reliability.md), and the
// .part is removed.
func TestDownloadInstallVerifies(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	_, data := leaderSnapshot(t, id, 50)
	bad := slices.Clone(data)
	bad[len(bad)/2] ^= 0x40
	m := vfs.NewMem()
	mkdirDurable(t, m, "/f")
	d, err := NewDownload(m, "/f", id, 1, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(0, int64(len(bad)), bad); err != nil {
		t.Fatal(err)
	}
	if err := d.Install(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Install of a corrupt snapshot: %v, want ErrCorrupt", err)
	}
	l, _ := List(m, "/f")
	if len(l.Parts) != 0 || len(l.Snapshots) != 0 {
		t.Errorf("after a refused install: %+v", l)
	}
	// A snapshot of another epoch under this id is refused too.
	other := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 4}
	d, err = NewDownload(m, "/f", other, 1, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(0, int64(len(data)), data); err != nil {
		t.Fatal(err)
	}
	if err := d.Install(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Install of a snapshot with the wrong epoch: %v, want ErrCorrupt", err)
	}
}

func TestDownloadIOFailures(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 1000, Epoch: 3}
	_, data := leaderSnapshot(t, id, 50)
	size := int64(len(data))
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpRename} {
		m := vfs.NewMem()
		mkdirDurable(t, m, "/f")
		d, err := NewDownload(m, "/f", id, 1, DownloadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.InjectFault(vfs.Fault{Ops: op, Err: syscall.EIO, Count: 1})
		err = d.Write(0, size, data)
		if err == nil {
			err = d.Install()
		}
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("op %v: %v, want EIO", op, err)
		}
		if err := d.Write(d.Position(), size, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("op %v: Write after failure: %v, want ErrClosed", op, err)
		}
		if err := d.Abort(); err != nil {
			t.Fatal(err)
		}
		if l, _ := List(m, "/f"); len(l.Parts) != 0 || len(l.Snapshots) != 0 {
			t.Errorf("op %v: after failure and Abort: %+v", op, l)
		}
	}
	if _, err := NewDownload(vfs.NewMem(), "/f", kraft.OffsetAndEpoch{Offset: -1, Epoch: 0}, 1, DownloadOptions{}); err == nil {
		t.Error("NewDownload with a negative id succeeded")
	}
	if _, err := NewDownload(vfs.NewMem(), "/f", id, 1, DownloadOptions{MaxSize: -1}); err == nil {
		t.Error("NewDownload with a negative cap succeeded")
	}
}
