package step

import (
	"context"

	"github.com/duet-test/duet"
)

// AssertDisabled is the assertDisabled step.
var AssertDisabled = register(&Kind{
	Name:      "assertDisabled",
	Section:   Browser,
	Order:     183,
	Summary:   "Assert an element is disabled (disabled, or aria-disabled); retries until it holds.",
	Form:      stateForm,
	Assertion: true,
	Example:   "- assertDisabled: {role: button, name: Pay}\n",
	Agent:     "`assertDisabled: {role: button, name: \"Pay\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		if bd, ok := compileElement(c, st, n, &stateForm); ok && bd.isMap {
			bd.compileNot()
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return expectState(ctx, env, inverted(st), "enabled", "enabled", "disabled")
	},
})
