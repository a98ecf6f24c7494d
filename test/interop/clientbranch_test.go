package interop_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// clientIdentity names what a client says about itself in initialize (and
// in the 2026-07-28 revision's per-request _meta): a name and a version.
// Branching on them is a per-client adapter (seed 003).
var clientIdentity = map[string]bool{
	"ClientInfo": true, "clientInfo": true, "MetaKeyClientInfo": true,
	"clientName": true, "ClientName": true, "clientVersion": true, "ClientVersion": true,
}

// clientBranches returns, for Go source src, the positions of conditions
// (if, for, switch tags and cases, and the operands of && || == !=) that
// read a client's name or version: directly (ClientInfo...), through
// InitializeParams().ClientInfo, or through a variable assigned from one.
func clientBranches(fset *token.FileSet, f *ast.File) []token.Position {
	mentions := func(n ast.Node, tainted map[string]bool) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				if clientIdentity[x.Name] || tainted[x.Name] {
					found = true
				}
			case *ast.BasicLit:
				if strings.Contains(x.Value, "io.modelcontextprotocol/clientInfo") {
					found = true
				}
			}
			return !found
		})
		return found
	}
	// Variables that hold a client's identity, anywhere in the file.
	tainted := map[string]bool{}
	for changed := true; changed; {
		changed = false
		ast.Inspect(f, func(n ast.Node) bool {
			var lhs, rhs []ast.Expr
			switch x := n.(type) {
			case *ast.AssignStmt:
				lhs, rhs = x.Lhs, x.Rhs
			case *ast.ValueSpec:
				for _, id := range x.Names {
					lhs = append(lhs, id)
				}
				rhs = x.Values
			default:
				return true
			}
			for _, r := range rhs {
				if !mentions(r, tainted) {
					continue
				}
				for _, l := range lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "_" && !tainted[id.Name] {
						tainted[id.Name], changed = true, true
					}
				}
			}
			return true
		})
	}
	var out []token.Position
	flag := func(e ast.Node) {
		if e != nil && mentions(e, tainted) {
			out = append(out, fset.Position(e.Pos()))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.IfStmt:
			flag(x.Cond)
		case *ast.ForStmt:
			if x.Cond != nil {
				flag(x.Cond)
			}
		case *ast.SwitchStmt:
			if x.Tag != nil {
				flag(x.Tag)
			}
		case *ast.CaseClause:
			for _, e := range x.List {
				flag(e)
			}
		case *ast.BinaryExpr:
			switch x.Op {
			case token.EQL, token.NEQ, token.LAND, token.LOR:
				flag(x)
			}
		}
		return true
	})
	return out
}

// TestNoClientSpecificBranches fails if any non-test Go source of Duet
// branches on the calling client's name or version.
func TestNoClientSpecificBranches(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", ".cache":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, p := range clientBranches(fset, f) {
			rel, _ := filepath.Rel(repoRoot, p.Filename)
			t.Errorf("%s:%d: a condition reads the client's name or version: return every representation once instead (seed 003)", rel, p.Line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned only %d Go files under %s", files, repoRoot)
	}
}

// TestClientBranchDetector checks the detector on planted examples.
func TestClientBranchDetector(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
		want int
	}{
		{"direct", `if req.Session.InitializeParams().ClientInfo.Name == "claude" { x() }`, 1},
		{"version prefix", `if strings.HasPrefix(p.ClientInfo.Version, "1.") { x() }`, 1},
		{"switch", `switch ss.InitializeParams().ClientInfo.Name { case "a": x() }`, 1},
		{"indirect", `name := ss.InitializeParams().ClientInfo.Name; n := name; if n != "cursor" { x() }`, 1},
		{"meta key", `if _, ok := meta["io.modelcontextprotocol/clientInfo"]; ok { x() }`, 1},
		{"logging only", `log.Info("client", "name", ss.InitializeParams().ClientInfo.Name)`, 0},
		{"unrelated", `if req.Params.Name == "get_test_task" { x() }`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() {\n"+c.src+"\n}\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := clientBranches(fset, f); len(got) < c.want || c.want == 0 && len(got) > 0 {
				t.Errorf("got %d findings %v, want %d", len(got), got, c.want)
			}
		})
	}
}
