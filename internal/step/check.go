package step

import (
	"context"

	"github.com/duet-test/duet"
)

var checkForm = elementForm("the CSS selector")

// Check is the check step.
var Check = register(&Kind{
	Name:    "check",
	Section: Browser,
	Order:   114,
	Summary: "Check a checkbox or a radio button (or an element with aria-checked): click it unless it is checked, then make sure it is.",
	Form:    checkForm,
	Example: "- check: {label: I agree to the terms}\n",
	Agent:   "`check: {label: \"I agree\"}` — checks it unless it is checked",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileElement(c, st, n, &checkForm)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "check"})
	},
})
