package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Uncheck is the uncheck step.
var Uncheck = register(&Kind{
	Name:    "uncheck",
	Section: Browser,
	Order:   115,
	Summary: "Uncheck a checkbox (or an element with aria-checked): click it if it is checked, then make sure it is not.",
	Form:    checkForm,
	Example: "- uncheck: {role: checkbox, name: Send me the newsletter}\n",
	Agent:   "`uncheck: {role: checkbox, name: \"Newsletter\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileElement(c, st, n, &checkForm)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "uncheck"})
	},
})
