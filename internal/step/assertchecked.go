package step

import (
	"context"

	"github.com/duet-test/duet"
)

// AssertChecked is the assertChecked step.
var AssertChecked = register(&Kind{
	Name:      "assertChecked",
	Section:   Browser,
	Order:     184,
	Summary:   "Assert a checkbox, a radio button or an element with aria-checked is checked (or, with not, that it is not); retries until it holds.",
	Form:      stateForm,
	Assertion: true,
	Example:   "- assertChecked: {label: I agree to the terms}\n",
	Agent:     "`assertChecked: {label: \"I agree\"}` (`not: true`: unchecked)",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		if bd, ok := compileElement(c, st, n, &stateForm); ok && bd.isMap {
			bd.compileNot()
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return expectState(ctx, env, st, "checked", "checked", "unchecked")
	},
})
