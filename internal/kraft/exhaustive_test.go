package kraft_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// messageSwitchPackages are the packages (from the module root) whose type
// switches over kraft.Message are checked: the core and the wire mapping.
var messageSwitchPackages = []string{"internal/kraft", "internal/wire"}

// TestMessageSwitchesAreExhaustive checks every type switch over the
// core's messages in messageSwitchPackages, in every non-test file
// whatever its build constraints: a switch that names any message type
// names them all, or a message type it leaves out reaches an explicit
// failure, a panic or the return of a non-nil error, in its default
// clause or, without one, in the statement right after the switch. A new
// message type thus fails this test until every switch handles it or
// rejects it on purpose.
func TestMessageSwitchesAreExhaustive(t *testing.T) {
	mod := modulePath(t)
	msgs := messageTypes(t, mod)
	if !slices.Contains(msgs, "VoteRequest") || !slices.Contains(msgs, "FetchSnapshotResponse") {
		t.Fatalf("message types %v lack the KRaft RPCs", msgs)
	}
	switches := 0
	for _, rel := range messageSwitchPackages {
		for _, f := range parseSources(t, rel, true) {
			c := switchChecker{fset: f.fset, messages: msgs, qualifier: kraftQualifier(f.file, mod)}
			c.check(f.file)
			switches += c.switches
			for _, v := range c.violations {
				t.Error(v)
			}
		}
	}
	if switches == 0 {
		t.Fatal("no type switch over the messages found")
	}
}

// TestSwitchCheckerReportsMissingTypes runs the checker on switches that
// leave types out, with and without an explicit failure.
func TestSwitchCheckerReportsMissingTypes(t *testing.T) {
	const src = `package w

import k "example.com/m/internal/kraft"

func full(m k.Message) int {
	switch m.(type) {
	case *k.A, *k.B:
		return 1
	case *k.C:
		return 2
	}
	return 0
}

func silent(m k.Message) bool {
	switch m.(type) {
	case *k.A:
		return true
	}
	return false
}

func defaultError(m k.Message) error {
	switch m.(type) {
	case *k.A:
		return nil
	default:
		return fmt.Errorf("%T", m)
	}
}

func defaultNil(m k.Message) error {
	switch m.(type) {
	case *k.A:
	default:
		return nil
	}
	return nil
}

func afterError(m k.Message) (int, error) {
	switch m := m.(type) {
	case *k.B:
		return 1, nil
	}
	return 0, errUnknown
}

func afterPanic(m k.Message) {
	switch m.(type) {
	case *k.C:
		return
	}
	panic("unknown")
}

func defaultFallsThrough(m k.Message) {
	switch m.(type) {
	case *k.A:
	default:
		println()
	}
}

func other(x any) {
	switch x.(type) {
	case int, string:
	}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "w.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	c := switchChecker{fset: fset, messages: []string{"A", "B", "C"}, qualifier: kraftQualifier(f, "example.com/m")}
	c.check(f)
	want := []string{
		"w.go:16: type switch over messages lacks *B, *C and does not fail for them (panic or return a non-nil error in its default clause, or right after it)",
		"w.go:33: type switch over messages lacks *B, *C and does not fail for them (panic or return a non-nil error in its default clause, or right after it)",
		"w.go:58: type switch over messages lacks *B, *C and does not fail for them (panic or return a non-nil error in its default clause, or right after it)",
	}
	if !slices.Equal(c.violations, want) || c.switches != 7 {
		t.Errorf("%d switches, violations:\n%s\nwant 7 and:\n%s", c.switches, strings.Join(c.violations, "\n"), strings.Join(want, "\n"))
	}
}

// messageTypes returns the names of the types T of package kraft for which
// *T or T implements kraft.Message, from a type check of the package's
// source (default build).
func messageTypes(t *testing.T, mod string) []string {
	t.Helper()
	imp := &moduleImporter{t: t, mod: mod, std: importer.Default(), pkgs: map[string]*types.Package{}}
	pkg, err := imp.Import(mod + "/internal/kraft")
	if err != nil {
		t.Fatal(err)
	}
	obj, ok := pkg.Scope().Lookup("Message").(*types.TypeName)
	if !ok {
		t.Fatal("package kraft declares no type Message")
	}
	iface, ok := obj.Type().Underlying().(*types.Interface)
	if !ok {
		t.Fatal("kraft.Message is not an interface")
	}
	var names []string
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok || types.IsInterface(tn.Type()) {
			continue
		}
		if types.Implements(tn.Type(), iface) || types.Implements(types.NewPointer(tn.Type()), iface) {
			names = append(names, name)
		}
	}
	return names
}

// moduleImporter type-checks this module's packages from source (default
// build) and takes the standard library from std.
type moduleImporter struct {
	t    *testing.T
	mod  string
	std  types.Importer
	pkgs map[string]*types.Package
}

func (m *moduleImporter) Import(path string) (*types.Package, error) {
	rel, ok := strings.CutPrefix(path, m.mod+"/")
	if !ok {
		return m.std.Import(path)
	}
	if p, ok := m.pkgs[path]; ok {
		return p, nil
	}
	var files []*ast.File
	var fset *token.FileSet
	for _, f := range parseSources(m.t, rel, false) {
		files = append(files, f.file)
		fset = f.fset
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", rel)
	}
	p, err := (&types.Config{Importer: m}).Check(path, fset, files, nil)
	if err != nil {
		return nil, err
	}
	m.pkgs[path] = p
	return p, nil
}

// kraftQualifier returns how file f names package kraft: "" inside it,
// else the name it imports the package under, or "-" when it does not.
func kraftQualifier(f *ast.File, mod string) string {
	if f.Name.Name == "kraft" {
		return ""
	}
	for _, spec := range f.Imports {
		if p, _ := strconv.Unquote(spec.Path.Value); p == mod+"/internal/kraft" {
			if spec.Name != nil {
				return spec.Name.Name
			}
			return "kraft"
		}
	}
	return "-"
}

// switchChecker checks the type switches of one file.
type switchChecker struct {
	fset      *token.FileSet
	messages  []string // the message type names
	qualifier string   // see kraftQualifier
	switches  int      // type switches that name a message type
	// violations are "file:line: what" strings.
	violations []string
}

func (c *switchChecker) check(f *ast.File) {
	if c.qualifier == "-" {
		return
	}
	// results holds the result types of the functions being walked,
	// innermost last.
	var results []*ast.FieldList
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		var list []ast.Stmt
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				results = append(results, n.Type.Results)
				ast.Inspect(n.Body, walk)
				results = results[:len(results)-1]
			}
			return false
		case *ast.FuncLit:
			results = append(results, n.Type.Results)
			ast.Inspect(n.Body, walk)
			results = results[:len(results)-1]
			return false
		case *ast.BlockStmt:
			list = n.List
		case *ast.CaseClause:
			list = n.Body
		case *ast.CommClause:
			list = n.Body
		}
		for i, s := range list {
			sw, ok := s.(*ast.TypeSwitchStmt)
			if !ok {
				continue
			}
			var after ast.Stmt
			if i+1 < len(list) {
				after = list[i+1]
			}
			var res *ast.FieldList
			if len(results) > 0 {
				res = results[len(results)-1]
			}
			c.checkSwitch(sw, after, res)
		}
		return true
	}
	ast.Inspect(f, walk)
}

// checkSwitch checks one type switch; after is the statement that follows
// it in its block (nil if none) and results the enclosing function's
// result types.
func (c *switchChecker) checkSwitch(sw *ast.TypeSwitchStmt, after ast.Stmt, results *ast.FieldList) {
	named := map[string]bool{}
	var def *ast.CaseClause
	for _, s := range sw.Body.List {
		cc := s.(*ast.CaseClause)
		if cc.List == nil {
			def = cc
		}
		for _, e := range cc.List {
			if name, ok := c.messageName(e); ok {
				named[name] = true
			}
		}
	}
	if len(named) == 0 {
		return
	}
	c.switches++
	var missing []string
	for _, m := range c.messages {
		if !named[m] {
			missing = append(missing, "*"+m)
		}
	}
	if len(missing) == 0 {
		return
	}
	failing := false
	if def != nil {
		failing = len(def.Body) > 0 && isFailure(def.Body[len(def.Body)-1], results)
	} else {
		failing = after != nil && isFailure(after, results)
	}
	if !failing {
		p := c.fset.Position(sw.Pos())
		c.violations = append(c.violations, fmt.Sprintf("%s:%d: type switch over messages lacks %s and does not fail for them (panic or return a non-nil error in its default clause, or right after it)",
			p.Filename, p.Line, strings.Join(missing, ", ")))
	}
}

// messageName returns the message type a case expression names: *T, or T
// (which the compiler rejects for a message whose methods have pointer
// receivers), qualified as the file names package kraft.
func (c *switchChecker) messageName(e ast.Expr) (string, bool) {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	var name string
	switch e := e.(type) {
	case *ast.Ident:
		if c.qualifier != "" {
			return "", false
		}
		name = e.Name
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok || c.qualifier == "" || x.Name != c.qualifier {
			return "", false
		}
		name = e.Sel.Name
	default:
		return "", false
	}
	return name, slices.Contains(c.messages, name)
}

// isFailure reports whether s panics or returns a non-nil error: a call
// of panic, or a return from a function whose last result is an error
// with a last value other than nil.
func isFailure(s ast.Stmt, results *ast.FieldList) bool {
	switch s := s.(type) {
	case *ast.ExprStmt:
		call, ok := s.X.(*ast.CallExpr)
		if !ok {
			return false
		}
		id, ok := call.Fun.(*ast.Ident)
		return ok && id.Name == "panic"
	case *ast.ReturnStmt:
		if results == nil || len(results.List) == 0 || len(s.Results) == 0 {
			return false
		}
		last, ok := results.List[len(results.List)-1].Type.(*ast.Ident)
		if !ok || last.Name != "error" {
			return false
		}
		v, ok := s.Results[len(s.Results)-1].(*ast.Ident)
		return !ok || v.Name != "nil"
	}
	return false
}
