package step

import (
	"context"
	"maps"
	"slices"

	"github.com/duet-test/duet"
)

// Evaluator is a Page that runs a JavaScript expression in its page (the
// frame of the frame scope) within a time and a size budget.
// internal/browser's sessions are Evaluators.
type Evaluator interface {
	// Evaluate runs expr with args as the object args, awaits it, and
	// returns its value as JSON values; past ctx's deadline STEP_TIMEOUT,
	// a value of more than maxBytes as JSON TOO_LARGE.
	Evaluate(ctx context.Context, expr string, args map[string]any, maxBytes int) (any, error)
}

// maxEvaluateBytes bounds the value of an evaluate step, as JSON.
const maxEvaluateBytes = 1 << 20

// Evaluate is the evaluate step.
var Evaluate = register(&Kind{
	Name:    "evaluate",
	Section: Browser,
	Order:   205,
	Summary: "Run a JavaScript expression in the page and save its value (awaited when it is a promise): what no other step reads.",
	Form: shortFor("expression", Text, "the expression", "a JavaScript expression (not a template: ${...} is JavaScript's own); it reads args.NAME",
		Key{Name: "args", Type: MapOf(Template), Doc: "values (templates over the variables) the expression reads as args.NAME"},
		Key{Name: "as", Type: Ident, Doc: "the variable to save the value to"},
		Key{Name: "saveAs", Type: Ident, Doc: "the same as as"},
	),
	Example: "- evaluate: {expression: \"document.querySelectorAll('.card').length\", as: cards}\n- evaluate: {expression: \"localStorage.getItem(args.key)\", args: {key: \"cart-${run.id}\"}, as: stored}\n",
	Doc: "It runs within the step's timeout (a loop is stopped there: STEP_TIMEOUT) and its value may be 1 MiB as JSON at most (TOO_LARGE, " +
		"refused in the page before it is sent). An expression that throws fails the step with BROWSER_ERROR and the exception's message.",
	Agent: "`evaluate: {expression: \"window.appState.cart.length\", as: n}` — only for what no other step reads",
	Compile: pageStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if bd.isMap {
			c.AllowKeys(n, "expression", "args", "as", "saveAs")
		}
		b := bd.b
		b.Expr = bd.text("expression", false)
		b.Args = c.templateMap(n, "args", "args.", nil)
		b.SaveAs = c.saveAsKey(n, "")
		if b.Expr == "" && (!bd.isMap || n.Get("expression") != nil) {
			c.Errf(n, "evaluate: the expression is empty")
		}
	}),
	Title: func(st *duet.Step) string {
		e := st.Browser.Expr
		if len(e) > 60 {
			e = e[:57] + "..."
		}
		return "evaluate " + e
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		ev, err := pageAs[Evaluator](ctx, env, st, "cannot evaluate (its driver lacks Evaluator)")
		if err != nil {
			return "", nil, err
		}
		b := st.Browser
		args := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(b.Args)) {
			v, err := render(env, b.Args[k])
			if err != nil {
				return "", nil, err
			}
			args[k] = v
		}
		v, err := ev.Evaluate(ctx, b.Expr, args, maxEvaluateBytes)
		if err != nil {
			return "", nil, err
		}
		return b.SaveAs, v, nil
	},
})
