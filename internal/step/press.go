package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Press is the press step.
var Press = register(&Kind{
	Name:    duet.StepPress,
	Section: Browser,
	Order:   140,
	Summary: "Press a key, on an element or on the focused one.",
	Form: Form{
		Short: &Short{Type: Text, Doc: "the key"},
		Keys: []Key{
			{Name: "key", Type: Template, Required: true, Doc: "a key name (Enter, Tab, Escape, ArrowDown, ...) or a character, with modifiers as in Shift+Tab or Control+a"},
			{Name: "selector", Type: Template, Doc: "CSS selector of the element to focus first"},
		},
	},
	Example: "- press: Enter\n- press: {key: Enter, selector: \"#search\"}\n",
	Agent:   "`press: Enter` or `press: {key: Enter, selector: \"#q\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := browserBody(c, st, n, false)
		if !ok {
			return
		}
		bd.needPage()
		if bd.isMap {
			c.AllowKeys(n, "key", "selector")
			bd.b.Key = bd.field("key", true)
			bd.b.Selector = bd.field("selector", false)
		} else {
			bd.b.Key = bd.short
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return "", nil, p.Press(ctx, b.Key, sel)
	},
})
