package step

import (
	"context"

	"github.com/duet-test/duet"
)

var pressForm = shortFor("key", Template, "the key",
	"a key name (Enter, Tab, Escape, ArrowDown, ...) or a character, with modifiers held as in Shift+Tab or Control+A",
	locatorKeys...)

// Press is the press step.
var Press = register(&Kind{
	Name:    duet.StepPress,
	Section: Browser,
	Order:   140,
	Summary: "Press a key or a chord (Control+A), on an element (focused first) or on the focused one.",
	Form:    pressForm,
	Example: "- press: Enter\n- press: {key: Enter, selector: \"#search\"}\n- press: {key: Control+A, label: Email address}\n",
	Agent:   "`press: Enter` or `press: {key: Control+A, label: \"Email\"}`",
	Compile: pageStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if bd.isMap {
			c.AllowKeys(n, pressForm.KeyNames()...)
		}
		bd.b.Key = bd.text("key", true)
		for _, k := range locatorKeys {
			if n.Get(k.Name) != nil {
				bd.target(true)
				break
			}
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		b := st.Browser
		if b == nil {
			return "", nil, noBody(st)
		}
		key, err := render(env, b.Key)
		if err != nil {
			return "", nil, err
		}
		if b.Selector == "" && b.Locator == nil {
			p, _, _, err := page(ctx, env, st)
			if err != nil {
				return "", nil, err
			}
			return "", nil, p.Press(ctx, key, "")
		}
		return act(ctx, env, st, Action{Kind: "press", Value: key})
	},
})
