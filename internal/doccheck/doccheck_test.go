// Package doccheck holds repository-wide checks of the project's comments
// and documents.
package doccheck

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// externalNames are documents that exist outside the repository. A
// comment or page that cites one sends its reader somewhere they cannot
// follow; cite a Kafka class or method, a KIP, or a page under docs/
// instead. The names are split so that this file does not cite them.
var externalNames = []string{
	"KRAFT" + `\.md`,
	"RELIABILITY" + `\.md`,
	"STYLE" + `\.md`,
	"DESIGN" + `\.md`,
	"OPERATIONS" + `\.md`,
	"REFERENCE" + "-krabka",
	"SEED" + "-krabka",
	"shared" + "/spec",
}

var externalCitation = regexp.MustCompile(strings.Join(externalNames, "|"))

// notYetClean lists the paths that still cite external documents while
// they are being rewritten. It must shrink to empty: remove an entry as
// soon as its files are clean (the test logs every entry that covers no
// citation). An entry ending in "/" is a directory prefix; any other is a
// glob (path.Match) over the slash-separated path from the repository root.
var notYetClean = []string{
	"raft/",
	"internal/transport/server.go",
}

func allowed(rel string) (string, bool) {
	for _, e := range notYetClean {
		ok := strings.HasPrefix(rel, e)
		if !strings.HasSuffix(e, "/") {
			ok, _ = path.Match(e, rel)
		}
		if ok {
			return e, true
		}
	}
	return "", false
}

// checked reports whether the file at rel (slash-separated, from the
// repository root) is one whose text readers see: Go source, Markdown
// documents and shell scripts.
func checked(rel string) bool {
	switch path.Ext(rel) {
	case ".go", ".md", ".sh":
		return true
	}
	return false
}

// repoRoot is the directory of the main module's go.mod, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(mod, []byte("module github.com/krabka-go/krabka\n")) {
		t.Fatalf("%s/go.mod is not the krabka module", root)
	}
	return root
}

// citations returns "file:line: text" for every line under root that
// cites an external document, and the allow-list entries that covered at
// least one of them.
func citations(t *testing.T, root string) (found []string, used map[string]bool) {
	t.Helper()
	used = map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !checked(rel) {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			if !externalCitation.Match(sc.Bytes()) {
				continue
			}
			if e, ok := allowed(rel); ok {
				used[e] = true
				continue
			}
			found = append(found, rel+":"+strconv.Itoa(line)+": "+strings.TrimSpace(sc.Text()))
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return found, used
}

// TestNoExternalCitations fails, listing file:line, when a Go file, a
// Markdown document or a shell script in the repository cites a document
// that is not in it.
func TestNoExternalCitations(t *testing.T) {
	found, used := citations(t, repoRoot(t))
	for _, c := range found {
		t.Errorf("cites a document outside the repository: %s", c)
	}
	for _, e := range notYetClean {
		if !used[e] {
			t.Logf("notYetClean entry %q covers no citation any more: remove it", e)
		}
	}
}

// TestCitationPattern pins down what counts as a citation (the external
// names wherever they appear in a line, but not the project's own docs/
// pages of similar names) and which paths the allow-list covers.
func TestCitationPattern(t *testing.T) {
	for _, s := range []string{
		"see " + "KRAFT" + ".md §3.2",
		"(" + "RELIABILITY" + ".md E2)",
		"STYLE" + ".md §7",
		"DESIGN" + ".md, \"How data flows\"",
		"OPERATIONS" + ".md",
		"REFERENCE" + "-krabka-raft.md",
		"SEED" + "-krabka_raft-api.txt",
		"../" + "shared" + "/spec/",
	} {
		if !externalCitation.MatchString(s) {
			t.Errorf("%q is not recognised as an external citation", s)
		}
	}
	for _, s := range []string{
		"invariant C6 in docs/reliability.md",
		"docs/architecture.md",
		"KIP-595",
		"KafkaRaftClient.handleFetchRequest",
		"Raft §5.4.2",
	} {
		if externalCitation.MatchString(s) {
			t.Errorf("%q is wrongly taken for an external citation", s)
		}
	}
	for rel, want := range map[string]bool{
		"raft/engine.go":                    true,
		"raft/internal/x/y.go":              true,
		"internal/transport/server.go":      true,
		"internal/kraft/bugzoo.go":          false,
		"scripts/bugzoo-faults.sh":          false,
		"internal/wire/private.go":          false,
		"internal/kraft/leader.go":          false,
		"raftx/engine.go":                   false,
		"internal/wire/header.go":           false,
		"scripts/test.sh":                   false,
		"internal/transport/server_test.go": false,
	} {
		if _, got := allowed(rel); got != want {
			t.Errorf("allowed(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestCitationsNamesFileAndLine runs the walk over a small tree: a citation
// is reported with its path and line, hidden directories and files of other
// kinds are not read, and an allow-listed path counts as a use of its entry.
func TestCitationsNamesFileAndLine(t *testing.T) {
	root := t.TempDir()
	cite := "// see " + "KRAFT" + ".md §3.2\n"
	for name, text := range map[string]string{
		"a/b.go":       "package a\n" + cite,
		"docs/x.md":    "# X\n\nplain\n" + "(" + "RELIABILITY" + ".md E2)\n",
		".hidden/c.go": cite,
		"notes.txt":    cite,
		"raft/d.go":    cite,
		"clean.go":     "package clean\n// KIP-595\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, used := citations(t, root)
	want := []string{
		"a/b.go:2: // see " + "KRAFT" + ".md §3.2",
		"docs/x.md:4: (" + "RELIABILITY" + ".md E2)",
	}
	if strings.Join(found, "\n") != strings.Join(want, "\n") {
		t.Errorf("citations found:\n%s\nwant:\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
	if !used["raft/"] || len(used) != 1 {
		t.Errorf("allow-list entries used = %v, want only raft/", used)
	}
}
