package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/krabka-go/krabka/internal/codegen"
	"github.com/krabka-go/krabka/internal/codegen/gogen"
)

func main() {
	pkg := flag.String("pkg", "", "Go package name of the output")
	defs := flag.String("defs", "definitions", "directory of *.def files")
	out := flag.String("out", ".", "output directory")
	flag.Parse()
	if err := run(*pkg, *defs, *out); err != nil {
		fmt.Fprintln(os.Stderr, "krabkagen:", err)
		os.Exit(1)
	}
}

func run(pkg, defs, out string) error {
	if pkg == "" {
		return fmt.Errorf("-pkg is required")
	}
	msgs, err := codegen.ParseDir(defs)
	if err != nil {
		return err
	}
	files, err := gogen.Generate(pkg, msgs)
	if err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(out, "*_gen.go"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if _, keep := files[filepath.Base(p)]; !keep {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(out, n)
		if cur, err := os.ReadFile(p); err == nil && string(cur) == string(files[n]) {
			continue
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}
