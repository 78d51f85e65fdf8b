package dumplog

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
)

// FuzzDump checks that no input makes Dump panic or fail: damage is
// printed, never fatal.
func FuzzDump(f *testing.F) {
	root := sharedtest.Dir(f, "kafka-samples")
	for _, rel := range []string{
		"kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint",
		"kafka42-single-static/bootstrap.checkpoint",
		"kafka37-single-static/bootstrap.checkpoint",
	} {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"00000000000000000000.log", "bootstrap.checkpoint"} {
			sum, err := Dump(io.Discard, name, data, Options{MetadataDecoder: true})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if sum.InvalidTrailingBytes > len(data) {
				t.Fatalf("%d invalid bytes of %d", sum.InvalidTrailingBytes, len(data))
			}
		}
	})
}
