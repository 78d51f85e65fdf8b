//go:build linux

package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkRawWriteFdatasync is the floor for BenchmarkAppendSync: append
// the same number of bytes to a plain file and fdatasync it, on the same
// disk.
func BenchmarkRawWriteFdatasync(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := benchBatch(b, n)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
