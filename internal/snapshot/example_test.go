package snapshot_test

import (
	"fmt"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
)

// Example writes a snapshot on the leader, serves it in FetchSnapshot
// chunks to a follower, which installs it, and reads it there.
func Example() {
	leader, follower := vfs.NewMem(), vfs.NewMem()
	const dir = "/logs/__cluster_metadata-0"
	for _, fs := range []vfs.FS{leader, follower} {
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			panic(err)
		}
	}
	id := kraft.OffsetAndEpoch{Offset: 12666, Epoch: 3}
	noOp := []byte{0x01, 0x14, 0x00, 0x00} // framed NoOpRecord v0

	// Leader: write. The times are the caller's (no clock inside).
	w, err := snapshot.Create(leader, dir, id, 1, snapshot.Header{LastContainedLogTimestamp: 1700000000000}, 1700000000100, snapshot.WriterOptions{})
	if err != nil {
		panic(err)
	}
	if err := w.Append(1700000000101, noOp, noOp, noOp); err != nil {
		panic(err)
	}
	if err := w.Freeze(1700000000102); err != nil {
		panic(err)
	}

	// Follower: download in chunks of at most 64 bytes, then install.
	store := snapshot.NewStore(leader, dir)
	d, err := snapshot.NewDownload(follower, dir, id, 1, snapshot.DownloadOptions{})
	if err != nil {
		panic(err)
	}
	for !d.Done() {
		chunk, size, err := store.ReadRange(id, d.Position(), 64)
		if err != nil {
			panic(err)
		}
		if err := d.Write(d.Position(), size, chunk); err != nil {
			panic(err)
		}
	}
	if err := d.Install(); err != nil {
		panic(err)
	}

	// Follower: read.
	r, err := snapshot.Open(follower, store.Path(id), snapshot.ReadOptions{})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	fmt.Printf("snapshot %d-%d ", r.ID().Offset, r.ID().Epoch)
	fmt.Println("bytes", r.Size(), "records", r.Records(), "last log time", r.Header().LastContainedLogTimestamp)
	for r.Next() {
		b := r.Batch()
		fmt.Printf("batch at offset %d, %d records, written at %d\n", b.BaseOffset, len(b.Records), b.BaseTimestamp)
	}
	if err := r.Err(); err != nil {
		panic(err)
	}
	// Output:
	// snapshot 12666-3 bytes 252 records 3 last log time 1700000000000
	// batch at offset 1, 3 records, written at 1700000000101
}
