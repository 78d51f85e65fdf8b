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
// cites an external document.
func citations(t *testing.T, root string) (found []string) {
	t.Helper()
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
			found = append(found, rel+":"+strconv.Itoa(line)+": "+strings.TrimSpace(sc.Text()))
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestNoExternalCitations fails, listing file:line, when a Go file, a
// Markdown document or a shell script in the repository cites a document
// that is not in it.
func TestNoExternalCitations(t *testing.T) {
	for _, c := range citations(t, repoRoot(t)) {
		t.Errorf("cites a document outside the repository: %s", c)
	}
}

// TestCitationPattern pins down what counts as a citation (the external
// names wherever they appear in a line, but not the project's own docs/
// pages of similar names).
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
}

// TestCitationsNamesFileAndLine runs the walk over a small tree: a citation
// is reported with its path and line, hidden directories and files of other
// kinds are not read.
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
	found := citations(t, root)
	want := []string{
		"a/b.go:2: // see " + "KRAFT" + ".md §3.2",
		"docs/x.md:4: (" + "RELIABILITY" + ".md E2)",
		"raft/d.go:1: // see " + "KRAFT" + ".md §3.2",
	}
	if strings.Join(found, "\n") != strings.Join(want, "\n") {
		t.Errorf("citations found:\n%s\nwant:\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
}
