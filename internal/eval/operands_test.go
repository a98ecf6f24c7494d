package eval

import (
	"fmt"
	"testing"
)

func TestOperands(t *testing.T) {
	t.Parallel()
	vars := map[string]any{"o": map[string]any{"status": "paid", "n": 3.0, "items": []any{"a"}}, "ok": false}
	tests := []struct {
		src  string
		want string
	}{
		{`o.status == "shipped"`, `[o.status=paid]`},
		{`"shipped" == o.status`, `[o.status=paid]`},
		{`o.n > 5 && o.status == "paid"`, `[o.n=3]`},
		{`o.status == "paid" && o.n > 5`, `[o.n=3]`},
		{`o.n > 5 || len(o.items) > 1`, `[o.n=3 len(o.items)=1]`},
		{`!(o.status == "paid")`, `[o.status=paid]`},
		{`ok`, `[ok=false]`},
		{`o.status in ["a", "b"]`, `[o.status=paid]`},
		{`hasPrefix(o.status, "sh")`, `[o.status=paid]`},
		{`true == false`, `[]`},
		{`o.missing.deeper == 1`, `[]`}, // cannot be evaluated: left out
		{`not valid ((`, `[]`},
	}
	for _, tt := range tests {
		var got []string
		for _, o := range Operands(tt.src, vars) {
			got = append(got, fmt.Sprintf("%s=%v", o.Expr, o.Value))
		}
		if s := fmt.Sprint(got); s != tt.want && !(tt.want == "[]" && len(got) == 0) {
			t.Errorf("Operands(%s): got %s, want %s", tt.src, s, tt.want)
		}
	}
}

// TestUnknownNameListsEachOnce: at run time the variables include the
// built-in ones; the message names each known name once, in order.
func TestUnknownNameListsEachOnce(t *testing.T) {
	t.Parallel()
	_, err := Eval("nope == 1", map[string]any{"task": map[string]any{}, "run": map[string]any{}, "env": map[string]any{}, "secrets": map[string]any{}, "order": 1})
	if err == nil || err.Error() != "unknown name nope (known: env, order, run, secrets, task)" {
		t.Fatalf("got %v, want each known name once", err)
	}
}
