package step

import (
	"context"

	"github.com/duet-test/duet"
)

var scrollForm = elementForm("the CSS selector")

// ScrollIntoView is the scrollIntoView step.
var ScrollIntoView = register(&Kind{
	Name:    "scrollIntoView",
	Section: Browser,
	Order:   145,
	Summary: "Scroll the page until an element is in the middle of the view, and wait until it stops moving (a page that loads more as you scroll).",
	Form:    scrollForm,
	Example: "- scrollIntoView: {text: Load more}\n",
	Agent:   "`scrollIntoView: {text: \"Load more\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileElement(c, st, n, &scrollForm)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "scroll"})
	},
})
