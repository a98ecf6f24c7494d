package step

import (
	"context"

	"github.com/duet-test/duet"
)

var hoverForm = elementForm("the CSS selector")

// Hover is the hover step.
var Hover = register(&Kind{
	Name:    "hover",
	Section: Browser,
	Order:   120,
	Summary: "Move the mouse over an element: wait until it is visible, stable and not covered, then hover its centre (menus and tooltips that open on hover).",
	Form:    hoverForm,
	Example: "- hover: \"#account-menu\"\n- hover: {role: button, name: Account}\n",
	Agent:   "`hover: {role: button, name: Account}` — move the mouse over an element (menus that open on hover).",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileElement(c, st, n, &hoverForm)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "hover"})
	},
})
