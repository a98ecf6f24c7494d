package telemetry

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"

	"github.com/duet-test/duet"
)

// TestStoreDecoratorCurrent: every duet.Store method that takes a context
// is wrapped (store_gen.go is regenerated with go generate when the
// interface grows); one the decorator lacks would silently pass through
// the embedded store without a span.
func TestStoreDecoratorCurrent(t *testing.T) {
	have := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range []string{"store.go", "store_gen.go"} {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok && star.X.(*ast.Ident).Name == "store" {
					have[fd.Name.Name] = true
				}
			}
		}
	}
	st := reflect.TypeFor[duet.Store]()
	for i := range st.NumMethod() {
		m := st.Method(i)
		if m.Type.NumIn() > 0 && m.Type.In(0) == reflect.TypeFor[context.Context]() && !have[m.Name] {
			t.Errorf("the store decorator does not wrap %s: run go generate ./internal/telemetry", m.Name)
		}
	}
}
