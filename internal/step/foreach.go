package step

import (
	"context"
	"fmt"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

var forEachForm = Form{
	Keys: []Key{
		{Name: "in", Type: Expr, Required: true, Doc: "an expression whose value is a list"},
		{Name: "as", Type: Ident, Required: true, Doc: "the variable that holds the item of the iteration"},
		{Name: "index", Type: Ident, Doc: "a variable that holds the iteration's number, from 1"},
		{Name: "max", Type: Int, Doc: fmt.Sprintf("the most items the list may have (default %d, at most %d): a longer list fails the step with LOOP_LIMIT before the first iteration", DefaultLoopMax, MaxLoopMax)},
		{Name: "steps", Type: Steps, Required: true, Doc: "the steps run for each item"},
	},
}

// ForEach is the forEach step.
var ForEach = register(loopKind(&Kind{
	Name:    duet.StepForEach,
	Order:   320,
	Summary: "Run steps once for each item of a list, the item in a variable; a list longer than the bound fails the step with LOOP_LIMIT.",
	Form:    forEachForm,
	Example: "- forEach:\n" +
		"    in: resp.body.items\n" +
		"    as: item\n" +
		"    steps:\n" +
		"      - assert: item.qty > 0\n",
	Doc: "The list is read once, when the step starts. A list of more items than `max` fails the step with " +
		"`LOOP_LIMIT` before any iteration: read a part of it (`resp.body.items[:10]`) or raise `max`. To go over " +
		"the rows of a table on the page, `extract` them first (or use an `http` step's JSON).",
	Agent: "`forEach: {in: resp.body.items, as: item, steps: [...]}` — once per item of a list (max 100 items unless max: N).",
}, "forEach must be a mapping: in, as and steps", compileForEach, runForEach,
	func(l *duet.LoopStep) string { return "forEach " + l.As + " in " + l.In }))

// compileForEach reads the keys of a forEach but its steps.
func compileForEach(c *Compiler, n *Node, l *duet.LoopStep) {
	l.Mode = duet.LoopForEach
	l.In = c.String(n, "in", true)
	if l.In != "" {
		if err := eval.Check(l.In, c.Scope.Vars, false); err != nil {
			c.Errf(n.Get("in"), "forEach in: %v", err)
		}
	}
	if n.Get("as") == nil {
		c.Errf(n, "forEach needs as: the variable that holds each item")
	}
	l.As = c.loopVar(n, "as")
	l.Index = c.loopVar(n, "index")
	if l.As != "" && l.As == l.Index {
		c.Errf(n.Get("index"), "forEach: index and as name the same variable %q", l.As)
	}
	l.Max = c.loopMax(n, "forEach")
}

// runForEach runs the forEach loop l of st.
func runForEach(ctx context.Context, env Env, st *duet.Step, l *duet.LoopStep) error {
	v, err := eval.Eval(l.In, env.Vars())
	if err != nil {
		return duet.WrapError(duet.CodeBindingFailed, err, "forEach in %s: %v", l.In, err)
	}
	items, ok := v.([]any)
	if !ok {
		return duet.Errorf(duet.CodeBindingFailed, "forEach in %s: got %s, want a list", l.In, typeName(v))
	}
	if len(items) > l.Max {
		return loopLimit(st, "%s has %d items, more than max %d", l.In, len(items), l.Max)
	}
	for i, item := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := iterate(ctx, env, l, i+1, item); err != nil {
			return err
		}
	}
	return nil
}

// typeName says what kind of value v is, in a message.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a mapping"
	case float64, int, int64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
