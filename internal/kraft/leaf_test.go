package kraft_test

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The core is a leaf: a deterministic state machine that the runtime
// drives with messages, ticks and log results (the package documentation's
// Determinism section). Its packages may import the standard library and,
// of this module, only leafModulePackages, which obey the same rules. They
// never import os, net, syscall, crypto/rand or log, nor any other module,
// and never use what reads the wall clock, sleeps or waits, draws from a
// global random source or logs through a global logger: time comes from
// the Instant the runtime passes in, randomness from the source seeded
// from Config.Seed, logs go to Config.Logger.

// leafPackages are the core's packages, relative to the module root.
var leafPackages = []string{"internal/kraft", "internal/kraft/quorum"}

// leafModulePackages are the module packages (relative to the module
// root) the core may import: the quorum arithmetic and the bug zoo's
// re-injection switch.
var leafModulePackages = []string{"internal/kraft/quorum", "internal/bugzoo"}

// forbiddenImports are standard packages the core never imports; an entry
// ending in "/" forbids every package under it.
var forbiddenImports = []string{"os", "os/", "net", "net/", "syscall", "crypto/rand", "log"}

// forbiddenFuncs are package-level functions of allowed packages the core
// never uses, by import path.
var forbiddenFuncs = map[string][]string{
	"time": {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick"},
	"log/slog": {"Debug", "DebugContext", "Info", "InfoContext", "Warn", "WarnContext",
		"Error", "ErrorContext", "Log", "LogAttrs", "Default", "SetDefault", "SetLogLoggerLevel"},
}

// globalRandPackages are the packages whose package-level functions draw
// from the process-wide source; only their constructors (New...) are
// allowed.
var globalRandPackages = []string{"math/rand", "math/rand/v2"}

// TestCoreIsALeaf checks every non-test file of the core's packages,
// whatever its build constraints, and of the module packages they import.
func TestCoreIsALeaf(t *testing.T) {
	mod := modulePath(t)
	todo := slices.Clone(leafPackages)
	checked := map[string]bool{}
	for len(todo) > 0 {
		rel := todo[0]
		todo = todo[1:]
		if checked[rel] {
			continue
		}
		checked[rel] = true
		files := parseSources(t, rel, true)
		if len(files) == 0 {
			t.Fatalf("%s: no Go files", rel)
		}
		var c leafChecker
		for _, f := range files {
			c.check(f.fset, f.file)
		}
		for _, v := range c.violations {
			t.Error(v)
		}
		// The module packages the core imports are held to the same
		// rules.
		for _, path := range c.moduleImports(mod) {
			todo = append(todo, strings.TrimPrefix(path, mod+"/"))
		}
	}
}

// TestLeafCheckerReportsEveryRule runs the checker on a file that breaks
// every rule once, so that the rules themselves can fail.
func TestLeafCheckerReportsEveryRule(t *testing.T) {
	const src = `package bad

import (
	"crypto/rand"
	"fmt"
	"log"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/krabka-go/krabka/internal/vfs"
)

func f(l *slog.Logger, d time.Duration) {
	_ = time.Now()
	time.Sleep(d)
	<-time.After(d)
	_ = time.NewTimer(d)
	since := time.Since
	_ = mrand.IntN(3)
	r := mrand.New(mrand.NewPCG(1, 2))
	_ = r.IntN(3)
	slog.Info("x")
	l.Info("fine")
	fmt.Println(rand.Reader, log.Prefix(), http.MethodGet, os.Args, syscall.Getpid(), kmsg.Request(nil), vfs.OS, since)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "bad.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var c leafChecker
	c.check(fset, f)
	want := []string{
		`bad.go:4: imports "crypto/rand"`,
		`bad.go:6: imports "log"`,
		`bad.go:9: imports "net/http"`,
		`bad.go:10: imports "os"`,
		`bad.go:11: imports "syscall"`,
		`bad.go:14: imports "github.com/twmb/franz-go/pkg/kmsg", which is neither the standard library nor a leaf package of this module`,
		`bad.go:15: imports "github.com/krabka-go/krabka/internal/vfs", which is neither the standard library nor a leaf package of this module`,
		`bad.go:19: uses time.Now`,
		`bad.go:20: uses time.Sleep`,
		`bad.go:21: uses time.After`,
		`bad.go:22: uses time.NewTimer`,
		`bad.go:23: uses time.Since`,
		`bad.go:24: uses math/rand/v2.IntN, which draws from the global source`,
		`bad.go:27: uses log/slog.Info`,
	}
	if !slices.Equal(c.violations, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(c.violations, "\n"), strings.Join(want, "\n"))
	}
}

// moduleRoot is the module's root directory, from this package's.
var moduleRoot = filepath.Join("..", "..")

// goFile is one parsed source file, named by its path from the module
// root.
type goFile struct {
	fset *token.FileSet
	file *ast.File
}

// parseSources parses the .go files of package directory rel (from the
// module root), test files excluded: with all set, every file whatever
// its build constraints, else only those the default build context
// selects.
func parseSources(t *testing.T, rel string, all bool) []goFile {
	t.Helper()
	dir := filepath.Join(moduleRoot, rel)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []goFile
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if !all {
			ok, err := build.Default.MatchFile(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				continue
			}
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, filepath.ToSlash(filepath.Join(rel, name)), src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, goFile{fset: fset, file: f})
	}
	return files
}

// modulePath returns the module path named in the module's go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// leafChecker collects the violations of the leaf rules, as
// "file:line: what" strings in source order per file.
type leafChecker struct {
	violations []string
	imports    []string // every import path seen
}

func (c *leafChecker) report(fset *token.FileSet, pos token.Pos, format string, args ...any) {
	p := fset.Position(pos)
	c.violations = append(c.violations, fmt.Sprintf("%s:%d: %s", p.Filename, p.Line, fmt.Sprintf(format, args...)))
}

// moduleImports returns the imported paths inside module mod.
func (c *leafChecker) moduleImports(mod string) []string {
	var out []string
	for _, p := range c.imports {
		if strings.HasPrefix(p, mod+"/") && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (c *leafChecker) check(fset *token.FileSet, f *ast.File) {
	// local name -> import path, for the packages whose functions are
	// restricted.
	restricted := map[string]string{}
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			c.report(fset, spec.Pos(), "bad import %s", spec.Path.Value)
			continue
		}
		c.imports = append(c.imports, path)
		switch {
		case isForbiddenImport(path):
			c.report(fset, spec.Pos(), "imports %q", path)
			continue
		case !isStandard(path) && !isLeafModulePackage(path):
			c.report(fset, spec.Pos(), "imports %q, which is neither the standard library nor a leaf package of this module", path)
			continue
		}
		if _, ok := forbiddenFuncs[path]; !ok && !slices.Contains(globalRandPackages, path) {
			continue
		}
		name := importName(path)
		if spec.Name != nil {
			name = spec.Name.Name
		}
		if name == "." {
			c.report(fset, spec.Pos(), "dot-imports %q, whose functions are restricted", path)
			continue
		}
		restricted[name] = path
	}
	if len(restricted) == 0 {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		// Without type information a local name that shadows a
		// restricted package is taken for the package, and reported:
		// the core's files name no local after a package they import.
		path, ok := restricted[id.Name]
		if !ok {
			return true
		}
		name := sel.Sel.Name
		switch {
		case slices.Contains(forbiddenFuncs[path], name):
			c.report(fset, sel.Pos(), "uses %s.%s", path, name)
		case slices.Contains(globalRandPackages, path) && isGlobalRandFunc(path, name):
			c.report(fset, sel.Pos(), "uses %s.%s, which draws from the global source", path, name)
		}
		return true
	})
}

func isForbiddenImport(path string) bool {
	for _, p := range forbiddenImports {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

// isStandard reports whether path is a standard library package: its
// first element has no dot, as every module path's does.
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func isLeafModulePackage(path string) bool {
	for _, p := range leafModulePackages {
		if strings.HasSuffix(path, "/"+p) {
			return true
		}
	}
	return false
}

// importName is the name a package is imported under by default: the
// last element of its path, or the one before a major-version suffix.
func importName(path string) string {
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		return elems[len(elems)-2]
	}
	return last
}

// randScopes caches the type-checked random packages.
var randScopes = map[string]*types.Scope{}

// isGlobalRandFunc reports whether name is a package-level function of
// the random package path other than a constructor (New...): one that
// uses the process-wide source.
func isGlobalRandFunc(path, name string) bool {
	scope, ok := randScopes[path]
	if !ok {
		pkg, err := importer.ForCompiler(token.NewFileSet(), "source", nil).Import(path)
		if err != nil {
			panic(fmt.Sprintf("type-check %s: %v", path, err))
		}
		scope = pkg.Scope()
		randScopes[path] = scope
	}
	_, isFunc := scope.Lookup(name).(*types.Func)
	return isFunc && !strings.HasPrefix(name, "New")
}
