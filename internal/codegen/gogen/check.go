package gogen

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/codegen"
)

// CheckUpToDate regenerates package pkg from the definitions in defsDir
// and fails t when the *_gen.go files in outDir differ from the result,
// are missing, or are extra. Packages with generated codecs call it from a
// test so that a stale file cannot go unnoticed.
func CheckUpToDate(t testing.TB, pkg, defsDir, outDir string) {
	t.Helper()
	msgs, err := codegen.ParseDir(defsDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(pkg, msgs)
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := filepath.Glob(filepath.Join(outDir, "*_gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range onDisk {
		if _, ok := files[filepath.Base(p)]; !ok {
			t.Errorf("%s is not produced by the definitions any more; run go generate", p)
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		cur, err := os.ReadFile(filepath.Join(outDir, n))
		if err != nil {
			t.Errorf("%s: %v; run go generate", n, err)
			continue
		}
		if !bytes.Equal(cur, files[n]) {
			t.Errorf("%s is stale; run go generate", n)
		}
	}
}
