package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// DefaultMaxDownloadSize caps the total size a [Download] accepts when
// DownloadOptions.MaxSize is zero: 4 GiB. Kafka has no cap; the size comes
// from the leader's response, and the cap stops a corrupt or hostile size
// from filling the disk.
const DefaultMaxDownloadSize = 4 << 30

// DownloadOptions tune a [Download].
type DownloadOptions struct {
	// MaxSize caps the snapshot's total size; 0 means
	// [DefaultMaxDownloadSize].
	MaxSize int64
	// Read is used to verify the complete file before Install renames it.
	Read ReadOptions
}

// Download receives a snapshot from the leader in FetchSnapshot chunks
// (KIP-630, KafkaRaftClient.handleFetchSnapshotResponse) and installs it. The
// follower sends Position = [Download.Position] and writes each response with
// [Download.Write]; when [Download.Done], [Download.Install] verifies the
// file, fsyncs it, renames the .checkpoint.part to the final name and fsyncs
// the directory.
//
// A chunk that does not continue the file exactly (a duplicate, a
// reordered or a skipped chunk), that runs past the announced size, or
// that announces a different or oversized total is refused with a
// *ChunkError and changes nothing: the follower can ask again for the
// right position. An I/O error is final; Abort then removes the file, and
// a new Download starts over from position 0.
//
// A Download is used by one goroutine.
type Download struct {
	fs      vfs.FS
	dir     string
	id      kraft.OffsetAndEpoch
	tmpPath string
	final   string
	f       vfs.File
	pos     int64
	size    int64 // -1 until the first chunk
	opts    DownloadOptions
	state   writerState
}

// NewDownload creates the .checkpoint.part file PartFileName(id, unique)
// in dir for downloading snapshot id. It fails with [ErrExists] when the
// snapshot is already complete or the temporary name is taken.
func NewDownload(fsys vfs.FS, dir string, id kraft.OffsetAndEpoch, unique uint64, o DownloadOptions) (*Download, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxDownloadSize
	}
	if o.MaxSize < 0 {
		return nil, fmt.Errorf("snapshot: download %s: negative size cap %d", idString(id), o.MaxSize)
	}
	final := filepath.Join(dir, FileName(id))
	if _, err := fsys.Stat(final); err == nil {
		return nil, fmt.Errorf("snapshot: download %s: %w", idString(id), ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot: download %s: %w", idString(id), err)
	}
	tmp := filepath.Join(dir, PartFileName(id, unique))
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("snapshot: download %s: temporary file %s exists: %w", idString(id), tmp, ErrExists)
		}
		return nil, fmt.Errorf("snapshot: download %s: %w", idString(id), err)
	}
	return &Download{fs: fsys, dir: dir, id: id, tmpPath: tmp, final: final, f: f, size: -1, opts: o}, nil
}

// ID returns the snapshot being downloaded.
func (d *Download) ID() kraft.OffsetAndEpoch { return d.id }

// Position returns the number of bytes written so far: the Position of
// the next FetchSnapshot request.
func (d *Download) Position() int64 { return d.pos }

// Size returns the total size announced by the first chunk, or -1 before
// it.
func (d *Download) Size() int64 { return d.size }

// Done reports whether every byte has been written.
func (d *Download) Done() bool { return d.size >= 0 && d.pos == d.size }

// Write appends one FetchSnapshot response: chunk is the UnalignedRecords
// bytes, position the response's Position and size its Size (the total
// snapshot size). Kafka's follower requires the same of a response
// (position equal to the bytes it holds). A refused chunk leaves the
// download unchanged and returns a *ChunkError; an I/O error is final.
func (d *Download) Write(position, size int64, chunk []byte) error {
	if d.state != writing {
		return fmt.Errorf("snapshot: download %s: %w", idString(d.id), ErrClosed)
	}
	reject := func(kind error, limit int64) error {
		return &ChunkError{ID: d.id, Kind: kind, Position: position, Len: len(chunk), Size: size, Have: d.pos, Limit: limit}
	}
	switch {
	case size <= 0 || size > d.opts.MaxSize:
		return reject(ErrTooLarge, d.opts.MaxSize)
	case d.size >= 0 && size != d.size:
		return reject(ErrSizeMismatch, d.size)
	case position != d.pos:
		return reject(ErrWrongPosition, d.size)
	case int64(len(chunk)) > size-position:
		return reject(ErrOvershoot, size)
	}
	if _, err := d.f.Write(chunk); err != nil {
		d.state = failed
		return fmt.Errorf("snapshot: download %s: write %s: %w", idString(d.id), d.tmpPath, err)
	}
	d.size = size
	d.pos += int64(len(chunk))
	return nil
}

// Install completes the download: it fsyncs the file, verifies it as [Open]
// does (a snapshot that would not load is never installed: invariant S5 in
// docs/reliability.md), renames it to its final name and fsyncs the
// directory. On a verification failure it removes the file and returns the
// *CorruptError. It returns a *ChunkError matching [ErrIncomplete] when bytes
// are missing, and leaves the download usable then.
func (d *Download) Install() error {
	if d.state != writing {
		return fmt.Errorf("snapshot: install %s: %w", idString(d.id), ErrClosed)
	}
	if !d.Done() {
		return &ChunkError{ID: d.id, Kind: ErrIncomplete, Position: d.pos, Size: d.size, Have: d.pos, Limit: d.size}
	}
	err := d.install()
	if err != nil && d.state != frozen {
		d.state = failed
		return errors.Join(err, d.remove())
	}
	return err
}

func (d *Download) install() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("snapshot: install %s: sync: %w", idString(d.id), err)
	}
	f := d.f
	d.f = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("snapshot: install %s: close: %w", idString(d.id), err)
	}
	r, err := open(d.fs, d.tmpPath, d.id, d.opts.Read)
	if err != nil {
		return fmt.Errorf("snapshot: install %s: %w", idString(d.id), err)
	}
	if err := r.Close(); err != nil {
		return fmt.Errorf("snapshot: install %s: %w", idString(d.id), err)
	}
	if err := d.fs.Rename(d.tmpPath, d.final); err != nil {
		return fmt.Errorf("snapshot: install %s: rename: %w", idString(d.id), err)
	}
	d.state = frozen
	if err := d.fs.SyncDir(d.dir); err != nil {
		return fmt.Errorf("snapshot: install %s: sync directory: %w", idString(d.id), err)
	}
	return nil
}

// Abort gives up the download and removes the .part file (not synced;
// [Recover] removes a file a crash brings back). It is a no-op after a
// successful Install or an earlier Abort.
func (d *Download) Abort() error {
	switch d.state {
	case frozen, aborted:
		return nil
	}
	d.state = aborted
	return d.remove()
}

func (d *Download) remove() error {
	var errs []error
	if d.f != nil {
		if err := d.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("snapshot: abort download %s: close: %w", idString(d.id), err))
		}
		d.f = nil
	}
	if err := d.fs.Remove(d.tmpPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("snapshot: abort download %s: remove: %w", idString(d.id), err))
	}
	return errors.Join(errs...)
}
