// Package shape holds the code base to its shape (issue 23.3): anywhere
// outside bench/, no source file over 600 lines, no function over 80
// lines (function literals and tests included), no struct over 25 fields.
package shape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	maxFileLines = 600
	maxFuncLines = 80
	maxFields    = 25
)

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
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
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
}
