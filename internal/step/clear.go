package step

import (
	"context"

	"github.com/duet-test/duet"
)

var clearForm = elementForm("the CSS selector")

// Clear is the clear step.
var Clear = register(&Kind{
	Name:    "clear",
	Section: Browser,
	Order:   134,
	Summary: "Empty a field (an input, a textarea, a contenteditable element), once it is editable.",
	Form:    clearForm,
	Example: "- clear: {label: Email address}\n",
	Agent:   "`clear: {label: \"Email\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileElement(c, st, n, &clearForm)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "clear"})
	},
})
