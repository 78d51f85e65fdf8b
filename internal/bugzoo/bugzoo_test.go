package bugzoo

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is two levels up from this package.
const moduleRoot = "../.."

// hookCall matches a hook's guard and captures the entry's number.
var hookCall = regexp.MustCompile(`bugzoo\.Active\(bugzoo\.Z([0-9]+)\)`)

// The catalogue lists Z1 to Z27 in order, once each, and every entry is
// either pending (no hooks, checks or campaigns) or hooked with at least
// one check or campaign, each with an invariant and a pattern that
// compiles.
func TestCatalogueConsistent(t *testing.T) {
	entries := Catalogue()
	if len(entries) != int(Z27) {
		t.Fatalf("%d entries, want %d", len(entries), Z27)
	}
	for i, e := range entries {
		if e.ID != ID(i+1) {
			t.Errorf("entry %d is %v", i+1, e.ID)
		}
		if got, _ := Lookup(e.ID); got.ID != e.ID {
			t.Errorf("Lookup(%v) = %v", e.ID, got.ID)
		}
		if id, err := Parse(e.ID.String()); err != nil || id != e.ID {
			t.Errorf("Parse(%q) = %v, %v", e.ID.String(), id, err)
		}
		if e.Bug == "" || e.Source == "" {
			t.Errorf("%v: no bug or source", e.ID)
		}
		if strings.Contains(e.Bug+e.Pending, "|") {
			t.Errorf("%v: a '|' in the bug or the reason breaks zoo's output", e.ID)
		}
		if !e.Hooked() {
			if len(e.Hooks)+len(e.Checks)+len(e.Campaigns) > 0 || e.Reinjection != "" {
				t.Errorf("%v is pending (%s) but lists hooks, checks or campaigns", e.ID, e.Pending)
			}
			continue
		}
		if len(e.Hooks) == 0 || e.Reinjection == "" {
			t.Errorf("%v: hooked without hook files or a re-injection", e.ID)
		}
		if len(e.Checks)+len(e.Campaigns) == 0 {
			t.Errorf("%v: hooked, but nothing must catch it", e.ID)
		}
		for _, c := range e.Checks {
			if c.Package == "" || c.Run == "" || c.Invariant == "" || c.Pattern == "" {
				t.Errorf("%v: incomplete check %+v", e.ID, c)
			}
			if strings.Contains(c.Package+c.Run+strings.Join(c.Args, "")+c.Invariant, "|") {
				t.Errorf("%v: a '|' outside the pattern breaks zoo's output: %+v", e.ID, c)
			}
			if _, err := regexp.Compile(c.Run); err != nil {
				t.Errorf("%v: -run %q: %v", e.ID, c.Run, err)
			}
			if _, err := regexp.Compile(c.Pattern); err != nil {
				t.Errorf("%v: pattern %q: %v", e.ID, c.Pattern, err)
			}
		}
		for _, c := range e.Campaigns {
			if c.Kinds == "" || c.Duration == "" || c.Invariant == "" || c.Pattern == "" {
				t.Errorf("%v: incomplete campaign %+v", e.ID, c)
			}
			if strings.Contains(c.Tags+c.Kinds+c.Duration+c.Invariant, "|") {
				t.Errorf("%v: a '|' outside the pattern breaks zoo's output: %+v", e.ID, c)
			}
			if _, err := regexp.Compile(c.Pattern); err != nil {
				t.Errorf("%v: pattern %q: %v", e.ID, c.Pattern, err)
			}
		}
	}
	for _, s := range []string{"", "z0", "z28", "x4", "z", "z4x"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

// Every hooked entry's guard appears in each of its hook files and
// nowhere else, and no code guards on a pending entry.
func TestHooksReferencedFromCode(t *testing.T) {
	found := map[ID][]string{}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		if d.IsDir() {
			if (rel != "." && strings.HasPrefix(d.Name(), ".")) || rel == filepath.Join("internal", "bugzoo") || rel == "bench" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range hookCall.FindAllSubmatch(b, -1) {
			n, _ := strconv.Atoi(string(m[1]))
			found[ID(n)] = append(found[ID(n)], filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Catalogue() {
		files := found[e.ID]
		delete(found, e.ID)
		if !e.Hooked() {
			if len(files) > 0 {
				t.Errorf("%v is pending, but %v guard on it", e.ID, files)
			}
			continue
		}
		for _, h := range e.Hooks {
			if !slices.Contains(files, h) {
				t.Errorf("%v: hook file %s has no bugzoo.Active(bugzoo.%s)", e.ID, h, strings.ToUpper(e.ID.String()))
			}
		}
		for _, f := range files {
			if !slices.Contains(e.Hooks, f) {
				t.Errorf("%v: %s guards on it but is not among its hooks %v", e.ID, f, e.Hooks)
			}
		}
	}
	for id, files := range found {
		t.Errorf("%v guard on %v, which is not in the catalogue", files, id)
	}
}

// Every check names a package that exists and a test in it: a -run
// pattern ^TestName$ must find func TestName( in the package's test files.
func TestChecksNameExistingTests(t *testing.T) {
	anchored := regexp.MustCompile(`^\^(Test[A-Za-z0-9_]+)\$$`)
	for _, e := range Catalogue() {
		for _, c := range e.Checks {
			dir := filepath.Join(moduleRoot, filepath.FromSlash(c.Package))
			m := anchored.FindStringSubmatch(c.Run)
			if m == nil {
				t.Errorf("%v: -run %q is not ^TestName$", e.ID, c.Run)
				continue
			}
			files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
			if err != nil || len(files) == 0 {
				t.Errorf("%v: package %s has no tests", e.ID, c.Package)
				continue
			}
			decl := "func " + m[1] + "("
			if !slices.ContainsFunc(files, func(f string) bool {
				b, err := os.ReadFile(f)
				return err == nil && strings.Contains(string(b), decl)
			}) {
				t.Errorf("%v: no %s) in %s", e.ID, decl, c.Package)
			}
		}
	}
}

// A selection names a hooked entry or nothing.
func TestSelection(t *testing.T) {
	if id, err := selection(""); id != 0 || err != nil {
		t.Errorf("empty selection: %v, %v", id, err)
	}
	if id, err := selection("z4"); id != Z4 || err != nil {
		t.Errorf("z4: %v, %v", id, err)
	}
	for _, s := range []string{"z11", "z99", "four"} {
		if _, err := selection(s); err == nil {
			t.Errorf("selection %q accepted", s)
		}
	}
	if want := "-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z4"; LinkFlag(Z4) != want {
		t.Errorf("LinkFlag(Z4) = %q, want %q", LinkFlag(Z4), want)
	}
}

// In a normal build Active is false, inlines, and the code it guards is
// compiled away: the compiler reports Active inlinable and inlined at a
// hook, and a normal krabka binary links none of the hooks' helpers
// (the functions named bugZ<n>... in the packages with hooks).
func TestActiveFoldsAway(t *testing.T) {
	if Enabled {
		t.Skip("a build with the bugzoo tag")
	}
	for id := Z1; id <= Z27; id++ {
		if Active(id) {
			t.Fatalf("Active(%v) in a normal build", id)
		}
	}
	if testing.Short() {
		t.Skip("builds packages")
	}
	out, err := exec.Command("go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`active_off.go:[0-9]+:[0-9]+: can inline Active`).Match(out) {
		t.Fatalf("Active is not inlinable:\n%s", out)
	}
	cmd := exec.Command("go", "build", "-gcflags=-m", "./internal/kraft")
	cmd.Dir = moduleRoot
	if out, err = cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -gcflags=-m ./internal/kraft: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`leader.go:[0-9]+:[0-9]+: inlining call to bugzoo.Active`).Match(out) {
		t.Fatalf("bugzoo.Active is not inlined in internal/kraft:\n%s", out)
	}
	if linked := linkedFaultyPaths(t); len(linked) > 0 {
		t.Fatalf("a normal build links the zoo's faulty paths:\n%s", strings.Join(linked, "\n"))
	}
	// A bugzoo build links them, so that their absence from the normal one
	// is the compiler's doing.
	if len(linkedFaultyPaths(t, "-tags", Tag)) == 0 {
		t.Fatal("a bugzoo build links no faulty path either: the symbol check shows nothing")
	}
}

// linkedFaultyPaths builds cmd/krabka with the go build flags given and
// returns its symbols that belong to the zoo's faulty paths: the helpers
// named bugZ<n>... and Z2's file system.
func linkedFaultyPaths(t *testing.T, flags ...string) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "krabka")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, "./cmd/krabka")...)
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v ./cmd/krabka: %v\n%s", flags, err, out)
	}
	out, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, out)
	}
	var linked []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, ".bugZ") || strings.Contains(line, "noSyncF") {
			linked = append(linked, strings.TrimSpace(line))
		}
	}
	return linked
}
