package step

import (
	"context"

	"github.com/duet-test/duet"
)

// AssertFocused is the assertFocused step.
var AssertFocused = register(&Kind{
	Name:      "assertFocused",
	Section:   Browser,
	Order:     186,
	Summary:   "Assert an element has the keyboard focus; retries until it holds.",
	Form:      stateForm,
	Assertion: true,
	Example:   "- assertFocused: {label: Email address}\n",
	Agent:     "`assertFocused: {label: \"Email\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		if bd, ok := compileElement(c, st, n, &stateForm); ok && bd.isMap {
			bd.compileNot()
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return expectState(ctx, env, st, "focused", "focused", "not focused")
	},
})
