package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Blur is the blur step.
var Blur = register(&Kind{
	Name:    "blur",
	Section: Browser,
	Order:   143,
	Summary: "Take the keyboard focus away from an element (what a form checks a field on).",
	Form:    focusForm,
	Example: "- blur: {label: Email address}\n",
	Agent:   "`blur: {label: \"Email\"}` — what a form checks a field on",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileElement(c, st, n, &focusForm)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "blur"})
	},
})
