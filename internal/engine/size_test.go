package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoLongFunctions keeps the engine's and the compiler's functions
// within 80 lines, declaration to closing brace (#26): a longer one is
// split along its phases.
func TestNoLongFunctions(t *testing.T) {
	t.Parallel()
	const max = 80
	checked := 0
	for _, dir := range []string{".", "../compiler"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				checked++
				start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
				if n := end.Line - start.Line + 1; n > max {
					t.Errorf("%s:%d: %s is %d lines, over %d: split it along its phases", name, start.Line, fd.Name.Name, n, max)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d functions: are the packages where the test looks?", checked)
	}
}
