package codegen

import (
	"os"
	"strings"
	"testing"
)

// TestDocExample parses the example of the package documentation, so that
// the documented format cannot drift from the parser.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), "// # Example\n")
	if !ok {
		t.Fatal("doc.go has no # Example section")
	}
	var lines []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, "//") {
			break
		}
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "//"), "\t"))
	}
	m, err := Parse("doc.go example", strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "RegisterControllerRecord" || len(m.Fields) != 3 || len(m.Fields[1].Fields) != 2 {
		t.Fatalf("example parsed as %+v", m)
	}
}
