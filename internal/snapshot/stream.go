package snapshot

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// Stage is one step of [Stream]: Decode turns records of the file into
// a value of its own on the reading goroutine, Apply consumes that value
// on the caller's goroutine, in file order.
type Stage[T any] struct {
	// Decode fills dst from recs, a run of consecutive records of data
	// batch b (at most [StreamChunk] of them). recs and b alias the
	// reader's buffer and are valid only during the call: dst must keep
	// copies. dst is a value an earlier Apply has finished with, or a
	// new one. An error is handed to Apply's caller in order: dst is
	// still applied, then the stream stops with the error.
	//
	// queued is the number of values decoded that Apply has not taken
	// yet: with some queued, Apply is the slower side, and Decode may
	// take work off it; with none, Apply waits for Decode.
	Decode func(dst *T, b *recordbatch.Batch, recs []recordbatch.Record, queued int) error
	// Apply consumes what Decode filled. After an error nothing more is
	// applied.
	Apply func(*T) error
}

// StreamChunk is the number of records [Stream] decodes into one value
// at most; StreamDepth is the number of values decoded ahead of Apply.
// The records in flight are therefore at most StreamChunk × StreamDepth
// beside the reader's buffer of one batch.
const (
	StreamChunk = 1024
	StreamDepth = 4
)

// Stream reads the snapshot file at path in one pass, with the checks of
// [Open], and hands its data records to s: decoding runs on a goroutine
// of its own while the caller's goroutine applies what was decoded
// before, so that reading, verifying and decoding overlap with applying.
// Unlike Open, records are applied before the file is known to be whole:
// the caller must discard what Apply built when Stream fails.
//
// The error is the one Open would return for the file (a *CorruptError
// or an I/O error) when the file is damaged anywhere, even after a
// record that Decode or Apply refused; otherwise the first error of
// Decode or Apply in file order, as returned. It returns the header once
// the whole file has been verified. Stream returns only after its
// goroutine has ended.
func Stream[T any](fsys vfs.FS, path string, o ReadOptions, s Stage[T]) (Header, error) {
	id, err := loadableID(path)
	if err != nil {
		return Header{}, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	o, err = o.resolve(path)
	if err != nil {
		return Header{}, err
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Header{}, fmt.Errorf("snapshot: open %s: %w: %w", path, ErrNotFound, err)
		}
		return Header{}, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only: a close error changes nothing read
	fi, err := f.Stat()
	if err != nil {
		return Header{}, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	sc := scanner{f: f, path: path, size: fi.Size(), epoch: int32(id.Epoch), max: o.MaxBatchBytes,
		dec: recordbatch.Decoder{MaxDecompressedSize: o.MaxDecompressedSize}}

	type slot struct {
		v   T
		err error
	}
	free := make(chan *slot, StreamDepth)
	for range StreamDepth {
		free <- new(slot)
	}
	full := make(chan *slot, StreamDepth)
	// stop is set once Apply (or Decode) failed: the reader then only
	// verifies the rest of the file.
	var stop atomic.Bool
	var scanErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(full)
		for {
			b, _, err := sc.next()
			if err != nil {
				scanErr = err
				return
			}
			if b == nil {
				return
			}
			if b.IsControl() {
				continue
			}
			for i := 0; i < len(b.Records) && !stop.Load(); i += StreamChunk {
				sl := <-free
				sl.err = s.Decode(&sl.v, b, b.Records[i:min(i+StreamChunk, len(b.Records))], len(full))
				if sl.err != nil {
					stop.Store(true)
				}
				full <- sl
			}
		}
	})
	// Should Apply panic, the reader is still stopped and waited for.
	defer func() {
		stop.Store(true)
		for sl := range full {
			free <- sl
		}
		wg.Wait()
	}()
	var first error
	for sl := range full {
		if first == nil {
			if err := s.Apply(&sl.v); err != nil {
				first = err
			} else {
				first = sl.err
			}
			if first != nil {
				stop.Store(true)
			}
		}
		free <- sl
	}
	wg.Wait()
	if scanErr != nil {
		return Header{}, scanErr
	}
	if first != nil {
		return Header{}, first
	}
	return sc.header, nil
}
