package step

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// Set is the set step.
var Set = register(&Kind{
	Name:    duet.StepSet,
	Section: Data,
	Order:   40,
	Summary: "Set variables to the values of expressions, in name order.",
	Form: Form{
		Open: &Key{Type: Expr, Doc: "the expression whose value the variable takes"},
	},
	Example: "- set: {total: \"resp.body.totalCents / 100\", label: \"'order ' + orderId\"}\n",
	Doc:     "Each expression sees the variables saved before the step, not the other variables of the same `set`.",
	Agent:   "`set: {total: \"resp.body.totalCents / 100\"}` — variables from expressions.",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		if n.Type != MapNode || len(n.Keys) == 0 {
			c.Errf(n, "set must be a mapping of variable: expression")
			return
		}
		s := &duet.SetStep{Vars: map[string]string{}}
		st.Set = s
		// Each expression sees the variables before this step, in key order.
		known := slices.Clone(c.Scope.Vars)
		for j, k := range n.Keys {
			name, _ := k.Str()
			ex, ok := n.Vals[j].Str()
			if !ok {
				c.Errf(n.Vals[j], "set %s: the value must be an expression", name)
				continue
			}
			if err := eval.Check(ex, known, false); err != nil {
				c.Errf(n.Vals[j], "set %s: %v", name, err)
			}
			if c.SaveAs(k) != "" {
				s.Vars[name] = ex
			}
		}
	},
	Run: func(_ context.Context, env Env, st *duet.Step) (string, any, error) {
		s := st.Set
		if s == nil {
			return "", nil, noBody(st)
		}
		return "", nil, saveEach(env, s.Vars, eval.Eval, func(name string) string { return "set " + name })
	},
	Title: func(st *duet.Step) string {
		if st.Set == nil {
			return string(st.Kind)
		}
		return "set " + strings.Join(slices.Sorted(maps.Keys(st.Set.Vars)), ", ")
	},
})

// saveEach saves each of vals, in name order, as the variable of its name
// with the value value gives it over the variables then (set's later
// variables see the earlier ones). A value that fails is BINDING_FAILED,
// its message led by what(name).
func saveEach[V any](env Env, vals map[string]V, value func(V, map[string]any) (any, error), what func(name string) string) error {
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		v, err := value(vals[name], env.Vars())
		if err != nil {
			return duet.WrapError(duet.CodeBindingFailed, err, "%s: %v", what(name), err)
		}
		if err := env.Save(name, v); err != nil {
			return err
		}
	}
	return nil
}
