package wire

import (
	"testing"

	"github.com/krabka-go/krabka/internal/codegen/gogen"
)

// TestGeneratedFilesUpToDate regenerates the private RPCs' codecs in
// memory from definitions/ and fails when a committed *_gen.go file
// differs (run go generate).
func TestGeneratedFilesUpToDate(t *testing.T) {
	gogen.CheckUpToDate(t, "wire", "definitions", ".")
}
