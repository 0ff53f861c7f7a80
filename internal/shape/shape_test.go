// Package shape holds the code base to its shape (issue 23.3): anywhere
// outside bench/, no source file over 600 lines, no function over 80
// lines (function literals and tests included), no struct over 25 fields,
// no type with more than 50 methods (issue 34.1); and engine's system
// calls in engine/kernel alone.
package shape

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const (
	maxFileLines = 600
	maxFuncLines = 80
	maxFields    = 25
	maxMethods   = 50
)

// methodsAllowed are types allowed more than maxMethods methods for now,
// each with the count it may not pass. Remove a line once its type is
// under the bound (the test says when).
var methodsAllowed = map[string]int{}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s", dir)
	}
	return dir
}

// goFiles lists the module's Go files outside bench/, testdata and hidden
// directories.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			name := d.Name()
			if rel == "bench" || name == "testdata" || (strings.HasPrefix(name, ".") && p != dir) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestShape(t *testing.T) {
	dir := root(t)
	files := goFiles(t, dir)
	if len(files) < 100 {
		t.Fatalf("only %d Go files found under %s", len(files), dir)
	}
	fset := token.NewFileSet()
	methods := methodSets{}
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		methods.add(rel, f)
		if err := kernelOnly(rel, f); err != nil {
			t.Error(err)
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines (at most %d)", rel, n, maxFileLines)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				if x.Body == nil {
					return true
				}
				if l := fset.Position(x.End()).Line - fset.Position(x.Pos()).Line + 1; l > maxFuncLines {
					t.Errorf("%s: func %s is %d lines (at most %d)", rel, x.Name.Name, l, maxFuncLines)
				}
			case *ast.FuncLit:
				if l := fset.Position(x.End()).Line - fset.Position(x.Pos()).Line + 1; l > maxFuncLines {
					t.Errorf("%s:%d: a function literal of %d lines (at most %d)", rel, fset.Position(x.Pos()).Line, l, maxFuncLines)
				}
			case *ast.TypeSpec:
				st, ok := x.Type.(*ast.StructType)
				if !ok {
					return true
				}
				fields := 0
				for _, fl := range st.Fields.List {
					fields += max(1, len(fl.Names))
				}
				if fields > maxFields {
					t.Errorf("%s: struct %s has %d fields (at most %d)", rel, x.Name.Name, fields, maxFields)
				}
			}
			return true
		})
	}
	for _, msg := range methods.over(maxMethods, methodsAllowed) {
		t.Error(msg)
	}
}

// methodSets holds the methods declared on each type outside tests, by
// "dir.Type" (engine/session.Client): a method declared in several
// build-tagged files counts once.
type methodSets map[string]map[string]bool

func (m methodSets) add(rel string, f *ast.File) {
	if strings.HasSuffix(rel, "_test.go") {
		return
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
			continue
		}
		typ := fd.Recv.List[0].Type
		if st, ok := typ.(*ast.StarExpr); ok {
			typ = st.X
		}
		switch x := typ.(type) { // generic receivers: T[K] and T[K, V]
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		}
		id, ok := typ.(*ast.Ident)
		if !ok {
			continue
		}
		key := filepath.ToSlash(filepath.Dir(rel)) + "." + id.Name
		if m[key] == nil {
			m[key] = map[string]bool{}
		}
		m[key][fd.Name.Name] = true
	}
}

// over says, sorted, every type with more than limit methods and not
// allowed so many, every allowed type past its allowance, and every
// allowance no longer needed.
func (m methodSets) over(limit int, allowed map[string]int) []string {
	var out []string
	for key, set := range m {
		n := len(set)
		switch a, ok := allowed[key]; {
		case ok && n > a:
			out = append(out, fmt.Sprintf("type %s has %d methods (allowed %d for now, at most %d)", key, n, a, limit))
		case !ok && n > limit:
			out = append(out, fmt.Sprintf("type %s has %d methods (at most %d)", key, n, limit))
		}
	}
	for key := range allowed {
		if n := len(m[key]); n <= limit {
			out = append(out, fmt.Sprintf("type %s has %d methods: remove its allowance (methodsAllowed)", key, n))
		}
	}
	sort.Strings(out)
	return out
}

// kernelOnly: outside engine/kernel, no file of engine (tests aside)
// imports x/sys/unix: poll(2), socket options and descriptors are
// engine/kernel's.
func kernelOnly(rel string, f *ast.File) error {
	rel = filepath.ToSlash(rel)
	if !strings.HasPrefix(rel, "engine/") || strings.HasPrefix(rel, "engine/kernel/") || strings.HasSuffix(rel, "_test.go") {
		return nil
	}
	for _, im := range f.Imports {
		if im.Path.Value == `"golang.org/x/sys/unix"` {
			return fmt.Errorf("%s imports x/sys/unix: its system calls belong in engine/kernel", rel)
		}
	}
	return nil
}

// The method bound at the bound: 50 methods pass, 51 do not; a method of
// two build-tagged files counts once; an allowance holds up to its count,
// and one no longer needed is said.
func TestMethodsAtTheBound(t *testing.T) {
	src := func(file string, n int) (string, *ast.File) {
		var b strings.Builder
		b.WriteString("package p\ntype T struct{}\ntype G[K any] struct{}\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "func (T) M%d() {}\nfunc (*G[K]) M%d() {}\n", i, i)
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, b.String(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return file, f
	}
	count := func(files ...func() (string, *ast.File)) methodSets {
		m := methodSets{}
		for _, f := range files {
			m.add(f())
		}
		return m
	}
	at := func(n int) func() (string, *ast.File) {
		return func() (string, *ast.File) { return src("a/p/x_linux.go", n) }
	}
	other := func() (string, *ast.File) { return src("a/p/x_other.go", 51) }
	test := func() (string, *ast.File) { return src("a/p/x_test.go", 60) }
	if got := count(at(50), test).over(50, nil); len(got) != 0 {
		t.Fatalf("50 methods (and a test file's): %q", got)
	}
	got := count(at(51)).over(50, nil)
	if len(got) != 2 || !strings.Contains(got[0], "a/p.G has 51 methods") || !strings.Contains(got[1], "a/p.T has 51 methods") {
		t.Fatalf("51 methods: %q", got)
	}
	if got := count(at(51), other).over(50, map[string]int{"a/p.T": 51, "a/p.G": 51}); len(got) != 0 {
		t.Fatalf("51 methods in two tagged files, allowed 51: %q", got)
	}
	got = count(at(52)).over(50, map[string]int{"a/p.T": 51, "a/p.G": 52})
	if len(got) != 1 || !strings.Contains(got[0], "a/p.T has 52 methods (allowed 51") {
		t.Fatalf("past its allowance: %q", got)
	}
	got = count(at(50)).over(50, map[string]int{"a/p.T": 51})
	if len(got) != 1 || !strings.Contains(got[0], "remove its allowance") {
		t.Fatalf("an allowance no longer needed: %q", got)
	}
}

// x/sys/unix is engine/kernel's: anywhere else in engine (tests aside) an
// import of it is said.
func TestKernelOnlyImportsUnix(t *testing.T) {
	for rel, bad := range map[string]bool{
		"engine/conn/loop.go": true, "engine/accept.go": true,
		"engine/kernel/poll.go": false, "engine/conn/tick_test.go": false, "cmd/flexway/main.go": false,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), rel, "package p\nimport \"golang.org/x/sys/unix\"\nvar _ = unix.Poll\n", parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		if err := kernelOnly(rel, f); (err != nil) != bad {
			t.Errorf("%s: %v, want an error: %v", rel, err, bad)
		}
	}
}
