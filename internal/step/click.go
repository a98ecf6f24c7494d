package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Click is the click step.
var Click = register(&Kind{
	Name:    duet.StepClick,
	Section: Browser,
	Order:   110,
	Summary: "Click an element: wait until it is visible, enabled and not covered, then click its centre with the mouse.",
	Form: Form{
		Short: &Short{Type: Template, Doc: "the CSS selector"},
		Keys:  []Key{selectorKey},
	},
	Example: "- click: \"#buy\"\n",
	Agent:   "`click: \"#buy\"`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileSelector(c, st, n, []string{"selector"})
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, _, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return "", nil, p.Click(ctx, sel)
	},
})
