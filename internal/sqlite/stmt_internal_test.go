package sqlite

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// openOneConn opens a database of one connection in a temporary directory,
// closed when t ends, with a context that ends after a minute: a test that
// waits for a second connection fails instead of hanging.
func openOneConn(t *testing.T) (*DB, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	d, err := Open(ctx, filepath.Join(t.TempDir(), "duet.db"), &Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, ctx
}

// TestTransactionsUsePreparedStatements: a transaction's writes and
// single-row reads run prepared statements from the second time on
// (cachedTx), with the same results, on a handle of one connection, where
// preparing through the pool during a transaction would wait for ever.
// It fails with cachedTx parsing every statement ("prepared 0").
func TestTransactionsUsePreparedStatements(t *testing.T) {
	t.Parallel()
	d, ctx := openOneConn(t)
	res, err := d.ApplySuite(ctx, "alice", &duet.Suite{Task: duet.Task{Name: "shop"}, Cases: []*duet.Case{{Key: "a", Title: "a", Source: "s", SourceHash: "h",
		Steps: []duet.Step{{Kind: duet.StepAssert, Assert: &duet.AssertStep{Expr: "true"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	round := func() {
		t.Helper()
		if err := d.ShareTask(ctx, "alice", id, "bob"); err != nil {
			t.Fatal(err)
		}
		if tk, err := d.FindTaskByID(ctx, "bob", id); err != nil || tk.ID != id {
			t.Fatalf("shared: %v, %v", tk, err)
		}
		if err := d.UnshareTask(ctx, "alice", id, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.FindTaskByID(ctx, "bob", id); duet.ErrorCode(err) != duet.CodeNotFound {
			t.Fatalf("unshared: %v", err)
		}
	}
	round()
	prepared0, parsed0 := d.q.txPrepared.Load(), d.q.txParsed.Load()
	round()
	round()
	if prepared, parsed := d.q.txPrepared.Load()-prepared0, d.q.txParsed.Load()-parsed0; prepared == 0 || parsed != 0 {
		t.Fatalf("after the first share and unshare: prepared %d, parsed %d; want all prepared", prepared, parsed)
	}

	// Transactions at once on one connection, the first of them meeting
	// statements not prepared yet: none waits for a connection to prepare
	// one.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if _, err := d.CreateTeam(ctx, "alice", fmt.Sprintf("team-%d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestTransactionPanicGivesTheConnectionBack: a panic in a transaction's
// function, after it ran a statement not prepared yet, leaves the handle of
// one connection usable: the transaction is rolled back before the
// statement is prepared (prepareWanted would otherwise wait for the
// connection the transaction still holds).
func TestTransactionPanicGivesTheConnectionBack(t *testing.T) {
	t.Parallel()
	d, ctx := openOneConn(t)
	const insert = `INSERT INTO teams (id, name, created_by, created_at) VALUES ('team_p', 'panicked', 'alice', 0)`
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		d.tx(ctx, func(tx *cachedTx) error {
			if _, err := tx.ExecContext(ctx, insert); err != nil {
				t.Error(err)
			}
			panic("in the transaction")
		})
	}()
	var n int
	if err := d.q.QueryRowContext(ctx, `SELECT count(*) FROM teams WHERE id = 'team_p'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after the panic: %d rows, %v; want 0, rolled back", n, err)
	}
}

// TestTransactionRowsScannedAtOnce keeps the rule cachedTx depends on: a
// prepared statement is one cursor per connection, so every single-row read
// of this package is scanned in the expression that makes it (x.Scan(...),
// or the argument of a scan function), never held while another statement
// runs; the statement cache's own wrappers return it to such a caller.
func TestTransactionRowsScannedAtOnce(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "QueryRowContext" {
				return true
			}
			if !scannedAtOnce(call, stack[:len(stack)-1]) {
				t.Errorf("%s: a row read with QueryRowContext that is not scanned at once", fset.Position(call.Pos()))
			}
			return true
		})
	}
}

// scannedAtOnce reports whether the row of call is scanned by its parent
// expression: call.Scan(...), scanX(call) or storerules.ScanX(call), or is
// returned as it is.
func scannedAtOnce(call *ast.CallExpr, parents []ast.Node) bool {
	if len(parents) == 0 {
		return false
	}
	switch p := parents[len(parents)-1].(type) {
	case *ast.SelectorExpr:
		return p.Sel.Name == "Scan" && len(parents) > 1
	case *ast.ReturnStmt:
		return true
	case *ast.CallExpr:
		var fn string
		switch f := p.Fun.(type) {
		case *ast.Ident:
			fn = f.Name
		case *ast.SelectorExpr:
			fn = f.Sel.Name
		}
		return strings.HasPrefix(strings.ToLower(fn), "scan") || fn == "mapErr"
	}
	return false
}
