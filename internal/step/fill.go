package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Fill is the fill step.
var Fill = register(&Kind{
	Name:    duet.StepFill,
	Section: Browser,
	Order:   130,
	Summary: "Type into a field: focus it, clear it and type the value key by key.",
	Form: Form{Keys: []Key{
		{Name: "selector", Type: Template, Required: true, Doc: "CSS selector of an input, textarea or contenteditable element"},
		{Name: "value", Type: Template, Required: true, Doc: "the text to type"},
	}},
	Example: "- fill: {selector: \"#username\", value: alice}\n",
	Agent:   "`fill: {selector: \"#email\", value: \"a@example.com\"}`",
	Compile: compileValue,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		v, err := renderOpt(env, b.Value)
		if err != nil {
			return "", nil, err
		}
		return "", nil, p.Fill(ctx, sel, v)
	},
})

// compileValue compiles the kinds whose body is {selector, value} (fill,
// select).
func compileValue(c *Compiler, st *duet.Step, n *Node) {
	bd, ok := browserBody(c, st, n, false)
	if !ok {
		return
	}
	bd.needPage()
	if !bd.isMap {
		c.Errf(n, "%s needs {selector, value}", st.Kind)
		return
	}
	c.AllowKeys(n, "selector", "value")
	bd.b.Selector = bd.field("selector", true)
	if vn := n.Get("value"); vn == nil {
		c.Errf(n, "missing key value")
	} else if s, ok := vn.Str(); ok {
		bd.b.Value = s
		c.Template(vn, "value", s)
	} else {
		c.Errf(vn, "value must be a string")
	}
}
