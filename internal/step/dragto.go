package step

import (
	"context"

	"github.com/duet-test/duet"
)

var dragToForm = elementForm("", Key{Name: "to", Type: Locator, Required: true, Doc: "where to drop it"})

// DragTo is the dragTo step.
var DragTo = register(&Kind{
	Name:    "dragTo",
	Section: Browser,
	Order:   155,
	Summary: "Drag an element and drop it on another (HTML drag and drop, or a page that follows the mouse).",
	Form:    dragToForm,
	Example: "- dragTo: {text: Blue mug, exact: true, to: {label: Wish list}}\n",
	Agent:   "`dragTo: {text: \"Card\", to: {label: \"Done\"}}`",
	Compile: elementStep(&dragToForm, func(c *Compiler, n *Node, bd *body) {
		if tn := n.Get("to"); tn == nil {
			c.Errf(n, "missing key to")
		} else {
			bd.b.To = c.compileLocator(tn, 1, "to")
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		to, err := renderLocator(env, st.Browser.To)
		if err != nil {
			return "", nil, err
		}
		return act(ctx, env, st, Action{Kind: "drag", To: to})
	},
})
