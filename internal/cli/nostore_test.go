package cli_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// storeFiles are the files of the command line that may hold a duet.Store:
// the commands that run Duet itself on this machine and seed or inspect
// its database directly (the demo's fixture, the conformance harness's
// stored credentials). Every other command is written against
// client.Client (connect.go).
var storeFiles = []string{"demo.go", "conformance.go"}

// TestCLIDoesNotTouchTheStore keeps the command line a client of the one
// api.Service (issue 26): no command outside storeFiles reaches a
// duet.Store — not app.App.Store, not a store passed along — so identity,
// validation, governance and audit cannot be written a second time here.
// It type-checks the package's own files against the compiled export data
// of its imports and looks for any expression of type duet.Store.
func TestCLIDoesNotTouchTheStore(t *testing.T) {
	t.Parallel()
	const self = "github.com/duet-test/duet/internal/cli"
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if p, f, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && f != "" {
			exports[p] = f
		}
	}
	fset := token.NewFileSet()
	gofiles, err := exec.Command("go", "list", "-f", "{{join .GoFiles \"\\n\"}}", ".").Output() // as built: build tags applied
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var files []*ast.File
	for n := range strings.Lines(string(gofiles)) {
		f, err := parser.ParseFile(fset, strings.TrimSpace(n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, os.ErrNotExist
		}
		return os.Open(f)
	})
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := (&types.Config{Importer: imp}).Check(self, fset, files, info)
	if err != nil {
		t.Fatalf("type-checking %s: %v", self, err)
	}
	var store types.Type
	for _, p := range pkg.Imports() {
		if p.Path() == "github.com/duet-test/duet" {
			store = p.Scope().Lookup("Store").Type()
		}
	}
	if store == nil {
		t.Fatal("the package does not import duet: is the check looking at the right files?")
	}
	seen := map[string]bool{}
	for expr, tv := range info.Types {
		if tv.Type == nil || !types.Identical(tv.Type, store) {
			continue
		}
		pos := fset.Position(expr.Pos())
		if slices.Contains(storeFiles, filepath.Base(pos.Filename)) || seen[pos.String()] {
			continue
		}
		seen[pos.String()] = true
		t.Errorf("%s: %s is the store: a command does what it does through client.Client (the api.Service), not the store", pos, types.ExprString(expr))
	}
	if len(files) < 20 {
		t.Fatalf("checked %d files: is the check looking at the right files?", len(files))
	}
}
