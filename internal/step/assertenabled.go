package step

import (
	"context"

	"github.com/duet-test/duet"
)

// stateForm is the form of the assertions of an element's state.
var stateForm = elementForm("the CSS selector", notKey)

// inverted returns st with not flipped: assertDisabled is assertEnabled
// with not.
func inverted(st *duet.Step) *duet.Step {
	b := *st.Browser
	b.Not = !b.Not
	cp := *st
	cp.Browser = &b
	return &cp
}

// AssertEnabled is the assertEnabled step.
var AssertEnabled = register(&Kind{
	Name:      "assertEnabled",
	Section:   Browser,
	Order:     182,
	Summary:   "Assert an element is enabled (not disabled, nor aria-disabled); retries until it holds.",
	Form:      stateForm,
	Assertion: true,
	Example:   "- assertEnabled: {role: button, name: Pay}\n",
	Agent:     "`assertEnabled: {role: button, name: \"Pay\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		if bd, ok := compileElement(c, st, n, &stateForm); ok && bd.isMap {
			bd.compileNot()
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return expectState(ctx, env, st, "enabled", "enabled", "disabled")
	},
})
