package step

import (
	"context"

	"github.com/duet-test/duet"
)

var focusForm = elementForm("the CSS selector")

// Focus is the focus step.
var Focus = register(&Kind{
	Name:    "focus",
	Section: Browser,
	Order:   142,
	Summary: "Give an element the keyboard focus, once it is visible.",
	Form:    focusForm,
	Example: "- focus: {label: Email address}\n",
	Agent:   "`focus: {label: \"Email\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileElement(c, st, n, &focusForm)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "focus"})
	},
})
