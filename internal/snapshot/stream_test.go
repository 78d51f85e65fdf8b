package snapshot

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// checkStreamAgrees streams the file Open opened (r, or its error err)
// and fails unless Stream hands on the same records and header, or
// returns the same error.
func checkStreamAgrees(t *testing.T, fsys vfs.FS, path string, o ReadOptions, r *Reader, err error) {
	t.Helper()
	h, vals, serr := streamAll(fsys, path, o)
	if err != nil {
		if serr == nil || serr.Error() != err.Error() {
			t.Fatalf("Stream = %v, Open = %v", serr, err)
		}
		return
	}
	if serr != nil {
		t.Fatalf("Stream = %v after a successful Open", serr)
	}
	if !reflect.DeepEqual(h, r.Header()) {
		t.Fatalf("Stream header %+v, Open %+v", h, r.Header())
	}
	_, want, err := readAll(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(vals, want, slices.Equal) {
		t.Fatalf("Stream read %d values, Open %d, or others", len(vals), len(want))
	}
}

// streamAll streams path and returns the header and every record value,
// in order.
func streamAll(fsys vfs.FS, path string, o ReadOptions) (Header, [][]byte, error) {
	var vals [][]byte
	h, err := Stream(fsys, path, o, Stage[[][]byte]{
		Decode: func(dst *[][]byte, _ *recordbatch.Batch, recs []recordbatch.Record, _ int) error {
			*dst = (*dst)[:0]
			for _, r := range recs {
				*dst = append(*dst, slices.Clone(r.Value))
			}
			return nil
		},
		Apply: func(v *[][]byte) error {
			vals = append(vals, *v...)
			return nil
		},
	})
	return h, vals, err
}

// streamFile writes a snapshot of n records in batches of batch records
// and returns its filesystem, path and values.
func streamFile(t *testing.T, n, batch int) (*vfs.MemFS, string, [][]byte) {
	t.Helper()
	m := vfs.NewMem()
	id := kraft.OffsetAndEpoch{Offset: 100, Epoch: 3}
	vals := testValues(n)
	data := writeSnapshot(t, m, "/d", id, Header{LastContainedLogTimestamp: 5}, vals, batch, WriterOptions{MaxBatchRecords: batch})
	writeFile(t, m, "/s/"+FileName(id), data)
	return m, "/s/" + FileName(id), vals
}

// TestStreamKeepsOrder streams more records than are in flight at once,
// in batches larger and smaller than a chunk: every value arrives once,
// in file order.
func TestStreamKeepsOrder(t *testing.T) {
	for _, batch := range []int{1, 700, StreamChunk, 3*StreamChunk + 5} {
		m, path, want := streamFile(t, StreamChunk*StreamDepth*3+17, batch)
		h, got, err := streamAll(m, path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h.LastContainedLogTimestamp != 5 {
			t.Fatalf("header %+v", h)
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("batches of %d: streamed %d values, want %d in order", batch, len(got), len(want))
		}
	}
}

// TestStreamErrors checks which error Stream returns: the first refusal
// of Decode or Apply in file order, with nothing applied after it,
// unless the file is damaged anywhere, which Open's error reports.
func TestStreamErrors(t *testing.T) {
	const n, batch = 5000, 900
	m, path, _ := streamFile(t, n, batch)
	errDecode, errApply := errors.New("decode refused"), errors.New("apply refused")
	// run refuses chunk decodeAt in Decode and applyAt in Apply, and
	// returns the error and the chunks applied.
	run := func(fsys vfs.FS, decodeAt, applyAt int) (int, error) {
		decoded, applied := 0, 0
		_, err := Stream(fsys, path, ReadOptions{}, Stage[int]{
			Decode: func(dst *int, _ *recordbatch.Batch, _ []recordbatch.Record, queued int) error {
				if queued < 0 || queued > StreamDepth {
					t.Errorf("queued %d", queued)
				}
				*dst = decoded
				decoded++
				if *dst == decodeAt {
					return fmt.Errorf("chunk %d: %w", *dst, errDecode)
				}
				return nil
			},
			Apply: func(v *int) error {
				if *v != applied {
					t.Fatalf("applied chunk %d, want %d", *v, applied)
				}
				applied++
				if *v == applyAt {
					return fmt.Errorf("chunk %d: %w", *v, errApply)
				}
				return nil
			},
		})
		return applied, err
	}
	if applied, err := run(m, 3, -1); !errors.Is(err, errDecode) || applied != 4 {
		t.Fatalf("decode refusal: %v after %d chunks applied", err, applied)
	}
	if applied, err := run(m, -1, 2); !errors.Is(err, errApply) || applied != 3 {
		t.Fatalf("apply refusal: %v after %d chunks applied", err, applied)
	}
	if _, err := run(m, 5, 2); !errors.Is(err, errApply) {
		t.Fatalf("apply refusal before a decode refusal: %v", err)
	}
	if _, err := run(m, 2, 5); !errors.Is(err, errDecode) {
		t.Fatalf("decode refusal before an apply refusal: %v", err)
	}
	// A flipped byte in the last data batch, after both refusals: the
	// damage is the error, as Open reports it.
	data, err := m.ReadDurable(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-200] ^= 1
	bad := vfs.NewMem()
	writeFile(t, bad, path, data)
	_, openErr := Open(bad, path, ReadOptions{})
	if openErr == nil {
		t.Fatal("Open accepted the damaged file")
	}
	for _, at := range [][2]int{{1, -1}, {-1, 0}, {-1, -1}} {
		if _, err := run(bad, at[0], at[1]); !errors.Is(err, ErrCorrupt) || err.Error() != openErr.Error() {
			t.Fatalf("damaged file, refusals at %v: Stream = %v, want Open's %v", at, err, openErr)
		}
	}
	if _, err := Stream(m, "/s/missing.checkpoint", ReadOptions{}, Stage[int]{}); err == nil {
		t.Fatal("Stream of a missing file succeeded")
	}
	if _, err := Stream(m, "/s/00000000000000000100-0000000099.checkpoint", ReadOptions{}, Stage[int]{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stream of an absent snapshot = %v, want ErrNotFound", err)
	}
}

// TestStreamApplyPanics: a panic of Apply reaches the caller, and the
// reading goroutine has ended by then (goleak checks it at the end).
func TestStreamApplyPanics(t *testing.T) {
	m, path, _ := streamFile(t, StreamChunk*StreamDepth*2, 500)
	defer func() {
		if p := recover(); p != "apply" {
			t.Fatalf("recovered %v, want Apply's panic", p)
		}
	}()
	_, _ = Stream(m, path, ReadOptions{}, Stage[int]{
		Decode: func(*int, *recordbatch.Batch, []recordbatch.Record, int) error { return nil },
		Apply:  func(*int) error { panic("apply") },
	})
	t.Fatal("Stream returned")
}
